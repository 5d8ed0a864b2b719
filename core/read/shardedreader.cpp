// SPDX-License-Identifier: MIT
// Hugging Face sharded checkpoints (torch-format.md §7.2) read as one checkpoint.
#include "core/read/shardedreader.h"

#include "core/base/textformat.h"
#include "core/format/formatsniffer.h"
#include "core/io/mappedfile.h"
#include "core/json/json.h"
#include "core/model/modulepathcache.h"
#include "core/read/dcpreader.h"
#include "core/read/dtyperelease.h"
#include "core/read/runfolderreader.h"
#include "core/read/safetensorsreader.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <optional>
#include <regex>
#include <span>
#include <string_view>
#include <thread>
#include <unordered_set>

namespace ckpt {

namespace fs = std::filesystem;

namespace {

// transformers' and huggingface_hub's shard names: "<stem>-00001-of-00004.<ext>" (§7.2).
const std::regex& shardNamePattern()
{
    static const std::regex pattern(R"(^(.*)-(\d{5})-of-(\d{5})\.(bin|safetensors)$)");
    return pattern;
}

bool isDirectory(const std::string& path)
{
    std::error_code error;
    return fs::is_directory(path, error);
}

bool isFile(const std::string& path)
{
    std::error_code error;
    return fs::is_regular_file(path, error);
}

ShardLayout layoutOfIndex(const std::string& indexName)
{
    return indexName.find(".safetensors") != std::string::npos ? ShardLayout::HuggingFaceSafetensors
                                                               : ShardLayout::HuggingFaceBin;
}

// Index files in a folder, the ones transformers looks for first, safetensors before .bin (as
// from_pretrained prefers it).
std::vector<std::string> indexFilesIn(const std::string& folder)
{
    std::vector<std::string> found;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(folder, error)) {
        const std::string name = entry.path().filename().string();
        if (name.ends_with(".index.json") && entry.is_regular_file(error))
            found.push_back(name);
    }
    auto rank = [](const std::string& name) {
        if (name == "model.safetensors.index.json")
            return 0;
        if (name == "pytorch_model.bin.index.json")
            return 1;
        return name.find(".safetensors") != std::string::npos ? 2 : 3;
    };
    std::sort(found.begin(), found.end(), [&](const std::string& a, const std::string& b) {
        return std::pair(rank(a), a) < std::pair(rank(b), b);
    });
    return found;
}

std::optional<JsonValue> readIndexJson(
    const std::string& path, std::string& problem, const ShardFileOpener& open = {})
{
    auto file = open ? open(path) : MappedFile::open(path);
    if (!file) {
        problem = file.error().message;
        return std::nullopt;
    }
    const ByteView bytes = (*file)->bytes();
    auto parsed = parseJson(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    if (!parsed) {
        problem = "the index is not valid JSON: " + parsed.error().message;
        return std::nullopt;
    }
    return *parsed;
}

// Does the index beside `file` list it as a shard? Then `file` opens as the whole set.
std::optional<ShardedInput> indexListingShard(const std::string& file)
{
    const fs::path path(file);
    const std::string name = path.filename().string();
    if (!std::regex_match(name, shardNamePattern()))
        return std::nullopt;
    const std::string folder = path.parent_path().empty() ? "." : path.parent_path().string();
    for (const std::string& indexName : indexFilesIn(folder)) {
        std::string problem;
        auto index = readIndexJson((fs::path(folder) / indexName).string(), problem);
        if (!index)
            continue;
        for (const JsonMember& member : index->member("weight_map").members())
            if (member.value.toString() == name)
                return ShardedInput {layoutOfIndex(indexName), folder,
                    (fs::path(folder) / indexName).string(), {},
                    std::make_shared<const JsonValue>(std::move(*index))};
    }
    return std::nullopt;
}

} // namespace

std::optional<ShardedInput> resolveShardedInput(const std::string& path)
{
    if (isDirectory(path)) {
        std::string folder = path;
        while (folder.size() > 1 && folder.ends_with('/'))
            folder.pop_back();
        if (isFile((fs::path(folder) / ".metadata").string()))
            return ShardedInput {
                ShardLayout::Distributed, folder, (fs::path(folder) / ".metadata").string(), {}, {}};
        // Saved without rank coordination: __R.metadata of each rank, no .metadata.
        if (const auto ranks = perRankMetadataFiles(folder); !ranks.empty())
            return ShardedInput {
                ShardLayout::Distributed, folder, (fs::path(folder) / ranks.front().second).string(), {}, {}};
        // A training run's folder: checkpoint files besides (or instead of) one model's weights.
        ParsedIndexes parsed; // the test parses the folder's indexes: the reader takes its one from there
        if (isRunFolder(folder, &parsed))
            return ShardedInput {ShardLayout::RunFolder, folder, {}, {}, {}};
        const auto indexes = indexFilesIn(folder);
        if (!indexes.empty()) {
            ShardedInput input {layoutOfIndex(indexes.front()), folder,
                (fs::path(folder) / indexes.front()).string(), {}, {}};
            for (auto& [name, index] : parsed)
                if (name == indexes.front())
                    input.index = std::move(index);
            return input;
        }
        // No index: shards named the transformers way, else the single-file names, else nothing
        // (the caller explains).
        ShardedInput input {ShardLayout::HuggingFaceBin, folder, {}, {}, {}};
        std::error_code error;
        for (const auto& entry : fs::directory_iterator(folder, error)) {
            const std::string name = entry.path().filename().string();
            if (std::regex_match(name, shardNamePattern()))
                input.shardNames.push_back(name);
        }
        if (input.shardNames.empty())
            for (const char* single : {"model.safetensors", "pytorch_model.bin"})
                if (isFile((fs::path(folder) / single).string()))
                    input.shardNames.push_back(single);
        std::sort(input.shardNames.begin(), input.shardNames.end());
        if (!input.shardNames.empty() && input.shardNames.front().ends_with(".safetensors"))
            input.layout = ShardLayout::HuggingFaceSafetensors;
        return input;
    }
    const fs::path asPath(path);
    const std::string name = asPath.filename().string();
    const std::string parent = asPath.parent_path().empty() ? "." : asPath.parent_path().string();
    if (name == ".metadata"
        || (name.ends_with(".distcp") && isFile((fs::path(parent) / ".metadata").string())))
        return ShardedInput {
            ShardLayout::Distributed, parent, (fs::path(parent) / ".metadata").string(), {}, {}};
    if (!isFile((fs::path(parent) / ".metadata").string())
        && (name.ends_with(".distcp") || (name.starts_with("__") && name.ends_with(".metadata"))))
        if (const auto ranks = perRankMetadataFiles(parent); !ranks.empty())
            return ShardedInput {
                ShardLayout::Distributed, parent, (fs::path(parent) / ranks.front().second).string(), {}, {}};
    if (name.ends_with(".index.json"))
        return ShardedInput {layoutOfIndex(name), parent, path, {}, {}};
    return indexListingShard(path);
}

namespace {

// Opens every shard on its own, several at a time: each is a memory map plus its central
// directory and pickle, so the work is small and independent. A safetensors shard whose reader
// would say nothing is only checked here: its tensors go straight into the merged checkpoint
// (inPlace[i]), and its own model is made only if a writer or a value reader asks for it.
void readShardsInParallel(std::vector<ShardFile>& shards, const ReadOptions& setOptions,
    const ShardFileOpener& open, std::vector<std::optional<CheckedSafetensors>>& inPlace)
{
    // A weight and its scale may lie in different shards: the merge drops each shard's own
    // quant-scale findings and the set is judged whole, so the shards do not judge themselves
    // (a quarter of opening a 160-shard FP8 folder, issue 28).
    ReadOptions options = setOptions;
    options.quantScaleFindings = false;
    // A model read again later must not count into a remote session that may be gone by then;
    // its bytes were fetched by the first read.
    ReadOptions againOptions = options;
    againOptions.remoteSession = nullptr;
    auto readAgain = [againOptions](std::shared_ptr<const MappedFile> file) {
        return readCheckpoint(std::move(file), againOptions);
    };
    inPlace.assign(shards.size(), std::nullopt);
    std::atomic<std::size_t> next {0};
    auto work = [&]() {
        for (std::size_t i = next++; i < shards.size(); i = next++) {
            ShardFile& shard = shards[i];
            if (!shard.present)
                continue;
            // The mapped-file overload: the path one would see the index beside and open the set again.
            auto file = open ? open(shard.path) : MappedFile::open(shard.path);
            if (!file) {
                shard.problem = file.error().message;
                continue;
            }
            shard.fileSize = (*file)->size();
            if (sniffContainer((*file)->bytes()).kind == ContainerKind::Safetensors) {
                inPlace[i] = checkSafetensorsQuietly(*file);
                if (inPlace[i]) {
                    shard.setReadInPlace(*file, CheckpointFormat::Safetensors, readAgain);
                    continue;
                }
            }
            shard.setModel(std::make_shared<const Checkpoint>(readCheckpoint(*file, options)));
        }
    };
    const std::size_t threads = std::min<std::size_t>(
        shards.size(), std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t)
        pool.emplace_back(work);
    work();
    for (std::thread& thread : pool)
        thread.join();
}

// Why a shard cannot be used, in words, or "" when it can.
std::string shardProblem(const ShardFile& shard)
{
    if (!shard.problem.empty())
        return shard.problem;
    if (!shard.present)
        return "missing";
    if (!shard.readable())
        return shard.problem.empty() ? "could not be read" : shard.problem;
    if (shard.format() == CheckpointFormat::NotACheckpoint)
        return shard.model()->container.description;
    return {};
}

// A shard's own finding, as the merged checkpoint says it: named after the shard.
void addShardFinding(Checkpoint& merged, const ShardFile& shard, const Finding& finding)
{
    Finding copy = finding;
    copy.message = shard.name + ": " + finding.message;
    if (copy.record.empty())
        copy.record = shard.name;
    else
        copy.record = shard.name + "/" + copy.record;
    copy.tensors.clear();
    merged.findings.push_back(std::move(copy));
}

// A shard read in place: its tensors added as its reader adds them, keyed as the merge keys a
// shard's storages, and the one kind of finding such a shard can have.
void addShardInPlace(Checkpoint& merged, ShardSet& set, std::size_t s, const CheckedSafetensors& checked,
    ModulePathCache& modules)
{
    ShardFile& shard = set.shards[s];
    shard.firstTensor = static_cast<std::uint32_t>(merged.tensors.size());
    addCheckedSafetensors(merged, checked, shard.name + ":", modules);
    shard.storageCount = static_cast<std::uint32_t>(merged.storages.size()) - shard.firstStorage;
    for (std::uint32_t k = 0; k < shard.storageCount; ++k) {
        set.storageShard.push_back(static_cast<std::int32_t>(s));
        set.storageInShard.push_back(k);
    }
    // The findings the shard's own read would have made (readCheckpoint's dtype notes), computed
    // from the tensors just added, which are the shard's own but for their tree nodes.
    std::vector<Finding> findings;
    addDtypeReleaseFindings(CheckpointFormat::Safetensors,
        std::span<const TensorEntry>(merged.tensors).subspan(shard.firstTensor), findings);
    for (const Finding& finding : findings)
        addShardFinding(merged, shard, finding);
    merged.fileSize += shard.fileSize;
}

// Copies each shard's storages and tensors into the merged checkpoint and builds the module tree
// across shards from the dotted names.
void mergeShards(
    Checkpoint& merged, ShardSet& set, const std::vector<std::optional<CheckedSafetensors>>& inPlace)
{
    // Sized once: a 160-shard folder of 92,000 tensors grew each array a dozen times, moving
    // every record it held each time (issue 28).
    // The tree too: the shards' trees together hold every merged node (a tensor's, and each module
    // at least once), and growing it a dozen times moved every node each time.
    std::size_t storages = 0, tensors = 0, nodes = 0;
    for (std::size_t s = 0; s < set.shards.size(); ++s)
        if (inPlace[s]) {
            storages += inPlace[s]->tensors.size(); // a storage, a tensor and a node each
            tensors += inPlace[s]->tensors.size();
            nodes += inPlace[s]->tensors.size();
        } else if (const std::shared_ptr<const Checkpoint> part = set.shards[s].model()) {
            storages += part->storages.size();
            tensors += part->tensors.size();
            nodes += part->tree.size();
        }
    merged.storages.reserve(merged.storages.size() + storages);
    merged.tensors.reserve(merged.tensors.size() + tensors);
    merged.tree.reserve(merged.tree.size() + nodes);
    merged.storageKeyIndex.reserve(merged.storages.size() + storages);
    set.storageShard.reserve(set.storageShard.size() + storages);
    set.storageInShard.reserve(set.storageInShard.size() + storages);
    ModulePathCache modules;
    for (std::size_t s = 0; s < set.shards.size(); ++s) {
        ShardFile& shard = set.shards[s];
        shard.problem = shardProblem(shard);
        shard.firstStorage = static_cast<std::uint32_t>(merged.storages.size());
        if (!shard.readable())
            continue;
        if (!shard.problem.empty())
            continue; // one finding says why (below); the shard's own "not a checkpoint" would repeat it
        if (inPlace[s]) {
            addShardInPlace(merged, set, s, *inPlace[s], modules);
            continue;
        }
        const std::shared_ptr<const Checkpoint> model = shard.model();
        const Checkpoint& part = *model;
        for (const Finding& finding : part.findings) {
            // A weight and its scale may lie in different shards: the set's own pass judges them.
            if (finding.code == FindingCode::QuantScaleMissing
                || finding.code == FindingCode::QuantScaleMismatch
                || finding.code == FindingCode::QuantScaleOrphan)
                continue;
            addShardFinding(merged, shard, finding);
        }
        const auto firstTensor = static_cast<std::uint32_t>(merged.tensors.size());
        shard.firstTensor = firstTensor;
        // Keys repeat across shards ("0" in every .bin); the merged key says which shard. It is made
        // in one reused buffer: a CompactText copies it (in place up to 15 characters).
        std::string key;
        for (std::size_t k = 0; k < part.storages.size(); ++k) {
            StorageRecord storage = part.storages[k];
            key.assign(shard.name).append(1, ':').append(storage.key);
            storage.key = key;
            if (storage.recordKeyStart != StorageRecord::kRecordWithoutKey) // the same record name
                storage.recordKeyStart += static_cast<std::uint32_t>(shard.name.size() + 1);
            for (std::uint32_t& tensor : storage.tensors)
                tensor += firstTensor;
            // The pickle nodes belong to the shard's own graph; the writer uses the shard itself.
            storage.firstPersistentId = kNoNode;
            storage.persistentIdTuples.clear();
            merged.storages.push_back(std::move(storage));
            merged.indexStorage(static_cast<std::uint32_t>(merged.storages.size() - 1));
            set.storageShard.push_back(static_cast<std::int32_t>(s));
            set.storageInShard.push_back(static_cast<std::uint32_t>(k));
        }
        shard.storageCount = static_cast<std::uint32_t>(merged.storages.size()) - shard.firstStorage;
        std::string leaf; // one buffer for every tensor's last name component
        for (const TensorEntry& original : part.tensors) {
            TensorEntry tensor = original;
            if (tensor.storage >= 0)
                tensor.storage += static_cast<std::int32_t>(shard.firstStorage);
            tensor.node = kNoNode;
            tensor.deviceArgumentTuple = kNoNode;
            const std::uint32_t parent = modules.parentFor(merged, tensor.name, leaf);
            tensor.treeNode = merged.addTreeNode(parent, TreeNodeKind::Tensor, leaf);
            merged.tree[tensor.treeNode].tensor = static_cast<std::int32_t>(merged.tensors.size());
            merged.tensors.push_back(std::move(tensor));
        }
        merged.fileSize += shard.fileSize;
    }
}

CheckpointFormat formatOfShards(const ShardSet& set)
{
    for (const ShardFile& shard : set.shards)
        if (shard.readable() && shard.format() != CheckpointFormat::NotACheckpoint)
            return shard.format();
    return set.layout == ShardLayout::HuggingFaceSafetensors ? CheckpointFormat::Safetensors
                                                             : CheckpointFormat::TorchZip;
}

} // namespace

Checkpoint readShardedCheckpoint(
    const ShardedInput& input, const ReadOptions& options, const ShardFileOpener& openFile)
{
    if (input.layout == ShardLayout::Distributed)
        return readDistributedCheckpoint(input, options);
    if (input.layout == ShardLayout::RunFolder)
        return readRunFolder(input.folder, options);

    Checkpoint merged;
    merged.path = input.folder;
    merged.ensureRoot();
    auto set = std::make_shared<ShardSet>();
    set->layout = input.layout;
    set->folder = input.folder;
    set->indexPath = input.indexPath;

    std::vector<std::string> names = input.shardNames;
    if (!input.indexPath.empty()) {
        std::string problem;
        std::optional<JsonValue> read;
        if (!input.index)
            read = readIndexJson(input.indexPath, problem, openFile);
        const JsonValue* index = input.index ? input.index.get() : read ? &*read : nullptr;
        if (!index) {
            merged.container = {ContainerKind::JsonText, problem};
            merged.addFinding(Severity::Error, FindingCode::IndexUnreadable,
                fs::path(input.indexPath).filename().string() + ": " + problem, input.indexPath);
            merged.shardSet = set;
            return merged;
        }
        if (auto total = index->member("metadata").member("total_size").toUInt64())
            set->indexTotalSize = *total;
        // Each shard's name once: the entries of one shard come together in real indexes, so most
        // are the previous entry's shard, and the others are looked up by a hash of the index's own
        // text (a set of strings compared a hundred thousand names, issue 28).
        const JsonValue& weightMap = index->member("weight_map");
        set->weightMap.reserve(weightMap.size());
        std::unordered_set<std::string_view> seen;
        std::string_view previous;
        bool any = false;
        for (const JsonMember& member : weightMap.members()) {
            const std::string& shardName = member.value.toString();
            set->weightMap.emplace_back(member.key, shardName);
            if (any && std::string_view(shardName) == previous)
                continue;
            any = true;
            previous = shardName;
            if (seen.insert(previous).second)
                names.push_back(shardName);
        }
        if (!index->find("weight_map"))
            merged.addFinding(Severity::Error, FindingCode::IndexWithoutWeightMap,
                fs::path(input.indexPath).filename().string()
                    + " has no \"weight_map\": it does not say which shard holds which tensor",
                input.indexPath);
        std::sort(names.begin(), names.end());
    }
    if (names.empty()) {
        merged.format = CheckpointFormat::NotACheckpoint;
        merged.container = {ContainerKind::Unknown,
            "the folder holds no checkpoint: no index (*.index.json), no shards named *-0000N-of-0000M.bin "
            "or "
            ".safetensors, no model.safetensors or pytorch_model.bin, and no DCP .metadata"};
        merged.addFinding(Severity::Error, FindingCode::NotACheckpoint, merged.container.description);
        merged.shardSet = set;
        return merged;
    }
    for (const std::string& name : names) {
        ShardFile shard;
        shard.name = name;
        shard.path = (fs::path(input.folder) / name).string();
        shard.listedInIndex = !input.indexPath.empty();
        // An index names files beside it; a name that leaves the folder is not followed.
        const bool outside = name.empty() || name.find('/') != std::string::npos
            || name.find('\\') != std::string::npos || name == "." || name == "..";
        shard.present = !outside && (openFile || isFile(shard.path)); // a URL is tried when read
        if (outside)
            shard.problem = "the index names a file outside its folder; it is not opened";
        set->shards.push_back(std::move(shard));
    }
    std::vector<std::optional<CheckedSafetensors>> inPlace;
    readShardsInParallel(set->shards, options, openFile, inPlace);
    mergeShards(merged, *set, inPlace);
    merged.format = formatOfShards(*set);
    merged.container = {
        merged.format == CheckpointFormat::Safetensors ? ContainerKind::Safetensors : ContainerKind::TorchZip,
        std::to_string(set->shards.size()) + " shard(s) of " + shardLayoutName(set->layout)
            + (input.indexPath.empty() ? std::string(" found without an index")
                                       : " listed by " + fs::path(input.indexPath).filename().string())};
    for (const ShardFile& shard : set->shards) {
        if (shard.problem.empty())
            continue;
        Finding finding(Severity::Error,
            shard.present ? FindingCode::ShardUnreadable : FindingCode::ShardMissing,
            shard.present ? shard.name + " is not a usable shard: " + shard.problem
                : shard.problem == "missing"
                ? shard.name + " is listed by the index but is not in " + input.folder
                : shard.name + ": " + shard.problem,
            shard.name);
        merged.findings.push_back(std::move(finding));
    }
    if (input.indexPath.empty() && names.size() > 1)
        merged.addFinding(Severity::Warning, FindingCode::ShardsWithoutIndex,
            "the folder holds " + std::to_string(names.size())
                + " shard files but no index (*.index.json): from_pretrained cannot load them without it");
    merged.shardSet = std::move(set);
    return merged;
}

} // namespace ckpt
