// SPDX-License-Identifier: MIT
// Reads the legacy stream format (torch-format.md §4.1, §4.2): magic number, protocol version,
// sys_info, the main pickle, the sorted key list, then each storage as int64 count + raw bytes.
#include "core/read/legacyreader.h"

#include "core/base/checkedarithmetic.h"
#include "core/io/mappedfile.h"
#include "core/model/dtype.h"
#include "core/read/checkpointbuilder.h"
#include "core/read/checkpointreader.h"
#include "core/read/picklesection.h"

#include <string_view>

namespace ckpt {

void readTorchLegacy(Checkpoint& checkpoint, const ReadOptions& options)
{
    checkpoint.format = CheckpointFormat::TorchLegacy;
    const ByteView bytes = checkpoint.file->bytes();
    // Whatever way this returns, the pages it walked (the pickles, each storage's count) go back
    // to the page cache: the graph holds what was read, and at 200,000 storages the pickle's
    // pages were 25 MB of the resident peak of check, which comes later (issue 28).
    struct ReleaseWalkedPages {
        const MappedFile& file;
        ~ReleaseWalkedPages() { file.releaseResidentPages(0, file.size()); }
    } releaseWalkedPages {*checkpoint.file};
    const PickleMachine machine(options.pickleLimits);
    std::uint64_t offset = 0;

    auto runAt = [&](const char* what) -> std::optional<PickleRun> {
        if (offset >= bytes.size()) {
            checkpoint.addFinding(Severity::Error, FindingCode::Truncated,
                std::string("the file ends at byte ") + formatThousands(bytes.size()) + " before the " + what
                    + ": it is truncated",
                {}, offset);
            return std::nullopt;
        }
        PickleRun run = machine.run(bytes.subspan(offset), checkpoint.graph);
        return run;
    };

    // 1-3: magic number, protocol version, sys_info. Each is a tiny pickle of its own.
    for (const char* header : {"magic number", "protocol version", "sys_info"}) {
        auto run = runAt(header);
        if (!run)
            return;
        if (run->error) {
            checkpoint.addFinding(Severity::Error, FindingCode::LegacyHeaderUnreadable,
                std::string("the legacy header's ") + header + " cannot be read: " + *run->error, {},
                offset + run->errorOffset);
            return;
        }
        if (std::string_view(header) == "protocol version" && checkpoint.graph.intValue(run->root) != 1001)
            checkpoint.addFinding(Severity::Error, FindingCode::LegacyProtocolVersion,
                "the legacy header says protocol version "
                    + std::to_string(checkpoint.graph.intValue(run->root))
                    + "; torch.load fails with \"Invalid protocol version: "
                    + std::to_string(checkpoint.graph.intValue(run->root)) + "\"",
                {}, offset);
        if (std::string_view(header) == "sys_info") {
            if (const ContainerBody* body = checkpoint.graph.bodyOf(run->root)) {
                for (std::size_t i = 0; i + 1 < body->dictItems.size(); i += 2)
                    if (checkpoint.graph.text(body->dictItems[i]) == "little_endian"
                        && checkpoint.graph.intValue(body->dictItems[i + 1]) == 0)
                        checkpoint.addFinding(Severity::Warning, FindingCode::BigEndian,
                            "sys_info says the file was written on a big-endian machine; its storages are "
                            "big-endian",
                            {}, offset);
            }
        }
        offset += run->endOffset;
    }

    // 4: the main pickle.
    if (offset >= bytes.size()) {
        runAt("main pickle"); // says the file is truncated
        return;
    }
    PickleSection section;
    section.record = "main pickle";
    section.fileOffset = offset;
    runPickleSection(checkpoint, section, bytes.subspan(offset), true, options.pickleLimits);
    // The graph holds what the pickle said: its pages (the most of the file) need not stay
    // resident under the records built next.
    checkpoint.file->releaseResidentPages(0, offset + section.run.endOffset);
    // The key list is the file's last pickle: where the graph is judged before the records are
    // built, it runs first, so that the judgement sees every node the graph will hold.
    std::optional<PickleRun> keysRunAhead;
    CheckpointBuilder builder(checkpoint);
    if (judgeableBeforeRecords(checkpoint.graph, section.run, options)
        && offset + section.run.endOffset < bytes.size()) {
        keysRunAhead = machine.run(bytes.subspan(offset + section.run.endOffset), checkpoint.graph);
        judgeGraphBeforeRecords(checkpoint, section, options);
        builder.releaseGraphAsConsumed = true;
    }
    addPickleRoots(builder, section.run);
    for (StorageRecord& storage : checkpoint.storages) {
        storage.setRecord(InternedString("legacy storage "), 0);
        storage.availableBytes = 0;
    }
    // Not damage: the bytes are intact and load with encoding='latin1' (the load simulation says
    // what the default does).
    if (section.run.undecodableStringOffset)
        checkpoint.addFinding(Severity::Info, FindingCode::Python2StringNotUtf8,
            "a Python 2 string in the main pickle is not UTF-8; torch.load fails with \"UnicodeDecodeError: "
                + section.run.undecodableStringError
                + "\" (it decodes Python 2 strings with encoding='utf-8' unless told otherwise)",
            {}, offset + *section.run.undecodableStringOffset);
    const bool mainComplete = section.run.complete();
    addUnreadablePickleFinding(checkpoint, section.run, "the main pickle", {}, offset);
    const std::uint64_t mainEnd = offset + section.run.endOffset;
    section.storagesUsed = builder.storagesUsed();
    checkpoint.pickles.push_back(std::move(section));
    if (!mainComplete) {
        builder.checkViews();
        return;
    }
    offset = mainEnd;

    // 5: the key list, sorted as strings; the storages follow in that order.
    auto keysRun = keysRunAhead ? std::move(keysRunAhead) : runAt("list of storage keys");
    if (!keysRun) {
        builder.checkViews();
        return;
    }
    if (keysRun->error) {
        checkpoint.addFinding(Severity::Error, FindingCode::LegacyKeysUnreadable,
            "the list of storage keys cannot be read: " + *keysRun->error + "; no tensor data can be located",
            {}, offset + keysRun->errorOffset);
        builder.checkViews();
        return;
    }
    // The keys as the pickle holds them, each turned into text when it is looked at: a vector of
    // 200,000 key strings, doubled as it grew, was the peak of `check`.
    const std::vector<NodeId> keys = checkpoint.graph.sequence(keysRun->root);
    std::string keyText;
    const auto textOf = [&](NodeId node) -> const std::string& {
        if (checkpoint.graph.kind(node) == NodeKind::Int)
            keyText = std::to_string(checkpoint.graph.intValue(node));
        else
            keyText = checkpoint.graph.text(node);
        return keyText;
    };
    offset += keysRun->endOffset;

    // 6: raw storages: int64 element count, then the bytes.
    // Which storages the key list names, marked as the loop below finds each key's storage: a set
    // of the listed keys (a heap node per key) was a sixth of `check` on 200,000 storages.
    std::vector<bool> listed(checkpoint.storages.size());
    std::size_t incomplete = 0;
    std::size_t keysLocated = 0;
    for (const NodeId keyNode : keys) {
        const std::string& key = textOf(keyNode);
        const std::optional<std::uint32_t> index = checkpoint.storageIndex(key);
        if (!index) {
            checkpoint.addFinding(Severity::Error, FindingCode::LegacyKeyUnknown,
                "the key list names storage " + key
                    + ", which the pickle never uses, so its size is unknown and the storages after it "
                      "cannot be located",
                {}, offset);
            break;
        }
        ++keysLocated;
        listed[*index] = true;
        StorageRecord& storage = checkpoint.storages[*index];
        auto count = readLittleEndian<std::uint64_t>(bytes, offset);
        if (!count) {
            ++incomplete;
            storage.availableBytes = 0;
            offset = bytes.size();
            continue;
        }
        // From the dtype where it is known: nbytes / numel is wrong for a storage whose size
        // overflowed (its nbytes saturates).
        const auto dtype = dtypeByName(storage.dtype);
        const std::uint64_t elementSize = dtype ? dtype->elementSize
            : storage.numel                     ? storage.nbytes / storage.numel
                                                : 1;
        if (*count != storage.numel) {
            checkpoint.addFinding(Severity::Error, FindingCode::RecordSizeMismatch,
                "storage " + storage.key + " holds " + formatThousands(*count)
                    + " elements in the file but the pickle says " + formatThousands(storage.numel)
                    + "; torch.load fails with \"storage has wrong byte size: expected "
                    + std::to_string(storage.nbytes) + " got "
                    + std::to_string(saturatingMultiply(*count, elementSize)) + "\"",
                storage.record(), offset);
        }
        const std::uint64_t dataStart = offset + 8;
        const std::uint64_t length
            = *count > (bytes.size() / (elementSize ? elementSize : 1)) ? bytes.size() : *count * elementSize;
        storage.dataOffset = dataStart;
        storage.availableBytes
            = dataStart >= bytes.size() ? 0 : std::min<std::uint64_t>(length, bytes.size() - dataStart);
        if (*storage.availableBytes < storage.nbytes)
            ++incomplete;
        offset = dataStart + length;
        if (offset > bytes.size())
            offset = bytes.size();
    }
    // The keys after an unknown one are still listed, though their bytes cannot be located.
    for (std::size_t k = keysLocated; k < keys.size(); ++k)
        if (const std::optional<std::uint32_t> index = checkpoint.storageIndex(textOf(keys[k])))
            listed[*index] = true;
    for (const StorageRecord& storage : checkpoint.storages) {
        if (!listed[static_cast<std::size_t>(&storage - checkpoint.storages.data())])
            checkpoint.addFinding(Severity::Error, FindingCode::RecordMissing,
                "storage " + storage.key
                    + " is used by the pickle but missing from the file's key list; torch.load cannot "
                      "restore it",
                storage.record());
    }
    if (incomplete) {
        std::size_t complete = 0;
        for (const StorageRecord& storage : checkpoint.storages)
            complete += storage.bytesComplete() ? 1 : 0;
        checkpoint.addFinding(Severity::Error, FindingCode::Truncated,
            "the file ends before the data of " + formatThousands(incomplete)
                + " storage(s): it is truncated; " + formatThousands(complete) + " of "
                + formatThousands(checkpoint.storages.size()) + " storages are complete and can be salvaged",
            {}, bytes.size());
    } else if (offset < bytes.size()) {
        checkpoint.addFinding(Severity::Warning, FindingCode::TrailingBytes,
            formatThousands(bytes.size() - offset) + " bytes follow the last storage; torch ignores them", {},
            offset);
    }
    builder.checkViews();
}

} // namespace ckpt
