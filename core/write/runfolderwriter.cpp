// SPDX-License-Identifier: MIT
#include "core/write/runfolderwriter.h"

#include "core/model/checkpoint.h"
#include "core/model/formatcapabilities.h"
#include "core/model/shardset.h"
#include "core/plan/placementplan.h"

#include <filesystem>
#include <set>

namespace ckpt {

namespace fs = std::filesystem;

namespace {

bool recordsDevices(const ShardFile& file)
{
    return file.model() && formatCapabilities(file.model()->format).recordsDevices;
}

bool planChanges(const Checkpoint& checkpoint, const PlacementPlan& plan, const ShardFile& file)
{
    if (!recordsDevices(file))
        return false;
    for (std::uint32_t k = 0; k < file.storageCount; ++k) {
        const std::uint32_t storage = file.firstStorage + k;
        const auto planned = plan.plannedDeviceOfStorage(storage);
        if (planned && planned != checkpoint.storages[storage].device)
            return true;
    }
    for (std::uint32_t t = 0; t < file.model()->tensors.size(); ++t) {
        const std::uint32_t tensor = file.firstTensor + t;
        if (checkpoint.tensors[tensor].storage >= 0 || !checkpoint.tensors[tensor].device)
            continue;
        const auto planned = plan.plannedDeviceOfTensor(tensor);
        if (planned && *planned != checkpoint.tensors[tensor].device->str())
            return true;
    }
    return false;
}

// The file's own plan: each of its storages goes where the folder's plan puts it.
PlacementPlan planOfFile(const PlacementPlan& plan, const ShardFile& file)
{
    PlacementPlan own(*file.model());
    std::vector<std::pair<std::uint32_t, std::optional<std::string>>> devices;
    for (std::uint32_t k = 0; k < file.storageCount; ++k)
        if (const std::int32_t unit = own.unitOfStorage(k); unit >= 0)
            devices.emplace_back(
                static_cast<std::uint32_t>(unit), plan.plannedDeviceOfStorage(file.firstStorage + k));
    for (std::uint32_t t = 0; t < file.model()->tensors.size(); ++t)
        if (file.model()->tensors[t].storage < 0)
            if (const std::int32_t unit = own.unitOfTensor(t); unit >= 0)
                devices.emplace_back(
                    static_cast<std::uint32_t>(unit), plan.plannedDeviceOfTensor(file.firstTensor + t));
    own.restore(devices);
    return own;
}

} // namespace

std::vector<std::string> runFolderFilesToRewrite(const Checkpoint& checkpoint, const PlacementPlan& plan)
{
    std::vector<std::string> names;
    if (!checkpoint.shardSet)
        return names;
    for (const ShardFile& file : checkpoint.shardSet->shards)
        if (planChanges(checkpoint, plan, file))
            names.push_back(file.name);
    return names;
}

Expected<ShardedRemapResult> writeRemappedRunFolder(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const std::string& temporary, const RemapOptions& options)
{
    const ShardSet& set = *checkpoint.shardSet;
    ShardedRemapResult result;
    std::error_code error;
    auto copyFile = [&](const std::string& name) -> Status {
        const fs::path target = fs::path(temporary) / name;
        fs::create_directories(target.parent_path(), error);
        if (!fs::copy_file(fs::path(set.folder) / name, target, error))
            return makeError("cannot copy " + name + ": " + error.message());
        result.filesCopied.push_back(name);
        result.bytesWritten += fs::file_size(target, error);
        return std::nullopt;
    };
    for (const ShardFile& file : set.shards) {
        if (!planChanges(checkpoint, plan, file)) {
            if (Status failed = copyFile(file.name))
                return makeError(failed->message);
            continue;
        }
        if (Status why = whyCannotBeRemapped(*file.model()))
            return makeError(file.name + " cannot be rewritten with the plan's devices: " + why->message);
        const fs::path target = fs::path(temporary) / file.name;
        fs::create_directories(target.parent_path(), error);
        auto written = writeRemappedCopy(*file.model(), planOfFile(plan, file), target.string(), options);
        if (!written)
            return makeError(file.name + ": " + written.error().message);
        if (options.verifyAfterWriting && !written->verified)
            return makeError(file.name + ": the written file did not verify");
        result.bytesWritten += written->bytesWritten;
        result.shards.push_back(std::move(*written));
    }
    for (const FolderFile& file : set.otherFiles)
        if (Status failed = copyFile(file.name))
            return makeError(failed->message);
    for (const std::string& folder : set.foldersLeftOut) {
        std::string why = "a subfolder; not part of the document";
        if (!set.newestCheckpoint.empty() && folder.starts_with("checkpoint-")
            && folder.find('/') == std::string::npos)
            why = "an older checkpoint folder (the newest, " + set.newestCheckpoint + ", is the document)";
        else if (!set.latestStep.empty())
            why = "not the step `latest` names (" + set.latestStep + ")";
        result.filesLeftOut.push_back(folder + "/: " + why);
    }
    return result;
}

} // namespace ckpt
