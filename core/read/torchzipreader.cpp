// SPDX-License-Identifier: MIT
// Reads torch.save's zip format and TorchScript archives (torch-format.md §1, §2, §5).
#include "core/read/torchzipreader.h"

#include "core/format/inflate.h"
#include "core/format/ziparchive.h"
#include "core/format/zipformat.h"
#include "core/io/mappedfile.h"
#include "core/read/checkpointbuilder.h"
#include "core/read/checkpointreader.h"
#include "core/read/modeljsonreader.h"
#include "core/read/picklesection.h"
#include "core/read/pt2reader.h"

#include <algorithm>
#include <charconv>

namespace ckpt {

namespace {

struct PickleBytes {
    std::optional<ByteView> view;
    ByteBuffer owned;
    ByteView bytes() const { return view ? *view : ByteView(owned); }
};

std::optional<PickleBytes> loadRecord(
    const ZipArchive& zip, const ZipEntry& entry, Checkpoint& checkpoint, const ReadOptions& options)
{
    PickleBytes result;
    if (auto view = zip.storedPayload(entry)) {
        result.view = view;
        return result;
    }
    auto payload = zip.readPayload(entry, options.maxPickleRecordBytes);
    if (!payload) {
        checkpoint.addFinding(Severity::Error, FindingCode::RecordUnreadable,
            "record " + std::string(entry.name()) + " cannot be read: " + payload.error().message,
            std::string(entry.name()), entry.dataOffset);
        return std::nullopt;
    }
    result.owned = std::move(*payload);
    return result;
}

std::string recordText(const ZipArchive& zip, const ZipEntry& entry)
{
    auto payload = zip.readPayload(entry, 4096);
    if (!payload)
        return {};
    return std::string(payload->begin(), payload->end());
}

// Runs one pickle record and walks it into the tree. Marks in `recordUsed` (by entry index) the
// record each new storage was found in. `lastPickle`: no pickle runs after this one, so the graph
// may be judged before its records are built (ReadOptions::judgeGraph).
void readPickleRecord(Checkpoint& checkpoint, const ZipArchive& zip, const ZipEntry& entry,
    const ReadOptions& options, const std::string& storageDirectory, const std::string& keyPrefix,
    const std::string& component, std::vector<bool>& recordUsed, bool lastPickle = false)
{
    auto bytes = loadRecord(zip, entry, checkpoint, options);
    if (!bytes)
        return;
    PickleSection section;
    section.record = entry.name();
    section.fileOffset = entry.dataOffset;
    runPickleSection(checkpoint, section, bytes->bytes(), bytes->view.has_value(), options.pickleLimits);
    // The graph holds what the pickle said: its pages need not stay resident under the records.
    if (bytes->view && checkpoint.file)
        checkpoint.file->releaseResidentPages(entry.dataOffset, bytes->bytes().size());

    CheckpointBuilder builder(checkpoint);
    if (lastPickle && judgeableBeforeRecords(checkpoint.graph, section.run, options)) {
        judgeGraphBeforeRecords(checkpoint, section, options);
        builder.releaseGraphAsConsumed = true;
    }
    builder.storageKeyPrefix = keyPrefix;
    const std::string prefix
        = checkpoint.archivePrefix.empty() ? std::string() : checkpoint.archivePrefix + "/";
    // Every storage of this pickle is named "<prefix><storageDirectory><key without keyPrefix>": the
    // storage keeps the shared stem and its key, not a string of its own.
    const InternedString recordStem(prefix + storageDirectory);
    std::string recordName; // reused: the look-up allocates nothing per storage
    struct {
        std::uint64_t count = 0;
        std::pair<std::string, std::uint64_t> first; // its name and local header offset
    } compressed; // storage records that are not stored: one finding for them all
    builder.locateStorageBytes = [&](StorageRecord& storage) {
        const std::string_view key = std::string_view(storage.key).substr(keyPrefix.size());
        storage.setRecord(recordStem, static_cast<std::uint32_t>(keyPrefix.size()));
        recordName.assign(recordStem).append(key);
        const ZipEntry* record = zip.find(recordName);
        if (!record) {
            storage.availableBytes = 0;
            checkpoint.addFinding(Severity::Error, FindingCode::RecordMissing,
                "storage " + storage.key + " is used by the pickle but the archive has no record "
                    + recordName + ": torch.load would fail with \"PytorchStreamReader failed locating file "
                    + storageDirectory + std::string(key) + ": file not found\"",
                recordName);
            return;
        }
        recordUsed[static_cast<std::size_t>(record - zip.entries().data())] = true;
        if (record->method != zipformat::kMethodStored) {
            // Deflated (TorchSharp and other zip writers): torch.load inflates it; so does every
            // reader of bytes here (core/read/storagebytes.h). One finding for the file, below.
            storage.availableBytes = record->payloadComplete ? record->uncompressedSize : 0;
            storage.deflated = record->method == zipformat::kMethodDeflate;
            if (compressed.count++ == 0)
                compressed.first = {recordName, record->localHeaderOffset};
            if (!storage.deflated)
                checkpoint.addFinding(Severity::Error, FindingCode::RecordUnreadable,
                    "record " + recordName + " uses compression method " + std::to_string(record->method)
                        + ", which neither torch nor this tool can read",
                    recordName, record->localHeaderOffset);
        } else {
            storage.dataOffset = record->dataOffset;
            const std::uint64_t fileSize = checkpoint.fileSize;
            storage.availableBytes = record->payloadComplete
                ? record->uncompressedSize
                : (record->dataOffset < fileSize
                        ? std::min(record->uncompressedSize, fileSize - record->dataOffset)
                        : 0);
        }
        if (storageDirectory == "traced_inputs/" && record->uncompressedSize == 0) {
            // torch.jit.save keeps traced example inputs as metadata only (shapes, no bytes).
            checkpoint.addFinding(Severity::Info, FindingCode::MetadataOnlyStorage,
                "record " + recordName
                    + " holds no bytes: TorchScript saves traced example inputs as metadata only",
                recordName);
        } else if (record->uncompressedSize != storage.nbytes && storage.nbytes != UINT64_MAX) {
            // (UINT64_MAX: a size that overflowed, already reported as storage-size-overflow.)
            checkpoint.addFinding(
                record->uncompressedSize < storage.nbytes ? Severity::Error : Severity::Warning,
                FindingCode::RecordSizeMismatch,
                "record " + recordName + " is " + formatThousands(record->uncompressedSize)
                    + " bytes but storage " + storage.key + " (" + formatThousands(storage.numel) + " x "
                    + storage.dtype + ") needs " + formatThousands(storage.nbytes)
                    + (record->uncompressedSize < storage.nbytes ? ": torch would read garbage past its end"
                                                                 : ": the extra bytes are ignored by torch"),
                recordName, record->localHeaderOffset);
        }
        if (!record->payloadComplete) {
            checkpoint.addFinding(Severity::Error, FindingCode::RecordTruncated,
                "record " + recordName + " is cut off by the end of the file: storage " + storage.key
                    + " has only " + formatThousands(storage.availableBytes.value_or(0)) + " of its "
                    + formatThousands(storage.nbytes) + " bytes",
                recordName, record->dataOffset);
        }
    };

    std::uint32_t parent = 0;
    std::string baseName;
    if (!component.empty()) {
        parent = checkpoint.addTreeNode(0, TreeNodeKind::Sequence, component);
        checkpoint.tree[parent].summary = entry.name();
        baseName = component;
    }
    addPickleRoots(builder, section.run, parent, baseName);
    if (compressed.count > 0)
        checkpoint.addFinding(Severity::Warning, FindingCode::CompressedStorage,
            formatThousands(compressed.count)
                + (compressed.count == 1 ? " storage record" : " storage records") + " of "
                + std::string(entry.name()) + (compressed.count == 1 ? " is" : " are") + " compressed ("
                + (compressed.count == 1 ? "" : "the first: ") + compressed.first.first
                + "), which torch.save never does: torch.load inflates "
                + (compressed.count == 1 ? "it" : "them")
                + ", but torch.load(mmap=True) reads the compressed bytes as the values without a word",
            compressed.first.first, compressed.first.second);
    addUnreadablePickleFinding(checkpoint, section.run, "the pickle in " + std::string(entry.name()),
        std::string(entry.name()), entry.dataOffset);
    section.storagesUsed = builder.storagesUsed();
    checkpoint.pickles.push_back(std::move(section));
}

} // namespace

void readTorchZip(Checkpoint& checkpoint, const ReadOptions& options)
{
    checkpoint.format = CheckpointFormat::TorchZip;
    // Kept with the checkpoint: the triage and the writers look at the same directory again.
    const auto archive = checkpoint.zip
        ? checkpoint.zip
        : std::make_shared<const ZipArchive>(ZipArchive::open(checkpoint.file));
    checkpoint.zip = archive;
    const ZipArchive& zip = *archive;
    for (const Finding& finding : zip.findings())
        checkpoint.findings.push_back(finding);
    // The directory and the local headers are parsed (the entries hold what they said): their
    // pages go back to the page cache, rather than stay resident under the graph and the records
    // built next (at 100,000 records, 31 MB of the file; issue 28).
    if (checkpoint.file)
        checkpoint.file->releaseResidentPages(0, checkpoint.file->size());
    if (!zip.hasEntries()) {
        checkpoint.addFinding(Severity::Error, FindingCode::ZipEmpty,
            "no records could be found in this zip archive: it is damaged or not a checkpoint");
        return;
    }
    // torch.export archives (.pt2) are torch zips (or plain zips) of another layout (pt2reader.h).
    if (const auto layout = exportArchiveLayout(zip)) {
        readExportArchive(checkpoint, *layout, options);
        return;
    }

    // torch takes the archive prefix from the first central-directory entry (§1.1).
    const std::string firstName(zip.entries().front().name());
    const auto slash = firstName.find('/');
    if (slash == std::string::npos) {
        checkpoint.addFinding(Severity::Error, FindingCode::NoArchivePrefix,
            "the archive's records are not in a folder; torch.load fails with \"file in archive is not in a "
            "subdirectory: "
                + firstName + "\"",
            firstName);
    } else {
        checkpoint.archivePrefix = firstName.substr(0, slash);
        for (const ZipEntry& entry : zip.entries()) {
            if (entry.name().compare(0, slash + 1, firstName, 0, slash + 1) != 0) {
                const std::string name(entry.name());
                checkpoint.addFinding(Severity::Error, FindingCode::MixedArchivePrefix,
                    "record " + name + " is not in the archive's folder " + checkpoint.archivePrefix
                        + "/; torch.load fails with \"file in archive is not in a subdirectory "
                        + checkpoint.archivePrefix + "/: " + name + "\"",
                    name);
                break;
            }
        }
    }
    const std::string prefix
        = checkpoint.archivePrefix.empty() ? std::string() : checkpoint.archivePrefix + "/";
    auto record = [&](const std::string& name) { return zip.find(prefix + name); };
    std::vector<bool> recordUsed(zip.entries().size());

    const ZipEntry* dataPickle = record("data.pkl");
    const ZipEntry* constantsPickle = record("constants.pkl");
    if (constantsPickle)
        checkpoint.format = CheckpointFormat::TorchScript;
    if (!dataPickle) {
        // Look for a data.pkl under any folder before giving up.
        for (const ZipEntry& entry : zip.entries())
            if (entry.name() == "data.pkl" || entry.name().ends_with("/data.pkl")) {
                dataPickle = &entry;
                break;
            }
    }

    // Version record (§1.5): torch refuses files without one, or outside 1..10.
    const ZipEntry* version = record(".data/version");
    if (!version)
        version = record("version");
    if (!version) {
        checkpoint.addFinding(Severity::Error, FindingCode::VersionMissing,
            "the archive has no version record; torch.load fails with \"Expected hasRecord(\"version\") to "
            "be true, but got false.\"");
    } else {
        const std::string text = recordText(zip, *version);
        std::uint64_t value = 0;
        auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc()) {
            checkpoint.addFinding(Severity::Error, FindingCode::VersionUnreadable,
                "the version record " + std::string(version->name()) + " does not hold a number",
                std::string(version->name()));
        } else if (value > 10) {
            checkpoint.addFinding(Severity::Error, FindingCode::VersionTooNew,
                "the archive says version " + std::to_string(value)
                    + "; torch.load fails with \"Attempted to read a PyTorch file with version "
                    + std::to_string(value) + ", but the maximum supported version for reading is 10.\"",
                std::string(version->name()));
        } else if (value < 1) {
            checkpoint.addFinding(Severity::Error, FindingCode::VersionTooOld,
                "the archive says version 0; torch.load fails with \"Attempted to read a PyTorch file with "
                "version 0, but the minimum supported version for reading is 1.\"",
                std::string(version->name()));
        }
    }
    if (const ZipEntry* byteorder = record("byteorder")) {
        const std::string text = recordText(zip, *byteorder);
        if (text == "big")
            checkpoint.addFinding(Severity::Info, FindingCode::BigEndian,
                "the tensors were written big-endian; torch byte-swaps them on a little-endian machine",
                std::string(byteorder->name()));
        else if (text != "little")
            checkpoint.addFinding(Severity::Error, FindingCode::ByteorderUnknown,
                "the byteorder record says '" + text.substr(0, 20)
                    + "'; torch.load fails with \"Unknown endianness type: " + text.substr(0, 20) + "\"",
                std::string(byteorder->name()));
    }

    const ZipEntry* modelJson = !dataPickle && !constantsPickle ? record("model.json") : nullptr;
    if (modelJson) {
        // TorchScript's oldest layout (PyTorch 1.0-1.3): model.json describes the tensors.
        readModelJson(checkpoint, zip, *modelJson, prefix, recordUsed);
        // Its attribute values (proto_version 2+, PyTorch 1.1-1.3): a pickle import_legacy.cpp
        // runs with the jit unpickler, rated like every other pickle. Its tensors are references
        // into model.json's table (torch.jit._pickle.build_tensor_from_id), listed there.
        if (const ZipEntry* attributes = record("attributes.pkl"))
            readPickleRecord(
                checkpoint, zip, *attributes, options, "tensors/", "tensors/", "attributes", recordUsed);
    } else if (!dataPickle) {
        checkpoint.addFinding(Severity::Error, FindingCode::DataPklMissing,
            "the archive has no data.pkl record, so it holds no torch.save object; torch.load fails with "
            "\"PytorchStreamReader failed locating file data.pkl: file not found\"");
    } else {
        readPickleRecord(
            checkpoint, zip, *dataPickle, options, "data/", {}, {}, recordUsed, !constantsPickle);
    }
    if (constantsPickle) {
        // TorchScript's other pickles: tensor constants of the code, the mobile interpreter's
        // bytecode (which shares the constants' storages) and traced example inputs.
        readPickleRecord(
            checkpoint, zip, *constantsPickle, options, "constants/", "constants/", "constants", recordUsed);
        if (const ZipEntry* bytecode = record("bytecode.pkl"))
            readPickleRecord(
                checkpoint, zip, *bytecode, options, "constants/", "constants/", "bytecode", recordUsed);
        if (const ZipEntry* tracedInputs = record("traced_inputs.pkl"))
            readPickleRecord(checkpoint, zip, *tracedInputs, options, "traced_inputs/", "traced_inputs/",
                "traced_inputs", recordUsed);
    }

    // Records no storage uses: harmless to torch, but a sign of an edited or foreign archive. A
    // storage marks the record it was found in, the first of its name; a later record repeating
    // that name counts as used with it, as it did when the storages' names were compared (sorting
    // a million names for that was a tenth of the launch).
    const ZipEntry* const firstEntry = zip.entries().data();
    auto isUsed = [&](const ZipEntry& entry) {
        if (recordUsed[static_cast<std::size_t>(&entry - firstEntry)])
            return true;
        const ZipEntry* first = zip.find(entry.name());
        return first != &entry && first && recordUsed[static_cast<std::size_t>(first - firstEntry)];
    };
    for (const ZipEntry& entry : zip.entries()) {
        const std::string_view name = entry.name();
        const std::string_view local = name.substr(std::min(prefix.size(), name.size()));
        const bool isStorageRecord = (modelJson ? local.starts_with("tensors/") : local.starts_with("data/"))
            || (constantsPickle && (local.starts_with("constants/") || local.starts_with("traced_inputs/")));
        if (isStorageRecord && !isUsed(entry))
            checkpoint.addFinding(Severity::Warning, FindingCode::RecordUnreferenced,
                "record " + std::string(name) + " (" + formatThousands(entry.uncompressedSize)
                    + " bytes) is not used by any tensor in the pickle",
                std::string(name), entry.localHeaderOffset);
    }

    CheckpointBuilder(checkpoint).checkViews();
}

} // namespace ckpt
