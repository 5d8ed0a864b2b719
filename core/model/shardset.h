// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ckpt {

struct Checkpoint;
class JsonWriter;
class MappedFile;
enum class CheckpointFormat;
struct ShardModel;

// How a checkpoint spread over several files was written (torch-format.md §7).
enum class ShardLayout {
    HuggingFaceBin, // pytorch_model-0000N-of-0000M.bin + pytorch_model.bin.index.json
    HuggingFaceSafetensors, // model-0000N-of-0000M.safetensors + model.safetensors.index.json
    Distributed, // torch.distributed.checkpoint: .metadata + __R_S.distcp
    RunFolder, // a training run's folder: each checkpoint file its own document (docs/runfolder.md)
    Bundle, // one archive (tar, tar.gz, .nemo, zip) that carries checkpoint files: docs/bundles.md
};
// "hf-bin-shards", "hf-safetensors-shards", "dcp", "run-folder"
const char* shardLayoutName(ShardLayout layout);

// One file of the set, as the index lists it (or as found in the folder).
struct ShardFile {
    std::string name; // as in the index ("pytorch_model-00001-of-00002.bin")
    std::string path; // on disk
    bool listedInIndex = false;
    bool present = false; // the file exists
    // The shard read on its own (null when it could not be opened). The merged checkpoint's
    // storages [firstStorage, firstStorage + storageCount) are copies of this one's. A shard read
    // in place (readInPlace()) has none until the first call, which reads it again from its mapping:
    // only the writers and the value readers call it, and their time is the disk's.
    std::shared_ptr<const Checkpoint> model() const;
    void setModel(std::shared_ptr<const Checkpoint> model);
    // A safetensors shard whose reader raises no finding but the dtype notes is read straight into
    // the merged checkpoint, without a model of its own (issue 28: a 160-shard folder spent half of
    // `info` building the shards' models and copying them); `readAgain` makes that model on demand.
    void setReadInPlace(std::shared_ptr<const MappedFile> file, CheckpointFormat format,
        std::function<Checkpoint(std::shared_ptr<const MappedFile>)> readAgain);
    bool readInPlace() const;
    // What `info` and the checks take of a readable shard (one with a model or read in place), so
    // that they never make its model: its format, its mapped file, whether its reader said an error.
    bool readable() const { return m_model != nullptr; }
    CheckpointFormat format() const;
    const std::shared_ptr<const MappedFile>& file() const;
    bool hasErrors() const;
    std::uint32_t firstStorage = 0;
    std::uint32_t storageCount = 0;
    std::uint32_t firstTensor = 0; // its tensors in the merged checkpoint start here
    std::uint64_t fileSize = 0;
    std::string problem; // why it is not usable ("missing", "a Git LFS pointer", ...), empty when fine
    // Run folders: the top-level node it belongs to. A file on its own is its own node (its name);
    // the shards of a sharded set inside the folder share one ("model.safetensors" for
    // model.safetensors.index.json and its shards).
    std::string group;
    std::uint32_t treeNode = 0; // run folders: the file's (or its group's) node below the root
    // DCP: a framework's checkpoint beside the data files (Megatron-core's common.pt, a torch.save
    // file), read on its own and shown under its own node; not named by .metadata.
    bool companion = false;

private:
    // Shared by the copies of this record; null when the shard could not be read.
    std::shared_ptr<ShardModel> m_model;
};

// Run folders: a file of the folder that is no checkpoint (trainer_state.json, `latest`, a
// script), listed so that the folder is shown whole and copied byte for byte when it is saved.
struct FolderFile {
    std::string name; // relative to the folder ("latest", "global_step2/notes.txt")
    std::uint64_t fileSize = 0;
    std::string what; // "JSON text", "DeepSpeed's latest: names global_step2", ...
};

// One chunk of a DCP tensor: where it sits in the global tensor and where its bytes are.
struct DcpChunk {
    std::vector<std::int64_t> offsets;
    std::vector<std::int64_t> sizes;
    std::string file; // relative_path of its _StorageInfo ("__0_0.distcp"); empty when none recorded
    std::uint64_t fileOffset = 0;
    std::uint64_t length = 0;
    bool located = false; // storage_data has an entry for it
    // _StorageInfo.transform_descriptors (torch 2.8+ writer extensions, e.g. "stream.zstd/1"): the
    // bytes at fileOffset are the chunk passed through these, not a torch.save archive as it is.
    std::vector<std::string> transforms;
};

// One entry of a DCP Metadata.state_dict_metadata.
struct DcpEntry {
    std::string fqn;
    bool isBytes = false; // BytesStorageMetadata: a pickled non-tensor value
    std::string dtype; // tensors: torch dtype name
    std::vector<std::int64_t> size; // tensors: global size
    std::vector<DcpChunk> chunks; // tensors: each chunk; bytes entries: one chunk (offsets empty)
    std::vector<std::string> plannerPath; // planner_data: the nested-dict path of the fqn
    std::string className; // the class .metadata names for it ("...TensorStorageMetadata", a subclass)
    bool recognised = true; // false: neither a tensor's nor a bytes entry's shape (shown, not read)
    // Per-rank metadata (use_collectives=False): the rank whose __R.metadata lists it, else -1. With
    // several ranks' files, fqn starts with "rankR:".
    std::int32_t rank = -1;
};

// One byte range of a .distcp file, as .metadata's storage_data places it. Each is written by its
// own torch.save (tensor chunks) or as the bytes of a BytesIO (bytes entries, which the default
// planner fills with a torch.save of the value): a data file is these ranges back to back.
struct DcpItem {
    std::string fqn;
    std::int32_t chunk = -1; // tensor entries: index into the entry's chunks; -1 for bytes entries
    bool isBytes = false;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    // What the range holds: "torch.save archive", "raw bytes", "not a torch.save archive", each with
    // " through stream.zstd/1" when undone from writer extensions; "transformed (...), not undone",
    // "stored through an unknown writer extension (...)", "past the end of the file"
    std::string content;
    std::string archiveDtype; // tensor chunks read as an archive: the one tensor it holds
    std::vector<std::int64_t> archiveShape;
    std::string problem; // why the range is not what .metadata says, empty when it is
    // Its _StorageInfo.transform_descriptors ("stream.zstd/1"): the range is the item's bytes passed
    // through these writer extensions, undone in this order before it is read.
    std::vector<std::string> transforms;
};

// A data file of a DCP folder read as the sequence of ranges it is.
struct DcpDataFile {
    std::string name;
    std::uint64_t fileSize = 0;
    bool present = false;
    std::vector<DcpItem> items; // by offset
    std::uint64_t unclaimedBytes = 0; // bytes no range of .metadata covers
    std::uint32_t overlaps = 0; // ranges that start before the previous one ends
};

struct DcpMetadata {
    std::string version; // Metadata.version ("1.0.0"), empty when absent (older torch)
    std::vector<DcpEntry> entries;
    std::vector<std::string> modules; // storage_meta.modules, when recorded
    // The class the pickle names for the root ("torch.distributed.checkpoint.metadata.Metadata", or a
    // framework's subclass such as Megatron-core's MCoreMetadata); read by the shape of its state.
    std::string metadataClass;
    std::vector<std::string> extraFields; // fields beyond DCP's own (Megatron's mcore_data, all_local_plans)
    std::string checkpointId; // storage_meta.checkpoint_id, when recorded as text or a path
    std::vector<DcpDataFile> files; // every data file .metadata names, read range by range
    // The metadata files read: ".metadata", or each rank's own "__R.metadata" (use_collectives=False).
    std::vector<std::string> metadataFiles;
    std::uint32_t archivesRead = 0; // tensor chunk archives opened to check what they hold
    std::uint32_t archivesNotRead = 0; // past the reader's budget: located, not opened
    // A framework's own files beside .metadata (Megatron-core: common.pt, metadata.json), by name,
    // and what they say ("torch_dist 1; common torch 1").
    std::vector<std::pair<std::string, std::string>> companions;
    std::string framework; // "Megatron-core distributed checkpoint", empty for plain DCP
};

// What kind of archive a bundle is (docs/bundles.md).
enum class BundleKind {
    Tar, // an uncompressed tar (NeMo's .nemo): members read in place from the mapped file
    CompressedTar, // a tar through gzip (or bzip2, xz, zstd): members decompressed (model.tar.gz)
    Zip, // a plain zip of files (not itself a torch zip): stored members in place, deflated ones decompressed
    CompressedFile, // one compressed file (checkpoint.pt.gz): its one member decompressed
};
const char* bundleKindName(BundleKind kind); // "tar", "compressed-tar", "zip", "compressed-file"

// One member of a bundle, in archive order.
struct BundleMember {
    std::string name; // as the archive spells it ("./model_weights.ckpt")
    std::string type; // "file", "folder", "link", "other"
    std::uint64_t size = 0; // as the header records it
    std::int32_t shard = -1; // a checkpoint member: its index in ShardSet::shards, else -1
    // How its bytes were read: "in place at byte N", "decompressed in memory",
    // "decompressed into an anonymous temporary file", or "not read (...)".
    std::string readAs;
    std::string description; // not a checkpoint: what the sniffer says it is; a checkpoint: its format
    std::optional<std::uint64_t> dataOffset; // read in place: where its bytes start in the bundle
    bool stored = false; // its bytes lie uncompressed in the bundle (written back stored)
    bool truncated = false; // the archive ended (or broke) inside it
};

struct BundleInfo {
    BundleKind kind = BundleKind::Tar;
    std::string format; // libarchive's name of the archive format ("POSIX pax interchange format")
    std::string filter; // "none", "gzip", ...
    int formatCode = 0; // libarchive's codes, for writing a bundle of the same kind
    std::vector<int> filterCodes; // outermost last, "none" left out
    std::vector<BundleMember> members;
    std::string damage; // empty when the whole archive was read; else where and why it broke
    // The bundle's own bytes: the safety verdict also rates them whole (shardsafety.cpp), so a
    // pickle in a member that is no checkpoint (a gzip'd or tar'd pickle) is rated as before.
    std::shared_ptr<const MappedFile> file;
};

// Everything about a checkpoint made of several files: the index, each file, and (DCP) the
// metadata. Attached to the merged Checkpoint that shows all of them as one.
struct ShardSet {
    ShardLayout layout = ShardLayout::HuggingFaceBin;
    std::string folder;
    std::string indexPath; // the index JSON or .metadata that was read; empty when there was none
    std::optional<std::uint64_t> indexTotalSize; // metadata.total_size
    std::vector<std::pair<std::string, std::string>> weightMap; // tensor -> shard, in index order
    std::vector<ShardFile> shards;
    std::vector<std::int32_t> storageShard; // per merged storage: index into shards
    std::vector<std::uint32_t> storageInShard; // per merged storage: index in that shard's storages
    std::optional<DcpMetadata> dcp;
    // Run folders: the files that are no checkpoint, and DeepSpeed's `latest` (the step folder it
    // names, whose files are part of the document; other step folders are left out and named).
    std::vector<FolderFile> otherFiles;
    std::string latestStep; // "global_step2", empty when the folder has no `latest`
    std::vector<std::string> foldersLeftOut; // subfolders not opened ("global_step1")
    // A Trainer output_dir: the checkpoint-N folder with the highest N (get_last_checkpoint's), whose
    // files are part of the document ("checkpoint-500/optimizer.pt"); the older ones are left out.
    std::string newestCheckpoint;
    std::optional<BundleInfo> bundle; // Bundle layout: the archive and every member, checkpoint or not

    const ShardFile* shardOfStorage(std::int32_t storage) const
    {
        if (storage < 0 || static_cast<std::size_t>(storage) >= storageShard.size()
            || storageShard[static_cast<std::size_t>(storage)] < 0)
            return nullptr;
        return &shards[static_cast<std::size_t>(storageShard[static_cast<std::size_t>(storage)])];
    }
};

// The JSON and text forms (`info`): "shard" of a tensor or storage, then the set's own section
// ("layout", "index", "shards" with bytes and devices per shard, and for DCP every entry's chunks).
void writeShardOf(JsonWriter& json, const Checkpoint& checkpoint, std::int32_t storage);
void writeShardSetJson(JsonWriter& json, const Checkpoint& checkpoint);
std::string shardSetText(const Checkpoint& checkpoint);

} // namespace ckpt
