// SPDX-License-Identifier: MIT
// torch.distributed.checkpoint folders (torch-format.md §7.1): `.metadata` is a plain pickle of
// Metadata. It runs through the symbolic pickle machine (nothing is imported or called) and the
// inert graph is walked by the dataclasses' field names.
#include "core/read/dcpreader.h"

#include "core/format/streamtransforms.h"
#include "core/io/mappedfile.h"
#include "core/json/json.h"
#include "core/model/dtype.h"
#include "core/read/shardedreader.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

namespace ckpt {

namespace {

namespace fs = std::filesystem;

// The fields an object got from BUILD with a dict state (a dataclass's __dict__), or a dict's
// items: key -> value node.
std::map<std::string, NodeId> fieldsOf(const PickleGraph& graph, NodeId object)
{
    std::map<std::string, NodeId> fields;
    const ContainerBody* body = graph.bodyOf(object);
    if (!body)
        return fields;
    auto addItems = [&](const std::vector<NodeId>& items) {
        for (std::size_t i = 0; i + 1 < items.size(); i += 2)
            if (graph.isString(items[i]))
                fields[std::string(graph.text(items[i]))] = items[i + 1];
    };
    if (graph.kind(object) == NodeKind::Dict) {
        addItems(body->dictItems);
        return fields;
    }
    for (NodeId state : body->states) {
        if (const ContainerBody* stateBody = graph.bodyOf(state);
            stateBody && graph.kind(state) == NodeKind::Dict)
            addItems(stateBody->dictItems);
        // (state, slotstate) pairs of classes with __slots__
        if (graph.kind(state) == NodeKind::Tuple)
            for (NodeId part : graph.sequence(state))
                if (const ContainerBody* partBody = graph.bodyOf(part);
                    partBody && graph.kind(part) == NodeKind::Dict)
                    addItems(partBody->dictItems);
    }
    return fields;
}

NodeId field(const std::map<std::string, NodeId>& fields, const char* name)
{
    const auto it = fields.find(name);
    return it == fields.end() ? kNoNode : it->second;
}

std::string className(const PickleGraph& graph, NodeId object)
{
    const std::string name = graph.calleeName(object);
    const std::size_t dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(dot + 1);
}

// Whether `node` is an object (built by NEWOBJ or REDUCE), not a scalar or a container.
bool isObject(const PickleGraph& graph, NodeId node)
{
    return graph.kind(node) == NodeKind::NewObject || graph.kind(node) == NodeKind::Call;
}

// Metadata, whatever class the pickle names (DCP's own, torch 1.13's, a framework's subclass such as
// Megatron-core's MCoreMetadata): an object whose state holds a state_dict_metadata dict.
bool hasMetadataShape(const PickleGraph& graph, NodeId node)
{
    if (!isObject(graph, node))
        return false;
    return graph.kind(field(fieldsOf(graph, node), "state_dict_metadata")) == NodeKind::Dict;
}

// The text of a string, or of a path object (pathlib.PosixPath('ckpt') as REDUCE with its parts).
std::string textOrPath(const PickleGraph& graph, NodeId node)
{
    if (graph.isString(node))
        return std::string(graph.text(node));
    if (graph.kind(node) == NodeKind::Call) {
        std::string text;
        for (NodeId part : graph.sequence(graph.arguments(node)))
            if (graph.isString(part))
                text += (text.empty() ? "" : "/") + std::string(graph.text(part));
        return text;
    }
    return {};
}

// torch.Size((3, 4)) as REDUCE(torch.Size, ((3, 4),)), or a plain tuple.
std::optional<std::vector<std::int64_t>> sizeOf(const PickleGraph& graph, NodeId node)
{
    if (graph.kind(node) == NodeKind::Call && graph.calleeName(node) == "torch.Size")
        node = graph.tupleItem(graph.arguments(node), 0);
    if (graph.kind(node) != NodeKind::Tuple && graph.kind(node) != NodeKind::List)
        return std::nullopt;
    std::vector<std::int64_t> values;
    for (NodeId item : graph.sequence(node)) {
        if (!graph.isInt(item))
            return std::nullopt;
        values.push_back(graph.intValue(item));
    }
    return values;
}

// TensorProperties pickles through __getstate__ as (dtype, layout, requires_grad, memory_format,
// pin_memory); the dtype is GLOBAL torch.<name>.
std::string dtypeOfProperties(const PickleGraph& graph, NodeId properties)
{
    const ContainerBody* body = graph.bodyOf(properties);
    if (body)
        for (NodeId state : body->states) {
            NodeId dtype = kNoNode;
            if (graph.kind(state) == NodeKind::Tuple)
                dtype = graph.tupleItem(state, 0);
            else
                dtype = field(fieldsOf(graph, properties), "dtype");
            if (graph.kind(dtype) == NodeKind::Global && graph.module(dtype) == "torch")
                return std::string(graph.name(dtype));
        }
    return {};
}

std::string offsetsKey(const std::string& fqn, const std::vector<std::int64_t>& offsets)
{
    std::string key = fqn + "@";
    for (std::int64_t value : offsets)
        key += std::to_string(value) + ",";
    return key;
}

struct StorageLocation {
    std::string file;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    std::vector<std::string> transforms;
};

// The fields of Metadata that DCP itself writes; anything else a framework added (Megatron-core:
// mcore_data, all_local_plans) is named, not read.
bool isDcpField(const std::string& name)
{
    return name == "state_dict_metadata" || name == "planner_data" || name == "storage_data"
        || name == "storage_meta" || name == "version";
}

// Tensor chunk archives opened at read time to check what each holds; past this, chunks are
// located and left for the export to open.
constexpr std::uint32_t kArchiveBudget = 4096;

bool startsWithZip(ByteView bytes, std::uint64_t offset, std::uint64_t length)
{
    return length >= 4 && offset + 4 <= bytes.size() && bytes[offset] == 'P' && bytes[offset + 1] == 'K'
        && bytes[offset + 2] == 3 && bytes[offset + 3] == 4;
}

// What undoing a transformed range may produce at most (a hostile stream cannot balloon in memory):
// a tensor chunk's archive is its elements plus a few KiB of zip and pickle; a bytes entry's value
// has no recorded size.
constexpr std::uint64_t kBytesEntryLimit = std::uint64_t(1) << 30;

std::uint64_t chunkLimit(const DcpEntry& entry, const DcpChunk& chunk)
{
    std::uint64_t numel = 1;
    for (std::int64_t size : chunk.sizes)
        numel *= static_cast<std::uint64_t>(std::max<std::int64_t>(size, 0));
    const auto info = dtypeByName(entry.dtype);
    return (info ? info->bytesFor(numel) : numel * 16) + (std::uint64_t(16) << 20);
}

std::string joined(const std::vector<std::string>& parts)
{
    std::string text;
    for (const std::string& part : parts)
        text += (text.empty() ? "" : ", ") + part;
    return text;
}

// Each data file as the ranges .metadata places in it, by offset: what each range holds (a
// torch.save archive, and for tensor chunks the tensor in it), what lies between them.
void readDataFiles(const std::string& folder, DcpMetadata& dcp)
{
    std::map<std::string, DcpDataFile> byName;
    for (const DcpEntry& entry : dcp.entries)
        for (std::size_t c = 0; c < entry.chunks.size(); ++c) {
            const DcpChunk& chunk = entry.chunks[c];
            if (!chunk.located)
                continue;
            DcpItem item;
            item.fqn = entry.fqn;
            item.isBytes = entry.isBytes;
            item.chunk = entry.isBytes ? -1 : static_cast<std::int32_t>(c);
            item.offset = chunk.fileOffset;
            item.length = chunk.length;
            item.transforms = chunk.transforms;
            byName[chunk.file].name = chunk.file;
            byName[chunk.file].items.push_back(std::move(item));
        }
    std::map<std::string, const DcpEntry*> entryOf;
    for (const DcpEntry& entry : dcp.entries)
        entryOf.emplace(entry.fqn, &entry);
    for (auto& [name, dataFile] : byName) {
        std::sort(dataFile.items.begin(), dataFile.items.end(),
            [](const DcpItem& a, const DcpItem& b) { return a.offset < b.offset; });
        std::shared_ptr<const MappedFile> file;
        // Only names beside .metadata are followed, never a path out of the folder.
        if (name.find('/') == std::string::npos && name != "..")
            if (auto opened = MappedFile::open((fs::path(folder) / name).string()))
                file = *opened;
        dataFile.present = file != nullptr;
        dataFile.fileSize = file ? file->size() : 0;
        std::uint64_t reached = 0;
        std::uint64_t claimed = 0;
        for (DcpItem& item : dataFile.items) {
            if (item.offset < reached)
                ++dataFile.overlaps;
            const std::uint64_t end = item.offset + item.length;
            if (end > reached) {
                claimed += end - std::max(reached, item.offset);
                reached = end;
            }
            if (!file) {
                item.content = item.content.empty() ? "data file missing" : item.content;
                continue;
            }
            if (end < item.offset || end > file->size()) {
                item.content = "past the end of the file";
                item.problem = name + " has " + std::to_string(file->size()) + " bytes; the range ends at "
                    + std::to_string(end);
                continue;
            }
            // Through writer extensions (zstd): the range is undone first, as DCP's reader does.
            const DcpChunk* chunk
                = item.isBytes ? nullptr : &entryOf[item.fqn]->chunks[static_cast<std::size_t>(item.chunk)];
            const std::vector<std::string>& transforms = item.transforms;
            std::shared_ptr<const MappedFile> range;
            std::string through;
            if (!transforms.empty()) {
                if (const std::string unknown = unknownStreamTransforms(transforms); !unknown.empty()) {
                    item.content = "stored through an unknown writer extension (" + unknown + ")";
                    item.problem
                        = "DCP's load fails with \"Unknown extension\" unless the writer's extension ("
                        + unknown + ") is registered; its bytes are not undone here";
                    continue;
                }
                if (dcp.archivesRead >= kArchiveBudget) {
                    item.content = "transformed (" + joined(transforms) + ")";
                    ++dcp.archivesNotRead;
                    continue;
                }
                auto undone = undoStreamTransforms(file->bytes().subspan(item.offset, item.length),
                    transforms, item.isBytes ? kBytesEntryLimit : chunkLimit(*entryOf[item.fqn], *chunk));
                if (!undone) {
                    item.content = "transformed (" + joined(transforms) + "), not undone";
                    item.problem = joined(transforms) + ": " + undone.error().message;
                    continue;
                }
                through = " through " + joined(transforms);
                range = MappedFile::fromBuffer(std::move(*undone), name + "@" + std::to_string(item.offset));
            } else
                range = MappedFile::slice(file, item.offset, item.length);
            if (!range)
                continue;
            const bool zip = startsWithZip(range->bytes(), 0, range->size());
            if (item.isBytes) {
                item.content = (zip ? "torch.save archive" : "raw bytes") + through;
                continue;
            }
            item.content = (zip ? "torch.save archive" : "not a torch.save archive") + through;
            if (!zip) {
                item.problem = "a tensor chunk does not start with a torch.save archive";
                continue;
            }
            if (dcp.archivesRead >= kArchiveBudget) {
                ++dcp.archivesNotRead;
                continue;
            }
            ++dcp.archivesRead;
            const Checkpoint archive = readCheckpoint(range);
            if (archive.tensors.size() != 1) {
                item.problem = "the archive holds " + std::to_string(archive.tensors.size())
                    + " tensors, not one (" + archive.container.description + ")";
                continue;
            }
            item.archiveDtype = archive.tensors.front().dtype;
            item.archiveShape.assign(
                archive.tensors.front().shape.begin(), archive.tensors.front().shape.end());
            if (item.archiveDtype != entryOf[item.fqn]->dtype || item.archiveShape != chunk->sizes)
                item.problem = "the archive holds a " + item.archiveDtype
                    + " tensor of another shape or dtype "
                      "than .metadata records for this chunk";
        }
        dataFile.unclaimedBytes = dataFile.fileSize > claimed ? dataFile.fileSize - claimed : 0;
        dcp.files.push_back(std::move(dataFile));
    }
}

// The node of `part`'s tree below `parent` of the merged tree, its own tensors and storages copied
// (their recorded devices kept): a framework's torch.save file beside the DCP data (common.pt).
void graftCompanion(Checkpoint& merged, ShardSet& set, std::int32_t shardIndex, const Checkpoint& part,
    const std::string& name)
{
    const std::uint32_t top = merged.addTreeNode(0, TreeNodeKind::Object, name);
    merged.tree[top].className = InternedString(std::string("torch.save file"));
    merged.tree[top].summary = part.container.description;
    const auto firstStorage = static_cast<std::uint32_t>(merged.storages.size());
    const auto firstTensor = static_cast<std::uint32_t>(merged.tensors.size());
    for (std::size_t k = 0; k < part.storages.size(); ++k) {
        StorageRecord storage = part.storages[k];
        storage.key = name + ":" + storage.key;
        if (storage.recordKeyStart != StorageRecord::kRecordWithoutKey)
            storage.recordKeyStart += static_cast<std::uint32_t>(name.size() + 1);
        for (std::uint32_t& tensor : storage.tensors)
            tensor += firstTensor;
        storage.firstPersistentId = kNoNode;
        storage.persistentIdTuples.clear();
        merged.storages.push_back(std::move(storage));
        merged.indexStorage(static_cast<std::uint32_t>(merged.storages.size() - 1));
        set.storageShard.push_back(shardIndex);
        set.storageInShard.push_back(static_cast<std::uint32_t>(k));
    }
    std::vector<std::uint32_t> nodeOf(part.tree.size(), 0);
    if (!part.tree.empty()) {
        nodeOf[0] = top;
        std::vector<std::uint32_t> pending {0};
        while (!pending.empty()) {
            const std::uint32_t source = pending.back();
            pending.pop_back();
            for (std::uint32_t child : part.tree[source].children) {
                if (child >= part.tree.size())
                    continue;
                const TreeNode& original = part.tree[child];
                const std::uint32_t copy
                    = merged.addTreeNode(nodeOf[source], original.kind, original.name.str());
                merged.tree[copy].className = original.className;
                merged.tree[copy].summary = original.summary;
                nodeOf[child] = copy;
                pending.push_back(child);
            }
        }
    }
    for (const TensorEntry& original : part.tensors) {
        TensorEntry tensor = original;
        if (tensor.storage >= 0)
            tensor.storage += static_cast<std::int32_t>(firstStorage);
        tensor.node = kNoNode;
        tensor.deviceArgumentTuple = kNoNode;
        tensor.name = name + ":" + tensor.name;
        tensor.treeNode = original.treeNode < nodeOf.size() && nodeOf[original.treeNode] != 0
            ? nodeOf[original.treeNode]
            : merged.addTreeNode(top, TreeNodeKind::Tensor, original.name);
        merged.tree[tensor.treeNode].tensor = static_cast<std::int32_t>(merged.tensors.size());
        merged.tensors.push_back(std::move(tensor));
    }
    for (const Finding& finding : part.findings) {
        Finding copy = finding;
        copy.message = name + ": " + finding.message;
        copy.record = copy.record.empty() ? name : name + "/" + copy.record;
        copy.tensors.clear();
        merged.findings.push_back(std::move(copy));
    }
}

// Megatron-core's files beside .metadata: metadata.json names the backends
// ({"sharded_backend": "torch_dist", ...}); common.pt is a torch.save of what every rank shares.
void readCompanions(Checkpoint& merged, ShardSet& set, const ReadOptions& options)
{
    DcpMetadata& dcp = *set.dcp;
    const fs::path folder(set.folder);
    std::error_code error;
    if (fs::is_regular_file(folder / "metadata.json", error)) {
        std::string said;
        if (auto file = MappedFile::open((folder / "metadata.json").string())) {
            const ByteView bytes = (*file)->bytes();
            auto parsed
                = parseJson(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
            if (parsed && parsed->isObject()) {
                for (const JsonMember& member : parsed->members()) {
                    std::string value = member.value.isString() ? member.value.toString()
                        : member.value.toInt64()                ? std::to_string(*member.value.toInt64())
                                                                : std::string("...");
                    said += (said.empty() ? "" : ", ") + member.key + " " + value;
                }
                if (!parsed->member("sharded_backend").isNull())
                    dcp.framework = "Megatron-core distributed checkpoint";
            } else
                said = "not a JSON object";
        }
        dcp.companions.emplace_back("metadata.json", said);
    }
    if (!fs::is_regular_file(folder / "common.pt", error))
        return;
    ShardFile shard;
    shard.name = "common.pt";
    shard.path = (folder / "common.pt").string();
    shard.present = true;
    shard.companion = true;
    shard.fileSize = fs::file_size(shard.path, error);
    auto part = std::make_shared<Checkpoint>(readCheckpoint(shard.path, options));
    dcp.companions.emplace_back(
        "common.pt", std::to_string(part->tensors.size()) + " tensor(s); " + part->container.description);
    if (part->format == CheckpointFormat::NotACheckpoint)
        shard.problem = "not a checkpoint torch can load: " + part->container.description;
    if (dcp.framework.empty())
        dcp.framework = "Megatron-core distributed checkpoint";
    shard.setModel(part);
    shard.firstStorage = static_cast<std::uint32_t>(merged.storages.size());
    shard.firstTensor = static_cast<std::uint32_t>(merged.tensors.size());
    const auto index = static_cast<std::int32_t>(set.shards.size());
    graftCompanion(merged, set, index, *part, shard.name);
    shard.storageCount = static_cast<std::uint32_t>(merged.storages.size()) - shard.firstStorage;
    merged.fileSize += shard.fileSize;
    set.shards.push_back(std::move(shard));
}

} // namespace

std::vector<std::pair<std::int32_t, std::string>> perRankMetadataFiles(const std::string& folder)
{
    std::vector<std::pair<std::int32_t, std::string>> found;
    std::error_code error;
    for (const auto& item : fs::directory_iterator(folder, error)) {
        const std::string name = item.path().filename().string();
        // "__" digits ".metadata", as FileSystemWriter names a rank's own metadata
        if (name.size() < 12 || name.size() > 21 || !name.starts_with("__") || !name.ends_with(".metadata"))
            continue;
        const std::string digits = name.substr(2, name.size() - 11);
        if (digits.empty()
            || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })
            || !item.is_regular_file(error))
            continue;
        found.emplace_back(static_cast<std::int32_t>(std::stol(digits)), name);
    }
    std::sort(found.begin(), found.end());
    return found;
}

Checkpoint readDistributedCheckpoint(const ShardedInput& input, const ReadOptions& options)
{
    Checkpoint merged;
    merged.path = input.folder;
    merged.ensureRoot();
    auto set = std::make_shared<ShardSet>();
    set->layout = ShardLayout::Distributed;
    set->folder = input.folder;
    set->indexPath = input.indexPath;
    merged.format = CheckpointFormat::Distributed;
    merged.container = {ContainerKind::PlainPickle,
        "a torch.distributed.checkpoint folder: .metadata (a plain pickle of Metadata) and .distcp data "
        "files"};

    // The metadata: .metadata, or, in a folder saved without rank coordination
    // (use_collectives=False), every rank's own __R.metadata, each rank's keys then named "rankR:".
    std::vector<std::pair<std::int32_t, std::string>> metadataFiles;
    const std::string indexName = fs::path(input.indexPath).filename().string();
    if (indexName != ".metadata")
        metadataFiles = perRankMetadataFiles(input.folder);
    if (metadataFiles.empty())
        metadataFiles.emplace_back(-1, indexName);
    const bool severalRanks = metadataFiles.size() > 1;
    DcpMetadata dcp;
    std::map<std::string, StorageLocation> locations;
    std::set<std::string> files;
    std::map<std::string, std::vector<std::string>> plannerPaths;
    bool first = true;
    for (const auto& [rank, metadataName] : metadataFiles) {
        const std::string prefix = severalRanks ? "rank" + std::to_string(rank) + ":" : std::string();
        auto file = MappedFile::open((fs::path(input.folder) / metadataName).string());
        if (!file) {
            merged.addFinding(Severity::Error, FindingCode::CannotOpen, file.error().message, metadataName);
            continue;
        }
        merged.fileSize += (*file)->size();
        PickleSection section;
        section.record = metadataName;
        section.run = PickleMachine(options.pickleLimits).run((*file)->bytes(), merged.graph);
        const PickleGraph& graph = merged.graph;
        const NodeId root = section.run.root;
        if (!section.run.complete() || !hasMetadataShape(graph, root)) {
            merged.addFinding(Severity::Error, FindingCode::DcpMetadataUnreadable,
                section.run.error ? metadataName + " could not be read to its end ("
                        + std::to_string((*file)->size()) + " bytes): " + *section.run.error
                                  : metadataName
                        + " is a pickle, but not of torch.distributed.checkpoint's Metadata (it holds "
                        + (graph.calleeName(root).empty() ? std::string("something else")
                                                          : graph.calleeName(root))
                        + ", with no state_dict_metadata)",
                metadataName,
                section.run.error ? std::optional<std::uint64_t>(section.run.errorOffset) : std::nullopt);
            merged.pickles.push_back(std::move(section));
            continue;
        }
        dcp.metadataFiles.push_back(metadataName);
        const auto metadata = fieldsOf(graph, root);
        if (first) { // what the folder's metadata says of itself: the first readable file's
            dcp.metadataClass = graph.calleeName(root);
            for (const auto& [name, value] : metadata)
                if (!isDcpField(name))
                    dcp.extraFields.push_back(name);
            if (graph.isString(field(metadata, "version")))
                dcp.version = std::string(graph.text(field(metadata, "version")));
            if (const auto storageMeta = fieldsOf(graph, field(metadata, "storage_meta"));
                !storageMeta.empty()) {
                for (NodeId module : graph.sequence(field(storageMeta, "modules")))
                    if (graph.isString(module))
                        dcp.modules.emplace_back(graph.text(module));
                dcp.checkpointId = textOrPath(graph, field(storageMeta, "checkpoint_id"));
            }
            first = false;
        }

        // storage_data: MetadataIndex(fqn, offset) -> _StorageInfo(relative_path, offset, length,
        // transform_descriptors), matched by their fields whatever classes name them.
        if (const ContainerBody* body = graph.bodyOf(field(metadata, "storage_data"));
            body && graph.kind(field(metadata, "storage_data")) == NodeKind::Dict)
            for (std::size_t i = 0; i + 1 < body->dictItems.size(); i += 2) {
                const auto index = fieldsOf(graph, body->dictItems[i]);
                const auto info = fieldsOf(graph, body->dictItems[i + 1]);
                const NodeId fqn = field(index, "fqn");
                const NodeId path = field(info, "relative_path");
                if (!graph.isString(fqn) || !graph.isString(path))
                    continue;
                const auto offsets = sizeOf(graph, field(index, "offset"));
                StorageLocation location;
                location.file = std::string(graph.text(path));
                location.offset = static_cast<std::uint64_t>(
                    std::max<std::int64_t>(graph.intValue(field(info, "offset")), 0));
                location.length = static_cast<std::uint64_t>(
                    std::max<std::int64_t>(graph.intValue(field(info, "length")), 0));
                for (NodeId descriptor : graph.sequence(field(info, "transform_descriptors")))
                    if (graph.isString(descriptor))
                        location.transforms.emplace_back(graph.text(descriptor));
                files.insert(location.file);
                locations[offsetsKey(
                    prefix + std::string(graph.text(fqn)), offsets.value_or(std::vector<std::int64_t> {}))]
                    = location;
            }
        if (const ContainerBody* body = graph.bodyOf(field(metadata, "planner_data"));
            body && graph.kind(field(metadata, "planner_data")) == NodeKind::Dict)
            for (std::size_t i = 0; i + 1 < body->dictItems.size(); i += 2) {
                if (!graph.isString(body->dictItems[i]))
                    continue;
                std::vector<std::string> path;
                for (NodeId part : graph.sequence(body->dictItems[i + 1]))
                    path.push_back(graph.isString(part) ? std::string(graph.text(part))
                                                        : std::to_string(graph.intValue(part)));
                plannerPaths[prefix + std::string(graph.text(body->dictItems[i]))] = std::move(path);
            }

        // state_dict_metadata: each entry by its shape. A tensor's has properties, size and chunks
        // (TensorStorageMetadata or a subclass); a bytes entry's has no state (BytesStorageMetadata).
        if (const ContainerBody* body = graph.bodyOf(field(metadata, "state_dict_metadata")))
            for (std::size_t i = 0; i + 1 < body->dictItems.size(); i += 2) {
                if (!graph.isString(body->dictItems[i]))
                    continue;
                DcpEntry entry;
                entry.fqn = prefix + std::string(graph.text(body->dictItems[i]));
                entry.rank = rank;
                const NodeId value = body->dictItems[i + 1];
                entry.className = graph.calleeName(value);
                if (const auto it = plannerPaths.find(entry.fqn); it != plannerPaths.end())
                    entry.plannerPath = it->second;
                const auto fields = fieldsOf(graph, value);
                const bool tensorShape
                    = field(fields, "chunks") != kNoNode && field(fields, "size") != kNoNode;
                if (!tensorShape && isObject(graph, value)
                    && (fields.empty() || className(graph, value) == "BytesStorageMetadata")) {
                    entry.isBytes = true;
                    DcpChunk chunk;
                    entry.chunks.push_back(std::move(chunk));
                } else if (tensorShape) {
                    entry.dtype = dtypeOfProperties(graph, field(fields, "properties"));
                    entry.size = sizeOf(graph, field(fields, "size")).value_or(std::vector<std::int64_t> {});
                    for (NodeId chunkNode : graph.sequence(field(fields, "chunks"))) {
                        const auto chunkFields = fieldsOf(graph, chunkNode);
                        DcpChunk chunk;
                        chunk.offsets = sizeOf(graph, field(chunkFields, "offsets"))
                                            .value_or(std::vector<std::int64_t> {});
                        chunk.sizes = sizeOf(graph, field(chunkFields, "sizes"))
                                          .value_or(std::vector<std::int64_t> {});
                        entry.chunks.push_back(std::move(chunk));
                    }
                } else
                    entry.recognised = false;
                dcp.entries.push_back(std::move(entry));
            }
        merged.pickles.push_back(std::move(section));
    }
    if (dcp.metadataFiles.empty()) {
        merged.format = CheckpointFormat::NotACheckpoint;
        merged.shardSet = set;
        return merged;
    }
    auto place = [&](DcpChunk& chunk, const std::string& key) {
        if (const auto it = locations.find(key); it != locations.end()) {
            chunk.located = true;
            chunk.file = it->second.file;
            chunk.fileOffset = it->second.offset;
            chunk.length = it->second.length;
            chunk.transforms = it->second.transforms;
        }
    };

    // The data files, one "shard" each, so totals per file and the chunk checks can name them.
    std::map<std::string, std::int32_t> shardOfFile;
    for (const std::string& name : files) {
        ShardFile shard;
        shard.name = name;
        shard.path = (fs::path(input.folder) / name).string();
        std::error_code error;
        shard.present = fs::is_regular_file(shard.path, error);
        shard.fileSize = shard.present ? fs::file_size(shard.path, error) : 0;
        shard.problem = shard.present ? "" : "missing";
        shard.listedInIndex = true;
        shardOfFile[name] = static_cast<std::int32_t>(set->shards.size());
        set->shards.push_back(std::move(shard));
    }

    for (DcpEntry& entry : dcp.entries)
        for (std::size_t c = 0; c < entry.chunks.size(); ++c)
            place(entry.chunks[c],
                offsetsKey(
                    entry.fqn, entry.isBytes ? std::vector<std::int64_t> {} : entry.chunks[c].offsets));
    readDataFiles(input.folder, dcp);

    // The merged view: each tensor one storage (its global size; DCP records no device), each
    // bytes entry a placeholder in the tree.
    std::map<std::string, const DcpItem*> bytesItems;
    for (const DcpDataFile& dataFile : dcp.files)
        for (const DcpItem& item : dataFile.items)
            if (item.isBytes)
                bytesItems[item.fqn] = &item;
    std::map<std::string, std::uint32_t> keyNodes;
    std::map<std::int32_t, std::uint32_t> rankNodes;
    for (const DcpEntry& entry : dcp.entries) {
        std::string leaf;
        // Several ranks' own metadata: each rank's keys below a node of its own ("rank1"), named
        // there without the "rank1:" their tensors carry.
        std::uint32_t base = 0;
        std::string fqn = entry.fqn;
        if (severalRanks && entry.rank >= 0) {
            auto known = rankNodes.find(entry.rank);
            if (known == rankNodes.end()) {
                const std::string name = "rank" + std::to_string(entry.rank);
                known
                    = rankNodes.emplace(entry.rank, merged.addTreeNode(0, TreeNodeKind::Module, name)).first;
                merged.tree[known->second].summary = "__" + std::to_string(entry.rank)
                    + ".metadata: what DCP's load on rank " + std::to_string(entry.rank) + " reads";
            }
            base = known->second;
            fqn = entry.fqn.substr(entry.fqn.find(':') + 1);
        }
        // Megatron-core names ShardedObjects "<key>/shard_<offsets>_<fragments>", dots in the suffix:
        // the suffix is one leaf below the key's node.
        const std::size_t slash = fqn.rfind('/');
        std::uint32_t parent = 0;
        if (slash != std::string::npos && slash > 0 && slash + 1 < fqn.size()) {
            const std::string key = fqn.substr(0, slash);
            auto known = keyNodes.find(std::to_string(base) + "|" + key);
            if (known == keyNodes.end()) {
                std::string last;
                const std::uint32_t above = merged.modulePathFor(base, key, last);
                known = keyNodes
                            .emplace(std::to_string(base) + "|" + key,
                                merged.addTreeNode(above, TreeNodeKind::Module, last))
                            .first;
            }
            parent = known->second;
            leaf = fqn.substr(slash + 1);
        } else
            parent = merged.modulePathFor(base, fqn, leaf);
        const std::string firstFile = entry.chunks.empty() ? std::string() : entry.chunks.front().file;
        if (!entry.recognised) {
            const std::uint32_t node = merged.addTreeNode(parent, TreeNodeKind::Placeholder, leaf);
            merged.tree[node].className = InternedString(entry.className);
            merged.tree[node].summary = "an entry of neither a tensor's nor a bytes value's shape (not read)";
            continue;
        }
        if (entry.isBytes) {
            const std::uint32_t node = merged.addTreeNode(parent, TreeNodeKind::Placeholder, leaf);
            merged.tree[node].className = InternedString(entry.className.empty()
                    ? std::string("torch.distributed.checkpoint.metadata.BytesStorageMetadata")
                    : entry.className);
            const auto item = bytesItems.find(entry.fqn);
            merged.tree[node].summary = "a non-tensor value"
                + (entry.chunks.front().located
                        ? " (" + std::to_string(entry.chunks.front().length) + " bytes in " + firstFile
                            + (item != bytesItems.end() ? ", " + item->second->content : std::string())
                            + ", not unpickled)"
                        : std::string(" (no bytes recorded)"));
            continue;
        }
        std::uint64_t numel = 1;
        for (std::int64_t dim : entry.size)
            numel *= static_cast<std::uint64_t>(std::max<std::int64_t>(dim, 0));
        const auto info = dtypeByName(entry.dtype);
        StorageRecord storage;
        storage.key = entry.fqn;
        storage.storageClass = "dcp";
        storage.dtype = entry.dtype;
        storage.numel = numel;
        storage.nbytes = info ? info->bytesFor(numel) : 0;
        // Shared by the tensors with as many chunks whose first chunk is in the same file.
        storage.setRecord(InternedString(
            std::to_string(entry.chunks.size()) + " chunk(s) in " + (firstFile.empty() ? "?" : firstFile)));
        storage.tensors.push_back(static_cast<std::uint32_t>(merged.tensors.size()));
        TensorEntry tensor;
        tensor.name = entry.fqn;
        tensor.dtype = entry.dtype;
        tensor.shape = entry.size;
        std::vector<std::int64_t> stride(entry.size.size(), 1);
        for (std::size_t d = entry.size.size(); d-- > 1;)
            stride[d - 1] = stride[d] * std::max<std::int64_t>(entry.size[d], 1);
        tensor.stride = stride;
        tensor.storageOffset = 0;
        tensor.storage = static_cast<std::int32_t>(merged.storages.size());
        tensor.treeNode = merged.addTreeNode(parent, TreeNodeKind::Tensor, leaf);
        merged.tree[tensor.treeNode].tensor = static_cast<std::int32_t>(merged.tensors.size());
        const auto shard = shardOfFile.find(firstFile);
        set->storageShard.push_back(shard == shardOfFile.end() ? -1 : shard->second);
        set->storageInShard.push_back(0);
        merged.storages.push_back(std::move(storage));
        merged.indexStorage(static_cast<std::uint32_t>(merged.storages.size() - 1));
        merged.tensors.push_back(std::move(tensor));
    }
    for (const ShardFile& shard : set->shards)
        merged.fileSize += shard.fileSize;
    merged.addFinding(Severity::Info, FindingCode::DcpRecordsNoDevice,
        "DCP records no device: torch.distributed.checkpoint saves CPU copies of every chunk and places "
        "tensors "
        "only when they are loaded into a model's state_dict, so every tensor shows no recorded device");
    if (indexName != ".metadata")
        merged.addFinding(Severity::Info, FindingCode::DcpPerRankMetadata,
            "saved without rank coordination (dcp.save(..., use_collectives=False)): no .metadata, but "
                + std::to_string(dcp.metadataFiles.size())
                + " rank(s) each wrote its own __R.metadata of its own state. DCP's load on rank R reads "
                  "__R.metadata (a process without a group reads __0.metadata)"
                + (severalRanks
                        ? std::string("; each rank's keys are shown below its node, named rankR:<key>")
                        : std::string()),
            dcp.metadataFiles.front());
    for (const ShardFile& shard : set->shards)
        if (!shard.present)
            merged.addFinding(Severity::Error, FindingCode::ShardMissing,
                shard.name + " is named by .metadata but is not in " + input.folder, shard.name);
    for (const DcpEntry& entry : dcp.entries)
        if (!entry.recognised)
            merged.addFinding(Severity::Warning, FindingCode::DcpEntryUnrecognised,
                entry.fqn + ": .metadata describes it with "
                    + (entry.className.empty() ? std::string("a value") : entry.className)
                    + ", which has neither a tensor's fields (properties, size, chunks) nor a bytes entry's; "
                      "it is listed, not read",
                ".metadata");
    // Writer extensions: one finding for the items torch's registry cannot undo, one per corrupt stream.
    std::map<std::string, std::vector<std::string>> unknownTransforms;
    for (const DcpDataFile& dataFile : dcp.files)
        for (const DcpItem& item : dataFile.items) {
            if (item.content.starts_with("stored through an unknown writer extension")) {
                const std::size_t open = item.content.find('(');
                unknownTransforms[item.content.substr(open + 1, item.content.size() - open - 2)].push_back(
                    item.fqn);
                continue;
            }
            if (item.content.starts_with("transformed (") && !item.problem.empty())
                merged.addFinding(Severity::Error, FindingCode::DcpTransformCorrupt,
                    dataFile.name + " @" + std::to_string(item.offset) + " (" + item.fqn
                        + "): " + item.problem,
                    dataFile.name, item.offset);
        }
    for (const auto& [transforms, fqns] : unknownTransforms) {
        std::string names;
        for (std::size_t i = 0; i < fqns.size() && i < 8; ++i)
            names += (i ? ", " : "") + fqns[i];
        if (fqns.size() > 8)
            names += ", ...";
        merged.addFinding(Severity::Error, FindingCode::DcpTransformUnknown,
            std::to_string(fqns.size())
                + " item(s) are stored through a writer extension torch's default registry "
                  "does not know ("
                + transforms + ": " + names
                + "). DCP's load fails with \"Unknown extension\" unless the writer's extension is "
                  "registered; "
                  "their values are not read here, the metadata's dtypes and shapes are shown",
            ".metadata");
    }
    for (const DcpDataFile& dataFile : dcp.files)
        for (const DcpItem& item : dataFile.items)
            if (!item.problem.empty() && item.content != "past the end of the file"
                && item.content != "not a torch.save archive" && !item.content.starts_with("stored through")
                && !item.content.starts_with("transformed ("))
                merged.addFinding(Severity::Error, FindingCode::DcpChunkMismatch,
                    dataFile.name + " @" + std::to_string(item.offset) + " (" + item.fqn
                        + "): " + item.problem,
                    dataFile.name, item.offset);
    set->dcp = std::move(dcp);
    readCompanions(merged, *set, options);
    merged.shardSet = std::move(set);
    return merged;
}

} // namespace ckpt
