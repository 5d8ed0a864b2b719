// SPDX-License-Identifier: MIT
#include "core/read/picklesection.h"

namespace ckpt {

void runPickleSection(Checkpoint& checkpoint, PickleSection& section, ByteView bytes, bool inFile,
    const PickleMachine& machine, const PickleLimits& limits)
{
    section.firstNode = static_cast<NodeId>(checkpoint.graph.size());
    section.run = machine.run(bytes, checkpoint.graph);
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
