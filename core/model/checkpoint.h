// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/compacttext.h"
#include "core/base/finding.h"
#include "core/base/flatindex.h"
#include "core/base/inlinevector.h"
#include "core/base/internedstring.h"
#include "core/base/joinedtext.h"
#include "core/base/packedoptional.h"
#include "core/base/raretext.h"
#include "core/base/slimtext.h"
#include "core/base/textformat.h"
#include "core/format/formatsniffer.h"
#include "core/model/storagekeyindex.h"
#include "core/pickle/picklegraph.h"
#include "core/pickle/picklemachine.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ckpt {

class MappedFile;
class ZipArchive;
struct ShardSet;
struct QuantScan;

enum class CheckpointFormat {
    TorchZip, // torch.save since 1.6
    TorchLegacy, // torch.save(_use_new_zipfile_serialization=False) and everything before 1.6
    TorchTar, // PyTorch 0.1.x
    TorchScript, // torch.jit.save
    Safetensors,
    Distributed, // torch.distributed.checkpoint folder (.metadata + .distcp): records no device
    ExportArchive, // torch.export.save (.pt2): PT2 archive, or the torch 2.1-2.5 layout
    NotACheckpoint, // recognised but not a checkpoint (LFS pointer, HTML, PNG, ...): see container
    PlainPickle, // pickle.dump of tensors: no torch framing, storages are torch.save files inside bytes
    TorchScriptJson, // TorchScript's oldest layout: model.json and tensors/N records (PyTorch 1.0-1.3)
};
const char* checkpointFormatName(CheckpointFormat format); // "torch-zip", "torch-legacy", ...

enum class TensorLayout : std::uint8_t {
    Strided,
    SparseCoo,
    SparseCsr,
    SparseCsc,
    SparseBsr,
    SparseBsc,
    Quantized,
    Nested,
    Meta
};
const char* tensorLayoutName(TensorLayout layout); // "strided", "sparse_coo", ...

// Shapes and strides: up to four dimensions (conv weights) are kept in the entry itself, with no
// heap block per tensor.
using Dimensions = InlineVector<std::int64_t, 4>;
using OptionalDimensions = OptionalInlineVector<std::int64_t, 4>;

// One storage: a block of bytes that one or more tensors view. A device belongs to a storage: every
// tensor that views it lives where it lives.
struct StorageRecord {
    CompactText key; // as in the persistent id ("0", "140234..."); TorchScript constants: "constants/0"
    InternedString storageClass; // "FloatStorage", "UntypedStorage", "QInt8Storage"
    InternedString dtype; // torch name of the storage dtype ("uint8" for UntypedStorage)
    std::uint64_t numel = 0; // as recorded, in elements of the storage dtype
    std::uint64_t nbytes = 0; // numel x element size
    OptionalInternedString device; // recorded tag ("cpu", "cuda:1"); none where the format has none
    // Where its bytes live (record()): the stem, then the key from character recordKeyStart on
    // ("archive/data/" + "123456"), or the stem alone when recordKeyStart is kRecordWithoutKey. The
    // stems repeat, the keys are here already: as one std::string the name was a heap block each.
    InternedString recordStem;
    InlineVector<std::uint32_t, 2> tensors; // tensors that view it
    InlineVector<NodeId, 2>
        persistentIdTuples; // every persistent-id tuple naming it (the remap rewrites their tags)
    NodeId firstPersistentId = kNoNode; // pickle node of its first persistent id
    std::uint32_t pickleSection = 0; // index into Checkpoint::pickles of the pickle that first named it
    static constexpr std::uint32_t kRecordWithoutKey = UINT32_MAX;
    std::uint32_t recordKeyStart = kRecordWithoutKey;
    // The byte-aligned fields last, without padding between them (PackedOptional is 9 bytes).
    PackedOptional<std::uint64_t> dataOffset; // offset of its bytes in the file, when stored uncompressed
    PackedOptional<std::uint64_t> availableBytes; // bytes the file actually holds for it
    // Its zip record is deflated (other writers than torch.save, §1.6 of docs/formats.md): no
    // dataOffset, availableBytes is the inflated size; core/read/storagebytes.h reads it.
    bool deflated = false;
    // Its bytes lie in a torch.save file inside bytes that the pickle holds as latin-1 text (pickle
    // protocols 0-2, core/read/nestedblobs.cpp): not in the file as such, no dataOffset;
    // availableBytes counts them in the decoded copy its NestedBlob keeps (storagebytes.h reads it).
    bool inDecodedBlob = false;

    // Its bytes lie whole and uncompressed in the file, from dataOffset.
    bool bytesComplete() const { return availableBytes && *availableBytes >= nbytes && dataOffset; }
    // Its bytes can be read whole: in place, by inflating its record, or from a decoded blob.
    bool bytesReadable() const
    {
        return bytesComplete() || ((deflated || inDecodedBlob) && availableBytes >= nbytes);
    }
    // Where its bytes live: zip record name ("archive/data/0"), or a description.
    std::string record() const { return recordName().str(); }
    // The same, as a view of its two parts: compares and sorts as record() does, builds no string.
    JoinedText recordName() const
    {
        if (recordKeyStart == kRecordWithoutKey)
            return {recordStem, {}};
        return {recordStem, std::string_view(key).substr(recordKeyStart)};
    }
    // A record named by the stem alone (a description shared by several storages, or text that
    // is not the key).
    void setRecord(InternedString text)
    {
        recordStem = text;
        recordKeyStart = kRecordWithoutKey;
    }
    // A record named by the stem followed by the key from character keyStart on.
    void setRecord(InternedString stem, std::uint32_t keyStart)
    {
        recordStem = stem;
        recordKeyStart = keyStart;
    }
};

// One per tensor, so its fields are ordered to leave no padding between them (the small ones
// last): at a million tensors each 8 bytes here is 8 MB.
struct TensorEntry {
    // Dotted path from the root ("model.encoder.0.weight"); "" for a bare root tensor. 8 bytes and
    // one block of exactly its size (SlimText), where std::string was 32 and a block grown by doubling.
    SlimText name;
    InternedString dtype;
    Dimensions shape;
    OptionalDimensions stride; // none for sparse and nested layouts
    OptionalInternedString device; // the storage's tag, or a device recorded elsewhere
    InternedString rebuildFunction; // "torch._utils._rebuild_tensor_v2"
    InternedString subclass; // tensor subclass from _rebuild_from_type_v2, empty for torch.Tensor
    std::int32_t storage = -1; // index into Checkpoint::storages, -1 if none
    NodeId node = kNoNode; // the pickle node it was rebuilt from
    // Where a device recorded outside the storage sits in the pickle: item `deviceArgumentIndex`
    // of the argument tuple `deviceArgumentTuple`, a str or (wrapper subclasses) a torch.device.
    NodeId deviceArgumentTuple = kNoNode;
    std::uint32_t treeNode = 0;
    // The byte-aligned fields last, without padding between them (PackedOptional is 9 bytes).
    PackedOptional<std::int64_t> storageOffset; // in elements of the tensor dtype
    std::uint8_t deviceArgumentIndex = 0; // a rebuild function's fixed position (2 or 6)
    TensorLayout layout = TensorLayout::Strided;
    bool deviceRecordedOutsideStorage = false; // meta, wrapper subclasses, device tensors (§3.1)
    bool requiresGrad = false;
    bool isParameter = false;
    bool deviceArgumentIsTorchDevice = false;
    std::uint64_t nbytes() const; // bytes the view covers (shape x element size), 0 for composites
};

enum class TreeNodeKind : std::uint8_t {
    Root,
    Dict, // dict / OrderedDict / defaultdict
    Sequence, // list / tuple / set
    Module, // an nn.Module (pickled whole) or a dotted-name prefix of a state_dict
    Object, // any other object that holds tensors (walked by attribute)
    Tensor,
    Value, // a scalar, or a container without tensors, summarised
    Placeholder, // an object without tensors, named by its class
    Alias, // a container already shown elsewhere
};
const char* treeNodeKindName(TreeNodeKind kind);

// The tree a person sees: nodes in one array, children by index (style.md, "Big trees").
// About 1.5 per tensor in a dotted state_dict: ordered without padding, like TensorEntry.
struct TreeNode {
    CompactText name; // this component ("encoder", "0", "weight")
    InlineVector<std::uint32_t, 2> children; // two fit where a pointer would
    InternedString className; // objects, modules, placeholders: "torch.nn.modules.linear.Linear"
    RareText summary; // values: "3", "'adam'", "list of 62 int"; aliases: the other path
    std::uint32_t parent = 0;
    std::int32_t tensor = -1; // Tensor nodes: index into Checkpoint::tensors
    NodeId node = kNoNode;
    TreeNodeKind kind = TreeNodeKind::Value;
};

// A pickle as read: which one, its run, for re-emission and triage later.
struct PickleSection {
    std::string record; // "archive/data.pkl", "constants.pkl", "legacy main pickle"
    std::uint64_t fileOffset = 0; // where the pickle starts in the file (or record)
    PickleRun run;
    std::vector<std::uint32_t> storagesUsed; // storages its persistent ids reference
    // What the safety verdict needs to reuse this run rather than make it again (pickleverdict.cpp):
    // the run's nodes in Checkpoint::graph, [firstNode, endNode); how many bytes of
    // Checkpoint::file, from fileOffset, the machine was given, when it read them there as they
    // are (not inflated, not copied); and the limits it ran under (progress left out).
    NodeId firstNode = kNoNode;
    NodeId endNode = kNoNode;
    std::optional<std::uint64_t> mappedByteLength;
    PickleLimits limits;
};

// A storage saved inside bytes: torch.storage._load_from_bytes(<a torch.save file>) in a pickle
// (what pickle.dump of a tensor writes); core/read/nestedblobs.cpp reads it.
struct NestedBlob {
    NodeId call = kNoNode; // the _load_from_bytes call in Checkpoint::graph
    std::uint32_t storage = 0; // index into Checkpoint::storages
    std::optional<std::uint64_t> fileOffset; // where the bytes lie in the file verbatim, if they do
    CheckpointFormat innerFormat = CheckpointFormat::TorchLegacy;
    bool bytesComplete = false; // the storage's bytes are whole in the file inside the bytes
    // Bytes held as text (protocols 0-2): the torch.save file decoded from it, and where the
    // storage's bytes start there (StorageRecord::inDecodedBlob). Null where the bytes lie in the file.
    std::shared_ptr<const MappedFile> decoded;
    std::uint64_t decodedDataOffset = 0;
};

// A torch.save file kept whole as a zip member of a torch.export archive (core/read/pt2reader.cpp):
// a use_pickle weight, sample inputs, a torch 2.1-2.5 state dict. Its storages and tensors are
// contiguous spans of the outer checkpoint's, in the nested file's own order.
struct NestedArchive {
    std::string member; // the zip member's full name
    std::uint32_t firstStorage = 0;
    std::uint32_t storageCount = 0;
    std::uint32_t firstTensor = 0;
    std::uint32_t tensorCount = 0;
    // The loader places its tensors where the file records them (a use_pickle payload, a state
    // dict, constants): a remapped copy rewrites it. Not for sample inputs (no weights) nor an
    // AOTInductor package's own weights (its compiled loader places them).
    bool movable = false;
};

// Everything known about one opened file.
struct Checkpoint {
    std::string path;
    std::uint64_t fileSize = 0;
    ContainerGuess container;
    CheckpointFormat format = CheckpointFormat::NotACheckpoint;
    std::string archivePrefix; // zip formats
    bool tarTensorsMember = false; // tar format: tensors come from the `tensors` member (not re-writable)
    std::shared_ptr<const MappedFile> file; // null for a checkpoint of several files (see shardSet)
    // Zip formats: the reader's parse of the zip directory over `file`, kept so that the triage and
    // the writers do not parse it again (at a million records one parse is ~70 MB and a second).
    std::shared_ptr<const ZipArchive> zip;
    // Set when this checkpoint is several files shown as one (HF shards, DCP; §7): the shards, the
    // index and where each storage came from. Its storages and tensors are the union of the shards'.
    std::shared_ptr<const ShardSet> shardSet;

    std::vector<StorageRecord> storages;
    std::vector<TensorEntry> tensors;
    std::vector<TreeNode> tree; // tree[0] is the root
    std::vector<Finding> findings;

    PickleGraph graph;
    std::vector<PickleSection> pickles;

    // Tar format only (PyTorch 0.1.x), by storage index: kept beside the storages rather than in
    // each StorageRecord, where every other format paid 20 bytes a storage for them.
    struct TarStorageReferences {
        InlineVector<NodeId, 2> plainKeyReferences; // persistent ids that name it by key alone
        NodeId classNode = kNoNode; // its storage class GLOBAL, from the storages member
    };
    std::unordered_map<std::uint32_t, TarStorageReferences> tarReferences;
    // Storages read from torch.save files inside bytes of a pickle (pickle.dump of tensors).
    std::vector<NestedBlob> nestedBlobs;
    // torch.export archives: the torch.save files among their members.
    std::vector<NestedArchive> nestedArchives;

    // Indices of `storages` by their key, through storageIndex() and indexStorage(): the keys are
    // read from the records themselves, so the index holds no string, and nothing at all while
    // the keys are torch.save's "0", "1", "2"...
    StorageKeyIndex storageKeyIndex;
    // Module nodes made from dotted names, by a hash of (parent index, name): finding a prefix must
    // not scan a node's children, or a flat state_dict of a million names would take quadratic
    // time. Keyed by the hash alone so that a lookup builds no string; the node itself says
    // whether it is the one sought (two names may share a hash, and a node the builder pruned
    // may have had its slot reused).
    FlatIndex moduleNodeIndex;

    // Bytes per recorded device, each storage counted once ("(none)" for storages without a tag).
    std::map<std::string, std::uint64_t> bytesByDevice() const;
    std::uint64_t totalStorageBytes() const;
    bool hasErrors() const;
    // The zip directory of `file`: the reader's (`zip`) when it kept one, else parsed now (a
    // checkpoint put together another way; without a file, an archive with no records). Never null.
    std::shared_ptr<const ZipArchive> zipArchive() const;
    void addFinding(Severity severity, FindingCode code, std::string message, std::string record = {},
        std::optional<std::uint64_t> offset = std::nullopt);
    std::string treePath(std::uint32_t treeNode) const; // dotted path of a tree node

    // The storage whose key is `key` (the first indexed, when several share it), or nothing.
    std::optional<std::uint32_t> storageIndex(std::string_view key) const;
    // Indexes storages[index] under its key, unless a storage with that key is indexed already:
    // then the earlier one stays (as torch keeps the first storage of a key) and this says false.
    bool indexStorage(std::uint32_t index);

    // Tree building, shared by every format reader.
    std::uint32_t ensureRoot(); // creates tree[0] if missing
    std::uint32_t addTreeNode(std::uint32_t parent, TreeNodeKind kind, std::string_view name);
    // Splits a dotted state_dict name ("encoder.layers.0.weight") below `parent`: finds or creates a
    // Module node per prefix component and returns the parent for the last component, which is
    // returned through `leafName`.
    std::uint32_t modulePathFor(std::uint32_t parent, std::string_view dottedName, std::string& leafName);
    // Whether `node` is the Module node modulePathFor made for `component` below `parent`: a
    // remembered node can be stale when the builder pruned a tensor-free subtree and reused its slot.
    bool isModulePathNode(std::uint32_t node, std::uint32_t parent, std::string_view component) const;

    // The quant scan the reader made for its findings (core/model/quantgroups.h: read it through
    // quantScanOf, which checks that it still describes `tensors`), kept for the report and tree.
    std::shared_ptr<const QuantScan> quantScan;
};

} // namespace ckpt
