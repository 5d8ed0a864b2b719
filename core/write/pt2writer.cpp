// SPDX-License-Identifier: MIT
// The remapped copy of a torch.export PT2 archive (pt2writer.h).
#include "core/write/pt2writer.h"

#include "core/format/ziparchive.h"
#include "core/format/zipformat.h"
#include "core/io/atomicoutputfile.h"
#include "core/io/inputdescriptor.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/plan/placementplan.h"
#include "core/read/pt2reader.h"
#include "core/write/readbackverifier.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

namespace ckpt {

namespace {

// A raw record's storage: "weights/weight_0", "constants/tensor_0" (no ':', which nested ones have).
bool isRawStorage(const StorageRecord& storage)
{
    return storage.key.find(':') == std::string::npos;
}

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
        if (!path || !meta || !meta->isObject() || member.value.member("use_pickle").toBool())
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
    if (!exportArchiveLayout(*zip) || *exportArchiveLayout(*zip) != ExportArchiveLayout::Pt2)
        return makeError(
            "this torch.export archive has the torch 2.1-2.5 layout, whose devices are kept in nested "
            "torch.save files; a remapped copy is written for the PT2 archive only (load it and save it "
            "again with torch.export.save)");
    return std::nullopt;
}

Expected<RemapResult> writeRemappedExportArchive(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const std::string& outputPath, const RemapOptions& options)
{
    const auto start = std::chrono::steady_clock::now();
    if (Status problem = whyCannotBeRemapped(checkpoint)) // the layout included
        return *problem;
    if (!options.renameGlobals.empty())
        return makeError(
            "renaming globals does not apply to a torch.export archive (its configs name no global)");

    RemapResult result;
    result.outputPath = outputPath;
    std::map<std::string, std::string> plannedByKey; // raw storage key -> the device its configs record
    for (std::uint32_t s = 0; s < checkpoint.storages.size(); ++s) {
        const StorageRecord& storage = checkpoint.storages[s];
        std::optional<std::string> recorded;
        if (storage.device)
            recorded = std::string(*storage.device);
        std::optional<std::string> planned = plan.plannedDeviceOfStorage(s);
        // A weight kept in a nested torch.save file (use_pickle: a tensor subclass; an AOTInductor
        // weight) records its device inside that file's pickle: not rewritten, so a plan that
        // moves it is refused rather than silently not followed. Sample inputs are no weights:
        // they stay where they were.
        if (!isRawStorage(storage) && planned && planned != recorded
            && !storage.key.starts_with("data/sample_inputs/"))
            return makeError("storage " + storage.key + " (" + storage.record()
                + ") is kept in a nested torch.save file (a use_pickle weight); its device is recorded "
                  "inside that "
                  "file and a remapped copy does not rewrite it: plan it to stay on "
                + recorded.value_or("its device"));
        if (!isRawStorage(storage) || !planned)
            planned = recorded; // nested torch.save files keep their devices
        else
            plannedByKey[storage.key] = *planned;
        result.storages.push_back({storage.key, storage.key, recorded, planned});
    }

    // The same for a nested weight the plan sees as a tensor of its own (a wrapper subclass, whose
    // parts are pickled inside it).
    for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t) {
        const TensorEntry& tensor = checkpoint.tensors[t];
        if (tensor.storage >= 0 || !tensor.device || tensor.name.starts_with("sample_inputs."))
            continue;
        const std::optional<std::string> planned = plan.plannedDeviceOfTensor(t);
        if (planned && *planned != std::string_view(*tensor.device))
            return makeError("tensor " + tensor.name
                + " is kept in a nested torch.save file (a use_pickle weight); its device is recorded inside "
                  "that "
                  "file and a remapped copy does not rewrite it: plan it to stay on "
                + std::string(*tensor.device));
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
    // unchanged (the input's CRC), nested files' storages where they were.
    if (options.verifyAfterWriting) {
        IntendedOutput intended;
        intended.what = "the written copy";
        intended.format = CheckpointFormat::ExportArchive;
        for (const TensorEntry& tensor : checkpoint.tensors) {
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
