// SPDX-License-Identifier: MIT
#pragma once

#include "core/model/checkpoint.h"

#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ckpt {

// torch's exact words when a tensor's geometry needs more bytes than 64 bits (or INT64_MAX) can
// count: "Storage size calculation overflowed with sizes=[5] and strides=[4611686018427387904]"
// (ATen's computeStorageNbytes, checked against torch 1.13 and 2.14).
std::string storageSizeOverflowMessage(
    const std::vector<std::int64_t>& sizes, const std::vector<std::int64_t>& strides);

// Turns the symbolic values of a pickle into the checkpoint model: storages from persistent ids,
// tensors from every torch._utils._rebuild_* form (torch-format.md §2.3), and the tree a person
// sees. Shared by all pickle-based formats; what differs between them (where a storage's bytes
// live) comes in through `locateStorageBytes`.
class CheckpointBuilder {
public:
    explicit CheckpointBuilder(Checkpoint& checkpoint);

    // Called once per new storage, to fill record/dataOffset/availableBytes.
    std::function<void(StorageRecord&)> locateStorageBytes;
    // Prepended to storage keys of this pickle ("constants/" for TorchScript constants.pkl), so keys
    // stay unique across the pickles of one file.
    std::string storageKeyPrefix;
    // The tar format pickles tensors as plain-key persistent ids of tensors read from its
    // `tensors` member; this resolves such a key, when set.
    std::function<std::optional<TensorEntry>(const std::string& key)> tensorForKey;

    // Gives the graph back chunk by chunk (PickleGraph::releaseNodeChunk) as the walk of a
    // consumable root's entries passes the last entry that reads each chunk, so that the graph and
    // the records are never both whole. Only for a graph whose verdicts were judged already
    // (judgeGraphBeforeRecords): the graph is no longer whole afterwards.
    bool releaseGraphAsConsumed = false;
    // A root whose walk reads nothing but what each of its entries reaches, entry by entry: a dict,
    // or an OrderedDict given its items after it was made (a state_dict).
    static bool consumableRoot(const PickleGraph& graph, NodeId root);

    // Walks `root` (a value of checkpoint.graph) into the tree below `treeParent`. When `component`
    // is empty and the value is a container, its contents are expanded into treeParent itself.
    void addRoot(
        NodeId root, std::uint32_t treeParent, const std::string& component, const std::string& baseName);

    // Makes room for what a pickle with `persistentIds` persistent ids will add: about one tensor
    // and at most one storage each. Growing by doubling instead would copy every record at each
    // step and hold the old and new blocks at once, half again the model's size at the peak.
    void reserveForPersistentIds(std::size_t persistentIds);

    // Registers a storage from its persistent-id tuple ('storage', cls, key, location, numel[, view]).
    // Returns its index, or -1 when the tuple is not a storage reference.
    std::int32_t storageFromPersistentTuple(NodeId tuple, std::int64_t* viewOffsetElements = nullptr);

    // Checks that need every tensor: each view's extent against its storage.
    void checkViews();

    // Storages this builder's pickles referenced (indices into checkpoint.storages).
    std::vector<std::uint32_t> storagesUsed() const; // ascending

private:
    struct TensorParts {
        TensorEntry tensor;
        std::vector<std::pair<std::string, TensorEntry>> parts; // "indices", "values", ...
    };

    bool walkChild(NodeId id, std::uint32_t parent, const std::string& component, const std::string& fullName,
        int depth);
    bool expandInto(NodeId id, std::uint32_t treeNode, const std::string& fullName, int depth);
    bool expandEntries(const std::vector<NodeId>& keyValues, std::uint32_t treeNode,
        const std::string& fullName, int depth, bool splitDottedNames);
    bool expandObjectState(NodeId object, std::uint32_t treeNode, const std::string& fullName, int depth);
    // Dotted names and values of the tensor-bearing parts of a TorchScript object's tuple state;
    // empty when the state is not such a tuple.
    std::vector<std::pair<std::string, NodeId>> tupleStateParts(NodeId object, NodeId state) const;
    // A Python number an eager quantized module keeps (scale, zero_point) that its state_dict()
    // makes a 0-d tensor of: a row without storage. False when `value` is not a number.
    bool emitStateDictScalar(
        NodeId value, std::uint32_t parent, const std::string& component, const std::string& fullName);
    bool isTensorCall(NodeId id) const;
    // torch.storage._load_from_bytes(b'...'): the storage of the torch.save file inside the bytes
    // (nestedblobs.cpp), or -1.
    std::int32_t storageFromNestedBlob(NodeId call);
    std::optional<TensorParts> buildTensor(NodeId id, int depth);
    std::int32_t storageFromArgument(NodeId storageArg, std::int64_t* viewOffsetElements);
    std::int32_t resolveStorageArgument(NodeId storageArg, std::int64_t* viewOffsetElements);
    void emitTensor(TensorParts parts, std::uint32_t parent, const std::string& component,
        const std::string& fullName, NodeId node);
    std::string className(NodeId id) const; // callee of an object, seen through legacy 'module' pids
    std::string summarize(NodeId id, int depth) const;
    std::optional<Dimensions> intList(NodeId id) const;
    std::optional<std::string> deviceFromValue(NodeId id) const;
    std::string keyComponent(NodeId key) const;
    void pruneTo(std::uint32_t treeNode, TreeNodeKind kind, std::string summary);
    // Checkpoint::modulePathFor, remembering the module nodes of the last dotted name: a flat
    // state_dict's consecutive names share their prefix ("layers.0.attn.q.weight", then
    // "layers.0.attn.q.bias"), and a remembered node is checked by its parent and name rather
    // than looked up again by hash.
    std::uint32_t modulePathFor(std::uint32_t parent, std::string_view dottedName, std::string& leafName);

    // When releaseGraphAsConsumed: the node chunks to give back after each entry of the root
    // (GraphConsumption in checkpointbuilder.cpp); null otherwise, and inside other containers.
    struct GraphConsumption;
    void entryConsumed(std::size_t entry);

    Checkpoint& m_checkpoint;
    PickleGraph& m_graph;
    GraphConsumption* m_consumption = nullptr;
    std::unordered_map<NodeId, std::string> m_expanded; // containers already shown, by their path
    std::unordered_set<NodeId> m_onStack;
    // By storage index: a flag per storage rather than a std::set node per storage (one heap
    // object for each of a million storages).
    std::vector<bool> m_storageUsed;
    std::unordered_map<NodeId, std::int32_t> m_nestedStorages; // _load_from_bytes calls read
    bool m_depthFindingReported = false;
    std::uint32_t m_lastModulePathParent = 0;
    std::vector<std::uint32_t> m_lastModulePath; // module node per component of the last name
};

// The bytes handed to torch.storage._load_from_bytes by `call` (given as bytes, or as the
// _codecs.encode(text, 'latin1') protocols 0-2 write), or nothing when `call` is no such call.
std::optional<std::string> nestedBlobBytes(const PickleGraph& graph, NodeId call);

// Whether a GLOBAL name is one of torch's tensor rebuild functions.
bool isTensorRebuildFunction(std::string_view qualifiedName);

} // namespace ckpt
