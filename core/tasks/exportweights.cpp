// SPDX-License-Identifier: MIT
#include "core/tasks/exportweights.h"

#include "core/io/atomicoutputfile.h"
#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/model/formatcapabilities.h"
#include "core/model/quantgroups.h"
#include "core/model/shardset.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/read/tensorlocator.h"
#include "core/safety/pickleverdict.h"
#include "core/triage/triage.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <unistd.h>
#include <unordered_map>
#include <utility>

namespace ckpt {

namespace {

// The tensors to write and where each comes from: its source (a checkpoint that maps its bytes and
// its index there) and, for a folder, its index in the merged checkpoint (for the plan's device).
struct Gathered {
    std::vector<SafetensorsSource> sources;
    std::vector<std::uint32_t> mergedTensor; // parallel to sources
    std::vector<ExportedInput> inputs;
    std::vector<LocatedTensor> located; // DCP: keeps the chunk archives the sources point into
};

bool underPrefix(const std::string& name, const std::string& prefix)
{
    return prefix.empty() || name == prefix || (name.starts_with(prefix) && name[prefix.size()] == '.');
}

ExportedInput leftBehind(std::string file, StateDictSelection& selection)
{
    return {std::move(file), selection.root, std::move(selection.droppedTensors),
        std::move(selection.droppedObjects), std::move(selection.globalsNotCarried)};
}

struct RemoveAtEnd {
    std::string path;
    ~RemoveAtEnd()
    {
        std::error_code ignored;
        std::filesystem::remove(path, ignored);
    }
};

bool isBundle(const Checkpoint& checkpoint)
{
    return checkpoint.shardSet && checkpoint.shardSet->bundle;
}

std::string bareName(std::string name)
{
    while (name.starts_with("./"))
        name.erase(0, 2);
    return name;
}

// A member the archive's damage cut short: its tensors are not all there.
std::optional<std::string> memberCutShort(const Checkpoint& bundle, std::size_t shard)
{
    const BundleInfo& info = *bundle.shardSet->bundle;
    for (const BundleMember& member : info.members)
        if (member.shard == static_cast<std::int32_t>(shard) && member.truncated)
            return "the member " + bundle.shardSet->shards[shard].name + " is cut short ("
                + (info.damage.empty() ? std::string("the archive ends inside it") : info.damage)
                + "): its weights are not all in the archive; nothing written";
    const ShardFile& file = bundle.shardSet->shards[shard];
    if (file.model() && file.model()->hasErrors())
        for (const Finding& finding : file.model()->findings)
            if (finding.severity == Severity::Error)
                return "the member " + file.name + " cannot be read whole: " + finding.message
                    + "; nothing written";
    return std::nullopt;
}

// A bundle's checkpoint member an export takes: the one `member` names, else its only one. Its
// index in the set's shards, or why there is none to take.
Expected<std::size_t> bundleMember(const Checkpoint& bundle, const std::string& member)
{
    const std::vector<ShardFile>& members = bundle.shardSet->shards;
    std::string names;
    for (const ShardFile& shard : members)
        names += (names.empty() ? "" : ", ") + shard.name;
    if (!member.empty()) {
        for (std::size_t i = 0; i < members.size(); ++i)
            if (bareName(members[i].name) == bareName(member)) {
                if (auto why = memberCutShort(bundle, i))
                    return makeError(*why);
                return i;
            }
        return makeError("the bundle has no checkpoint member named " + member
            + (names.empty() ? std::string(" (it carries none)")
                             : " (its checkpoint members: " + names + ")"));
    }
    if (members.size() == 1) {
        if (auto why = memberCutShort(bundle, 0))
            return makeError(*why);
        return std::size_t(0);
    }
    if (members.empty())
        return makeError("the bundle carries no checkpoint member");
    return makeError("the bundle carries " + std::to_string(members.size()) + " checkpoint members (" + names
        + "): name one with --member, or write them all to safetensors with `ckpt-inspect convert "
        + bundle.path + " -o OUT.safetensors`");
}

// The member's own plan: each of its storages (and tensors without one) where the bundle's plan
// puts it.
PlacementPlan planOfMember(const PlacementPlan& plan, const ShardFile& shard, const Checkpoint& member)
{
    PlacementPlan own(member);
    std::vector<std::pair<std::uint32_t, std::optional<std::string>>> devices;
    for (std::uint32_t k = 0; k < shard.storageCount; ++k)
        if (const std::int32_t unit = own.unitOfStorage(k); unit >= 0)
            devices.emplace_back(
                static_cast<std::uint32_t>(unit), plan.plannedDeviceOfStorage(shard.firstStorage + k));
    for (std::uint32_t t = 0; t < shard.model()->tensors.size(); ++t)
        if (shard.model()->tensors[t].storage < 0)
            if (const std::int32_t unit = own.unitOfTensor(t); unit >= 0)
                devices.emplace_back(
                    static_cast<std::uint32_t>(unit), plan.plannedDeviceOfTensor(shard.firstTensor + t));
    own.restore(devices);
    return own;
}

// Several members into one output: each whole, and no name two members share (it would be
// written twice).
Status checkBundleMembers(const Checkpoint& bundle, const Gathered& gathered)
{
    for (std::size_t i = 0; i < bundle.shardSet->shards.size(); ++i)
        if (auto why = memberCutShort(bundle, i))
            return makeError(*why);
    std::unordered_map<std::string, const Checkpoint*> seen;
    for (const SafetensorsSource& source : gathered.sources) {
        auto [at, added] = seen.emplace(source.name, source.checkpoint);
        if (!added && at->second != source.checkpoint)
            return makeError("the tensor name '" + source.name + "' is in more than one member ("
                + at->second->path + ", " + source.checkpoint->path + "): write one member with --member");
    }
    return {};
}

// A DCP folder: every tensor entry, read from its chunk's torch.save archive inside the .distcp
// file; entries that hold pickled values (BytesStorageMetadata) are not tensors and are dropped
// unread. --root and --select apply to the fully qualified names as they do to a state_dict's.
Status gatherDcp(
    const std::shared_ptr<const Checkpoint>& checkpoint, const ExtractOptions& options, Gathered& out)
{
    out.located = locateTensors(checkpoint);
    ExportedInput input;
    input.file = checkpoint->shardSet->indexPath;
    const std::string root = options.root.value_or("");
    input.root = root;
    auto relative
        = [&](const std::string& name) { return root.empty() ? name : name.substr(root.size() + 1); };
    auto selected = [&](const std::string& name) {
        if (!underPrefix(name, root) || name == root)
            return false;
        if (options.select.empty())
            return true;
        return std::any_of(options.select.begin(), options.select.end(),
            [&](const std::string& prefix) { return underPrefix(relative(name), prefix); });
    };
    for (const DcpEntry& entry : checkpoint->shardSet->dcp->entries)
        if (entry.isBytes)
            input.droppedObjects.push_back(
                {entry.fqn, "a pickled value (BytesStorageMetadata), not a tensor; not unpickled"});
    bool any = false;
    for (std::uint32_t t = 0; t < checkpoint->tensors.size(); ++t) {
        const std::string name(checkpoint->tensors[t].name);
        if (!selected(name)) {
            input.droppedTensors.push_back({name, "not selected"});
            continue;
        }
        const LocatedTensor& located = out.located[t];
        if (!located.checkpoint)
            return makeError("tensor '" + name + "': " + located.problem);
        out.sources.push_back({located.checkpoint.get(), located.tensor, relative(name)});
        out.mergedTensor.push_back(t);
        any = true;
    }
    if (!any)
        return makeError("no tensor to write: nothing in the DCP folder matches the selection");
    out.inputs.push_back(std::move(input));
    return {};
}

// Whether --select names some tensor of a shard (names relative to --root when given).
bool anySelected(const Checkpoint& shard, const ExtractOptions& options)
{
    const std::string root = options.root.value_or("");
    return std::any_of(shard.tensors.begin(), shard.tensors.end(), [&](const TensorEntry& tensor) {
        const std::string full(tensor.name);
        if (!underPrefix(full, root) || full == root)
            return false;
        const std::string name = root.empty() ? full : full.substr(root.size() + 1);
        return std::any_of(options.select.begin(), options.select.end(),
            [&](const std::string& prefix) { return underPrefix(name, prefix); });
    });
}

// A folder of shards (or an index, or one shard an index lists): each shard's state_dict, in the
// index's order; a shard that is missing or unreadable stops the export before anything is
// written, as exporting the rest would lose weights without saying so.
Status gatherShards(const Checkpoint& checkpoint, const ExtractOptions& options, Gathered& out)
{
    for (const ShardFile& shard : checkpoint.shardSet->shards) {
        if (!shard.problem.empty() || !shard.model())
            return makeError(shard.name + " is not a usable shard: "
                + (shard.problem.empty() ? std::string("could not be read") : shard.problem));
        if (!options.select.empty() && !anySelected(*shard.model(), options)) {
            // --select names nothing in this shard (a weight's scale may be all it was asked
            // for elsewhere): its tensors are left behind, not an error.
            ExportedInput input;
            input.file = shard.path;
            input.root = options.root.value_or("");
            for (const TensorEntry& tensor : shard.model()->tensors)
                input.droppedTensors.push_back({std::string(tensor.name), "not selected"});
            out.inputs.push_back(std::move(input));
            continue;
        }
        auto selection = selectStateDict(*shard.model(), options);
        if (!selection)
            return makeError(shard.name + ": " + selection.error().message);
        for (const SelectedTensor& tensor : selection->tensors) {
            out.sources.push_back({shard.model().get(), tensor.tensor, tensor.name});
            out.mergedTensor.push_back(shard.firstTensor + tensor.tensor);
        }
        out.inputs.push_back(leftBehind(shard.path, *selection));
    }
    if (out.sources.empty())
        return makeError("no tensor to write: nothing in the shards matches the selection");
    return {};
}

// A selected quantized weight takes its scales along (core/model/quantgroups.h) wherever they lie
// in a set of shards: selectStateDict does so within one file, and a shard's selection sees only
// that shard, so the set's scales are named in the selection itself.
ExtractOptions withScalesAlong(const Checkpoint& checkpoint, const ExtractOptions& options)
{
    if (options.select.empty())
        return options;
    ExtractOptions out = options;
    const std::string root = options.root.value_or("");
    auto relative = [&](const std::string& name) -> std::optional<std::string> {
        if (root.empty())
            return name;
        if (!underPrefix(name, root) || name == root)
            return std::nullopt;
        return name.substr(root.size() + 1);
    };
    const std::shared_ptr<const QuantScan> quantScan = quantScanOf(checkpoint);
    for (const QuantGroup& group : quantScan->groups) {
        const auto weight = relative(std::string(checkpoint.tensors[group.weight].name));
        if (!weight
            || std::none_of(options.select.begin(), options.select.end(),
                [&](const std::string& prefix) { return underPrefix(*weight, prefix); }))
            continue;
        for (const QuantScale& scale : group.scales)
            if (auto name = relative(std::string(checkpoint.tensors[scale.tensor].name)))
                out.select.push_back(std::move(*name));
    }
    return out;
}

Status gather(
    const std::shared_ptr<const Checkpoint>& checkpoint, const ExtractOptions& options, Gathered& out)
{
    if (checkpoint->shardSet && checkpoint->shardSet->dcp)
        return gatherDcp(checkpoint, withScalesAlong(*checkpoint, options), out);
    if (checkpoint->shardSet) {
        if (Status status = gatherShards(*checkpoint, withScalesAlong(*checkpoint, options), out))
            return status;
        return isBundle(*checkpoint) ? checkBundleMembers(*checkpoint, out) : Status {};
    }
    auto selection = selectStateDict(*checkpoint, options);
    if (!selection)
        return selection.error();
    for (const SelectedTensor& tensor : selection->tensors) {
        out.sources.push_back({checkpoint.get(), tensor.tensor, tensor.name});
        out.mergedTensor.push_back(tensor.tensor);
    }
    out.inputs.push_back(leftBehind(checkpoint->path, *selection));
    return {};
}

ExportWeightsOutcome stopped(const ExportWeightsRequest& request, ExportWeightsStatus status, std::string why)
{
    ExportWeightsOutcome outcome;
    outcome.status = status;
    outcome.input = request.input ? request.input->path : std::string();
    outcome.outputPath = request.outputPath;
    outcome.format = request.format;
    outcome.why = std::move(why);
    return outcome;
}

// The safety verdict's callables, added to the first input's globals where that list lacks them.
void nameUnsafeCallables(const Checkpoint& checkpoint, ExportWeightsOutcome& outcome)
{
    const SafetyVerdict safety
        = checkpoint.shardSet ? rateShardSafety(checkpoint) : ratePickleSafety(checkpoint);
    for (const UnsafeCallable& callable : safety.unsafe)
        outcome.unsafeCallables.push_back(callable.name);
    if (outcome.inputs.empty())
        return;
    std::vector<std::string>& globals = outcome.inputs.front().globalsNotCarried;
    for (const std::string& name : outcome.unsafeCallables)
        if (std::find(globals.begin(), globals.end(), name) == globals.end())
            globals.push_back(name);
    if (outcome.stateDict && !outcome.fromFolder)
        outcome.stateDict->globalsNotCarried = globals;
}

// A folder to one torch file: its tensors are gathered into one safetensors file beside the output
// (the writers copy storages from one input file), which is then written as the state_dict with the
// devices the folder's plan gives each tensor, and removed.
Status folderToTorch(const ExportWeightsRequest& request, Gathered& gathered, ExportWeightsOutcome& outcome)
{
    const Checkpoint& input = *request.input;
    const std::string gatheredPath
        = request.outputPath + ".gathering-" + std::to_string(::getpid()) + ".safetensors";
    const RemoveAtEnd removeAtEnd {gatheredPath};
    SafetensorsOptions gatherOptions;
    gatherOptions.progress = request.options.progress;
    gatherOptions.verifyAfterWriting = request.options.verifyAfterWriting;
    // --dtype is applied once, when the state_dict is written from the gathered tensors.
    auto written = writeSafetensors(gathered.sources, gatheredPath, gatherOptions);
    if (!written)
        return written.error();
    outcome.safetensors = std::move(*written);
    auto source = std::make_shared<const Checkpoint>(readCheckpoint(gatheredPath));
    if (source->hasErrors())
        return makeError("the gathered tensors of " + input.path + " do not read back cleanly");
    // Each tensor keeps the device the folder's plan gives it (its recorded one without a plan);
    // none recorded: the default device.
    const PlacementPlan recorded(input);
    const PlacementPlan& folderPlan = request.plan ? *request.plan : recorded;
    std::unordered_map<std::string, std::optional<std::string>> deviceByName;
    for (std::size_t k = 0; k < gathered.sources.size(); ++k)
        deviceByName.emplace(
            gathered.sources[k].name, folderPlan.plannedDeviceOfTensor(gathered.mergedTensor[k]));
    PlacementPlan plan(*source);
    std::vector<std::pair<std::uint32_t, std::optional<std::string>>> devices;
    for (std::uint32_t t = 0; t < source->tensors.size(); ++t) {
        const auto it = deviceByName.find(std::string(source->tensors[t].name));
        const std::int32_t unit = plan.unitOfTensor(t);
        if (it != deviceByName.end() && it->second && unit >= 0)
            devices.emplace_back(static_cast<std::uint32_t>(unit), it->second);
    }
    plan.restore(devices);
    ExtractOptions options = request.options;
    options.root = "";
    options.select.clear();
    auto stateDict = writeExtractedStateDict(*source, plan, request.outputPath, options);
    if (!stateDict)
        return stateDict.error();
    outcome.stateDict = std::move(*stateDict);
    outcome.stateDictSource = std::move(source);
    return {};
}

} // namespace

WeightsFormat weightsFormatFor(const std::string& outputPath, std::uint64_t maxShardBytes)
{
    return outputPath.ends_with(".safetensors") || maxShardBytes != 0 ? WeightsFormat::Safetensors
                                                                      : WeightsFormat::TorchStateDict;
}

std::uint64_t ExportWeightsOutcome::tensorsWritten() const
{
    if (stateDict)
        return stateDict->tensors.size();
    return safetensors ? safetensors->tensorsWritten : 0;
}

std::string ExportWeightsOutcome::summary() const
{
    if (stateDict)
        return stateDict->summary();
    return safetensors ? safetensors->summary() : why;
}

int ExportWeightsOutcome::exitCode() const
{
    switch (status) {
    case ExportWeightsStatus::Written:
        return 0;
    case ExportWeightsStatus::Usage:
        return 64;
    case ExportWeightsStatus::Failed:
        break;
    }
    return 2;
}

std::optional<ExportWeightsOutcome> refuseExportWeights(const ExportWeightsRequest& request)
{
    if (!request.input)
        return stopped(request, ExportWeightsStatus::Failed, "no checkpoint to export");
    const Checkpoint& input = *request.input;
    const std::string& path = input.path;
    if (input.format == CheckpointFormat::NotACheckpoint)
        return stopped(request, ExportWeightsStatus::Failed, path + ": " + input.container.description);
    const bool toTorch = request.format == WeightsFormat::TorchStateDict;
    switch (request.kind) {
    case WeightsExportKind::Extract:
        // A bundle: its one checkpoint member (or the one named), read from the archive's bytes.
        if (isBundle(input)) {
            if (auto member = bundleMember(input, request.member); !member)
                return stopped(request, ExportWeightsStatus::Failed, path + ": " + member.error().message);
            break;
        }
        // A folder reads as one checkpoint (as `info` shows it), but an extract is one torch.save
        // file from one input file; convert takes the whole set.
        if (input.shardSet)
            return stopped(request, ExportWeightsStatus::Failed,
                path + " is " + input.container.description
                    + "; extract writes one file from one file: extract each shard, or write the whole set "
                      "with `ckpt-inspect convert "
                    + path + " -o OUT.pt` (or OUT.safetensors)");
        break;
    case WeightsExportKind::Convert:
        if (toTorch && !formatCapabilities(input).convertsToTorch)
            return stopped(request, ExportWeightsStatus::Usage,
                path
                    + " is not a safetensors file; to write a torch file from a torch checkpoint use "
                      "extract, "
                      "to write safetensors name OUT.safetensors or give --max-shard-size");
        break;
    case WeightsExportKind::Export:
        break;
    }
    if (!toTorch && request.options.plainValues)
        return stopped(request, ExportWeightsStatus::Usage,
            "--plain-values writes NumPy values into a torch state_dict's pickle; safetensors holds only "
            "tensors (name OUT.pt)");
    if (!request.member.empty()) {
        if (!isBundle(input))
            return stopped(request, ExportWeightsStatus::Usage,
                "--member names a checkpoint inside a bundle (tar, tar.gz, .nemo, zip); " + path
                    + " is none");
        if (auto member = bundleMember(input, request.member); !member)
            return stopped(request, ExportWeightsStatus::Failed, path + ": " + member.error().message);
    }
    if (!toTorch && request.devicesGiven)
        return stopped(request, ExportWeightsStatus::Usage,
            "safetensors records no device; --device, --map, --tensor and --module apply only when writing a "
            "torch file");
    return std::nullopt;
}

ExportWeightsOutcome exportWeights(const ExportWeightsRequest& request)
{
    if (auto refused = refuseExportWeights(request))
        return std::move(*refused);
    const std::shared_ptr<const Checkpoint>& checkpoint = request.input;
    if (isBundle(*checkpoint) && (request.kind == WeightsExportKind::Extract || !request.member.empty())) {
        // One member: exported as the file it is (its bytes read from the archive, in place or
        // decompressed), with the devices the bundle's plan gives its storages.
        const ShardFile& shard = checkpoint->shardSet->shards[*bundleMember(*checkpoint, request.member)];
        std::shared_ptr<const Checkpoint> member = shard.model();
        // The torch writer copies storage records from a file: the member's bytes (in place in the
        // bundle, or decompressed) are put in a temporary file beside the output first, as the
        // bundle writer does, and read from there; it is removed at the end.
        const std::string memberPath = request.outputPath + ".member-" + std::to_string(::getpid());
        RemoveAtEnd removeMember {memberPath};
        if (request.format == WeightsFormat::TorchStateDict) {
            auto copy = AtomicOutputFile::create(memberPath, checkpoint->path, shard.model()->fileSize);
            Status failed = copy ? (*copy)->write(shard.model()->file->bytes()) : Status(copy.error());
            if (!failed)
                failed = (*copy)->commit();
            if (failed)
                return stopped(request, ExportWeightsStatus::Failed, shard.name + ": " + failed->message);
            member = std::make_shared<const Checkpoint>(readCheckpoint(memberPath));
            if (member->storages.size() != shard.storageCount)
                return stopped(request, ExportWeightsStatus::Failed,
                    shard.name + ": the member reads differently once copied out of the bundle");
        }
        const PlacementPlan recorded(*checkpoint);
        const PlacementPlan own = planOfMember(request.plan ? *request.plan : recorded, shard, *member);
        ExportWeightsRequest memberRequest = request;
        memberRequest.input = member;
        memberRequest.plan = &own;
        memberRequest.member.clear();
        memberRequest.kind = WeightsExportKind::Export; // what this kind allows was judged on the bundle
        ExportWeightsOutcome outcome = exportWeights(memberRequest);
        outcome.input = checkpoint->path;
        if (!outcome.inputs.empty())
            outcome.inputs.front().file = shard.model()->path; // "BUNDLE!/member"
        if (!outcome.written() && !outcome.why.empty())
            outcome.why = shard.name + ": " + outcome.why;
        return outcome;
    }
    ExportWeightsOutcome outcome = stopped(request, ExportWeightsStatus::Failed, {});
    outcome.fromFolder = checkpoint->shardSet != nullptr;
    const bool toTorch = request.format == WeightsFormat::TorchStateDict;

    if (toTorch && !outcome.fromFolder) {
        // One file: the state_dict straight from its storages, shared ones shared.
        if (checkpoint->format == CheckpointFormat::Safetensors && checkpoint->hasErrors()) {
            for (const Finding& finding : checkpoint->findings)
                if (finding.severity == Severity::Error) {
                    outcome.why = checkpoint->path + ": " + finding.message;
                    return outcome;
                }
        }
        const PlacementPlan recorded(*checkpoint);
        ExtractOptions options = request.options;
        if (checkpoint->format == CheckpointFormat::Safetensors)
            options.root = "";
        auto written = writeExtractedStateDict(
            *checkpoint, request.plan ? *request.plan : recorded, request.outputPath, options);
        if (!written) {
            outcome.why = written.error().message;
            return outcome;
        }
        outcome.inputs.push_back({checkpoint->path, written->root, written->droppedTensors,
            written->droppedObjects, written->globalsNotCarried});
        outcome.stateDict = std::move(*written);
        outcome.stateDictSource = checkpoint;
    } else {
        Gathered gathered;
        if (Status status = gather(checkpoint, request.options, gathered)) {
            outcome.why = checkpoint->path + ": " + status->message;
            return outcome;
        }
        outcome.inputs = std::move(gathered.inputs);
        if (toTorch) {
            if (Status status = folderToTorch(request, gathered, outcome)) {
                outcome.why = status->message;
                return outcome;
            }
        } else {
            SafetensorsOptions options;
            options.maxShardBytes = request.maxShardBytes;
            options.progress = request.options.progress;
            options.verifyAfterWriting = request.options.verifyAfterWriting;
            options.castFloatsTo = request.options.castFloatsTo;
            auto written = writeSafetensors(gathered.sources, request.outputPath, options);
            if (!written) {
                outcome.why = written.error().message;
                return outcome;
            }
            outcome.safetensors = std::move(*written);
        }
    }
    nameUnsafeCallables(*checkpoint, outcome);
    outcome.status = ExportWeightsStatus::Written;
    return outcome;
}

} // namespace ckpt
