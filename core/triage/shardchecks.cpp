// SPDX-License-Identifier: MIT
// Checks across the files of one checkpoint (torch-format.md §7): each finding names the shard
// and the tensors, and says what to do.
#include "core/triage/shardchecks.h"

#include "core/base/internedstring.h"
#include "core/base/textformat.h"
#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/model/shardset.h"
#include "core/triage/integritychecks.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace ckpt {

namespace {

std::string listNames(const std::vector<std::string>& names, std::size_t most = 5)
{
    std::string out;
    for (std::size_t i = 0; i < names.size() && i < most; ++i)
        out += (i ? ", " : "") + names[i];
    if (names.size() > most)
        out += " and " + std::to_string(names.size() - most) + " more";
    return out;
}

Finding makeFinding(Severity severity, FindingCode code, std::string message, std::string shard,
    std::string explanation, std::string fix)
{
    Finding finding(severity, code, std::move(message), std::move(shard));
    finding.explanation = std::move(explanation);
    finding.fix = std::move(fix);
    return finding;
}

// Each readable shard's own CRC and record checks (the merged view has no single zip to check).
void checkEachShard(const Checkpoint& checkpoint, std::vector<Finding>& findings)
{
    for (const ShardFile& shard : checkpoint.shardSet->shards) {
        // A shard read in place said nothing but dtype notes, and its own checks add to a
        // safetensors file only what follows a truncation finding: there is nothing to add.
        if (!shard.readable() || !shard.problem.empty() || shard.readInPlace())
            continue;
        std::vector<Finding> own = checkIntegrity(*shard.model());
        // checkIntegrity starts with the shard's reader findings, which the merged checkpoint already
        // carries; the rest are the checks that need the shard's own file.
        for (std::size_t i = shard.model()->findings.size(); i < own.size(); ++i) {
            Finding finding = std::move(own[i]);
            if (finding.code == FindingCode::Truncated || finding.code == FindingCode::TruncatedSalvage
                || finding.code == FindingCode::FileTruncated)
                continue; // the merged checkpoint's truncation check covers it, across shards
            finding.message = shard.name + ": " + finding.message;
            finding.record = finding.record.empty() ? shard.name : shard.name + "/" + finding.record;
            for (std::uint32_t& tensor : finding.tensors)
                tensor += shard.firstTensor;
            findings.push_back(std::move(finding));
        }
    }
}

// The tensors of the merged checkpoint grouped by name, for holding the index to the shards: a
// name maps to its group, and a group's tensors are chained in the order they were added. The
// names are viewed in the tensors, not copied: at 92,000 tensors the map of heap strings to heap
// vectors, and the sets of names beside it, were a third of `check` of a 160-shard folder.
class TensorsByName {
public:
    explicit TensorsByName(const Checkpoint& checkpoint)
        : m_next(checkpoint.tensors.size(), kEnd)
    {
        // Not reserved: the findings follow the map's order, which is its growth's (as it always was).
        std::vector<std::uint32_t> lastOfGroup;
        for (std::uint32_t i = 0; i < checkpoint.tensors.size(); ++i) {
            const auto [slot, added] = m_groupOfName.try_emplace(
                std::string_view(checkpoint.tensors[i].name), static_cast<std::uint32_t>(m_first.size()));
            if (added) {
                m_first.push_back(i);
                lastOfGroup.push_back(i);
                m_listed.push_back(false);
            } else {
                m_next[lastOfGroup[slot->second]] = i;
                lastOfGroup[slot->second] = i;
            }
        }
    }

    static constexpr std::uint32_t kNoGroup = UINT32_MAX;
    std::uint32_t group(std::string_view name) const
    {
        const auto found = m_groupOfName.find(name);
        return found == m_groupOfName.end() ? kNoGroup : found->second;
    }
    std::uint32_t firstTensor(std::uint32_t group) const { return m_first[group]; }
    std::vector<std::uint32_t> tensors(std::uint32_t group) const
    {
        std::vector<std::uint32_t> out;
        for (std::uint32_t t = m_first[group]; t != kEnd; t = m_next[t])
            out.push_back(t);
        return out;
    }
    bool single(std::uint32_t group) const { return m_next[m_first[group]] == kEnd; }
    void markListed(std::uint32_t group) { m_listed[group] = true; }
    bool listed(std::uint32_t group) const { return m_listed[group]; }
    // Every name with its group, in the map's own order (what the findings were always listed in).
    template<typename Visit> void forEach(Visit&& visit) const
    {
        for (const auto& [name, group] : m_groupOfName)
            visit(name, group);
    }

private:
    static constexpr std::uint32_t kEnd = UINT32_MAX;
    std::unordered_map<std::string_view, std::uint32_t> m_groupOfName;
    std::vector<std::uint32_t> m_first; // by group
    std::vector<std::uint32_t> m_next; // by tensor: the next of its name, or kEnd
    std::vector<bool> m_listed; // by group: the index names it
};

void checkHuggingFace(const Checkpoint& checkpoint, std::vector<Finding>& findings)
{
    const ShardSet& set = *checkpoint.shardSet;
    TensorsByName tensorsByName(checkpoint);
    auto shardOfTensor = [&](std::uint32_t tensor) -> const ShardFile* {
        return set.shardOfStorage(checkpoint.tensors[tensor].storage);
    };
    std::unordered_map<std::string_view, const ShardFile*> shardByName;
    for (const ShardFile& shard : set.shards)
        shardByName.insert_or_assign(
            std::string_view(shard.name), &shard); // the last of a name, as a map's [] gives

    // Shards that cannot be used: name the tensors the index promised from them, gathered in one
    // pass over the index (only for those shards: a healthy folder copies no name).
    std::unordered_map<std::string_view, std::vector<std::string>> promisedByUnusable;
    for (const ShardFile& shard : set.shards)
        if (!shard.problem.empty())
            promisedByUnusable.try_emplace(shard.name);
    if (!promisedByUnusable.empty())
        for (const auto& [tensor, shardName] : set.weightMap)
            if (const auto unusable = promisedByUnusable.find(shardName);
                unusable != promisedByUnusable.end())
                unusable->second.push_back(tensor);
    for (const ShardFile& shard : set.shards) {
        if (!shard.problem.empty()) {
            const std::vector<std::string>& lost = promisedByUnusable.at(shard.name);
            Finding finding = makeFinding(Severity::Error,
                shard.problem != "missing" ? FindingCode::ShardUnreadable : FindingCode::ShardMissing,
                shard.name
                    + (shard.problem != "missing" ? " is not a usable shard (" + shard.problem + ")"
                                                  : std::string(" is missing"))
                    + ": " + std::to_string(lost.size())
                    + " tensor(s) the index places there cannot be loaded: " + listNames(lost),
                shard.name,
                "from_pretrained opens every shard the index lists; with this one "
                    + std::string(shard.present ? "unreadable" : "missing")
                    + " it stops with an error, and these weights would be missing from the model",
                shard.present
                    ? "replace " + shard.name + " with the real file (git lfs pull, or download it again)"
                    : "download " + shard.name + " into " + set.folder + " (it is listed by the index)");
            for (const std::string& name : lost)
                if (const std::uint32_t group = tensorsByName.group(name); group != TensorsByName::kNoGroup)
                    finding.tensors.push_back(tensorsByName.firstTensor(group));
            findings.push_back(std::move(finding));
            continue;
        }
        // Readable but damaged (cut short, bad records): the tensors whose bytes are not all there.
        if (shard.hasErrors()) {
            std::vector<std::string> incomplete;
            std::vector<std::uint32_t> tensors;
            for (std::uint32_t k = shard.firstStorage; k < shard.firstStorage + shard.storageCount; ++k)
                if (!checkpoint.storages[k].bytesReadable() && checkpoint.storages[k].nbytes)
                    for (std::uint32_t t : checkpoint.storages[k].tensors) {
                        incomplete.emplace_back(checkpoint.tensors[t].name);
                        tensors.push_back(t);
                    }
            Finding finding = makeFinding(Severity::Error, FindingCode::ShardDamaged,
                shard.name + " is damaged (" + formatBytes(shard.fileSize) + " on disk): "
                    + (incomplete.empty() ? std::string("its records are unreadable")
                                          : std::to_string(incomplete.size())
                                + " tensor(s) lack bytes: " + listNames(incomplete)),
                shard.name,
                "torch.load of this shard fails, so from_pretrained fails; the other shards are intact",
                "download " + shard.name + " again (compare its size with the one the hub lists)");
            finding.tensors = std::move(tensors);
            findings.push_back(std::move(finding));
        }
    }

    // The index against what the shards hold. Real indexes list one shard's tensors together, so
    // the shard is most often the previous entry's.
    std::vector<std::string> absent;
    std::string absentShard; // the shard the last absent tensor was promised in
    std::string_view previousShardName;
    const ShardFile* previousShard = nullptr;
    for (const auto& [name, shardName] : set.weightMap) {
        const std::uint32_t group = tensorsByName.group(name);
        if (group != TensorsByName::kNoGroup)
            tensorsByName.markListed(group);
        if (previousShardName.data() == nullptr || shardName != previousShardName) {
            const auto shard = shardByName.find(shardName);
            previousShard = shard == shardByName.end() ? nullptr : shard->second;
            previousShardName = shardName;
        }
        if (!previousShard || !previousShard->problem.empty())
            continue; // said above
        if (group == TensorsByName::kNoGroup) {
            absent.push_back(name + " (index: " + shardName + ")");
            absentShard = shardName;
            continue;
        }
        bool inNamedShard = false;
        for (const std::uint32_t t : tensorsByName.tensors(group))
            if (const ShardFile* holder = shardOfTensor(t); holder && holder->name == shardName)
                inNamedShard = true;
        if (!inNamedShard) {
            const ShardFile* holder = shardOfTensor(tensorsByName.firstTensor(group));
            Finding finding = makeFinding(Severity::Error, FindingCode::IndexTensorElsewhere,
                name + ": the index places it in " + shardName + " but it is in "
                    + (holder ? holder->name : "?"),
                shardName,
                "from_pretrained reads each tensor from the shard the index names, so it would not find this "
                "one",
                "regenerate the index from the shards (save_pretrained again), or correct its weight_map "
                "entry");
            finding.tensors = tensorsByName.tensors(group);
            findings.push_back(std::move(finding));
        }
    }
    if (!absent.empty()) {
        Finding finding = makeFinding(Severity::Error, FindingCode::IndexTensorAbsent,
            std::to_string(absent.size())
                + " tensor(s) named by the index are in no shard: " + listNames(absent),
            absentShard,
            "the index promises weights that are not there: from_pretrained reports them missing and leaves "
            "them "
            "randomly initialised",
            "check that the shards come from the same save as the index; remove the entries or save the "
            "model again");
        findings.push_back(std::move(finding));
    }
    // A tensor in two shards; a shard holding tensors the index does not list.
    std::map<std::string, std::vector<std::string>> unlisted;
    std::map<std::string, std::vector<std::uint32_t>> unlistedTensors;
    tensorsByName.forEach([&](std::string_view name, std::uint32_t group) {
        const bool listed = tensorsByName.listed(group);
        if (tensorsByName.single(group)) { // one tensor, one shard at most: the common case
            if (!set.indexPath.empty() && !listed)
                if (const ShardFile* shard = shardOfTensor(tensorsByName.firstTensor(group))) {
                    unlisted[shard->name].emplace_back(name);
                    unlistedTensors[shard->name].push_back(tensorsByName.firstTensor(group));
                }
            return;
        }
        const std::vector<std::uint32_t> indices = tensorsByName.tensors(group);
        std::set<std::string> shards;
        for (std::uint32_t t : indices)
            if (const ShardFile* shard = shardOfTensor(t))
                shards.insert(shard->name);
        if (shards.size() > 1) {
            Finding finding = makeFinding(Severity::Warning, FindingCode::TensorInTwoShards,
                std::string(name) + " is in " + std::to_string(shards.size())
                    + " shards: " + listNames(std::vector<std::string>(shards.begin(), shards.end())),
                *shards.begin(), "whichever shard is loaded last wins; the copies may differ",
                "keep it in the shard the index names and save the shards again");
            finding.tensors = indices;
            findings.push_back(std::move(finding));
        }
        if (!set.indexPath.empty() && !listed)
            for (std::uint32_t t : indices)
                if (const ShardFile* shard = shardOfTensor(t)) {
                    unlisted[shard->name].emplace_back(name);
                    unlistedTensors[shard->name].push_back(t);
                }
    });
    for (auto& [shardName, names] : unlisted) {
        std::sort(names.begin(), names.end());
        Finding finding = makeFinding(Severity::Warning, FindingCode::ShardTensorUnlisted,
            shardName + " holds " + std::to_string(names.size())
                + " tensor(s) the index does not list: " + listNames(names),
            shardName,
            "from_pretrained loads only what the index lists (these are ignored, or reported unexpected)",
            "add them to the index's weight_map or save the model again");
        finding.tensors = unlistedTensors[shardName];
        findings.push_back(std::move(finding));
    }

    // metadata.total_size: transformers counts each tensor's bytes; huggingface_hub counts storages.
    const bool allUsable = std::all_of(
        set.shards.begin(), set.shards.end(), [](const ShardFile& s) { return s.problem.empty(); });
    if (set.indexTotalSize && allUsable) {
        std::uint64_t tensorBytes = 0;
        for (const TensorEntry& tensor : checkpoint.tensors)
            tensorBytes += tensor.nbytes();
        const std::uint64_t storageBytes = checkpoint.totalStorageBytes();
        if (*set.indexTotalSize != tensorBytes && *set.indexTotalSize != storageBytes)
            findings.push_back(makeFinding(Severity::Warning, FindingCode::IndexTotalSizeMismatch,
                "the index's metadata.total_size is " + formatThousands(*set.indexTotalSize)
                    + " bytes but the shards hold " + formatThousands(tensorBytes) + " bytes of tensors ("
                    + formatThousands(storageBytes) + " of storages)",
                std::string(), "the index may belong to another save of the model, or shards were replaced",
                "check that the shards and the index come from the same save_pretrained call"));
    }

    // Shards whose dtype or devices differ from the rest.
    std::map<std::string, std::map<std::string, std::uint64_t>> dtypeBytesByShard, deviceBytesByShard;
    std::map<std::string, std::uint64_t> dtypeTotal, deviceTotal;
    // Summed first per shard by interned text (a shard has a few dtypes and devices: a pointer
    // compare each), then by name: a map look-up and a string copy per storage were a tenth of
    // `check` of a 160-shard folder.
    using Sums = std::vector<std::pair<InternedString, std::uint64_t>>;
    auto addTo = [](Sums& sums, InternedString text, std::uint64_t bytes) {
        for (auto& [known, total] : sums)
            if (known == text) {
                total += bytes;
                return;
            }
        sums.emplace_back(text, bytes);
    };
    Sums dtypes, devices;
    for (const ShardFile& shard : set.shards) {
        dtypes.clear();
        devices.clear();
        for (std::uint32_t k = shard.firstStorage; k < shard.firstStorage + shard.storageCount; ++k) {
            const StorageRecord& storage = checkpoint.storages[k];
            addTo(dtypes,
                checkpoint.tensors.empty() || storage.tensors.empty()
                    ? storage.dtype
                    : checkpoint.tensors[storage.tensors.front()].dtype,
                storage.nbytes);
            if (storage.device)
                addTo(devices, *storage.device, storage.nbytes);
        }
        if (!dtypes.empty()) {
            auto& byDtype = dtypeBytesByShard[shard.name];
            for (const auto& [dtype, bytes] : dtypes) {
                byDtype[dtype.str()] += bytes;
                dtypeTotal[dtype.str()] += bytes;
            }
        }
        if (!devices.empty()) {
            auto& byDevice = deviceBytesByShard[shard.name];
            for (const auto& [device, bytes] : devices) {
                byDevice[device.str()] += bytes;
                deviceTotal[device.str()] += bytes;
            }
        }
    }
    auto dominant = [](const std::map<std::string, std::uint64_t>& bytes) {
        return std::max_element(bytes.begin(), bytes.end(), [](const auto& a, const auto& b) {
            return a.second < b.second;
        })->first;
    };
    if (dtypeTotal.size() > 1) {
        const std::string common = dominant(dtypeTotal);
        for (const auto& [shardName, bytes] : dtypeBytesByShard)
            if (!bytes.empty() && dominant(bytes) != common)
                findings.push_back(makeFinding(Severity::Warning, FindingCode::ShardDtypeDiffers,
                    shardName + " is mostly " + dominant(bytes) + " while the other shards are mostly "
                        + common,
                    shardName,
                    "shards written by different saves (or a partly converted model) mix precisions",
                    "check that every shard comes from the same save; convert with torch_dtype= when "
                    "loading"));
    }
    if (deviceTotal.size() > 1) {
        std::string perShard;
        for (const auto& [shardName, bytes] : deviceBytesByShard) {
            perShard += (perShard.empty() ? "" : "; ") + shardName + ":";
            for (const auto& [device, count] : bytes)
                perShard += " " + device;
        }
        findings.push_back(makeFinding(Severity::Info, FindingCode::ShardDevicesDiffer,
            "the shards record different devices (" + perShard + ")", std::string(),
            "the model was saved from several devices (a device_map); a plain torch.load of each shard "
            "restores every "
            "storage to its recorded device",
            "plan the model for this machine and save a remapped folder (ckpt-inspect remap DIR -o OUT), or "
            "load "
            "with map_location / device_map"));
    }
}

std::uint64_t volume(const std::vector<std::int64_t>& sizes)
{
    std::uint64_t total = 1;
    for (std::int64_t size : sizes)
        total *= static_cast<std::uint64_t>(std::max<std::int64_t>(size, 0));
    return total;
}

bool boxesOverlap(const DcpChunk& a, const DcpChunk& b)
{
    if (a.offsets.size() != b.offsets.size())
        return false;
    for (std::size_t d = 0; d < a.offsets.size(); ++d)
        if (a.offsets[d] + a.sizes[d] <= b.offsets[d] || b.offsets[d] + b.sizes[d] <= a.offsets[d])
            return false;
    return volume(a.sizes) && volume(b.sizes);
}

void checkDistributed(const Checkpoint& checkpoint, std::vector<Finding>& findings)
{
    const ShardSet& set = *checkpoint.shardSet;
    std::map<std::string, std::shared_ptr<const MappedFile>> files;
    for (const ShardFile& shard : set.shards)
        if (shard.present)
            if (auto file = MappedFile::open(shard.path))
                files[shard.name] = *file;
    std::map<std::string, std::vector<std::string>> missingByFile;
    std::map<std::string, std::vector<std::uint32_t>> missingTensorsByFile;
    std::vector<std::string> notTorchSave;
    for (const DcpEntry& entry : set.dcp->entries) {
        const std::optional<std::uint32_t> storage = checkpoint.storageIndex(entry.fqn);
        const std::int32_t tensor = (!entry.isBytes && storage)
            ? static_cast<std::int32_t>(checkpoint.storages[*storage].tensors.front())
            : -1;
        for (const DcpChunk& chunk : entry.chunks) {
            if (!chunk.located) {
                Finding finding = makeFinding(Severity::Error, FindingCode::DcpChunkUnlocated,
                    entry.fqn
                        + ": a chunk has no storage_data entry in .metadata, so its bytes cannot be found",
                    ".metadata", "DCP's load fails with a KeyError for this tensor",
                    "the .metadata does not belong to these data files; use the folder as it was saved");
                if (tensor >= 0)
                    finding.tensors.push_back(static_cast<std::uint32_t>(tensor));
                findings.push_back(std::move(finding));
                continue;
            }
            const auto file = files.find(chunk.file);
            const bool present
                = file != files.end() && chunk.fileOffset + chunk.length <= file->second->size();
            if (!present) {
                missingByFile[chunk.file].push_back(entry.fqn);
                if (tensor >= 0)
                    missingTensorsByFile[chunk.file].push_back(static_cast<std::uint32_t>(tensor));
                continue;
            }
            // Every chunk is a complete torch.save archive (§7.1): it starts with a zip local header.
            // Through writer extensions (zstd) it does not; the reader checks it once undone.
            const ByteView bytes = file->second->bytes();
            if (chunk.transforms.empty()
                && (chunk.length < 4 || bytes[chunk.fileOffset] != 'P' || bytes[chunk.fileOffset + 1] != 'K'
                    || bytes[chunk.fileOffset + 2] != 3 || bytes[chunk.fileOffset + 3] != 4))
                notTorchSave.push_back(entry.fqn);
        }
        if (entry.isBytes)
            continue;
        // The chunks must tile the tensor: inside its bounds, no overlaps, no gaps.
        std::string problem;
        std::uint64_t covered = 0;
        for (const DcpChunk& chunk : entry.chunks) {
            covered += volume(chunk.sizes);
            if (chunk.offsets.size() != entry.size.size() || chunk.sizes.size() != entry.size.size())
                problem = "a chunk has " + std::to_string(chunk.offsets.size()) + " dimensions, the tensor "
                    + std::to_string(entry.size.size());
            else
                for (std::size_t d = 0; d < entry.size.size(); ++d)
                    if (chunk.offsets[d] < 0 || chunk.sizes[d] < 0
                        || chunk.offsets[d] + chunk.sizes[d] > entry.size[d])
                        problem = "a chunk runs past the tensor's size in dimension " + std::to_string(d);
        }
        if (problem.empty() && entry.chunks.size() <= 4096)
            for (std::size_t i = 0; i < entry.chunks.size() && problem.empty(); ++i)
                for (std::size_t j = i + 1; j < entry.chunks.size(); ++j)
                    if (boxesOverlap(entry.chunks[i], entry.chunks[j])) {
                        problem = "chunks " + std::to_string(i) + " and " + std::to_string(j) + " overlap";
                        break;
                    }
        if (problem.empty() && covered != volume(entry.size))
            problem = "the chunks cover " + formatThousands(covered) + " of "
                + formatThousands(volume(entry.size)) + " elements (a gap)";
        if (!problem.empty()) {
            Finding finding = makeFinding(Severity::Error, FindingCode::DcpChunksDoNotTile,
                entry.fqn + ": " + problem, ".metadata",
                "DCP loads a tensor by copying each chunk into place; overlaps or gaps leave it wrong or "
                "incomplete",
                "the metadata is inconsistent: save the checkpoint again");
            if (tensor >= 0)
                finding.tensors.push_back(static_cast<std::uint32_t>(tensor));
            findings.push_back(std::move(finding));
        }
    }
    for (auto& [fileName, names] : missingByFile) {
        const bool exists = files.count(fileName) != 0;
        Finding finding = makeFinding(Severity::Error, FindingCode::DcpChunkMissing,
            fileName
                + (exists ? " is too short (" + formatBytes(files[fileName]->size()) + ")" : " is missing")
                + ": " + std::to_string(names.size()) + " chunk(s) lack their bytes: " + listNames(names),
            fileName,
            "torch.distributed.checkpoint.load reads each chunk at the offset .metadata records; these are "
            "not there",
            "copy " + fileName + " again from where the checkpoint was saved");
        finding.tensors = std::move(missingTensorsByFile[fileName]);
        findings.push_back(std::move(finding));
    }
    if (!notTorchSave.empty())
        findings.push_back(makeFinding(Severity::Warning, FindingCode::DcpChunkNotTorchSave,
            std::to_string(notTorchSave.size())
                + " chunk(s) do not start with a torch.save archive: " + listNames(notTorchSave),
            std::string(),
            "each chunk of a DCP file is a torch.save archive; these bytes are something else (another "
            "serialization format, or damage)",
            "check the writer (SerializationFormat) or copy the data files again"));
}

} // namespace

std::vector<Finding> checkShards(const Checkpoint& checkpoint)
{
    std::vector<Finding> findings;
    if (!checkpoint.shardSet)
        return findings;
    if (checkpoint.shardSet->dcp)
        checkDistributed(checkpoint, findings);
    else if (checkpoint.shardSet->layout == ShardLayout::RunFolder) {
        // Each file is its own document, with no index to hold them to: each readable file gets
        // its own record checks (the reader's word on a file that cannot be read stays).
        checkEachShard(checkpoint, findings);
    } else if (checkpoint.shardSet->layout == ShardLayout::Bundle) {
        checkEachShard(checkpoint, findings); // members are files of their own, not shards of one model
    } else {
        checkHuggingFace(checkpoint, findings);
        checkEachShard(checkpoint, findings);
    }
    return findings;
}

} // namespace ckpt
