// SPDX-License-Identifier: MIT
// The remapped copy of a torch.export PT2 archive (pt2writer.h).
#include "core/write/pt2writer.h"

#include "core/format/ziparchive.h"
#include "core/format/zipformat.h"
#include "core/io/atomicoutputfile.h"
#include "core/io/inputdescriptor.h"
#include "core/io/mappedfile.h"
#include "core/io/temporaryfolder.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/read/pt2reader.h"
#include "core/write/readbackverifier.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>

namespace ckpt {

namespace {

// A raw record's storage: "weights/weight_0", "constants/tensor_0" (no ':', which nested ones have).
bool isRawStorage(const StorageRecord& storage)
{
    return storage.key.find(':') == std::string::npos;
}

namespace fs = std::filesystem;

// serialize.py serialize_device's shape: {"type": "cuda", "index": 1}, index null without one.
JsonValue deviceJson(const std::string& device)
{
    JsonValue value = JsonValue::emptyObject();
    const auto colon = device.find(':');
    value.insert("type", JsonValue(device.substr(0, colon)));
    if (colon == std::string::npos)
        value.insert("index", JsonValue(nullptr));
    else
        value.insert("index",
            JsonValue(static_cast<std::int64_t>(std::strtoll(device.c_str() + colon + 1, nullptr, 10))));
    return value;
}

// The config with the planned devices, or nothing when no device in it changes.
Expected<std::optional<std::string>> rewrittenConfig(const Checkpoint& checkpoint, const ZipArchive& zip,
    const ZipEntry& entry, std::string_view local, const std::map<std::string, std::string>& plannedByKey)
{
    auto payload = zip.readPayload(entry, 64ull << 20);
    if (!payload)
        return makeError("cannot read " + std::string(entry.name()) + ": " + payload.error().message);
    auto parsed
        = parseJson(std::string_view(reinterpret_cast<const char*>(payload->data()), payload->size()));
    if (!parsed)
        return makeError("cannot read " + std::string(entry.name()) + ": " + parsed.error().message);
    const std::string kind = local.starts_with("data/weights/") ? "weights/" : "constants/";
    JsonValue* members = parsed->find("config");
    if (!members || !members->object())
        return makeError(std::string(entry.name()) + " has no \"config\" object");
    bool changed = false;
    for (JsonMember& member : *members->object()) {
        const JsonValue* path = member.value.find("path_name");
        JsonValue* meta = member.value.find("tensor_meta");
        // A use_pickle entry's tensor_meta records the device too (serialize_tensor_meta of the
        // pickled tensor): it gets the device its rewritten nested file now records.
        if (!path || !meta || !meta->isObject())
            continue;
        const auto planned = plannedByKey.find(kind + path->toString());
        if (planned == plannedByKey.end())
            continue;
        JsonValue device = deviceJson(planned->second);
        if (meta->member("device") == device)
            continue;
        meta->set("device", std::move(device));
        changed = true;
    }
    (void)checkpoint;
    if (!changed)
        return std::optional<std::string>();
    return std::optional<std::string>(parsed->toJson());
}

} // namespace

Status whyExportArchiveCannotBeRemapped(const Checkpoint& checkpoint)
{
    const auto zip = checkpoint.zipArchive();
    if (!zip || !exportArchiveLayout(*zip))
        return makeError("the file is no longer read as a torch.export archive");
    return std::nullopt;
}

namespace {

std::string_view localName(const Checkpoint& checkpoint, const std::string& member)
{
    const std::string prefix
        = checkpoint.archivePrefix.empty() ? std::string() : checkpoint.archivePrefix + "/";
    return std::string_view(member).substr(member.starts_with(prefix) ? prefix.size() : 0);
}

bool isSampleInputs(std::string_view local)
{
    return local.starts_with("data/sample_inputs/") || local == "serialized_example_inputs.pt";
}

// The nested torch.save file of `nested`, rewritten on the devices `planned` gives its storages
// (by index in the span) and `plannedTensor` its storage-less tensors: the member's bytes are put
// in a file of the temporary folder, read there and remapped by the one zip remap writer (read
// back by its verifier), and the written copy mapped.
Expected<std::shared_ptr<const MappedFile>> rewriteNested(const Checkpoint& checkpoint,
    const NestedArchive& nested, const ZipEntry& entry, const std::string& folder, std::size_t index,
    RemapResult& result, const std::vector<std::optional<std::string>>& plannedTensor,
    const RemapOptions& options)
{
    if (entry.method != zipformat::kMethodStored || !entry.payloadComplete || !checkpoint.file)
        return makeError("the nested torch.save file " + nested.member + " is not stored whole in the file");
    const std::string inputPath
        = (fs::path(folder) / ("nested-" + std::to_string(index) + ".input")).string();
    {
        auto copy = AtomicOutputFile::create(inputPath, checkpoint.path, entry.uncompressedSize);
        if (!copy)
            return copy.error();
        if (Status failed = (*copy)->write(
                ByteView(checkpoint.file->bytes().data() + entry.dataOffset, entry.uncompressedSize)))
            return *failed;
        if (Status failed = (*copy)->commit())
            return *failed;
    }
    const Checkpoint member = readCheckpoint(inputPath);
    if (member.storages.size() != nested.storageCount || member.tensors.size() != nested.tensorCount)
        return makeError("the nested torch.save file " + nested.member + " reads differently once extracted");
    PlacementPlan own(member);
    std::vector<std::pair<std::uint32_t, std::optional<std::string>>> devices;
    for (std::uint32_t k = 0; k < nested.storageCount; ++k)
        if (const std::int32_t unit = own.unitOfStorage(k); unit >= 0)
            devices.emplace_back(
                static_cast<std::uint32_t>(unit), result.storages[nested.firstStorage + k].planned);
    for (std::uint32_t t = 0; t < nested.tensorCount; ++t)
        if (member.tensors[t].storage < 0)
            if (const std::int32_t unit = own.unitOfTensor(t); unit >= 0)
                devices.emplace_back(static_cast<std::uint32_t>(unit), plannedTensor[nested.firstTensor + t]);
    own.restore(devices);
    RemapOptions inner;
    inner.verifyAfterWriting = options.verifyAfterWriting;
    const std::string writtenPath = (fs::path(folder) / ("nested-" + std::to_string(index) + ".pt")).string();
    auto written = writeRemappedCopy(member, own, writtenPath, inner);
    if (!written)
        return makeError(
            "cannot rewrite the nested torch.save file " + nested.member + ": " + written.error().message);
    if (options.verifyAfterWriting && !written->verified)
        return makeError("the rewritten nested torch.save file " + nested.member + " did not verify");
    const std::string local(localName(checkpoint, nested.member));
    for (std::uint32_t k = 0; k < nested.storageCount && k < written->storages.size(); ++k)
        result.storages[nested.firstStorage + k].outputKey = local + ":" + written->storages[k].outputKey;
    auto mapped = MappedFile::open(writtenPath);
    if (!mapped)
        return makeError("cannot read the rewritten " + nested.member + ": " + mapped.error().message);
    return *mapped;
}

} // namespace

Expected<RemapResult> writeRemappedExportArchive(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const std::string& outputPath, const RemapOptions& options)
{
    const auto start = std::chrono::steady_clock::now();
    if (Status problem = whyCannotBeRemapped(checkpoint)) // the layout included
        return *problem;
    if (!options.renameGlobals.empty())
        return makeError(
            "renaming globals does not apply to a torch.export archive (its configs name no global)");

    // Which nested torch.save file each storage and tensor comes from, and whether the plan moves
    // anything in it.
    const std::vector<NestedArchive>& nestedArchives = checkpoint.nestedArchives;
    std::vector<std::int32_t> nestedOfStorage(checkpoint.storages.size(), -1);
    std::vector<std::int32_t> nestedOfTensor(checkpoint.tensors.size(), -1);
    for (std::size_t n = 0; n < nestedArchives.size(); ++n) {
        const NestedArchive& nested = nestedArchives[n];
        for (std::uint32_t k = 0; k < nested.storageCount; ++k)
            nestedOfStorage.at(nested.firstStorage + k) = static_cast<std::int32_t>(n);
        for (std::uint32_t k = 0; k < nested.tensorCount; ++k)
            nestedOfTensor.at(nested.firstTensor + k) = static_cast<std::int32_t>(n);
    }
    std::vector<bool> nestedMoves(nestedArchives.size(), false);
    // A nested file the plan would move but that is no weight the loader places by what it
    // records: sample inputs stay where they were; an AOTInductor weight is refused.
    auto nestedRefusal
        = [&](std::int32_t n, const std::string& what, const std::optional<std::string>& recorded) -> Status {
        const NestedArchive& nested = nestedArchives[static_cast<std::size_t>(n)];
        if (nested.movable) {
            nestedMoves[static_cast<std::size_t>(n)] = true;
            return std::nullopt;
        }
        if (isSampleInputs(localName(checkpoint, nested.member)))
            return std::nullopt;
        return makeError(what + " is an AOTInductor weight (" + nested.member
            + ", named by no config of the archive): the package's compiled loader places it, not the "
              "device its torch.save file records; plan it to stay on "
            + recorded.value_or("its device"));
    };

    RemapResult result;
    result.outputPath = outputPath;
    std::map<std::string, std::string> plannedByKey; // raw storage key -> the device its configs record
    for (std::uint32_t s = 0; s < checkpoint.storages.size(); ++s) {
        const StorageRecord& storage = checkpoint.storages[s];
        std::optional<std::string> recorded;
        if (storage.device)
            recorded = std::string(*storage.device);
        std::optional<std::string> planned = plan.plannedDeviceOfStorage(s);
        if (const std::int32_t n = nestedOfStorage[s]; n >= 0) {
            if (planned && planned != recorded) {
                if (Status refused = nestedRefusal(n, "storage " + storage.key, recorded))
                    return *refused;
                if (!nestedArchives[static_cast<std::size_t>(n)].movable)
                    planned = recorded;
            }
        } else if (isRawStorage(storage) && planned) {
            plannedByKey[storage.key.str()] = *planned;
        }
        if (!planned || (!isRawStorage(storage) && nestedOfStorage[s] < 0))
            planned = recorded;
        result.storages.push_back({storage.key.str(), storage.key.str(), recorded, planned});
    }
    // Tensors without a storage of their own (a wrapper subclass pickled with use_pickle) record
    // their device in their nested file too.
    std::vector<std::optional<std::string>> plannedTensor(checkpoint.tensors.size());
    for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t) {
        const TensorEntry& tensor = checkpoint.tensors[t];
        if (tensor.storage >= 0 || !tensor.device)
            continue;
        const std::optional<std::string> recorded(std::string(*tensor.device));
        std::optional<std::string> planned = plan.plannedDeviceOfTensor(t);
        if (!planned)
            planned = recorded;
        if (const std::int32_t n = nestedOfTensor[t]; n >= 0 && planned != recorded) {
            if (Status refused = nestedRefusal(n, "tensor " + tensor.name, recorded))
                return *refused;
            if (!nestedArchives[static_cast<std::size_t>(n)].movable)
                planned = recorded;
        }
        plannedTensor[t] = planned;
    }
    // A use_pickle entry of a config records the device of its pickled tensor: the one its
    // rewritten file records for the tensor at its top (or its first storage).
    for (std::size_t n = 0; n < nestedArchives.size(); ++n) {
        const NestedArchive& nested = nestedArchives[n];
        if (!nestedMoves[n])
            continue;
        const std::string_view local = localName(checkpoint, nested.member);
        if (!local.starts_with("data/"))
            continue;
        std::optional<std::string> top;
        if (nested.tensorCount) {
            const TensorEntry& tensor = checkpoint.tensors[nested.firstTensor];
            top = tensor.storage >= 0 ? result.storages[static_cast<std::size_t>(tensor.storage)].planned
                                      : plannedTensor[nested.firstTensor];
        } else if (nested.storageCount) {
            top = result.storages[nested.firstStorage].planned;
        }
        if (top)
            plannedByKey[std::string(local.substr(5))] = *top;
    }

    const auto archive = checkpoint.zipArchive();
    const ZipArchive& zip = *archive;
    const std::string prefix
        = checkpoint.archivePrefix.empty() ? std::string() : checkpoint.archivePrefix + "/";
    std::vector<const ZipEntry*> entries;
    for (const ZipEntry& entry : zip.entries())
        entries.push_back(&entry);
    std::stable_sort(entries.begin(), entries.end(),
        [](const ZipEntry* a, const ZipEntry* b) { return a->localHeaderOffset < b->localHeaderOffset; });

    std::map<std::string, std::string> rewritten; // member -> new bytes
    std::uint64_t expectedSize = checkpoint.fileSize;
    for (const ZipEntry* entry : entries) {
        const std::string_view name = entry->name();
        if (!name.starts_with(prefix) || !isExportPayloadConfig(name.substr(prefix.size())))
            continue;
        auto config = rewrittenConfig(checkpoint, zip, *entry, name.substr(prefix.size()), plannedByKey);
        if (!config)
            return config.error();
        if (*config) {
            expectedSize += (*config)->size() + 4096;
            rewritten[std::string(name)] = std::move(**config);
        }
    }

    // The nested torch.save files whose devices change, rewritten in a temporary folder beside the
    // target (removed whatever happens).
    RemoveFolderOnExit temporary;
    std::map<std::string, std::shared_ptr<const MappedFile>> rewrittenNested; // member -> its new bytes
    for (std::size_t n = 0; n < nestedArchives.size(); ++n) {
        if (!nestedMoves[n])
            continue;
        const NestedArchive& nested = nestedArchives[n];
        const ZipEntry* entry = zip.find(nested.member);
        if (!entry)
            return makeError("the nested torch.save file " + nested.member + " is no longer in the archive");
        if (temporary.path.empty()) {
            temporary.path = makeTemporaryFolderBeside(fs::path(outputPath), "nested");
            if (temporary.path.empty())
                return makeError(
                    "cannot create a temporary folder beside " + outputPath + " (is its folder writable?)");
        }
        auto bytes
            = rewriteNested(checkpoint, nested, *entry, temporary.path, n, result, plannedTensor, options);
        if (!bytes)
            return bytes.error();
        expectedSize += (*bytes)->size() + 4096;
        rewrittenNested[nested.member] = std::move(*bytes);
    }

    auto output = AtomicOutputFile::create(outputPath, checkpoint.path, expectedSize);
    if (!output)
        return output.error();
    InputDescriptor input(checkpoint.path);
    if (input.fd() < 0)
        return makeError("cannot open " + checkpoint.path + " for reading: " + std::strerror(errno));

    std::map<std::string, const ZipEntry*> entryByName;
    TorchZipWriter writer(output->get()->fd(), 64, options.progress, expectedSize);
    for (const ZipEntry* entry : entries) {
        Status status;
        const std::string name(entry->name());
        entryByName.emplace(name, entry);
        if (auto found = rewritten.find(name); found != rewritten.end()) {
            status = writer.addRecord(name,
                ByteView(reinterpret_cast<const std::uint8_t*>(found->second.data()), found->second.size()));
            ++result.recordsRewritten;
        } else if (auto nested = rewrittenNested.find(name); nested != rewrittenNested.end()) {
            status = writer.addRecord(name, nested->second->bytes());
            ++result.recordsRewritten;
        } else if (entry->method == zipformat::kMethodStored) {
            status = writer.addRecordFromFile(
                name, input.fd(), entry->dataOffset, entry->uncompressedSize, entry->crc32);
            ++result.recordsCopied;
        } else {
            status = writer.addCompressedRecordFromFile(name, input.fd(), entry->dataOffset,
                entry->compressedSize, entry->uncompressedSize, entry->crc32);
            ++result.recordsCopied;
        }
        if (status)
            return *status;
    }
    if (Status status = writer.finish())
        return *status;
    result.bytesWritten = writer.bytesWritten();

    // Read back: every tensor as in the input on its planned device, every raw record's bytes
    // unchanged (the input's CRC); the storages of nested files on their planned devices (their
    // bytes were checked when each was rewritten).
    if (options.verifyAfterWriting) {
        IntendedOutput intended;
        intended.what = "the written copy";
        intended.format = CheckpointFormat::ExportArchive;
        for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t) {
            const TensorEntry& tensor = checkpoint.tensors[t];
            IntendedTensor want;
            want.name = tensor.name;
            want.dtype = tensor.dtype;
            want.shape = tensor.shape;
            want.stride = tensor.stride;
            want.storageOffset = tensor.storageOffset;
            if (tensor.storage >= 0) {
                const RemappedStorage& moved = result.storages[static_cast<std::size_t>(tensor.storage)];
                want.storageKey = moved.outputKey;
                if (moved.planned)
                    want.device = InternedString(*moved.planned);
                else
                    want.deviceChecked = false;
            } else if (plannedTensor[t] && nestedOfTensor[t] >= 0) {
                want.device = InternedString(*plannedTensor[t]);
            } else {
                want.deviceChecked = false;
            }
            intended.tensors.push_back(std::move(want));
        }
        for (std::uint32_t s = 0; s < checkpoint.storages.size(); ++s) {
            const StorageRecord& storage = checkpoint.storages[s];
            const RemappedStorage& moved = result.storages[s];
            IntendedStorage want;
            want.key = moved.outputKey;
            if (moved.planned)
                want.device = InternedString(*moved.planned);
            else
                want.deviceChecked = false;
            if (isRawStorage(storage)) {
                if (auto found = entryByName.find(storage.record()); found != entryByName.end()) {
                    want.length = found->second->uncompressedSize;
                    if (found->second->crc32 != 0)
                        want.crc = found->second->crc32;
                }
            }
            intended.storages.push_back(std::move(want));
        }
        if (Status problem = verifyWrittenFile(**output, std::move(intended)))
            return *problem;
        result.verified = true;
    }
    return finishRemappedCopy(checkpoint, options, **output, std::move(result), start);
}

} // namespace ckpt
