// SPDX-License-Identifier: MIT
// A training run's folder as one document (docs/runfolder.md).
#include "core/read/runfolderreader.h"

#include "core/base/escaping.h"
#include "core/base/textformat.h"
#include "core/io/mappedfile.h"
#include "core/json/json.h"
#include "core/model/shardset.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
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

// Names that say "a checkpoint" whatever their first bytes are (a truncated or LFS-pointer file
// is still one of the run's checkpoints, and a damaged one).
bool hasCheckpointExtension(const std::string& name)
{
    for (const char* extension : {".pt", ".pth", ".bin", ".ckpt", ".safetensors", ".pkl", ".pickle", ".tar"})
        if (name.ends_with(extension))
            return true;
    return false;
}

bool isCheckpointContainer(ContainerKind kind)
{
    switch (kind) {
    case ContainerKind::TorchZip:
    case ContainerKind::ZipWithPrefix:
    case ContainerKind::TorchLegacy:
    case ContainerKind::TorchTar:
    case ContainerKind::Safetensors:
    case ContainerKind::PlainPickle:
    case ContainerKind::PreviewPytorch1:
        return true;
    default:
        return false;
    }
}

struct ListedFile {
    std::string name; // relative to the folder
    std::string path;
    std::uint64_t size = 0;
    ContainerGuess guess;
    bool checkpoint = false;
    std::string group; // its node: its own name, or a sharded set's
};

struct Listing {
    std::vector<ListedFile> files; // checkpoint files and other files, in name order
    // The step folder a DeepSpeed `latest` names, relative to the folder ("global_step2", or
    // "checkpoint-500/global_step500" inside a Trainer checkpoint), and the `latest` that names it.
    std::string latestStep;
    std::string latestFile;
    std::string latestText; // what `latest` holds, when it names nothing usable
    std::string newestCheckpoint; // a Trainer output_dir: the checkpoint-N folder with the highest N
    std::size_t checkpointFolders = 0; // how many checkpoint-N folders the output_dir holds
    std::vector<std::string> foldersLeftOut;
    std::size_t groups = 0; // nodes of checkpoint files
    bool onlyOneModel = false; // the folder is one set of model weights and nothing else
};

std::string trimmed(std::string text)
{
    while (!text.empty()
        && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' || text.back() == '\t'))
        text.pop_back();
    std::size_t start = 0;
    while (start < text.size() && (text[start] == ' ' || text[start] == '\t'))
        ++start;
    return text.substr(start);
}

void listFiles(const fs::path& folder, const std::string& prefix, std::vector<ListedFile>& files,
    std::vector<std::string>* subfolders)
{
    std::error_code error;
    std::vector<fs::directory_entry> entries;
    for (const auto& entry : fs::directory_iterator(folder, error))
        entries.push_back(entry);
    std::sort(entries.begin(), entries.end(),
        [](const fs::directory_entry& a, const fs::directory_entry& b) { return a.path() < b.path(); });
    for (const auto& entry : entries) {
        const std::string name = entry.path().filename().string();
        if (entry.is_directory(error)) {
            if (subfolders && !name.starts_with("."))
                subfolders->push_back(name);
            continue;
        }
        if (!entry.is_regular_file(error))
            continue;
        ListedFile file;
        file.name = prefix + name;
        file.path = entry.path().string();
        file.size = entry.file_size(error);
        if (auto mapped = MappedFile::open(file.path))
            file.guess = sniffContainer((*mapped)->bytes());
        else
            file.guess = {ContainerKind::Unknown, mapped.error().message};
        file.checkpoint = isCheckpointContainer(file.guess.kind) || hasCheckpointExtension(name);
        files.push_back(std::move(file));
    }
}

// The shards each index inside the folder lists: they form one node, named by the index.
void groupShardSets(const fs::path& folder, std::vector<ListedFile>& files, ParsedIndexes* parsedIndexes)
{
    std::map<std::string, std::string> groupOf; // file name -> group
    for (const ListedFile& file : files) {
        if (!file.name.ends_with(".index.json"))
            continue;
        // An index names its shards relative to its own folder (a checkpoint-N/ of an output_dir).
        const auto slash = file.name.find_last_of('/');
        const std::string prefix
            = slash == std::string::npos ? std::string() : file.name.substr(0, slash + 1);
        auto mapped = MappedFile::open(file.path);
        if (!mapped)
            continue;
        const ByteView bytes = (*mapped)->bytes();
        auto parsed = parseJson(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
        if (!parsed)
            continue;
        auto index = std::make_shared<const JsonValue>(std::move(*parsed));
        const std::string group = file.name.substr(0, file.name.size() - std::string(".index.json").size());
        // 92,000 tensors name 160 shards: each shard's name is looked up once, not once a tensor.
        std::unordered_set<std::string_view> named;
        for (const JsonMember& member : index->member("weight_map").members())
            if (const std::string& shard = member.value.toString(); named.insert(shard).second)
                groupOf.emplace(prefix + shard, group);
        if (parsedIndexes)
            parsedIndexes->emplace_back(file.name, std::move(index));
    }
    (void)folder;
    for (ListedFile& file : files) {
        if (!file.checkpoint)
            continue;
        if (const auto found = groupOf.find(file.name); found != groupOf.end()) {
            file.group = found->second;
            continue;
        }
        std::smatch match;
        if (std::regex_match(file.name, match, shardNamePattern()))
            file.group = match[1].str() + "." + match[4].str(); // shards found without an index
        else
            file.group = file.name;
    }
}

// Trainer's checkpoint folders: "checkpoint-<digits>" (transformers.trainer_utils._re_checkpoint).
std::optional<std::string> checkpointNumber(const std::string& name)
{
    static const std::string prefix = "checkpoint-";
    if (!name.starts_with(prefix) || name.size() == prefix.size())
        return std::nullopt;
    std::string digits = name.substr(prefix.size());
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    const auto first = digits.find_first_not_of('0');
    return first == std::string::npos ? std::string("0") : digits.substr(first);
}

// The folder get_last_checkpoint returns: the checkpoint-N with the highest N (compared as whole
// numbers of any length), whatever it holds; "" when there is none.
std::string newestCheckpointFolder(const std::vector<std::string>& subfolders, std::size_t& count)
{
    std::string newest;
    std::string newestNumber;
    count = 0;
    for (const std::string& name : subfolders) {
        const auto number = checkpointNumber(name);
        if (!number)
            continue;
        ++count;
        const bool higher = newest.empty() || number->size() > newestNumber.size()
            || (number->size() == newestNumber.size() && *number > newestNumber);
        if (higher) {
            newest = name;
            newestNumber = *number;
        }
    }
    return newest;
}

// One folder of the document: its files, the step folder its DeepSpeed `latest` names, and (the
// top folder only) the newest of a Trainer output_dir's checkpoint-N folders, read the same way.
void listLevel(const fs::path& folder, const std::string& prefix, Listing& listing, bool top)
{
    std::vector<std::string> subfolders;
    const std::size_t firstFile = listing.files.size();
    listFiles(folder, prefix, listing.files, &subfolders);
    // DeepSpeed's `latest`: the tag of the step folder load_checkpoint opens.
    std::string step;
    for (std::size_t i = firstFile; i < listing.files.size(); ++i) {
        const ListedFile& file = listing.files[i];
        if (file.name != prefix + "latest" || file.size > 4096)
            continue;
        auto mapped = MappedFile::open(file.path);
        if (!mapped)
            break;
        const ByteView bytes = (*mapped)->bytes();
        const std::string tag
            = trimmed(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
        const bool plain = !tag.empty() && tag != "." && tag != ".." && tag.find('/') == std::string::npos
            && tag.find('\\') == std::string::npos;
        if (plain && std::find(subfolders.begin(), subfolders.end(), tag) != subfolders.end())
            step = tag;
        else
            listing.latestText = tag;
        if (listing.latestFile.empty()) {
            listing.latestFile = file.name;
            if (!step.empty())
                listing.latestStep = prefix + step;
        }
        break;
    }
    if (!step.empty())
        listFiles(folder / step, prefix + step + "/", listing.files, nullptr);
    std::string newest;
    if (top) {
        newest = newestCheckpointFolder(subfolders, listing.checkpointFolders);
        listing.newestCheckpoint = newest;
    }
    for (const std::string& subfolder : subfolders)
        if (subfolder != step && subfolder != newest)
            listing.foldersLeftOut.push_back(prefix + subfolder);
    if (!newest.empty() && newest != step) // a `latest` naming it has listed it already
        listLevel(folder / newest, newest + "/", listing, false);
}

Listing listRunFolder(const std::string& folder, ParsedIndexes* parsedIndexes = nullptr)
{
    Listing listing;
    listLevel(folder, {}, listing, true);
    groupShardSets(folder, listing.files, parsedIndexes);
    std::set<std::string> groups;
    bool otherThanModel = false;
    for (const ListedFile& file : listing.files)
        if (file.checkpoint) {
            groups.insert(file.group);
            const bool modelFile = file.group != file.name || file.name == "model.safetensors"
                || file.name == "pytorch_model.bin";
            otherThanModel = otherThanModel || !modelFile;
        }
    listing.groups = groups.size();
    listing.onlyOneModel = groups.size() == 1 && !otherThanModel;
    return listing;
}

std::string describeOther(const ListedFile& file, const Listing& listing)
{
    if (file.name == listing.latestFile)
        return listing.latestStep.empty()
            ? "DeepSpeed's latest, naming no step folder here (" + printableText(listing.latestText) + ")"
            : "DeepSpeed's latest: names "
                + listing.latestStep.substr(listing.latestStep.find_last_of('/') + 1);
    if (file.name.ends_with("/latest") || file.name == "latest")
        return "a `latest` file (not the one the document follows)";
    if (file.name.ends_with(".index.json"))
        return "the index of the sharded set " + file.name.substr(0, file.name.size() - 11);
    switch (file.guess.kind) {
    case ContainerKind::JsonText:
        return "JSON text";
    case ContainerKind::PlainText:
        return "text";
    case ContainerKind::Empty:
        return "empty";
    default:
        return file.guess.description;
    }
}

// Copies one file's tree below `parent` of the merged tree (its tensors already renumbered).
void copyTree(Checkpoint& merged, const Checkpoint& part, std::uint32_t partNode, std::uint32_t parent,
    std::uint32_t firstTensor)
{
    for (const std::uint32_t child : part.tree[partNode].children) {
        const TreeNode& source = part.tree[child];
        const std::uint32_t node = merged.addTreeNode(parent, source.kind, source.name.str());
        merged.tree[node].className = source.className;
        merged.tree[node].summary = source.summary;
        if (source.tensor >= 0) {
            const auto tensor = static_cast<std::uint32_t>(source.tensor) + firstTensor;
            merged.tree[node].tensor = static_cast<std::int32_t>(tensor);
            merged.tensors[tensor].treeNode = node;
        }
        copyTree(merged, part, child, node, firstTensor);
    }
}

// A file whose bytes are there but which gives nothing to show: its reason, else "".
std::string fileProblem(const ShardFile& shard, const ListedFile& listed)
{
    if (!shard.problem.empty())
        return shard.problem;
    if (!shard.model())
        return "could not be read";
    const Checkpoint& part = *shard.model();
    if (part.format == CheckpointFormat::NotACheckpoint && listed.guess.kind != ContainerKind::PlainPickle)
        return part.container.description;
    for (const Finding& finding : part.findings)
        if (finding.severity == Severity::Error)
            return finding.message;
    return {};
}

} // namespace

bool isRunFolder(const std::string& folder, ParsedIndexes* parsedIndexes)
{
    const Listing listing = listRunFolder(folder, parsedIndexes);
    // A Trainer output_dir is a run folder whatever its checkpoint-N folders hold: the newest is the
    // one Trainer resumes from, and an empty one is said so rather than "no checkpoint".
    return !listing.newestCheckpoint.empty()
        || (listing.groups > 0 && (!listing.latestStep.empty() || !listing.onlyOneModel));
}

Checkpoint readRunFolder(const std::string& folderPath, const ReadOptions& options)
{
    std::string folder = folderPath;
    while (folder.size() > 1 && folder.ends_with('/'))
        folder.pop_back();
    const Listing listing = listRunFolder(folder);

    Checkpoint merged;
    merged.path = folder;
    merged.ensureRoot();
    auto set = std::make_shared<ShardSet>();
    set->layout = ShardLayout::RunFolder;
    set->folder = folder;
    set->latestStep = listing.latestStep;
    set->newestCheckpoint = listing.newestCheckpoint;
    set->foldersLeftOut = listing.foldersLeftOut;

    std::map<std::string, std::uint32_t> groupNodes;
    std::vector<const ListedFile*> listedOfShard;
    for (const ListedFile& file : listing.files) {
        if (!file.checkpoint) {
            set->otherFiles.push_back({file.name, file.size, describeOther(file, listing)});
            continue;
        }
        ShardFile shard;
        shard.name = file.name;
        shard.path = file.path;
        shard.present = true;
        shard.group = file.group;
        shard.fileSize = file.size;
        set->shards.push_back(std::move(shard));
        listedOfShard.push_back(&file);
    }
    // Each file on its own, several at a time (as the shards of a set are read): a memory map,
    // its directory and pickles; no tensor bytes.
    std::atomic<std::size_t> next {0};
    auto work = [&]() {
        for (std::size_t i = next++; i < set->shards.size(); i = next++) {
            ShardFile& shard = set->shards[i];
            auto mapped = MappedFile::open(shard.path);
            if (mapped)
                shard.setModel(std::make_shared<const Checkpoint>(readCheckpoint(*mapped, options)));
            else
                shard.problem = mapped.error().message;
            shard.problem = fileProblem(shard, *listedOfShard[i]);
        }
    };
    const std::size_t threads = std::min<std::size_t>(
        set->shards.size(), std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t)
        pool.emplace_back(work);
    work();
    for (std::thread& thread : pool)
        thread.join();

    for (std::size_t s = 0; s < set->shards.size(); ++s) {
        ShardFile& shard = set->shards[s];
        const bool grouped = shard.group != shard.name;
        auto [groupNode, added] = groupNodes.try_emplace(shard.group, 0);
        if (added) {
            groupNode->second = merged.addTreeNode(
                0, grouped ? TreeNodeKind::Module : TreeNodeKind::Object, grouped ? shard.group : shard.name);
            if (!grouped && shard.model())
                merged.tree[groupNode->second].className
                    = InternedString(std::string("file: ") + checkpointFormatName(shard.model()->format));
            else if (grouped)
                merged.tree[groupNode->second].className = InternedString(std::string("sharded set"));
        }
        const std::uint32_t node = groupNode->second;
        shard.treeNode = node;
        shard.firstStorage = static_cast<std::uint32_t>(merged.storages.size());
        shard.firstTensor = static_cast<std::uint32_t>(merged.tensors.size());
        merged.fileSize += shard.fileSize;
        if (!shard.model())
            continue;
        const Checkpoint& part = *shard.model();
        for (const Finding& finding : part.findings) {
            Finding copy = finding;
            copy.message = shard.name + ": " + finding.message;
            copy.record = copy.record.empty() ? shard.name : shard.name + "/" + copy.record;
            copy.tensors.clear();
            merged.findings.push_back(std::move(copy));
        }
        for (std::size_t k = 0; k < part.storages.size(); ++k) {
            StorageRecord storage = part.storages[k];
            storage.key = shard.name + ":" + storage.key; // keys repeat across files
            if (storage.recordKeyStart != StorageRecord::kRecordWithoutKey)
                storage.recordKeyStart += static_cast<std::uint32_t>(shard.name.size() + 1);
            for (std::uint32_t& tensor : storage.tensors)
                tensor += shard.firstTensor;
            storage.firstPersistentId = kNoNode; // the file's own graph; the writer uses the file
            storage.persistentIdTuples.clear();
            merged.storages.push_back(std::move(storage));
            merged.indexStorage(static_cast<std::uint32_t>(merged.storages.size() - 1));
            set->storageShard.push_back(static_cast<std::int32_t>(s));
            set->storageInShard.push_back(static_cast<std::uint32_t>(k));
        }
        shard.storageCount = static_cast<std::uint32_t>(merged.storages.size()) - shard.firstStorage;
        for (const TensorEntry& original : part.tensors) {
            TensorEntry tensor = original;
            if (tensor.storage >= 0)
                tensor.storage += static_cast<std::int32_t>(shard.firstStorage);
            tensor.node = kNoNode;
            tensor.deviceArgumentTuple = kNoNode;
            // Names start with the node's name, as the tree's paths do ("optimizer.pt.state.0.exp_avg"),
            // so a rule for a node moves what is below it.
            tensor.name = original.name.empty() ? shard.group : shard.group + "." + original.name;
            merged.tensors.push_back(std::move(tensor));
        }
        if (grouped) { // a sharded set: one module tree across its shards, from the dotted names
            for (std::uint32_t t = shard.firstTensor; t < merged.tensors.size(); ++t) {
                std::string leaf;
                const std::string_view own = part.tensors[t - shard.firstTensor].name;
                const std::uint32_t parent = merged.modulePathFor(node, own, leaf);
                const std::uint32_t treeNode = merged.addTreeNode(parent, TreeNodeKind::Tensor, leaf);
                merged.tree[treeNode].tensor = static_cast<std::int32_t>(t);
                merged.tensors[t].treeNode = treeNode;
            }
        } else if (!part.tree.empty())
            copyTree(merged, part, 0, node, shard.firstTensor);
    }
    for (const FolderFile& file : set->otherFiles) {
        const std::uint32_t node = merged.addTreeNode(0, TreeNodeKind::Value, file.name);
        merged.tree[node].summary = RareText(file.what + ", " + formatBytes(file.fileSize));
    }

    for (const ShardFile& shard : set->shards)
        if (!shard.problem.empty())
            merged.addFinding(Severity::Error, FindingCode::RunFolderFileUnreadable,
                shard.name + " cannot be read: " + shard.problem + " (the folder's other files are shown)",
                shard.name);
    if (!listing.latestStep.empty()) {
        const std::string stepParent = listing.latestStep.substr(0, listing.latestStep.find_last_of('/') + 1);
        std::size_t stepsLeftOut = 0;
        for (const std::string& folder : listing.foldersLeftOut)
            stepsLeftOut += folder.starts_with(stepParent)
                    && folder.find('/', stepParent.size()) == std::string::npos
                    && (stepParent.empty() || !checkpointNumber(folder))
                ? 1
                : 0;
        merged.addFinding(Severity::Info, FindingCode::RunFolderLatest,
            "`" + listing.latestFile + "` names " + listing.latestStep + ": its files are shown"
                + (stepsLeftOut == 0 ? std::string()
                                     : "; left out: " + std::to_string(stepsLeftOut) + " other folder(s)"),
            listing.latestFile);
    }
    if (!listing.newestCheckpoint.empty()) {
        // A Trainer output_dir: the folder get_last_checkpoint returns (what
        // Trainer.train(resume_from_checkpoint=True) resumes from); the older ones are named.
        std::string older;
        for (const std::string& folder : listing.foldersLeftOut)
            if (checkpointNumber(folder))
                older += (older.empty() ? "" : ", ") + folder;
        bool any = false;
        for (const ShardFile& shard : set->shards)
            any = any || shard.name.starts_with(listing.newestCheckpoint + "/");
        merged.addFinding(any ? Severity::Info : Severity::Error, FindingCode::RunFolderNewestCheckpoint,
            listing.newestCheckpoint + " is the newest of " + std::to_string(listing.checkpointFolders)
                + " checkpoint folder(s), the one Trainer resumes from: "
                + (any ? "its files are shown" : "it holds no checkpoint file")
                + (older.empty() ? std::string() : "; older ones left out: " + older),
            listing.newestCheckpoint);
    }
    merged.format = CheckpointFormat::TorchZip;
    for (const ShardFile& shard : set->shards)
        if (shard.model() && shard.model()->format != CheckpointFormat::NotACheckpoint) {
            merged.format = shard.model()->format;
            break;
        }
    merged.container = {ContainerKind::TorchZip,
        "a training run's folder: " + std::to_string(set->shards.size()) + " checkpoint file(s), "
            + std::to_string(set->otherFiles.size()) + " other file(s)"
            + (listing.newestCheckpoint.empty()
                    ? std::string()
                    : ", the newest checkpoint folder (" + listing.newestCheckpoint + ")")
            + (listing.latestStep.empty() ? std::string()
                                          : ", the step `latest` names (" + listing.latestStep + ")")};
    merged.shardSet = std::move(set);
    return merged;
}

} // namespace ckpt
