// SPDX-License-Identifier: MIT
#include "core/write/shardedwriter.h"

#include "core/base/textformat.h"
#include "core/io/temporaryfolder.h"
#include "core/model/checkpoint.h"
#include "core/model/formatcapabilities.h"
#include "core/model/shardset.h"
#include "core/plan/placementplan.h"
#include "core/write/bundlewriter.h"
#include "core/write/runfolderwriter.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

namespace ckpt {

namespace fs = std::filesystem;

std::string ShardedRemapResult::summary() const
{
    std::size_t verified = 0;
    for (const RemapResult& shard : shards)
        verified += shard.verified ? 1 : 0;
    if (!bundleKind.empty())
        return "a " + bundleKind + " bundle written: " + std::to_string(shards.size())
            + " checkpoint member(s) rewritten (" + std::to_string(verified) + " verified), "
            + std::to_string(filesCopied.size()) + " member(s) copied unchanged, " + formatBytes(bytesWritten)
            + " in " + std::to_string(seconds).substr(0, 5) + " s";
    std::string text = std::to_string(shards.size()) + " shard(s) written (" + std::to_string(verified)
        + " verified), " + std::to_string(filesCopied.size()) + " file(s) copied, "
        + formatBytes(bytesWritten) + " in " + std::to_string(seconds).substr(0, 5) + " s";
    if (!filesLeftOut.empty())
        text += "; left out: " + std::to_string(filesLeftOut.size()) + " file(s)";
    return text;
}

std::optional<std::string> whyFolderCannotBeRemapped(const Checkpoint& checkpoint)
{
    if (!checkpoint.shardSet)
        return "not a checkpoint of several files";
    const ShardSet& set = *checkpoint.shardSet;
    if (set.bundle) // one archive, rewritten as one (bundlewriter.h)
        return whyBundleCannotBeRemapped(checkpoint);
    const FormatCapabilities& row = formatCapabilities(set.layout);
    if (row.copyWithPlan == CopyWithPlan::PlanExported)
        return std::string(row.noDeviceReason)
            + ", so there is nothing to rewrite: the plan is exported instead";
    if (row.copyWithPlan != CopyWithPlan::Rewritten)
        return std::string(row.title) + " cannot be rewritten with a plan";
    if (set.layout == ShardLayout::RunFolder)
        return std::nullopt; // a damaged file is copied as it is unless the plan changes it (the writer says)
    for (const ShardFile& shard : set.shards)
        if (!shard.problem.empty() || !shard.model())
            return shard.name + " is not usable (" + (shard.problem.empty() ? "unread" : shard.problem)
                + "): a folder with a shard missing would not load; fix it first";
    return std::nullopt;
}

Expected<ShardedRemapResult> writeRemappedFolder(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const std::string& outputFolder, const RemapOptions& options)
{
    const auto started = std::chrono::steady_clock::now();
    if (auto why = whyFolderCannotBeRemapped(checkpoint))
        return makeError("cannot write a remapped folder: " + *why);
    const ShardSet& set = *checkpoint.shardSet;
    std::error_code error;
    fs::path target(outputFolder);
    while (target.has_filename() == false && target.has_parent_path() && target != target.root_path())
        target = target.parent_path(); // "out/" -> "out"
    if (fs::exists(target, error)) {
        if (fs::equivalent(target, set.folder, error))
            return makeError(
                "the output folder is the input folder: a remapped copy never replaces its input");
        if (!fs::is_directory(target, error) || !fs::is_empty(target, error))
            return makeError(
                target.string() + " already exists and is not an empty folder; choose a new folder");
    }
    const std::string temporary = makeTemporaryFolderBeside(target, "tmp");
    if (temporary.empty())
        return makeError(
            "cannot create a temporary folder beside " + target.string() + " (is its parent writable?)");
    RemoveFolderOnExit cleanup;
    cleanup.path = temporary;

    ShardedRemapResult result;
    if (set.layout == ShardLayout::RunFolder) {
        auto written = writeRemappedRunFolder(checkpoint, plan, temporary, options);
        if (!written)
            return makeError(written.error().message);
        result = std::move(*written);
    }
    for (const ShardFile& shard : set.shards) {
        if (set.layout == ShardLayout::RunFolder)
            break;
        // The shard's own plan: each of its storages goes where the merged plan puts it.
        PlacementPlan shardPlan(*shard.model());
        std::vector<std::pair<std::uint32_t, std::optional<std::string>>> devices;
        for (std::uint32_t k = 0; k < shard.storageCount; ++k) {
            const std::int32_t unit = shardPlan.unitOfStorage(k);
            if (unit >= 0)
                devices.emplace_back(
                    static_cast<std::uint32_t>(unit), plan.plannedDeviceOfStorage(shard.firstStorage + k));
        }
        // Storage-less units (wrapper subclasses) keep their tensor's planned device.
        for (std::uint32_t t = 0; t < shard.model()->tensors.size(); ++t)
            if (shard.model()->tensors[t].storage < 0)
                if (const std::int32_t unit = shardPlan.unitOfTensor(t); unit >= 0)
                    devices.emplace_back(
                        static_cast<std::uint32_t>(unit), plan.plannedDeviceOfTensor(shard.firstTensor + t));
        shardPlan.restore(devices);
        auto written = writeRemappedCopy(
            *shard.model(), shardPlan, (fs::path(temporary) / shard.name).string(), options);
        if (!written)
            return makeError(shard.name + ": " + written.error().message);
        if (options.verifyAfterWriting && !written->verified)
            return makeError(shard.name + ": the written shard did not verify");
        result.bytesWritten += written->bytesWritten;
        result.shards.push_back(std::move(*written));
    }
    // The index and the folder's other files (config.json, tokenizer, ...), byte for byte. Files of
    // the other format are left out: from_pretrained prefers safetensors and would ignore the copy.
    std::set<std::string> shardNames;
    for (const ShardFile& shard : set.shards)
        shardNames.insert(shard.name);
    for (const auto& entry : fs::directory_iterator(set.folder, error)) {
        if (set.layout == ShardLayout::RunFolder)
            break; // its other files are copied above
        const std::string name = entry.path().filename().string();
        if (!entry.is_regular_file(error) || shardNames.count(name))
            continue;
        if (name.ends_with(".safetensors") || name.ends_with(".safetensors.index.json")) {
            result.filesLeftOut.push_back(name
                + ": safetensors weights beside the .bin shards; from_pretrained would load "
                  "them instead of the remapped shards");
            continue;
        }
        if (!fs::copy_file(entry.path(), fs::path(temporary) / name, error))
            return makeError("cannot copy " + name + ": " + error.message());
        result.filesCopied.push_back(name);
        result.bytesWritten += fs::file_size(entry.path(), error);
    }
    if (fs::exists(target, error))
        fs::remove(target, error); // an empty folder, checked above
    fs::rename(temporary, target, error);
    if (error)
        return makeError("cannot rename " + temporary + " to " + target.string() + ": " + error.message());
    cleanup.keep = true;
    result.outputFolder = target.string();
    for (RemapResult& shard : result.shards)
        shard.outputPath = (target / fs::path(shard.outputPath).lexically_relative(temporary)).string();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return result;
}

} // namespace ckpt
