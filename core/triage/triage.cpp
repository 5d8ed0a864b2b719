// SPDX-License-Identifier: MIT
// The whole triage of one checkpoint: integrity, placement smells, what torch.load would do on the
// target machine (torch 1.13 and 2.6+), and whether weights_only=True accepts it, as findings.
#include "core/triage/triage.h"

#include "core/base/textformat.h"
#include "core/devices/detectmachine.h"
#include "core/io/remotefile.h"
#include "core/model/checkpoint.h"
#include "core/model/formatcapabilities.h"
#include "core/model/shardset.h"
#include "core/triage/importrequirements.h"
#include "core/triage/plannedload.h"

#include <algorithm>
#include <map>
#include <set>

namespace ckpt {

namespace {

std::string plainWordsForLoadError(const std::string& error)
{
    if (error.find("torch.cuda.device_count() is") != std::string::npos)
        return "the file was saved on a GPU number the target does not have";
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

// "cuda:3" -> 3; "cuda" -> 0; nullopt for other devices.
std::optional<long> cudaIndex(const std::string& tag)
{
    if (tag == "cuda")
        return 0;
    if (!tag.starts_with("cuda:") || tag.size() == 5)
        return std::nullopt;
    long index = 0;
    for (char c : tag.substr(5)) {
        if (c < '0' || c > '9')
            return std::nullopt;
        index = index * 10 + (c - '0');
    }
    return index;
}

// When every storage that fails is recorded on a CUDA device the target lacks and the target has
// GPUs, the fitting fix maps those devices onto its GPUs rather than onto the CPU.
std::optional<MapLocation> gpuRemapFor(const Checkpoint& checkpoint, const std::set<std::uint32_t>& failing,
    const MachineInventory& machine, std::string& words)
{
    const std::size_t gpus = machine.gpus().size();
    if (gpus == 0 || failing.empty())
        return std::nullopt;
    MapLocation location;
    location.kind = MapLocation::Kind::Dict;
    for (std::uint32_t storage : failing) {
        const auto& device = checkpoint.storages[storage].device;
        const auto index = device ? cudaIndex(*device) : std::nullopt;
        if (!index || *index < static_cast<long>(gpus))
            return std::nullopt;
        location.dict[*device] = "cuda:" + std::to_string(*index % static_cast<long>(gpus));
    }
    std::string pairs;
    for (const auto& [from, to] : location.dict)
        pairs += (pairs.empty() ? "" : ", ") + ("`" + from + "` to `" + to + "`");
    words = "the target has " + std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs") + "; map " + pairs;
    return location;
}

void addImportFindings(const Checkpoint& checkpoint, const TriageOptions& options, TriageReport& report)
{
    // Which modules a weights_only=False load imports beyond the standard library and torch.
    const auto requirements = importRequirements(checkpoint, options.importableModules);
    std::string needed;
    bool missing = false;
    for (const ImportRequirement& requirement : requirements) {
        if (requirement.provider == ImportProvider::StandardLibrary
            || requirement.provider == ImportProvider::Torch)
            continue;
        std::string names;
        for (const std::string& name : requirement.names)
            names += (names.empty() ? "" : ", ") + name;
        needed += (needed.empty() ? "" : "; ") + requirement.module + " ("
            + importProviderName(requirement.provider) + ": " + names
            + (requirement.importable ? "" : "; not known to be importable") + ")";
        missing = missing || !requirement.importable;
    }
    if (needed.empty())
        return;
    Finding finding {missing ? Severity::Warning : Severity::Info, FindingCode::ImportsRequired,
        "torch.load(weights_only=False) imports Python code to unpickle this file: " + needed};
    finding.explanation = "the file pickles objects by class (a whole model, a config object), and the "
                          "unpickler imports each class's module; where a module is missing, torch.load "
                          "fails even though the tensors themselves are intact";
    for (const ImportRequirement& requirement : requirements)
        if (!requirement.importable) {
            finding.fix = importFix(requirement);
            break;
        }
    if (finding.fix.empty())
        finding.fix = "run torch.load where these modules are importable";
    report.findings.push_back(std::move(finding));
}

void addLoadFindings(const Checkpoint& checkpoint, const TriageOptions& options,
    const MachineInventory& machine, TriageReport& report)
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
        std::string errorType;
        for (const LoadSimulation& simulation : report.loadSimulations)
            if (simulation.error == error && !simulation.errorType.empty())
                errorType = simulation.errorType;
        Finding finding {
            Severity::Error, FindingCode::LoadFails, errorType.empty() ? error : errorType + ": " + error};
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
        if (errorType == "UnicodeDecodeError") {
            finding.explanation = "torch.load fails with " + names
                + ": a Python 2 string in the file is not UTF-8, torch.load's default encoding";
            finding.fix = "pass encoding='latin1' to torch.load";
            report.findings.push_back(std::move(finding));
            continue;
        }
        if (!errorType.empty()) {
            // A module the unpickler must import is missing: no map_location helps.
            for (const ImportRequirement& requirement :
                importRequirements(checkpoint, options.importableModules)) {
                if (requirement.importable)
                    continue;
                finding.explanation = "torch.load(weights_only=False) fails with " + names
                    + ": the file pickles "
                    + (requirement.names.empty() ? std::string("objects") : requirement.names.front())
                    + " from " + requirement.module + " (" + importProviderName(requirement.provider)
                    + "), and unpickling imports it";
                finding.fix = importFix(requirement)
                    + "; or, with the code importable once, re-save only the weights (model.state_dict())";
                break;
            }
            report.findings.push_back(std::move(finding));
            continue;
        }
        std::string gpuWords;
        if (const auto remap = gpuRemapFor(checkpoint, storages, machine, gpuWords)) {
            finding.explanation = "torch.load fails with " + names + ": " + gpuWords;
            std::string mapArguments;
            for (const auto& [from, to] : remap->dict)
                mapArguments += " --map " + from + "=" + to;
            finding.fix = "pass map_location=" + remap->python()
                + " to torch.load, or write a copy that loads " + "there as is: `ckpt-inspect remap " + file
                + " -o OUT" + mapArguments + "`";
            report.findings.push_back(std::move(finding));
            continue;
        }
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
        if (checkpoint.format == CheckpointFormat::TorchScriptJson) // no map_location helps, nor remap
            finding.fix = "torch.load cannot read TorchScript's model.json layout: `ckpt-inspect extract "
                + file + " -o OUT.pt` writes its tensors as a torch.save state_dict";
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
        finding = Finding {Severity::Error, FindingCode::UnsafePickle, safety.headline};
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
        finding = Finding {Severity::Warning, FindingCode::NeedsAllowlisting, safety.headline};
        finding.explanation = "every global is a vetted inert class, but torch.load(weights_only=True) "
                              "refuses the ones its default allowlist lacks";
        if (!safety.addSafeGlobals2.empty())
            finding.fix = "call this before torch.load (torch 2.x):\n" + safety.addSafeGlobals2;
        break;
    case PickleSafety::KnownInert:
        finding = Finding {Severity::Info, FindingCode::KnownInert, safety.headline};
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
    const std::string generation = simulatedTorchName(verdict.generation, verdict.imports);
    Finding finding;
    switch (verdict.rating) {
    case SafetyRating::NotApplicable:
        return;
    case SafetyRating::Dangerous: {
        finding = Finding {Severity::Error, FindingCode::WeightsOnlyDangerous, {}};
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
        finding = Finding {Severity::Warning, FindingCode::WeightsOnlyNeedsAllowlist, {}};
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
        finding = Finding {Severity::Info, FindingCode::WeightsOnlyLoads,
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

void judgePickleGraphAhead(const Checkpoint& checkpoint, TriageOptions& options)
{
    if (!options.sharedVerdicts)
        options.sharedVerdicts = std::make_shared<SharedWeightsOnlyVerdicts>();
    options.judgedWeightsOnly = options.sharedVerdicts->get(
        checkpoint, options.torch.value_or(TorchGeneration::Torch26Plus), options.imports);
    options.judgedGlobalMoves
        = std::make_shared<const std::vector<Finding>>(checkKnownGlobalMoves(checkpoint));
    options.judgedSafety = std::make_shared<const SafetyVerdict>(
        checkpoint.shardSet ? rateShardSafety(checkpoint) : ratePickleSafety(checkpoint));
}

TriageReport triage(const Checkpoint& checkpoint, const TriageOptions& options)
{
    TriageReport report;
    report.findings = checkIntegrity(
        checkpoint, options.knownRecordCrcs, options.checkRecordCrcs && !isRemoteUrl(checkpoint.path));
    std::vector<Finding> smells = checkPlacementSmells(checkpoint);
    report.findings.insert(report.findings.end(), std::make_move_iterator(smells.begin()),
        std::make_move_iterator(smells.end()));
    std::vector<Finding> moves
        = options.judgedGlobalMoves ? *options.judgedGlobalMoves : checkKnownGlobalMoves(checkpoint);
    report.findings.insert(
        report.findings.end(), std::make_move_iterator(moves.begin()), std::make_move_iterator(moves.end()));

    if (checkpoint.shardSet) {
        // The cross-shard checks say again, with the tensors concerned and a fix, what the reader
        // noted about missing and unreadable shards.
        std::erase_if(report.findings, [](const Finding& f) {
            return f.code == FindingCode::ShardMissing || f.code == FindingCode::ShardUnreadable;
        });
        std::vector<Finding> shardFindings = checkShards(checkpoint);
        report.findings.insert(report.findings.end(), std::make_move_iterator(shardFindings.begin()),
            std::make_move_iterator(shardFindings.end()));
    }
    // The weights_only verdict of the torch asked for (2.6+ unless only 1.13 is), in the state of
    // its process that was asked for.
    const TorchGeneration judged = options.torch.value_or(TorchGeneration::Torch26Plus);
    report.weightsOnly = options.judgedWeightsOnly ? *options.judgedWeightsOnly
        : options.sharedVerdicts ? *options.sharedVerdicts->get(checkpoint, judged, options.imports)
                                 : judgeWeightsOnly(checkpoint, judged, options.imports);
    // The load simulation of torch 2.6+ needs the same verdict of this file's own pickles (not the
    // worst shard's, nor the rating raised by the safety verdict below): kept, not judged again.
    const WeightsOnlyVerdict ownVerdict = report.weightsOnly;
    if (checkpoint.shardSet) // the verdict of the worst shard: from_pretrained loads every one
        for (const ShardFile& shard : checkpoint.shardSet->shards)
            if (shard.readable() && shard.problem.empty()) {
                // A shard read in place ran no pickle: its verdict is that of its format alone, and
                // its model is not made for it.
                Checkpoint formatAlone;
                if (shard.readInPlace())
                    formatAlone.format = shard.format();
                WeightsOnlyVerdict verdict = judgeWeightsOnly(
                    shard.readInPlace() ? formatAlone : *shard.model(), judged, options.imports);
                if (report.weightsOnly.rating == SafetyRating::NotApplicable
                    || (verdict.rating != SafetyRating::NotApplicable
                        && static_cast<int>(verdict.rating) > static_cast<int>(report.weightsOnly.rating)))
                    report.weightsOnly = std::move(verdict);
            }
    // Several files: every shard's pickles (and DCP's .metadata) are rated; the worst one counts.
    report.safety = options.judgedSafety ? *options.judgedSafety
        : checkpoint.shardSet            ? rateShardSafety(checkpoint)
                                         : ratePickleSafety(checkpoint);
    // One judgement of each pickle. The safety verdict rates every pickle the reader ran (the ones
    // the weights-only walk reads among them), so every global that walk will not vouch for is
    // already among its unsafe callables; should one ever be missing (a shard's verdict, a reader
    // run the scan could not match), it is handed to the safety verdict rather than shown apart, so
    // no section calls a file dangerous that the rating does not, and the exit code follows.
    for (const GlobalClassification& global : report.weightsOnly.globals) {
        if (global.verdict != GlobalVerdict::Blocked && global.verdict != GlobalVerdict::Unknown)
            continue;
        const bool known = std::any_of(report.safety.unsafe.begin(), report.safety.unsafe.end(),
            [&](const UnsafeCallable& callable) { return callable.name == global.safetyName; });
        if (!known)
            rateFurtherGlobal(report.safety, global.module, global.attribute,
                global.record + ", byte " + formatThousands(global.offset)
                    + " (met by the weights-only walk)");
    }
    // The headline rating never says less than the safety verdict: a hidden or nested pickle, a
    // stacked one or an unverifiable one makes the file dangerous whatever torch's unpickler says.
    if (report.safety.dangerous())
        report.weightsOnly.rating = SafetyRating::Dangerous;
    else if (report.safety.rating == PickleSafety::NeedsAllowlist
        && report.weightsOnly.rating != SafetyRating::Dangerous)
        report.weightsOnly.rating = SafetyRating::NeedsAllowlist;
    // DCP is not loaded by torch.load at all (torch.distributed.checkpoint.load fills a state_dict).
    // Nor are safetensors shards: from_pretrained opens each with safetensors, on the device it is told.
    const bool loadedByTorchLoad = formatCapabilities(checkpoint).torchLoadSimulated;
    if (loadedByTorchLoad) {
        const MachineInventory machine = options.target ? *options.target : detectThisMachine();
        for (const TorchGeneration generation : {TorchGeneration::Torch113, TorchGeneration::Torch26Plus})
            if (!options.torch || *options.torch == generation)
                report.loadSimulations.push_back(simulateLoadWithDevices(checkpoint, nullptr, machine,
                    options.mapLocation, generation, KnownWeightsOnlyVerdict {&ownVerdict}, std::nullopt,
                    options.importableModules, {}, options.imports));
        addLoadFindings(checkpoint, options, machine, report);
        addImportFindings(checkpoint, options, report);
    }
    addSafetyFinding(report);
    addWeightsOnlyFinding(report);

    // Messages copied from torch keep its terminal escapes (the weights-only hint is bold): fine
    // in a console, garbage in JSON, a log file or the desktop app.
    for (Finding& finding : report.findings) {
        finding.message = stripAnsiEscapes(finding.message);
        finding.explanation = stripAnsiEscapes(finding.explanation);
        finding.fix = stripAnsiEscapes(finding.fix);
    }
    for (LoadSimulation& simulation : report.loadSimulations)
        simulation.error = stripAnsiEscapes(simulation.error);
    report.weightsOnly.torchMessage = stripAnsiEscapes(report.weightsOnly.torchMessage);

    std::stable_sort(report.findings.begin(), report.findings.end(), [](const Finding& a, const Finding& b) {
        return static_cast<int>(a.severity) > static_cast<int>(b.severity);
    });
    return report;
}

} // namespace ckpt
