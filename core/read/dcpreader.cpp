// SPDX-License-Identifier: MIT
// torch.distributed.checkpoint folders (torch-format.md §7.1): `.metadata` is a plain pickle of
// Metadata. It runs through the symbolic pickle machine (nothing is imported or called) and the
// inert graph is walked by the dataclasses' field names.
#include "core/read/dcpreader.h"

#include "core/io/mappedfile.h"
#include "core/model/dtype.h"
#include "core/read/shardedreader.h"

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
};

} // namespace

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

    auto file = MappedFile::open(input.indexPath);
    if (!file) {
        merged.format = CheckpointFormat::NotACheckpoint;
        merged.addFinding(Severity::Error, FindingCode::CannotOpen, file.error().message, ".metadata");
        merged.shardSet = set;
        return merged;
    }
    merged.fileSize = (*file)->size();
    PickleSection section;
    section.record = ".metadata";
    section.run = PickleMachine(options.pickleLimits).run((*file)->bytes(), merged.graph);
    const PickleGraph& graph = merged.graph;
    const NodeId root = section.run.root;
    if (!section.run.complete() || className(graph, root) != "Metadata") {
        merged.format = CheckpointFormat::NotACheckpoint;
        merged.addFinding(Severity::Error, FindingCode::DcpMetadataUnreadable,
            section.run.error
                ? ".metadata could not be read to its end: " + *section.run.error
                : ".metadata is a pickle, but not of torch.distributed.checkpoint's Metadata (it holds "
                    + (graph.calleeName(root).empty() ? std::string("something else")
                                                      : graph.calleeName(root))
                    + ")",
            ".metadata",
            section.run.error ? std::optional<std::uint64_t>(section.run.errorOffset) : std::nullopt);
        merged.pickles.push_back(std::move(section));
        merged.shardSet = set;
        return merged;
    }

    DcpMetadata dcp;
    const auto metadata = fieldsOf(graph, root);
    if (graph.isString(field(metadata, "version")))
        dcp.version = std::string(graph.text(field(metadata, "version")));
    if (const auto storageMeta = fieldsOf(graph, field(metadata, "storage_meta")); !storageMeta.empty())
        for (NodeId module : graph.sequence(field(storageMeta, "modules")))
            if (graph.isString(module))
                dcp.modules.emplace_back(graph.text(module));

    // storage_data: MetadataIndex(fqn, offset) -> _StorageInfo(relative_path, offset, length).
    std::map<std::string, StorageLocation> locations;
    std::set<std::string> files;
    if (const ContainerBody* body = graph.bodyOf(field(metadata, "storage_data")))
        for (std::size_t i = 0; i + 1 < body->dictItems.size(); i += 2) {
            const auto index = fieldsOf(graph, body->dictItems[i]);
            const auto info = fieldsOf(graph, body->dictItems[i + 1]);
            const NodeId fqn = field(index, "fqn");
            if (!graph.isString(fqn))
                continue;
            const auto offsets = sizeOf(graph, field(index, "offset"));
            StorageLocation location;
            location.file = std::string(graph.text(field(info, "relative_path")));
            location.offset = static_cast<std::uint64_t>(graph.intValue(field(info, "offset")));
            location.length = static_cast<std::uint64_t>(graph.intValue(field(info, "length")));
            files.insert(location.file);
            locations[offsetsKey(
                std::string(graph.text(fqn)), offsets.value_or(std::vector<std::int64_t> {}))]
                = location;
        }

    std::map<std::string, std::vector<std::string>> plannerPaths;
    if (const ContainerBody* body = graph.bodyOf(field(metadata, "planner_data")))
        for (std::size_t i = 0; i + 1 < body->dictItems.size(); i += 2) {
            std::vector<std::string> path;
            for (NodeId part : graph.sequence(body->dictItems[i + 1]))
                path.push_back(graph.isString(part) ? std::string(graph.text(part))
                                                    : std::to_string(graph.intValue(part)));
            plannerPaths[std::string(graph.text(body->dictItems[i]))] = std::move(path);
        }

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

    if (const ContainerBody* body = graph.bodyOf(field(metadata, "state_dict_metadata")))
        for (std::size_t i = 0; i + 1 < body->dictItems.size(); i += 2) {
            DcpEntry entry;
            entry.fqn = std::string(graph.text(body->dictItems[i]));
            const NodeId value = body->dictItems[i + 1];
            if (const auto it = plannerPaths.find(entry.fqn); it != plannerPaths.end())
                entry.plannerPath = it->second;
            const std::string kind = className(graph, value);
            if (kind == "BytesStorageMetadata") {
                entry.isBytes = true;
                DcpChunk chunk;
                if (const auto it = locations.find(offsetsKey(entry.fqn, {})); it != locations.end()) {
                    chunk.located = true;
                    chunk.file = it->second.file;
                    chunk.fileOffset = it->second.offset;
                    chunk.length = it->second.length;
                }
                entry.chunks.push_back(std::move(chunk));
            } else {
                const auto fields = fieldsOf(graph, value);
                entry.dtype = dtypeOfProperties(graph, field(fields, "properties"));
                entry.size = sizeOf(graph, field(fields, "size")).value_or(std::vector<std::int64_t> {});
                for (NodeId chunkNode : graph.sequence(field(fields, "chunks"))) {
                    const auto chunkFields = fieldsOf(graph, chunkNode);
                    DcpChunk chunk;
                    chunk.offsets
                        = sizeOf(graph, field(chunkFields, "offsets")).value_or(std::vector<std::int64_t> {});
                    chunk.sizes
                        = sizeOf(graph, field(chunkFields, "sizes")).value_or(std::vector<std::int64_t> {});
                    if (const auto it = locations.find(offsetsKey(entry.fqn, chunk.offsets));
                        it != locations.end()) {
                        chunk.located = true;
                        chunk.file = it->second.file;
                        chunk.fileOffset = it->second.offset;
                        chunk.length = it->second.length;
                    }
                    entry.chunks.push_back(std::move(chunk));
                }
            }
            dcp.entries.push_back(std::move(entry));
        }

    // The merged view: each tensor one storage (its global size; DCP records no device), each
    // bytes entry a placeholder in the tree.
    for (const DcpEntry& entry : dcp.entries) {
        std::string leaf;
        const std::uint32_t parent = merged.modulePathFor(0, entry.fqn, leaf);
        const std::string firstFile = entry.chunks.empty() ? std::string() : entry.chunks.front().file;
        if (entry.isBytes) {
            const std::uint32_t node = merged.addTreeNode(parent, TreeNodeKind::Placeholder, leaf);
            merged.tree[node].className = "torch.distributed.checkpoint.metadata.BytesStorageMetadata";
            merged.tree[node].summary = "a pickled non-tensor value"
                + (entry.chunks.front().located ? " (" + std::to_string(entry.chunks.front().length)
                            + " bytes in " + firstFile + ", not unpickled)"
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
    for (const ShardFile& shard : set->shards)
        if (!shard.present)
            merged.addFinding(Severity::Error, FindingCode::ShardMissing,
                shard.name + " is named by .metadata but is not in " + input.folder, shard.name);
    merged.pickles.push_back(std::move(section));
    set->dcp = std::move(dcp);
    merged.shardSet = std::move(set);
    return merged;
}

} // namespace ckpt
