// SPDX-License-Identifier: MIT
// Integrity (CRC of every record, sizes, truncation and what can be salvaged, files that are not
// checkpoints) and placement smells (mixed devices in one module, optimizer state away from its
// parameters, TorchScript code that names a device), as findings with an explanation and a fix.
#include "core/triage/integritychecks.h"

#include "core/base/checkedarithmetic.h"
#include "core/format/crc32.h"
#include "core/format/inflate.h"
#include "core/format/ziparchive.h"
#include "core/format/zipformat.h"
#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string_view>

namespace ckpt {

namespace {

constexpr std::size_t kNamesInMessage = 12; // longer lists end with "and N more"
constexpr std::uint64_t kMaxCodeRecord = 64ull << 20; // TorchScript code records are small

std::string tensorName(const Checkpoint& checkpoint, std::uint32_t tensor)
{
    const SlimText& name = checkpoint.tensors[tensor].name;
    return name.empty() ? std::string("(root tensor)") : name.str();
}

std::string joinLimited(const std::vector<std::string>& items, std::size_t limit = kNamesInMessage)
{
    std::string text;
    for (std::size_t i = 0; i < items.size() && i < limit; ++i) {
        if (i)
            text += ", ";
        text += items[i];
    }
    if (items.size() > limit)
        text += " and " + formatThousands(items.size() - limit) + " more";
    return text;
}

std::string tensorList(const Checkpoint& checkpoint, const std::vector<std::uint32_t>& tensors)
{
    std::vector<std::string> names;
    for (std::size_t i = 0; i < tensors.size() && i < kNamesInMessage; ++i)
        names.push_back(tensorName(checkpoint, tensors[i]));
    std::string text = joinLimited(names);
    if (tensors.size() > kNamesInMessage)
        text += " and " + formatThousands(tensors.size() - kNamesInMessage) + " more";
    return text;
}

std::string fileName(const Checkpoint& checkpoint)
{
    return checkpoint.path.empty() ? std::string("FILE") : checkpoint.path;
}

bool isTruncationCode(FindingCode code)
{
    switch (code) {
    case FindingCode::ZipTruncated:
    case FindingCode::RecordTruncated:
    case FindingCode::Truncated:
    case FindingCode::FileTruncated:
    case FindingCode::CentralDirectoryMissing:
    case FindingCode::CentralDirectoryTruncated:
    case FindingCode::ZipEndRecordMissing:
        return true;
    default:
        return false;
    }
}

// Explanation and fix for a finding the reader made: its code's row where that has a fix (and, for
// files that are not checkpoints, by what the sniffer recognised).
void explainReaderFinding(const Checkpoint& checkpoint, Finding& finding)
{
    if (finding.code == FindingCode::NotACheckpoint) {
        switch (checkpoint.container.kind) {
        case ContainerKind::GitLfsPointer:
            finding.explanation = "this is a Git LFS pointer, a small text file that stands in for the "
                                  "real file in a Git repository; the checkpoint itself was never fetched";
            finding.fix = "fetch the real file with `git lfs pull` (or `git lfs fetch && git lfs "
                          "checkout`) in the repository it came from";
            break;
        case ContainerKind::HtmlPage:
            finding.explanation = "you downloaded a web page, not the file: a link to a page that shows "
                                  "the file (or a login or error page) was saved under the checkpoint's name";
            finding.fix = "use the raw/resolve URL (Hugging Face: .../resolve/main/FILE; GitHub: the Raw "
                          "link), or the host's CLI (huggingface-cli download, gdown)";
            break;
        case ContainerKind::Png:
        case ContainerKind::Jpeg:
            finding.explanation = "this is an image, not a checkpoint: it was saved or renamed to the "
                                  "checkpoint's name";
            finding.fix = "find the real checkpoint file; this one holds no tensors";
            break;
        case ContainerKind::Hdf5:
            finding.explanation = "this is an HDF5 file (Keras or h5py weights), not a PyTorch checkpoint";
            finding.fix = "open it with h5py or Keras, or convert the weights; torch.load cannot read it";
            break;
        case ContainerKind::Empty:
            finding.explanation = "the file is empty (0 bytes): a download, copy or save failed before "
                                  "writing anything";
            finding.fix = "fetch or save the file again and check its size against the original";
            break;
        case ContainerKind::PlainPickle:
            finding.explanation = "a plain pickle without torch's framing; unpickling it runs whatever "
                                  "code its GLOBALs name";
            finding.fix = "load it only if you trust its origin (pickle.load), or ask for a torch.save "
                          "or safetensors file";
            break;
        default:
            finding.explanation
                = "the bytes match no PyTorch format (" + checkpoint.container.description + ")";
            finding.fix = "check that this is the file you meant to open";
            break;
        }
    } else if (const FindingCodeInfo& row = findingCodeInfo(finding.code); !row.fix.empty()) {
        // The code's own explanation and fix, from the table (core/base/findingcodes.inc).
        finding.explanation = row.explanation;
        finding.fix = row.fix;
    } else if (finding.severity != Severity::Info) {
        finding.explanation = "the reader found this while reading the file";
        finding.fix = "re-save the checkpoint from the original, or re-download it";
    }
}

// Storages by the record that holds their bytes: (hash of the record name, storage index) pairs
// sorted by hash, then index, searched by the hash and confirmed by the name, so a record's
// storages come in index order. Eight bytes a storage where a map of copied names cost ~70, and
// sorted only when first asked: a healthy file's triage never asks. Sorted by the names
// themselves, the 92,000 storages of a 160-shard folder cost 280 M instructions, a sixth of its
// `check`, for reader findings that name a shard, which no storage's record is.
class StoragesByRecord {
public:
    explicit StoragesByRecord(const Checkpoint& checkpoint)
        : m_checkpoint(checkpoint)
    { }

    // Tensors whose storage's bytes live in `record`.
    std::vector<std::uint32_t> tensorsOf(std::string_view record) const
    {
        std::vector<std::uint32_t> tensors;
        if (record.empty())
            return tensors;
        const std::uint32_t hash = hashOf(JoinedText {record, {}});
        const auto first = std::lower_bound(sorted().begin(), sorted().end(), Keyed {hash, 0});
        for (auto it = first; it != sorted().end() && it->hash == hash; ++it)
            if (m_checkpoint.storages[it->storage].recordName() == record)
                for (std::uint32_t tensor : m_checkpoint.storages[it->storage].tensors)
                    tensors.push_back(tensor);
        return tensors;
    }

private:
    struct Keyed {
        std::uint32_t hash = 0;
        std::uint32_t storage = 0;
        friend bool operator<(const Keyed& a, const Keyed& b)
        {
            return a.hash != b.hash ? a.hash < b.hash : a.storage < b.storage;
        }
    };

    // FNV-1a over the joined text: equal names hash equal whichever way they are split.
    static std::uint32_t hashOf(JoinedText text)
    {
        std::uint32_t hash = 2166136261u;
        for (const std::string_view piece : {text.head, text.tail})
            for (const char c : piece)
                hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
        return hash;
    }

    const std::vector<Keyed>& sorted() const
    {
        if (!m_sorted) {
            m_sorted.emplace();
            m_sorted->reserve(m_checkpoint.storages.size());
            for (std::uint32_t i = 0; i < m_checkpoint.storages.size(); ++i)
                if (const JoinedText record = m_checkpoint.storages[i].recordName(); !record.empty())
                    m_sorted->push_back({hashOf(record), i});
            std::sort(m_sorted->begin(), m_sorted->end());
        }
        return *m_sorted;
    }

    const Checkpoint& m_checkpoint;
    mutable std::optional<std::vector<Keyed>> m_sorted;
};

// Runs of small stored records (a million tensors of a few bytes each) are read with one pread a
// run instead of one a record: the bytes from the first record of the run to the last one that
// still ends within kWindow, and nothing of a large record beside them.
class SmallRecordWindow {
public:
    static constexpr std::uint64_t kSmall = 64 << 10, kWindow = 4 << 20;

    SmallRecordWindow(int fd, std::uint64_t fileSize)
        : m_fd(fd)
        , m_fileSize(fileSize)
    { }

    // The bytes of entries[e] (stored, within the file), or null when it is not small or cannot be
    // read here: the caller then reads it itself, and words any error.
    const std::uint8_t* bytes(const std::vector<ZipEntry>& entries, std::size_t e)
    {
        const ZipEntry& entry = entries[e];
        if (!small(entry, entry.dataOffset))
            return nullptr;
        if (entry.dataOffset < m_start || entry.dataOffset + entry.uncompressedSize > m_start + m_filled) {
            std::uint64_t end = entry.dataOffset + entry.uncompressedSize;
            for (std::size_t next = e + 1; next < entries.size() && small(entries[next], entry.dataOffset);
                 ++next)
                end = std::max(end, entries[next].dataOffset + entries[next].uncompressedSize);
            m_buffer.resize(static_cast<std::size_t>(end - entry.dataOffset));
            m_start = entry.dataOffset;
            m_filled = 0;
            while (m_filled < m_buffer.size()) {
                const ssize_t got = ::pread(m_fd, m_buffer.data() + m_filled, m_buffer.size() - m_filled,
                    static_cast<off_t>(m_start + m_filled));
                if (got < 0 && errno == EINTR)
                    continue;
                if (got <= 0)
                    break;
                m_filled += static_cast<std::uint64_t>(got);
            }
        }
        if (entry.dataOffset + entry.uncompressedSize > m_start + m_filled)
            return nullptr;
        return m_buffer.data() + (entry.dataOffset - m_start);
    }

private:
    // A stored record of at most kSmall bytes, in the file, within kWindow of `from`.
    bool small(const ZipEntry& entry, std::uint64_t from) const
    {
        return m_fd >= 0 && entry.payloadComplete && entry.method == zipformat::kMethodStored
            && entry.uncompressedSize <= kSmall && entry.dataOffset >= from && entry.dataOffset <= m_fileSize
            && entry.uncompressedSize <= m_fileSize - entry.dataOffset
            && entry.dataOffset + entry.uncompressedSize - from <= kWindow;
    }

    int m_fd;
    std::uint64_t m_fileSize;
    std::vector<std::uint8_t> m_buffer;
    std::uint64_t m_start = 0, m_filled = 0;
};

// CRC-32 of every record. Stored records are read with pread (threaded for big ones) so a large
// file is not paged into the map twice, unless the caller already computed the CRC of exactly that
// record's bytes (KnownRecordCrc); compressed ones are inflated by the archive.
void checkCrcs(const Checkpoint& checkpoint, const StoragesByRecord& storagesByRecord,
    const std::vector<KnownRecordCrc>& knownRecordCrcs, std::vector<Finding>& findings)
{
    if (!checkpoint.file)
        return;
    const auto archive = checkpoint.zipArchive();
    const ZipArchive& zip = *archive;
    if (!zip.hasEntries())
        return;
    // By record, the first of equal records first (what a look-up finds): a sorted vector of
    // pointers, a tenth of a hash map's memory at a million records.
    std::vector<const KnownRecordCrc*> knownByRecord;
    knownByRecord.reserve(knownRecordCrcs.size());
    for (const KnownRecordCrc& known : knownRecordCrcs)
        knownByRecord.push_back(&known);
    std::stable_sort(knownByRecord.begin(), knownByRecord.end(),
        [](const KnownRecordCrc* a, const KnownRecordCrc* b) { return a->record < b->record; });
    int fd = -1;
    if (!checkpoint.path.empty())
        fd = ::open(checkpoint.path.c_str(), O_RDONLY | O_CLOEXEC);
    std::size_t checked = 0;
    SmallRecordWindow window(fd, checkpoint.fileSize);
    const std::vector<ZipEntry>& entries = zip.entries();
    for (std::size_t e = 0; e < entries.size(); ++e) {
        const ZipEntry& entry = entries[e];
        if (!entry.payloadComplete
            || (entry.method != zipformat::kMethodStored && entry.method != zipformat::kMethodDeflate))
            continue; // cut off (reported as truncation) or a compression nobody can check
        // A recovered record without a data descriptor has no recorded CRC to compare with.
        if (!entry.fromCentralDirectory && (entry.flags & 0x8) && entry.crc32 == 0)
            continue;
        std::optional<Finding> mismatch;
        const KnownRecordCrc* known = nullptr;
        const std::string_view name = entry.name();
        if (const auto it = std::lower_bound(knownByRecord.begin(), knownByRecord.end(), name,
                [](const KnownRecordCrc* known, std::string_view record) { return known->record < record; });
            it != knownByRecord.end() && (*it)->record == name)
            if ((*it)->offset == entry.dataOffset && (*it)->length == entry.uncompressedSize)
                known = *it;
        if (entry.method == zipformat::kMethodStored && known
            && entry.dataOffset + entry.uncompressedSize <= checkpoint.fileSize) {
            if (known->crc != entry.crc32)
                mismatch = zip.verifyCrc(entry, entry.uncompressedSize); // its message, same verdict
        } else if (entry.method == zipformat::kMethodStored && fd >= 0
            && entry.dataOffset + entry.uncompressedSize <= checkpoint.fileSize) {
            const std::uint8_t* inWindow = window.bytes(entries, e);
            const auto crc = inWindow
                ? Expected<std::uint32_t>(crc32Update(0, inWindow, entry.uncompressedSize))
                : crc32OfFileRange(fd, entry.dataOffset, entry.uncompressedSize);
            if (!crc)
                mismatch = Finding {Severity::Error, FindingCode::RecordUnreadable, crc.error().message,
                    std::string(name), entry.dataOffset};
            else if (*crc != entry.crc32)
                mismatch = zip.verifyCrc(entry, entry.uncompressedSize); // its message, same verdict
        } else {
            mismatch = zip.verifyCrc(entry, std::max<std::uint64_t>(entry.uncompressedSize, 1));
        }
        ++checked;
        if (!mismatch)
            continue;
        Finding finding = std::move(*mismatch);
        finding.tensors = storagesByRecord.tensorsOf(name);
        if (finding.code == FindingCode::CrcMismatch) {
            if (!finding.tensors.empty())
                finding.message += "; tensors that use it: " + tensorList(checkpoint, finding.tensors);
            finding.explanation = "the bytes of this record changed after torch wrote it (a bad disk, a "
                                  "faulty transfer, or an edit); torch.load does not check CRCs and "
                                  "would load the damaged values silently";
            finding.fix = "re-download the file or copy it again from the original, and compare checksums";
        }
        findings.push_back(std::move(finding));
    }
    if (fd >= 0)
        ::close(fd);
    (void)checked;
}

void checkTruncation(const Checkpoint& checkpoint, std::vector<Finding>& findings)
{
    // Only the readers know whether a record ends where the file ends: a record that is complete
    // but shorter than its storage (TorchScript's empty traced_inputs records, or an edited file)
    // is a size question, reported as such, not a cut-off file.
    bool truncated = false;
    std::set<std::string> metadataOnlyRecords;
    for (const Finding& finding : checkpoint.findings) {
        if (isTruncationCode(finding.code))
            truncated = true;
        if (finding.code == FindingCode::MetadataOnlyStorage)
            metadataOnlyRecords.insert(finding.record);
    }
    std::vector<std::uint32_t> complete, lost;
    std::uint64_t completeBytes = 0, lostBytes = 0;
    for (std::uint32_t i = 0; i < checkpoint.storages.size(); ++i) {
        const StorageRecord& storage = checkpoint.storages[i];
        if (!metadataOnlyRecords.empty() && metadataOnlyRecords.count(storage.record()))
            continue; // never meant to hold bytes
        if (storage.bytesReadable() || storage.nbytes == 0) {
            complete.push_back(i);
            completeBytes = saturatingAdd(completeBytes, storage.nbytes);
        } else if (storage.availableBytes && *storage.availableBytes < storage.nbytes) {
            lost.push_back(i);
            lostBytes = saturatingAdd(lostBytes, storage.nbytes);
        } else {
            lost.push_back(i); // missing, or compressed another way: not salvageable from this file
            lostBytes = saturatingAdd(lostBytes, storage.nbytes);
        }
    }
    if (!truncated || checkpoint.storages.empty())
        return;
    auto describe = [&](const std::vector<std::uint32_t>& storages, std::vector<std::uint32_t>& tensors) {
        std::vector<std::string> keys;
        for (std::uint32_t storage : storages) {
            keys.push_back(checkpoint.storages[storage].key.str());
            for (std::uint32_t tensor : checkpoint.storages[storage].tensors)
                tensors.push_back(tensor);
        }
        std::string text = "storage" + std::string(keys.size() == 1 ? " " : "s ") + joinLimited(keys, 64);
        if (!tensors.empty())
            text += " (tensors " + tensorList(checkpoint, tensors) + ")";
        return text;
    };
    Finding finding {Severity::Error, FindingCode::TruncatedSalvage, {}};
    std::vector<std::uint32_t> lostTensors;
    std::string message = "the file is cut off: " + formatThousands(complete.size()) + " of "
        + formatThousands(checkpoint.storages.size()) + " storages (" + formatBytes(completeBytes) + " of "
        + formatBytes(completeBytes + lostBytes) + ") are complete and can be salvaged";
    if (!complete.empty())
        message += ": " + describe(complete, finding.tensors);
    message += "; lost: " + describe(lost, lostTensors);
    finding.message = std::move(message);
    finding.explanation = "the download or copy stopped early; the storages whose bytes lie before the "
                          "cut are intact, the others are missing or partial, and torch.load fails on "
                          "the whole file";
    finding.fix = "re-download the file; " + formatThousands(complete.size()) + " of "
        + formatThousands(checkpoint.storages.size())
        + " storages can be salvaged from this copy (their byte ranges are listed by `ckpt-inspect info "
          "--json`; `ckpt-inspect remap` refuses a damaged file, so it cannot write them out yet)";
    findings.push_back(std::move(finding));
}

// ---- placement smells ---------------------------------------------------------------------------

bool isStepCounter(const Checkpoint& checkpoint, std::uint32_t tensor)
{
    // Adam and friends keep `step` on the CPU when capturable=False: by design, not a smell.
    const TensorEntry& entry = checkpoint.tensors[tensor];
    const std::string_view name = entry.name;
    return entry.shape.empty()
        && (name == "step" || name.ends_with(".step") || checkpoint.tree[entry.treeNode].name == "step");
}

void checkMixedDevices(const Checkpoint& checkpoint, std::vector<Finding>& findings)
{
    for (std::uint32_t node = 0; node < checkpoint.tree.size(); ++node) {
        const TreeNode& tree = checkpoint.tree[node];
        const bool moduleLike = tree.kind == TreeNodeKind::Module || tree.kind == TreeNodeKind::Root
            || tree.kind == TreeNodeKind::Dict || tree.kind == TreeNodeKind::Object;
        if (!moduleLike)
            continue;
        std::map<std::string, std::vector<std::uint32_t>> byDevice;
        for (std::uint32_t child : tree.children) {
            if (child >= checkpoint.tree.size())
                continue;
            const TreeNode& childNode = checkpoint.tree[child];
            if (childNode.kind != TreeNodeKind::Tensor || childNode.tensor < 0)
                continue;
            const auto tensor = static_cast<std::uint32_t>(childNode.tensor);
            const TensorEntry& entry = checkpoint.tensors[tensor];
            if (!entry.device || *entry.device == "meta" || isStepCounter(checkpoint, tensor))
                continue;
            byDevice[*entry.device].push_back(tensor);
        }
        if (byDevice.size() < 2)
            continue;
        // The device most tensors are on is the module's; the others are the strays.
        auto majority = byDevice.begin();
        for (auto it = byDevice.begin(); it != byDevice.end(); ++it)
            if (it->second.size() > majority->second.size())
                majority = it;
        const std::string path = node == 0 ? std::string("the root") : checkpoint.treePath(node);
        std::string counts;
        Finding finding {Severity::Warning, FindingCode::MixedDevicesInModule, {}};
        std::vector<std::uint32_t> strays;
        for (const auto& [device, tensors] : byDevice) {
            if (!counts.empty())
                counts += ", ";
            counts += formatThousands(tensors.size()) + " on " + device;
            finding.tensors.insert(finding.tensors.end(), tensors.begin(), tensors.end());
            if (device != majority->first)
                strays.insert(strays.end(), tensors.begin(), tensors.end());
        }
        finding.message = (tree.kind == TreeNodeKind::Module ? "module " : "") + path
            + " holds tensors recorded on different devices: " + counts + " (not on " + majority->first + ": "
            + tensorList(checkpoint, strays) + ")";
        finding.explanation = "after torch.load these tensors land on different devices, so the first "
                              "forward pass fails with \"Expected all tensors to be on the same device\" "
                              "or silently copies every step (the \"unexpected CPU tensors\" problem)";
        const std::string rule = node == 0 ? "--map '*=" + majority->first + "'"
                                           : "--module '" + path + "=" + majority->first + "'";
        finding.fix = "write a copy with one device: `ckpt-inspect remap " + fileName(checkpoint) + " -o OUT "
            + rule + "`, or load with map_location='" + majority->first
            + "' (or model.to(device) after loading)";
        findings.push_back(std::move(finding));
    }
}

// Optimizer state next to its parameters, matched by position (state index N <-> the N-th parameter
// of the model saved beside it); used only when every shape agrees, so a wrong guess stays silent.
void checkOptimizerPlacement(const Checkpoint& checkpoint, std::vector<Finding>& findings)
{
    const auto& tree = checkpoint.tree;
    auto childNamed = [&](std::uint32_t node, std::string_view name) -> std::optional<std::uint32_t> {
        for (std::uint32_t child : tree[node].children)
            if (child < tree.size() && tree[child].name == name)
                return child;
        return std::nullopt;
    };
    auto collectTensors = [&](std::uint32_t start, std::vector<std::uint32_t>& out) {
        std::vector<std::uint32_t> stack {start};
        while (!stack.empty()) {
            const std::uint32_t node = stack.back();
            stack.pop_back();
            if (tree[node].kind == TreeNodeKind::Tensor && tree[node].tensor >= 0)
                out.push_back(static_cast<std::uint32_t>(tree[node].tensor));
            for (auto it = tree[node].children.rbegin(); it != tree[node].children.rend(); ++it)
                if (*it < tree.size() && tree[*it].kind != TreeNodeKind::Alias)
                    stack.push_back(*it);
        }
    };
    for (std::uint32_t optimizer = 0; optimizer < tree.size(); ++optimizer) {
        const auto state = childNamed(optimizer, "state");
        if (!state || !childNamed(optimizer, "param_groups") || optimizer == 0)
            continue;
        // The model beside the optimizer: a sibling whose name says so, else the first sibling
        // holding tensors.
        const std::uint32_t parent = tree[optimizer].parent;
        std::optional<std::uint32_t> model;
        for (std::uint32_t sibling : tree[parent].children) {
            if (sibling == optimizer || sibling >= tree.size())
                continue;
            const CompactText& name = tree[sibling].name;
            if (name.find("model") != std::string::npos || name == "state_dict" || name == "net"
                || name == "network")
                model = sibling;
        }
        if (!model)
            continue;
        std::vector<std::uint32_t> modelTensors;
        collectTensors(*model, modelTensors);
        std::vector<std::uint32_t> parameters;
        for (std::uint32_t tensor : modelTensors) {
            const std::string_view name = checkpoint.tensors[tensor].name;
            // Buffers are in a state_dict but not in model.parameters().
            if (name.ends_with("running_mean") || name.ends_with("running_var")
                || name.ends_with("num_batches_tracked"))
                continue;
            parameters.push_back(tensor);
        }
        bool shapesAgree = true;
        std::vector<std::pair<std::uint32_t, std::uint32_t>> away; // state tensor, parameter
        for (std::uint32_t entry : tree[*state].children) {
            const CompactText& indexText = tree[entry].name;
            if (indexText.empty()
                || !std::all_of(
                    indexText.begin(), indexText.end(), [](char c) { return c >= '0' && c <= '9'; })
                || indexText.size() > 9) {
                shapesAgree = false;
                break;
            }
            const std::size_t index = std::stoul(indexText.str());
            std::vector<std::uint32_t> stateTensors;
            collectTensors(entry, stateTensors);
            for (std::uint32_t tensor : stateTensors) {
                if (isStepCounter(checkpoint, tensor))
                    continue;
                if (index >= parameters.size()) {
                    shapesAgree = false;
                    break;
                }
                const TensorEntry& stateTensor = checkpoint.tensors[tensor];
                const TensorEntry& parameter = checkpoint.tensors[parameters[index]];
                if (stateTensor.shape != parameter.shape) {
                    shapesAgree = false;
                    break;
                }
                if (stateTensor.device && parameter.device && *stateTensor.device != *parameter.device)
                    away.emplace_back(tensor, parameters[index]);
            }
            if (!shapesAgree)
                break;
        }
        if (!shapesAgree || away.empty())
            continue;
        Finding finding {Severity::Warning, FindingCode::OptimizerStateDevice, {}};
        std::map<std::pair<std::string, std::string>, std::size_t> pairs;
        for (const auto& [stateTensor, parameter] : away) {
            finding.tensors.push_back(stateTensor);
            ++pairs[{*checkpoint.tensors[stateTensor].device, *checkpoint.tensors[parameter].device}];
        }
        std::string counts;
        for (const auto& [devices, count] : pairs) {
            if (!counts.empty())
                counts += ", ";
            counts
                += formatThousands(count) + " on " + devices.first + " for parameters on " + devices.second;
        }
        const auto& [firstState, firstParameter] = away.front();
        finding.message = "optimizer state " + checkpoint.treePath(optimizer)
            + " is recorded on a different device than its parameters: " + counts + " (e.g. "
            + tensorName(checkpoint, firstState) + " on " + *checkpoint.tensors[firstState].device + ", "
            + tensorName(checkpoint, firstParameter) + " on " + *checkpoint.tensors[firstParameter].device
            + "); state N was matched to the N-th parameter of " + checkpoint.treePath(*model)
            + " by position (shapes agree)";
        finding.explanation = "optimizer.load_state_dict() moves state to its parameter's device, but "
                              "torch.load first puts it where it was recorded: memory on that device "
                              "(or a failure when it is missing) before the move";
        finding.fix
            = "load with map_location set to the parameters' device, or write a copy with `ckpt-inspect "
              "remap "
            + fileName(checkpoint) + " -o OUT --module " + checkpoint.treePath(*state) + "="
            + *checkpoint.tensors[firstParameter].device + "`";
        findings.push_back(std::move(finding));
    }
}

// TorchScript code records that name a device: a remap changes recorded tags, not code.
void checkCodeDevices(const Checkpoint& checkpoint, std::vector<Finding>& findings)
{
    if (!checkpoint.file || checkpoint.format != CheckpointFormat::TorchScript)
        return;
    const auto archive = checkpoint.zipArchive();
    const ZipArchive& zip = *archive;
    for (const ZipEntry& entry : zip.entries()) {
        const std::string_view name = entry.name();
        if (!name.ends_with(".py") || name.find("code/") == std::string_view::npos)
            continue;
        const auto payload = zip.readPayload(entry, kMaxCodeRecord);
        if (!payload)
            continue;
        const std::string_view text(reinterpret_cast<const char*>(payload->data()), payload->size());
        std::size_t lineNumber = 0;
        std::size_t start = 0;
        while (start < text.size()) {
            std::size_t end = text.find('\n', start);
            if (end == std::string_view::npos)
                end = text.size();
            const std::string_view line = text.substr(start, end - start);
            ++lineNumber;
            start = end + 1;
            const bool names = line.find("\"cuda") != std::string_view::npos
                || line.find("'cuda") != std::string_view::npos
                || line.find(".cuda(") != std::string_view::npos
                || line.find("\"mps") != std::string_view::npos
                || line.find("'mps") != std::string_view::npos;
            if (!names)
                continue;
            std::string_view shown = line;
            while (!shown.empty() && (shown.front() == ' ' || shown.front() == '\t'))
                shown.remove_prefix(1);
            if (shown.size() > 160)
                shown = shown.substr(0, 160);
            Finding finding {Severity::Warning, FindingCode::DeviceInCode,
                "a remap will not fix code that names a device: " + std::string(name) + " line "
                    + std::to_string(lineNumber) + ": " + std::string(shown),
                std::string(name), entry.dataOffset};
            finding.explanation = "the TorchScript code itself moves tensors to that device when it runs; "
                                  "map_location and a remapped copy change only where the saved tensors "
                                  "are restored, so the model still fails (or moves data) on a machine "
                                  "without that device";
            finding.fix = "script or trace the model again with the device passed in as an argument (or "
                          "taken from an input tensor's .device) instead of a string in the code";
            findings.push_back(std::move(finding));
        }
    }
}

} // namespace

std::vector<Finding> checkIntegrity(
    const Checkpoint& checkpoint, const std::vector<KnownRecordCrc>& knownRecordCrcs, bool checkRecordCrcs)
{
    std::vector<Finding> findings;
    const StoragesByRecord storagesByRecord(checkpoint);
    for (const Finding& readerFinding : checkpoint.findings) {
        Finding finding = readerFinding;
        if (finding.tensors.empty() && !finding.record.empty())
            finding.tensors = storagesByRecord.tensorsOf(finding.record);
        if (finding.explanation.empty() && finding.fix.empty())
            explainReaderFinding(checkpoint, finding);
        findings.push_back(std::move(finding));
    }
    const bool zipFormat = checkpoint.format == CheckpointFormat::TorchZip
        || checkpoint.format == CheckpointFormat::TorchScript;
    if (zipFormat && !checkRecordCrcs && checkpoint.file) {
        std::uint64_t records = 0, bytes = 0;
        for (const ZipEntry& entry : checkpoint.zipArchive()->entries()) {
            ++records;
            bytes += entry.compressedSize;
        }
        if (records > 0)
            findings.push_back(Finding {Severity::Info, FindingCode::RecordCrcsNotChecked,
                "the CRC-32 of " + std::to_string(records)
                    + " record(s) was not checked: checking would download " + formatBytes(bytes)
                    + " of the remote file"});
    } else if (zipFormat) {
        // The reader already verifies nothing by CRC; skip records it already flagged.
        std::vector<Finding> crcFindings;
        checkCrcs(checkpoint, storagesByRecord, knownRecordCrcs, crcFindings);
        for (Finding& finding : crcFindings) {
            const bool known = std::any_of(findings.begin(), findings.end(),
                [&](const Finding& f) { return f.code == finding.code && f.record == finding.record; });
            if (!known)
                findings.push_back(std::move(finding));
        }
    }
    checkTruncation(checkpoint, findings);
    return findings;
}

std::vector<Finding> checkPlacementSmells(const Checkpoint& checkpoint)
{
    std::vector<Finding> findings;
    if (checkpoint.format == CheckpointFormat::NotACheckpoint || checkpoint.tree.empty())
        return findings;
    checkMixedDevices(checkpoint, findings);
    checkOptimizerPlacement(checkpoint, findings);
    checkCodeDevices(checkpoint, findings);
    return findings;
}

} // namespace ckpt
