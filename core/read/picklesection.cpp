// SPDX-License-Identifier: MIT
#include "core/read/picklesection.h"

#include "core/read/checkpointreader.h"

#include <algorithm>

namespace ckpt {

namespace {

// What a plain state_dict's pickle calls: the rebuild of each tensor, its storage classes and
// OrderedDict (a state_dict and each tensor's backward hooks). Nothing among them makes the
// builder read beyond the values each entry reaches (a nested torch.save file would: its pickle
// runs into the graph while the records are built).
bool calledByPlainStateDict(const GlobalReference& global)
{
    if (global.module == "torch._utils")
        return global.name == "_rebuild_tensor_v2" || global.name == "_rebuild_tensor"
            || global.name == "_rebuild_parameter";
    if (global.module == "collections")
        return global.name == "OrderedDict";
    return global.module == "torch" && global.name.ends_with("Storage");
}

} // namespace

bool judgeableBeforeRecords(const PickleGraph& graph, const PickleRun& run, const ReadOptions& options)
{
    return options.judgeGraph && run.complete() && run.globalMutations.empty()
        && std::all_of(run.globals.begin(), run.globals.end(), calledByPlainStateDict)
        && CheckpointBuilder::consumableRoot(graph, run.root);
}

void judgeGraphBeforeRecords(Checkpoint& checkpoint, PickleSection& section, const ReadOptions& options)
{
    checkpoint.pickles.push_back(std::move(section));
    options.judgeGraph(checkpoint);
    section = std::move(checkpoint.pickles.back());
    checkpoint.pickles.pop_back();
}

void runPickleSection(
    Checkpoint& checkpoint, PickleSection& section, ByteView bytes, bool inFile, const PickleLimits& limits)
{
    section.firstNode = static_cast<NodeId>(checkpoint.graph.size());
    PickleLimits walking = limits;
    if (inFile && checkpoint.file) {
        // A few MB at a time, on the machine's progress calls: the whole pickle (11 MB of 100,000
        // tensors' data.pkl) stayed resident beside the growing graph, and made the peak of
        // info --json (issue 28). Pages read again later come back from the page cache unchanged.
        constexpr std::uint64_t kPiece = std::uint64_t(4) << 20;
        walking.progress = [&file = *checkpoint.file, start = section.fileOffset, released = std::uint64_t(0),
                               chained = limits.progress](std::uint64_t done, std::uint64_t total) mutable {
            if (done - released >= kPiece) {
                file.releaseResidentPages(start + released, done - released);
                released = done;
            }
            return !chained || chained(done, total);
        };
    }
    section.run = PickleMachine(std::move(walking)).run(bytes, checkpoint.graph);
    section.endNode = static_cast<NodeId>(checkpoint.graph.size());
    if (inFile)
        section.mappedByteLength = bytes.size();
    section.limits = limits;
    section.limits.progress = nullptr; // it can only cancel, and a cancelled run is never reused
}

void addPickleRoots(
    CheckpointBuilder& builder, const PickleRun& run, std::uint32_t treeParent, const std::string& baseName)
{
    builder.reserveForPersistentIds(run.persistentIdOffsets.size());
    if (run.root != kNoNode) {
        builder.addRoot(run.root, treeParent, {}, baseName);
        return;
    }
    for (std::size_t i = 0; i < run.stackAtError.size(); ++i) {
        const std::string name = "(incomplete " + std::to_string(i) + ")";
        builder.addRoot(
            run.stackAtError[i], treeParent, name, baseName.empty() ? name : baseName + "." + name);
    }
}

void addUnreadablePickleFinding(Checkpoint& checkpoint, const PickleRun& run, const std::string& what,
    const std::string& record, std::uint64_t pickleOffset)
{
    if (!run.error)
        return;
    checkpoint.addFinding(Severity::Error, FindingCode::PickleUnreadable,
        what + " could not be read to its end: " + *run.error
            + (run.stackAtError.empty() ? std::string()
                                        : "; what was read before that is shown as (incomplete N)"),
        record, pickleOffset + run.errorOffset);
}

} // namespace ckpt
