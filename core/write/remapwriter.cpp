// SPDX-License-Identifier: MIT
#include "core/write/remapwriter.h"
#include "core/io/inputdescriptor.h"

#include "core/base/escaping.h"
#include "core/format/crc32.h"
#include "core/format/inflate.h"
#include "core/format/ziparchive.h"
#include "core/format/zipformat.h"
#include "core/io/atomicoutputfile.h"
#include "core/io/mappedfile.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/model/formatcapabilities.h"
#include "core/pickle/pickleemitter.h"
#include "core/pickle/picklemachine.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/read/storagebytes.h"
#include "core/write/nestedblobwriter.h"
#include "core/write/pt2writer.h"
#include "core/write/readbackverifier.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <set>
#include <unistd.h>

namespace ckpt {

namespace {

// A record's device tag as the results report it.
std::optional<std::string> recordedTag(const OptionalInternedString& device)
{
    return device ? std::optional<std::string>(device->str()) : std::nullopt;
}

std::string zeroPadded(std::uint64_t value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%020llu", static_cast<unsigned long long>(value));
    return buffer;
}

// torch's .data/serialization_id is 40 digits: a hash of the record names and a combination
// of their CRCs (torch only logs it). A copy gets a fresh one computed the same way.
std::string serializationId(const std::vector<WrittenRecord>& records)
{
    std::uint64_t nameHash = 1469598103934665603ull;
    std::uint64_t crcs = 0;
    for (const WrittenRecord& record : records) {
        for (unsigned char c : record.name) {
            nameHash ^= c;
            nameHash *= 1099511628211ull;
        }
        crcs = crcs * 31 + record.crc32;
    }
    return zeroPadded(nameHash) + zeroPadded(crcs);
}

bool isAscii(const std::string& text)
{
    return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// torch.save(obj, path) names the archive after the file: basename without its last extension.
std::string archiveNameFor(const std::string& outputPath)
{
    std::string name = outputPath.substr(outputPath.find_last_of('/') + 1);
    if (auto dot = name.find_last_of('.'); dot != std::string::npos && dot > 0)
        name = name.substr(0, dot);
    if (name.empty() || !isAscii(name))
        return "archive";
    return name;
}

// TorchScript keeps traced example inputs as metadata only: their records hold no bytes.
// The torch.save file inside bytes that holds `storage`, when it is one (core/read/nestedblobs.cpp):
// complete when the file inside the bytes read whole (protocols 0-2 keep its bytes as text, not
// in the file as such).
const NestedBlob* nestedBlobOf(const Checkpoint& checkpoint, const StorageRecord& storage)
{
    const auto index = static_cast<std::uint32_t>(&storage - checkpoint.storages.data());
    for (const NestedBlob& blob : checkpoint.nestedBlobs)
        if (blob.storage == index)
            return blob.bytesComplete ? &blob : nullptr;
    return nullptr;
}

// TorchScript's model.json layout (PyTorch 1.0-1.3) records each tensor's device in its TensorDef
// (`device`, caffe2/proto/torch.proto; import_legacy.cpp puts the tensor's storage there). The
// copy's model.json gives every TensorDef the planned device of the storage (tensors/N record) it
// views: import_legacy.cpp requires one device per record, and the plan places storages whole.
// Every other member is kept as read (protobuf's JSON parser reads any layout of the text); no
// device moved: nothing (the record is copied byte for byte).
Expected<std::optional<ByteBuffer>> remappedModelJson(
    const Checkpoint& checkpoint, const PlacementPlan& plan, const ZipArchive& zip, const ZipEntry& entry)
{
    auto bytes = zip.readPayload(entry, 256ull << 20);
    if (!bytes)
        return makeError("cannot read " + std::string(entry.name()) + ": " + bytes.error().message);
    auto model = parseJson(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
    if (!model || !model->isObject())
        return makeError(std::string(entry.name()) + " is not a JSON object");
    JsonValue* tensors = model->find("tensors");
    bool changed = false;
    if (tensors && tensors->array()) {
        for (JsonValue& tensorDef : *tensors->array()) {
            const JsonValue& data = tensorDef.member("data");
            const std::string& key = data.member("key").toString();
            const auto storage = checkpoint.storageIndex(key);
            if (key.empty() || !storage)
                continue;
            const std::optional<std::string> planned = plan.plannedDeviceOfStorage(*storage);
            if (!planned || tensorDef.member("device").toString() == *planned)
                continue;
            tensorDef.set("device", JsonValue(*planned));
            changed = true;
        }
    }
    if (!changed)
        return std::optional<ByteBuffer>();
    const std::string text = model->toJson(JsonStyle::Pretty);
    return std::optional<ByteBuffer>(ByteBuffer(text.begin(), text.end()));
}

bool isMetadataOnly(const StorageRecord& storage)
{
    return storage.key.starts_with("traced_inputs/")
        && storage.availableBytes == std::optional<std::uint64_t>(0);
}

} // namespace

Status whyCannotBeRemapped(const Checkpoint& checkpoint)
{
    // What a copy with a plan does is the format's row (core/model/formatcapabilities.h); only the
    // per-file exception below is not a property of the format.
    const FormatCapabilities& row = formatCapabilities(checkpoint.format);
    if (!row.readable)
        return makeError("not a PyTorch checkpoint: " + checkpoint.container.description);
    if (row.copyWithPlan != CopyWithPlan::Rewritten && row.copyWithPlan != CopyWithPlan::ConvertedToZip)
        return makeError(std::string(row.noDeviceReason) + ", so there is nothing to remap");
    if (checkpoint.format == CheckpointFormat::ExportArchive)
        if (Status layout = whyExportArchiveCannotBeRemapped(checkpoint))
            return layout;
    if (checkpoint.format == CheckpointFormat::TorchTar && checkpoint.tarTensorsMember)
        return makeError(
            "this 0.1.x tar file keeps its tensors in a 'tensors' member; converting that layout is not "
            "supported (files that reference storages directly are)");
    for (const Finding& finding : checkpoint.findings)
        if (finding.severity == Severity::Error)
            return makeError("the checkpoint has a problem a copy would carry: " + finding.message,
                finding.offset, finding.record);
    for (const PickleSection& section : checkpoint.pickles)
        if (!section.run.complete())
            return makeError("the pickle in " + section.record + " could not be read to its end ("
                + section.run.error.value_or("incomplete") + "); a copy would carry the damage");
    for (const StorageRecord& storage : checkpoint.storages)
        if (!storage.bytesReadable() && !isMetadataOnly(storage) && !nestedBlobOf(checkpoint, storage))
            return makeError("the bytes of storage " + storage.key + " (" + storage.record()
                    + ") are not complete in the file; a copy would carry the damage",
                std::nullopt, storage.record());
    return std::nullopt;
}

namespace {

struct CrcCheck {
    std::string key;
    std::uint32_t crc;
    std::uint64_t length; // of its record
};

} // namespace

Status checkRewrittenGlobals(const Checkpoint& input, const std::string& record, ByteView rewrittenPickle,
    bool torchDeviceWritten, const std::set<std::pair<std::string, std::string>>& renamedTo)
{
    std::set<std::pair<std::string, std::string>> named = renamedTo;
    for (const PickleSection& section : input.pickles)
        for (const GlobalReference& global : section.run.globals)
            named.emplace(global.module, global.name);
    if (torchDeviceWritten)
        named.emplace("torch", "device");
    PickleGraph graph;
    const PickleRun run = PickleMachine().run(rewrittenPickle, graph);
    if (!run.complete())
        return makeError("refusing to write the copy: its rewritten " + printableText(record)
            + " does not read back (" + printableText(run.error.value_or("incomplete")) + ")");
    for (const GlobalReference& global : run.globals)
        if (!named.count({global.module, global.name}))
            return makeError("refusing to write the copy: its rewritten " + printableText(record)
                + " would name the global " + printableText(global.module) + "." + printableText(global.name)
                + ", which the input never names");
    return std::nullopt;
}

Expected<GlobalRename> GlobalRename::parse(const std::string& text)
{
    const auto equals = text.find('=');
    if (equals == std::string::npos)
        return makeError("expects OLD=NEW (e.g. numpy.core.multiarray.scalar=numpy._core.multiarray.scalar)");
    GlobalRename rename {text.substr(0, equals), text.substr(equals + 1)};
    auto valid = [](const std::string& path) {
        if (path.empty() || path.front() == '.' || path.back() == '.' || path.find("..") != std::string::npos)
            return false;
        return std::all_of(path.begin(), path.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'
                || c == '.';
        });
    };
    if (!valid(rename.from) || !valid(rename.to))
        return makeError(
            "'" + text + "': OLD and NEW must be dotted Python names (module.name or a module path)");
    return rename;
}

std::optional<std::pair<std::string, std::string>> GlobalRename::apply(
    const std::string& module, const std::string& name) const
{
    if (module + "." + name == from) {
        const auto dot = to.find_last_of('.');
        if (dot == std::string::npos)
            return std::make_pair(std::string("builtins"), to);
        return std::make_pair(to.substr(0, dot), to.substr(dot + 1));
    }
    if (module == from)
        return std::make_pair(to, name);
    if (module.size() > from.size() && module.starts_with(from) && module[from.size()] == '.')
        return std::make_pair(to + module.substr(from.size()), name);
    return std::nullopt;
}

std::string RemapResult::summary() const
{
    std::map<std::pair<std::string, std::string>, std::size_t> moves;
    for (const RemappedStorage& storage : storages)
        if (storage.recorded != storage.planned)
            ++moves[{storage.recorded.value_or("(none)"), storage.planned.value_or("(none)")}];
    std::string text;
    if (moves.empty())
        text = "no storage moved";
    for (const auto& [pair, count] : moves) {
        text += text.empty() ? "moved " : ", ";
        text += formatThousands(count) + (count == 1 ? " storage " : " storages ") + pair.first + " -> "
            + pair.second;
    }
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", this->seconds);
    text += "; " + formatBytes(bytesWritten) + " written in " + seconds + " s ("
        + formatThousands(recordsCopied) + " records copied, " + formatThousands(recordsRewritten)
        + " rewritten"
        + (recordsInflated ? ", " + formatThousands(recordsInflated) + " deflated storages written stored"
                           : "")
        + ")";
    if (!globalsRenamed.empty())
        text += "; " + formatThousands(globalsRenamed.size())
            + (globalsRenamed.size() == 1 ? " global" : " globals") + " renamed";
    text += verified ? "; verified" : "; not verified";
    return text;
}

Expected<RemapResult> writeRemappedCopy(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const std::string& outputPath, const RemapOptions& options)
{
    // A torch.export archive keeps its devices in JSON configs: a writer of its own.
    if (checkpoint.format == CheckpointFormat::ExportArchive)
        return writeRemappedExportArchive(checkpoint, plan, outputPath, options);
    const auto start = std::chrono::steady_clock::now();
    if (Status problem = whyCannotBeRemapped(checkpoint))
        return *problem;
    // Legacy and tar inputs are converted to the zip format; zip inputs keep their records.
    const bool legacy = formatCapabilities(checkpoint.format).copyWithPlan == CopyWithPlan::ConvertedToZip;
    const bool tar = checkpoint.format == CheckpointFormat::TorchTar;
    const PickleGraph& graph = checkpoint.graph;

    RemapResult result;
    result.outputPath = outputPath;

    // 1. What changes in the pickles.
    PickleEmitter emitter(graph);
    emitter.setAppendsOnly(checkpoint.format == CheckpointFormat::TorchScript);
    bool outsideDeviceChanged = false;
    bool torchDeviceWritten = false; // a torch.device('<tag>') replacement names torch.device itself
    std::set<std::uint32_t> sectionsToRewrite;
    for (std::uint32_t s = 0; s < checkpoint.storages.size(); ++s) {
        const StorageRecord& storage = checkpoint.storages[s];
        const std::optional<std::string> planned = plan.plannedDeviceOfStorage(s);
        RemappedStorage moved {storage.key.str(), legacy ? std::to_string(s) : storage.key.str(),
            recordedTag(storage.device), planned};
        result.storages.push_back(moved);
        if (legacy) {
            // Legacy persistent ids ('storage', cls, key, location, numel, view) become torch.save's
            // ('storage', cls, key, location, numel) with keys in order of first use.
            auto storagePid = [&](NodeId classNode, PickleReplacement::Kind kind) {
                PickleReplacement replacement;
                replacement.kind = kind;
                replacement.node = classNode;
                replacement.key = moved.outputKey;
                replacement.text = planned.value_or("cpu");
                replacement.number = static_cast<std::int64_t>(storage.numel);
                return replacement;
            };
            if (tar) {
                // The tar layout names storages by key (a persistent id) or, in files written by
                // hand, by an inline ('storage', cls, key, location, numel) tuple; both become
                // torch.save's persistent id.
                for (NodeId tuple : storage.persistentIdTuples) {
                    const bool inlineTuple = graph.kind(tuple) == NodeKind::Tuple;
                    emitter.replaceNode(tuple,
                        storagePid(graph.tupleItem(tuple, 1),
                            inlineTuple ? PickleReplacement::Kind::StoragePersistentId
                                        : PickleReplacement::Kind::StoragePid));
                }
                const auto references = checkpoint.tarReferences.find(s);
                if (references != checkpoint.tarReferences.end()
                    && !references->second.plainKeyReferences.empty()) {
                    const NodeId classNode = references->second.classNode;
                    if (classNode == kNoNode)
                        return makeError("storage " + storage.key + " of the tar file has no storage class");
                    for (NodeId reference : references->second.plainKeyReferences)
                        emitter.replaceNode(
                            reference, storagePid(classNode, PickleReplacement::Kind::StoragePersistentId));
                }
                continue;
            }
            for (NodeId tuple : storage.persistentIdTuples) {
                const NodeId view = graph.tupleItem(tuple, 5);
                if (view != kNoNode && graph.kind(view) != NodeKind::None)
                    return makeError("storage " + storage.key
                        + " is a view into another storage, an encoding from before PyTorch 1.0 that cannot "
                          "be converted");
                PickleReplacement replacement;
                replacement.kind = PickleReplacement::Kind::StoragePid;
                replacement.node = graph.tupleItem(tuple, 1);
                replacement.key = moved.outputKey;
                replacement.text = planned.value_or("cpu");
                replacement.number = static_cast<std::int64_t>(storage.numel);
                emitter.replaceNode(tuple, replacement);
            }
            continue;
        }
        if (planned == storage.device || !planned)
            continue;
        if (const NestedBlob* blob = nestedBlobOf(checkpoint, storage)) {
            if (Status problem = replaceNestedBlob(emitter, checkpoint, *blob, *planned))
                return makeError("storage " + storage.key + ": " + problem->message);
            sectionsToRewrite.insert(storage.pickleSection);
            continue;
        }
        for (NodeId tuple : storage.persistentIdTuples)
            emitter.replaceItem(tuple, 3, {PickleReplacement::Kind::Text, *planned, kNoNode, {}, 0});
        for (std::uint32_t section = 0; section < checkpoint.pickles.size(); ++section) {
            const auto& used = checkpoint.pickles[section].storagesUsed;
            if (std::find(used.begin(), used.end(), s) != used.end())
                sectionsToRewrite.insert(section);
        }
    }
    for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t) {
        const TensorEntry& tensor = checkpoint.tensors[t];
        if (tensor.deviceArgumentTuple == kNoNode)
            continue;
        const std::optional<std::string> planned = plan.plannedDeviceOfTensor(t);
        if (!planned || planned == tensor.device)
            continue;
        outsideDeviceChanged = true;
        torchDeviceWritten = torchDeviceWritten || tensor.deviceArgumentIsTorchDevice;
        emitter.replaceItem(tensor.deviceArgumentTuple, tensor.deviceArgumentIndex,
            {tensor.deviceArgumentIsTorchDevice ? PickleReplacement::Kind::TorchDevice
                                                : PickleReplacement::Kind::Text,
                *planned, kNoNode, {}, 0});
    }
    // Renamed globals: each GLOBAL/STACK_GLOBAL the renames apply to is written as GLOBAL under its
    // new name; nothing else about the pickle changes.
    std::set<std::string> renamedFrom;
    std::set<std::pair<std::string, std::string>> renamedTo;
    {
        std::vector<bool> used(options.renameGlobals.size(), false);
        std::map<std::string, std::size_t> counts;
        for (NodeId id = 0; id < graph.size(); ++id) {
            if (graph.kind(id) != NodeKind::Global)
                continue;
            const std::string module(graph.module(id));
            const std::string name(graph.name(id));
            for (std::size_t r = 0; r < options.renameGlobals.size(); ++r) {
                auto renamed = options.renameGlobals[r].apply(module, name);
                if (!renamed)
                    continue;
                used[r] = true;
                emitter.replaceNode(
                    id, {PickleReplacement::Kind::Global, renamed->first, kNoNode, renamed->second, 0});
                ++counts[module + "." + name + " -> " + renamed->first + "." + renamed->second];
                renamedFrom.insert(module + "." + name);
                renamedTo.insert(*renamed);
                break;
            }
        }
        for (const auto& [text, count] : counts)
            result.globalsRenamed.push_back(
                text + (count > 1 ? " (" + std::to_string(count) + " places)" : ""));
        for (std::size_t r = 0; r < used.size(); ++r)
            if (!used[r])
                result.renamesUnused.push_back(
                    options.renameGlobals[r].from + "=" + options.renameGlobals[r].to);
        // A rename that applies to nothing is most likely mistyped: say so before writing.
        if (!result.renamesUnused.empty())
            return makeError("the checkpoint names no global that " + result.renamesUnused.front()
                + " applies to (a rename gives a global's full name, module.name, or a module path)");
        if (!counts.empty())
            outsideDeviceChanged = true; // every pickle is re-emitted
    }
    if (legacy) {
        // Whole pickled modules: the legacy format replaced each nn.Module class by a
        // ('module', cls, source_file, source) persistent id; the zip format writes the class.
        for (NodeId id = 0; id < graph.size(); ++id) {
            if (graph.kind(id) != NodeKind::PersistentId)
                continue;
            const NodeId payload = graph.persistentIdPayload(id);
            if (graph.text(graph.tupleItem(payload, 0)) == "module")
                emitter.replaceNode(
                    id, {PickleReplacement::Kind::Node, {}, graph.tupleItem(payload, 1), {}, 0});
        }
        for (std::uint32_t section = 0; section < checkpoint.pickles.size(); ++section)
            sectionsToRewrite.insert(section);
    } else if (outsideDeviceChanged) {
        for (std::uint32_t section = 0; section < checkpoint.pickles.size(); ++section)
            sectionsToRewrite.insert(section);
    }

    std::map<std::uint32_t, ByteBuffer> rewrittenPickles;
    for (std::uint32_t section : sectionsToRewrite) {
        const PickleSection& pickle = checkpoint.pickles[section];
        auto bytes = emitter.emit(pickle.run.root, pickle.run.protocol);
        if (!bytes)
            return makeError("cannot rewrite " + pickle.record + ": " + bytes.error().message);
        rewrittenPickles.emplace(section, std::move(*bytes));
    }
    // Before anything is written, let alone renamed: the copy names no global the input did not.
    for (const auto& [section, bytes] : rewrittenPickles)
        if (Status problem = checkRewrittenGlobals(checkpoint, checkpoint.pickles[section].record,
                ByteView(bytes.data(), bytes.size()), torchDeviceWritten, renamedTo))
            return *problem;

    // 2. The output file, next to the target.
    std::uint64_t expectedSize = checkpoint.fileSize;
    for (const auto& [section, bytes] : rewrittenPickles)
        expectedSize += bytes.size() + 4096;
    if (checkpoint.format == CheckpointFormat::TorchScriptJson) // model.json, rewritten
        expectedSize += checkpoint.fileSize / 4 + 4096;
    for (const StorageRecord& storage : checkpoint.storages)
        if (storage.deflated) // written stored: its inflated size
            expectedSize += storage.availableBytes.value_or(0);
    auto output = AtomicOutputFile::create(outputPath, checkpoint.path, expectedSize);
    if (!output)
        return output.error();
    InputDescriptor input(checkpoint.path);
    if (input.fd() < 0)
        return makeError("cannot open " + checkpoint.path + " for reading: " + std::strerror(errno));

    std::vector<CrcCheck> expectedCrcs; // storage key in the output -> CRC of its bytes
    std::uint64_t alignment = 64;

    // Storages inside bytes: the input's CRC of their bytes where those lie in the file.
    for (const NestedBlob& blob : checkpoint.nestedBlobs) {
        const StorageRecord& storage = checkpoint.storages[blob.storage];
        if (storage.bytesComplete() && checkpoint.file) {
            expectedCrcs.push_back({storage.key.str(),
                crc32Update(0, checkpoint.file->bytes().data() + *storage.dataOffset, storage.nbytes),
                storage.nbytes});
        } else if (storage.inDecodedBlob) { // held as text (protocols 0-2): the decoded bytes' CRC
            std::uint32_t crc = 0;
            const Status read
                = forEachStorageByteChunk(checkpoint, storage, storage.nbytes, [&](ByteView piece) {
                      crc = crc32Update(crc, piece.data(), piece.size());
                      return Status();
                  });
            if (!read)
                expectedCrcs.push_back({storage.key.str(), crc, storage.nbytes});
        }
    }

    if (checkpoint.format == CheckpointFormat::PlainPickle) {
        // pickle.dump's file: the one pickle, re-emitted when a storage inside it moved.
        Status status;
        if (const auto rewritten = rewrittenPickles.find(0); rewritten != rewrittenPickles.end()) {
            status = output->get()->write(ByteView(rewritten->second.data(), rewritten->second.size()));
            result.recordsRewritten = 1;
            result.bytesWritten = rewritten->second.size();
        } else {
            status = output->get()->write(checkpoint.file->bytes());
            result.recordsCopied = 1;
            result.bytesWritten = checkpoint.file->size();
        }
        if (status)
            return *status;
    } else if (!legacy) {
        const auto archive = checkpoint.zipArchive();
        const ZipArchive& zip = *archive;
        std::vector<const ZipEntry*> entries;
        for (const ZipEntry& entry : zip.entries())
            entries.push_back(&entry);
        std::stable_sort(entries.begin(), entries.end(),
            [](const ZipEntry* a, const ZipEntry* b) { return a->localHeaderOffset < b->localHeaderOffset; });
        const std::string prefix
            = checkpoint.archivePrefix.empty() ? std::string() : checkpoint.archivePrefix + "/";
        if (const ZipEntry* record = zip.find(prefix + ".storage_alignment")) {
            if (auto text = zip.readPayload(*record, 64)) {
                const std::string value(text->begin(), text->end());
                const unsigned long parsed = std::strtoul(value.c_str(), nullptr, 10);
                if (parsed > 0 && parsed < 65531)
                    alignment = parsed;
            }
        }
        // TorchScript's model.json layout: the devices are in model.json, rewritten; the
        // pickles (attributes.pkl) name no device and are copied.
        const ZipEntry* modelJson = checkpoint.format == CheckpointFormat::TorchScriptJson
            ? zip.find(prefix + "model.json")
            : nullptr;
        std::optional<ByteBuffer> rewrittenModelJson;
        if (modelJson) {
            auto rewritten = remappedModelJson(checkpoint, plan, zip, *modelJson);
            if (!rewritten)
                return rewritten.error();
            rewrittenModelJson = std::move(*rewritten);
        }
        std::map<std::string, std::uint32_t, std::less<>> sectionByRecord;
        for (std::uint32_t section = 0; section < checkpoint.pickles.size(); ++section)
            sectionByRecord[checkpoint.pickles[section].record] = section;
        // The storage whose bytes each record holds (the last of several, as a map assigned in
        // order would keep): sorted pointers, not a million copied names.
        std::vector<const StorageRecord*> storageByRecord;
        storageByRecord.reserve(checkpoint.storages.size());
        for (const StorageRecord& storage : checkpoint.storages)
            storageByRecord.push_back(&storage);
        std::stable_sort(storageByRecord.begin(), storageByRecord.end(),
            [](const StorageRecord* a, const StorageRecord* b) {
                // Under one stem (interned: one pointer) the keys order the names: no joined compare.
                if (a->recordStem == b->recordStem)
                    return a->recordName().tail < b->recordName().tail;
                return a->recordName() < b->recordName();
            });
        const auto storageOf = [&](std::string_view record) -> const StorageRecord* {
            const auto after = std::upper_bound(storageByRecord.begin(), storageByRecord.end(), record,
                [](std::string_view name, const StorageRecord* storage) {
                    return name < storage->recordName();
                });
            if (after == storageByRecord.begin() || (*(after - 1))->recordName() != record)
                return nullptr;
            return *(after - 1);
        };

        TorchZipWriter writer(output->get()->fd(), static_cast<std::uint32_t>(alignment), options.progress,
            checkpoint.fileSize);
        for (const ZipEntry* entry : entries) {
            Status status;
            auto section = sectionByRecord.find(entry->name());
            if (entry == modelJson && rewrittenModelJson) {
                status = writer.addRecord(entry->name(), *rewrittenModelJson);
                ++result.recordsRewritten;
            } else if (section != sectionByRecord.end() && rewrittenPickles.count(section->second)) {
                status = writer.addRecord(entry->name(), rewrittenPickles[section->second]);
                ++result.recordsRewritten;
            } else if (entry->name() == prefix + ".data/serialization_id") {
                const std::string id = serializationId(writer.records());
                status = writer.addRecord(
                    entry->name(), ByteView(reinterpret_cast<const std::uint8_t*>(id.data()), id.size()));
                ++result.recordsRewritten;
            } else if (entry->method == zipformat::kMethodDeflate && storageOf(entry->name())) {
                // A deflated storage (other writers than torch.save) is written stored, as
                // torch.save writes every storage: its bytes unchanged, inflated as they are
                // copied, and the copy readable with torch.load(mmap=True), which reads a
                // deflated record's compressed bytes as values. The verifier below checks the
                // stored bytes against the input's CRC, which zip computes over the inflated bytes.
                status = writer.addRecordFromPieces(
                    entry->name(), entry->uncompressedSize, [&](const TorchZipWriter::ByteSink& sink) {
                        return zip.forEachPayloadChunk(*entry, sink);
                    });
                ++result.recordsCopied;
                ++result.recordsInflated;
            } else if (entry->method == zipformat::kMethodStored) {
                status = writer.addRecordFromFile(
                    entry->name(), input.fd(), entry->dataOffset, entry->uncompressedSize, entry->crc32);
                ++result.recordsCopied;
            } else {
                status = writer.addCompressedRecordFromFile(entry->name(), input.fd(), entry->dataOffset,
                    entry->compressedSize, entry->uncompressedSize, entry->crc32);
                ++result.recordsCopied;
            }
            if (status)
                return *status;
            if (const StorageRecord* storage = storageOf(entry->name()))
                expectedCrcs.push_back({storage->key.str(), entry->crc32, entry->uncompressedSize});
        }
        if (Status status = writer.finish())
            return *status;
        result.bytesWritten = writer.bytesWritten();
    } else {
        // Legacy -> zip, in torch.save's record order: data.pkl, byteorder, data/<key>..., version.
        const std::string prefix = archiveNameFor(outputPath) + "/";
        TorchZipWriter writer(output->get()->fd(), 64, options.progress, checkpoint.fileSize);
        bool bigEndian = false;
        for (const Finding& finding : checkpoint.findings)
            bigEndian = bigEndian || finding.code == FindingCode::BigEndian;
        const std::string byteorder = bigEndian ? "big" : "little";
        const std::string version = "3\n";
        Status status = writer.addRecord(prefix + "data.pkl", rewrittenPickles.at(0));
        if (!status)
            status = writer.addRecord(prefix + "byteorder",
                ByteView(reinterpret_cast<const std::uint8_t*>(byteorder.data()), byteorder.size()));
        result.recordsRewritten = 1;
        for (std::uint32_t s = 0; s < checkpoint.storages.size() && !status; ++s) {
            const StorageRecord& storage = checkpoint.storages[s];
            status = writer.addRecordFromFile(prefix + "data/" + result.storages[s].outputKey, input.fd(),
                *storage.dataOffset, storage.nbytes, std::nullopt);
            if (!status) {
                expectedCrcs.push_back(
                    {result.storages[s].outputKey, writer.records().back().crc32, storage.nbytes});
                ++result.recordsCopied;
            }
        }
        if (!status)
            status = writer.addRecord(prefix + "version",
                ByteView(reinterpret_cast<const std::uint8_t*>(version.data()), version.size()));
        if (!status)
            status = writer.finish();
        if (status)
            return *status;
        result.bytesWritten = writer.bytesWritten();
    }

    // 3. Read the written file back before it takes the target's name: every tensor as in the
    // input (name, dtype, shape, stride, offset, storage) on its planned device, every storage on
    // its planned device with its bytes unchanged (the input's CRC), no global the copy should not
    // name (a renamed one never again).
    if (options.verifyAfterWriting) {
        IntendedOutput intended;
        intended.what = "the written copy";
        intended.format = legacy ? CheckpointFormat::TorchZip : checkpoint.format;
        intended.tensors.reserve(checkpoint.tensors.size());
        for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t) {
            const TensorEntry& tensor = checkpoint.tensors[t];
            IntendedTensor want;
            want.name = tensor.name;
            want.dtype = tensor.dtype;
            want.shape = tensor.shape;
            want.stride = tensor.stride;
            want.storageOffset = tensor.storageOffset;
            if (tensor.storage >= 0)
                want.storageKey = result.storages[static_cast<std::size_t>(tensor.storage)].outputKey;
            // A tensor outside the plan's units (a sparse or nested tensor: its parts are units of
            // their own) reads back on the device of its parts, checked there.
            if (plan.unitOfTensor(t) >= 0) {
                if (const std::optional<std::string> planned = plan.plannedDeviceOfTensor(t))
                    want.device = InternedString(*planned);
            } else
                want.deviceChecked = false;
            intended.tensors.push_back(std::move(want));
        }
        std::map<std::string, const CrcCheck*> crcByKey;
        for (const CrcCheck& check : expectedCrcs)
            crcByKey[check.key] = &check;
        for (const RemappedStorage& moved : result.storages) {
            IntendedStorage want;
            want.key = moved.outputKey;
            if (moved.planned)
                want.device = InternedString(*moved.planned);
            if (const auto found = crcByKey.find(moved.outputKey); found != crcByKey.end()) {
                want.length = found->second->length;
                // An input written with torch's CRC computation switched off records 0.
                if (found->second->crc != 0)
                    want.crc = found->second->crc;
            }
            intended.storages.push_back(std::move(want));
        }
        std::set<std::pair<std::string, std::string>> allowed = renamedTo;
        for (const PickleSection& section : checkpoint.pickles)
            for (const GlobalReference& global : section.run.globals)
                if (!renamedFrom.count(global.module + "." + global.name))
                    allowed.emplace(global.module, global.name);
        if (torchDeviceWritten)
            allowed.emplace("torch", "device");
        intended.allowedGlobals = std::move(allowed);
        if (Status problem = verifyWrittenFile(**output, std::move(intended)))
            return *problem;
        result.verified = true;
    }
    return finishRemappedCopy(checkpoint, options, **output, std::move(result), start);
}

Expected<RemapResult> finishRemappedCopy(const Checkpoint& checkpoint, const RemapOptions& options,
    AtomicOutputFile& output, RemapResult result, std::chrono::steady_clock::time_point start)
{
    if (options.beforeRename)
        if (Status refused = options.beforeRename(checkpoint, output.temporaryPath()))
            return *refused;
    if (Status status = output.commit())
        return *status;
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

} // namespace ckpt
