// The whole triage of one checkpoint: integrity, placement smells, what torch.load would do on the
// target machine (torch 1.13 and 2.6+), and whether weights_only=True accepts it, as findings.
#include "core/triage/triage.h"

#include "core/model/checkpoint.h"

#include <algorithm>
#include <set>

namespace ckpt {

namespace {

std::string plainWordsForLoadError(const std::string& error)
{
    if (error.find("torch.cuda.is_available() is False") != std::string::npos
        || error.find("CUDA") != std::string::npos)
        return "the file was saved with tensors on a GPU, and torch.load puts every tensor back on the "
               "device it was saved on unless told otherwise; the target has no CUDA device torch can use";
    if (error.find("device") != std::string::npos && error.find("ordinal") != std::string::npos)
        return "the file was saved on a GPU number the target does not have";
    if (error.find("Attempting to deserialize") != std::string::npos)
        return "the file names a device the target does not have, and torch.load restores tensors to "
               "their recorded devices";
    if (error.find("backend") != std::string::npos || error.find("mps") != std::string::npos)
        return "the file names a device type (backend) this torch build or machine does not support";
    return "torch.load would stop here, before returning anything";
}

std::string weightsOnlyGlobals(const WeightsOnlyVerdict& verdict, GlobalVerdict kind)
{
    std::string text;
    std::set<std::string> seen;
    for (const GlobalClassification& global : verdict.globals) {
        if (global.verdict != kind || !seen.insert(global.name).second)
            continue;
        if (!text.empty())
            text += ", ";
        text += global.name;
    }
    return text;
}

void addLoadFindings(const Checkpoint& checkpoint, const TriageOptions& options, TriageReport& report)
{
    // One finding per distinct failure; the same message from both generations is said once.
    std::vector<std::pair<std::string, std::vector<std::string>>> failures; // error, generations
    for (const LoadSimulation& simulation : report.loadSimulations) {
        if (simulation.loads || simulation.error.empty())
            continue;
        // A weights_only refusal is the verdict's finding, not a device problem.
        if (simulation.weightsOnly && !report.weightsOnly.torchMessage.empty()
            && simulation.error == report.weightsOnly.torchMessage)
            continue;
        auto it = std::find_if(failures.begin(), failures.end(),
            [&](const auto& failure) { return failure.first == simulation.error; });
        if (it == failures.end())
            failures.push_back({simulation.error, {torchGenerationName(simulation.generation)}});
        else
            it->second.push_back(torchGenerationName(simulation.generation));
    }
    const std::string file = checkpoint.path.empty() ? std::string("FILE") : checkpoint.path;
    for (const auto& [error, generations] : failures) {
        Finding finding {Severity::Error, "load-fails", error};
        std::string names;
        for (const std::string& generation : generations)
            names += (names.empty() ? "" : " and ") + generation;
        std::set<std::uint32_t> storages;
        for (const LoadSimulation& simulation : report.loadSimulations)
            if (simulation.error == error)
                for (const StorageLoadOutcome& outcome : simulation.storages)
                    if (!outcome.landsOn && outcome.storage < checkpoint.storages.size())
                        storages.insert(outcome.storage);
        for (std::uint32_t storage : storages)
            for (std::uint32_t tensor : checkpoint.storages[storage].tensors)
                finding.tensors.push_back(tensor);
        finding.explanation = "torch.load fails with " + names + " (" + plainWordsForLoadError(error) + ")";
        MapLocation toCpu;
        toCpu.kind = MapLocation::Kind::Device;
        toCpu.device = "cpu";
        finding.fix = (options.mapLocation.kind == MapLocation::Kind::None
                              ? "pass map_location=" + toCpu.python() + " to torch.load"
                              : "map_location=" + options.mapLocation.python()
                                  + " does not help; pass map_location=" + toCpu.python() + " instead")
            + " (then .to(device) as needed), or write a copy that loads anywhere: `ckpt-inspect remap "
            + file + " -o OUT --map '*=cpu'`";
        report.findings.push_back(std::move(finding));
    }
}

// The safety verdict as the first finding a person reads.
void addSafetyFinding(TriageReport& report)
{
    const SafetyVerdict& safety = report.safety;
    if (safety.rating == PickleSafety::NoPickle)
        return;
    Finding finding;
    switch (safety.rating) {
    case PickleSafety::DangerousOrUnknown: {
        finding = Finding {Severity::Error, "unsafe-pickle", safety.headline};
        std::string details;
        for (const UnsafeCallable& callable : safety.unsafe)
            details += (details.empty() ? "" : "; ") + callable.name + " (" + callable.reason + "; in "
                + callable.where + (callable.call.empty() ? std::string() : "; would run " + callable.call)
                + ")";
        for (const std::string& problem : safety.cannotVerify)
            details += (details.empty() ? "" : "; ") + problem;
        finding.explanation = "torch.load(weights_only=False), pickle.load and any loader that falls back to "
                              "them execute what the pickle says; only a vetted list of inert classes can be "
                              "vouched for: "
            + details;
        finding.fix = "do not load it with weights_only=False or any unpickler unless you trust its origin; "
                      "inspect it here (nothing is executed) and ask for a safetensors file or a plain "
                      "state_dict";
        break;
    }
    case PickleSafety::NeedsAllowlist:
        finding = Finding {Severity::Warning, "needs-allowlisting", safety.headline};
        finding.explanation = "every global is a vetted inert class, but torch.load(weights_only=True) "
                              "refuses the ones its default allowlist lacks";
        if (!safety.addSafeGlobals2.empty())
            finding.fix = "call this before torch.load (torch 2.x):\n" + safety.addSafeGlobals2;
        break;
    case PickleSafety::KnownInert:
        finding = Finding {Severity::Info, "known-inert", safety.headline};
        if (!safety.addSafeGlobals113.empty())
            finding.fix = "torch 1.13 needs:\n" + safety.addSafeGlobals113;
        break;
    case PickleSafety::NoPickle:
        return;
    }
    report.findings.push_back(std::move(finding));
}

void addWeightsOnlyFinding(TriageReport& report)
{
    const WeightsOnlyVerdict& verdict = report.weightsOnly;
    // The safety finding already says it, with every pickle of the file behind it.
    if (verdict.rating == SafetyRating::Dangerous && report.safety.dangerous())
        return;
    const std::string generation = torchGenerationName(verdict.generation);
    Finding finding;
    switch (verdict.rating) {
    case SafetyRating::NotApplicable:
        return;
    case SafetyRating::Dangerous: {
        finding = Finding {Severity::Error, "weights-only-dangerous", {}};
        std::string chains;
        for (const std::string& chain : verdict.dangerousCallChains)
            chains += (chains.empty() ? "" : "; ") + chain;
        const std::string blocked = weightsOnlyGlobals(verdict, GlobalVerdict::Blocked);
        finding.message = "dangerous: unpickling this file runs code"
            + (chains.empty() ? std::string() : ": " + chains)
            + (blocked.empty() ? std::string() : " (blocked globals: " + blocked + ")");
        finding.explanation = "torch.load(weights_only=False), the default before torch 2.6 and what "
                              "many scripts still pass, executes these calls while loading; "
                              "weights_only=True refuses the file";
        finding.fix = "do not load it with weights_only=False unless you trust its origin; inspect it here "
                      "(nothing is executed) and ask for a safetensors or plain state_dict file";
        break;
    }
    case SafetyRating::NeedsAllowlist: {
        finding = Finding {Severity::Warning, "weights-only-needs-allowlist", {}};
        const std::string needed = weightsOnlyGlobals(verdict, GlobalVerdict::NeedsAllowlist);
        const std::string unknown = weightsOnlyGlobals(verdict, GlobalVerdict::Unknown);
        finding.message = "torch.load(weights_only=True) (" + generation
            + ") refuses it until these classes are " + "allowed: " + needed
            + (unknown.empty() ? std::string() : " (unknown classes: " + unknown + ")")
            + (verdict.torchMessage.empty() ? std::string() : "; torch says: " + verdict.torchMessage);
        finding.explanation = "the weights-only unpickler accepts only an allowlist of classes; these are "
                              "harmless but not on it";
        finding.fix = verdict.addSafeGlobalsCall.empty()
            ? std::string(
                "allow the classes with torch.serialization.add_safe_globals([...]) before torch.load")
            : "call " + verdict.addSafeGlobalsCall + " before torch.load (or use the "
                + "torch.serialization.safe_globals context manager)";
        break;
    }
    case SafetyRating::LoadsWithWeightsOnly:
        finding = Finding {Severity::Info, "weights-only-loads",
            "torch.load(weights_only=True) accepts it (" + generation
                + "): it references only allowed globals"};
        finding.explanation = "loading it cannot run code";
        break;
    }
    if (!verdict.rejectedOpcodes.empty()) {
        std::string opcodes;
        for (const std::string& opcode : verdict.rejectedOpcodes)
            opcodes += (opcodes.empty() ? "" : ", ") + opcode;
        finding.message += "; opcodes the weights-only unpickler rejects: " + opcodes;
    }
    report.findings.push_back(std::move(finding));
}

} // namespace

int TriageReport::exitCode() const
{
    if (safety.dangerous())
        return 4;
    int code = 0;
    for (const Finding& finding : findings) {
        if (finding.severity == Severity::Error)
            return 2;
        if (finding.severity == Severity::Warning)
            code = 1;
    }
    return code;
}

TriageReport triage(const Checkpoint& checkpoint, const TriageOptions& options)
{
    TriageReport report;
    report.findings = checkIntegrity(checkpoint);
    std::vector<Finding> smells = checkPlacementSmells(checkpoint);
    report.findings.insert(report.findings.end(), std::make_move_iterator(smells.begin()),
        std::make_move_iterator(smells.end()));
    std::vector<Finding> moves = checkKnownGlobalMoves(checkpoint);
    report.findings.insert(
        report.findings.end(), std::make_move_iterator(moves.begin()), std::make_move_iterator(moves.end()));

    report.weightsOnly = judgeWeightsOnly(checkpoint, TorchGeneration::Torch26Plus);
    report.safety = ratePickleSafety(checkpoint);
    // The headline rating never says less than the safety verdict: a hidden or nested pickle, a
    // stacked one or an unverifiable one makes the file dangerous whatever torch's unpickler says.
    if (report.safety.dangerous())
        report.weightsOnly.rating = SafetyRating::Dangerous;
    else if (report.safety.rating == PickleSafety::NeedsAllowlist
        && report.weightsOnly.rating != SafetyRating::Dangerous)
        report.weightsOnly.rating = SafetyRating::NeedsAllowlist;
    if (checkpoint.format != CheckpointFormat::NotACheckpoint) {
        const MachineInventory machine = options.target ? *options.target : detectThisMachine();
        for (const TorchGeneration generation : {TorchGeneration::Torch113, TorchGeneration::Torch26Plus})
            report.loadSimulations.push_back(
                simulateLoad(checkpoint, machine, options.mapLocation, generation));
        addLoadFindings(checkpoint, options, report);
    }
    addSafetyFinding(report);
    addWeightsOnlyFinding(report);

    std::stable_sort(report.findings.begin(), report.findings.end(), [](const Finding& a, const Finding& b) {
        return static_cast<int>(a.severity) > static_cast<int>(b.severity);
    });
    return report;
}

} // namespace ckpt
