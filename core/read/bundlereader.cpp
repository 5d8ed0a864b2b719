// SPDX-License-Identifier: MIT
// Bundles that carry checkpoint files, read through libarchive (bundlereader.h, docs/bundles.md).
#include "core/read/bundlereader.h"

#include "core/base/textformat.h"
#include "core/format/crc32.h"
#include "core/format/formatsniffer.h"
#include "core/format/ziparchive.h"
#include "core/io/mappedfile.h"
#include "core/io/optionallibraries.h"
#include "core/model/shardset.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace ckpt {

namespace {

// A bundle inside a bundle is listed, never opened: no nesting, so no decompression bomb can
// multiply through layers.
thread_local int g_bundleDepth = 0;

struct ArchiveReader {
    archive* handle = libarchive().read_new();
    ArchiveReader() = default;
    ArchiveReader(const ArchiveReader&) = delete;
    ArchiveReader& operator=(const ArchiveReader&) = delete;
    ~ArchiveReader() { libarchive().read_free(handle); }
};

std::string archiveError(archive* handle, const char* fallback)
{
    const char* message = libarchive().error_string(handle);
    return message && *message ? std::string(message) : std::string(fallback);
}

// Opens `bytes` with the formats a bundle may have: tar (every variant), zip, and a single
// compressed file ("raw", only where a compression filter was found).
bool openArchive(ArchiveReader& reader, ByteView bytes)
{
    libarchive().read_support_filter_all(reader.handle);
    libarchive().read_support_format_tar(reader.handle);
    libarchive().read_support_format_gnutar(reader.handle);
    libarchive().read_support_format_zip(reader.handle);
    libarchive().read_support_format_raw(reader.handle);
    return libarchive().read_open_memory(reader.handle, bytes.data(), bytes.size()) == ARCHIVE_OK;
}

bool endsWith(const std::string& text, std::string_view suffix)
{
    return text.size() >= suffix.size()
        && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Names that checkpoint files carry (the bytes decide, this only lets a member be read whole).
bool checkpointName(const std::string& name)
{
    std::string lower = name;
    for (char& c : lower)
        c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    for (std::string_view suffix : {".pt", ".pth", ".bin", ".th", ".ckpt", ".safetensors", ".pkl", ".pt2",
             ".tar", ".model", ".distcp", ".torch"})
        if (endsWith(lower, suffix))
            return true;
    return false;
}

// Whether the first bytes of a member may start a checkpoint: a zip, a pickle (torch's legacy
// stream starts with one), a safetensors header, a tar.
bool checkpointHead(ByteView head)
{
    if (head.size() >= 4 && std::memcmp(head.data(), "PK\3\4", 4) == 0)
        return true;
    if (head.size() >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5)
        return true;
    if (head.size() >= 9 && head[8] == '{')
        return true;
    return head.size() >= 262 && std::memcmp(head.data() + 257, "ustar", 5) == 0;
}

std::string typeOf(archive_entry* entry)
{
    switch (libarchive().entry_filetype(entry)) {
    case AE_IFREG:
        return "file";
    case AE_IFDIR:
        return "folder";
    case AE_IFLNK:
        return "link";
    default:
        return "other";
    }
}

std::string displayName(const std::string& name)
{
    std::string shown = name;
    while (shown.starts_with("./"))
        shown.erase(0, 2);
    return shown.empty() ? name : shown;
}

// An unnamed file that holds a member too large for memory, mapped once written: the mapping
// keeps it alive, the file system frees it when that goes.
class AnonymousFile {
public:
    AnonymousFile()
    {
        const char* folder = std::getenv("TMPDIR");
        const std::string base = folder && *folder ? folder : "/tmp";
        m_fd = ::open(base.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (m_fd < 0) {
            std::string pattern = base + "/ckpt-bundle-XXXXXX";
            m_fd = ::mkstemp(pattern.data());
            if (m_fd >= 0)
                ::unlink(pattern.c_str());
        }
    }
    ~AnonymousFile()
    {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    AnonymousFile(const AnonymousFile&) = delete;
    AnonymousFile& operator=(const AnonymousFile&) = delete;
    bool ok() const { return m_fd >= 0 && m_ok; }
    void append(const void* data, std::size_t length)
    {
        const auto* bytes = static_cast<const char*>(data);
        while (m_ok && length > 0) {
            const ssize_t written = ::write(m_fd, bytes, length);
            if (written < 0 && errno == EINTR)
                continue;
            if (written <= 0) {
                m_ok = false;
                break;
            }
            bytes += written;
            length -= static_cast<std::size_t>(written);
        }
    }
    std::shared_ptr<const MappedFile> map(const std::string& name)
    {
        auto file = MappedFile::open("/proc/self/fd/" + std::to_string(m_fd));
        if (!file)
            return nullptr;
        (void)name;
        return *file;
    }

private:
    int m_fd = -1;
    bool m_ok = true;
};

struct MemberBytes {
    std::shared_ptr<const MappedFile> file;
    std::string readAs;
    std::optional<std::uint64_t> dataOffset;
    bool stored = false;
    bool truncated = false;
    std::string damage;
};

// Reads the current member's bytes: in place when libarchive hands out the member as one block
// inside the mapped bundle (an uncompressed tar, a stored zip member), else decompressed into
// memory or, past the limit, an anonymous file.
MemberBytes readMemberBytes(archive* handle, const std::shared_ptr<const MappedFile>& bundle,
    const std::string& name, std::uint64_t declaredSize, bool declared, const ReadOptions& options)
{
    MemberBytes out;
    const void* block = nullptr;
    std::size_t length = 0;
    la_int64_t offset = 0;
    int status = libarchive().read_data_block(handle, &block, &length, &offset);
    const auto* base = bundle->bytes().data();
    const auto* first = static_cast<const std::uint8_t*>(block);
    if (status == ARCHIVE_OK && offset == 0 && declared && length == declaredSize && first >= base
        && first + length <= base + bundle->size()) {
        const auto at = static_cast<std::uint64_t>(first - base);
        out.file = MappedFile::slice(bundle, at, length);
        out.readAs = "in place at byte " + std::to_string(at);
        out.dataOffset = at;
        out.stored = true;
        // Drain to the end of the member (nothing is left, but libarchive must see its EOF).
        while ((status = libarchive().read_data_block(handle, &block, &length, &offset)) == ARCHIVE_OK) { }
        if (status != ARCHIVE_EOF) {
            out.truncated = true;
            out.damage = archiveError(handle, "the member's data is damaged");
        }
        return out;
    }
    const bool toFile = declared && declaredSize > options.maxBundleMemberInMemory;
    ByteBuffer memory;
    std::unique_ptr<AnonymousFile> anonymous;
    if (toFile)
        anonymous = std::make_unique<AnonymousFile>();
    else if (declared)
        memory.reserve(declaredSize);
    std::uint64_t total = 0;
    while (status == ARCHIVE_OK) {
        if (offset >= 0 && static_cast<std::uint64_t>(offset) > total) { // a sparse hole
            const std::uint64_t hole = static_cast<std::uint64_t>(offset) - total;
            if (anonymous) {
                const ByteBuffer zeros(static_cast<std::size_t>(std::min<std::uint64_t>(hole, 1 << 20)));
                for (std::uint64_t left = hole; left > 0;) {
                    const std::size_t n
                        = static_cast<std::size_t>(std::min<std::uint64_t>(left, zeros.size()));
                    anonymous->append(zeros.data(), n);
                    left -= n;
                }
            } else {
                memory.resize(memory.size() + static_cast<std::size_t>(hole));
            }
            total += hole;
        }
        if (!anonymous && total + length > options.maxBundleMemberInMemory) {
            // Larger than its header said: on into a file.
            anonymous = std::make_unique<AnonymousFile>();
            anonymous->append(memory.data(), memory.size());
            ByteBuffer().swap(memory);
        }
        if (anonymous)
            anonymous->append(block, length);
        else
            memory.insert(memory.end(), first, first + length);
        total += length;
        status = libarchive().read_data_block(handle, &block, &length, &offset);
        first = static_cast<const std::uint8_t*>(block);
    }
    if (status != ARCHIVE_EOF) {
        out.truncated = true;
        out.damage = archiveError(handle, "the member's data is damaged");
    }
    if (anonymous) {
        if (!anonymous->ok()) {
            out.readAs = "not read (its " + formatBytes(total)
                + " could not be written to an anonymous temporary file in $TMPDIR)";
            return out;
        }
        out.file = anonymous->map(name);
        out.readAs = out.file ? "decompressed into an anonymous temporary file (" + formatBytes(total)
                + ", over the in-memory limit of " + formatBytes(options.maxBundleMemberInMemory) + ")"
                              : "not read (the anonymous temporary file could not be mapped)";
        return out;
    }
    out.readAs = "decompressed in memory (" + formatBytes(total) + ")";
    out.file = MappedFile::fromBuffer(std::move(memory), name);
    return out;
}

// Skips the rest of a member that is not read, noticing damage on the way.
std::string skipMember(archive* handle)
{
    if (libarchive().read_data_skip(handle) != ARCHIVE_OK)
        return archiveError(handle, "the member's data is damaged");
    return {};
}

// The size a member's header records; `declared` says whether it records one.
std::uint64_t memberSize(archive_entry* entry, bool& declared)
{
    declared = libarchive().entry_size_is_set(entry) != 0;
    const la_int64_t size = libarchive().entry_size(entry);
    return declared && size >= 0 ? static_cast<std::uint64_t>(size) : (declared = false, 0);
}

// Copies a member checkpoint's storages, tensors, findings and tree into the bundle's checkpoint:
// its tree root becomes a top-level node named after the member.
void mergeMember(Checkpoint& merged, ShardSet& set, std::size_t s)
{
    ShardFile& shard = set.shards[s];
    const Checkpoint& part = *shard.model();
    for (const Finding& finding : part.findings) {
        Finding copy = finding;
        copy.message = shard.name + ": " + finding.message;
        copy.record = copy.record.empty() ? shard.name : shard.name + "/" + copy.record;
        copy.tensors.clear();
        merged.findings.push_back(std::move(copy));
    }
    shard.firstStorage = static_cast<std::uint32_t>(merged.storages.size());
    shard.firstTensor = static_cast<std::uint32_t>(merged.tensors.size());
    for (std::size_t k = 0; k < part.storages.size(); ++k) {
        StorageRecord storage = part.storages[k];
        storage.key = shard.name + ":" + storage.key;
        if (storage.recordKeyStart != StorageRecord::kRecordWithoutKey)
            storage.recordKeyStart += static_cast<std::uint32_t>(shard.name.size() + 1);
        for (std::uint32_t& tensor : storage.tensors)
            tensor += shard.firstTensor;
        storage.firstPersistentId = kNoNode;
        storage.persistentIdTuples.clear();
        merged.storages.push_back(std::move(storage));
        merged.indexStorage(static_cast<std::uint32_t>(merged.storages.size() - 1));
        set.storageShard.push_back(static_cast<std::int32_t>(s));
        set.storageInShard.push_back(static_cast<std::uint32_t>(k));
    }
    shard.storageCount = static_cast<std::uint32_t>(merged.storages.size()) - shard.firstStorage;
    const auto base = static_cast<std::uint32_t>(merged.tree.size());
    for (std::size_t i = 0; i < part.tree.size(); ++i) {
        TreeNode node = part.tree[i];
        for (std::uint32_t& child : node.children)
            child += base;
        node.node = kNoNode;
        if (node.tensor >= 0)
            node.tensor += static_cast<std::int32_t>(shard.firstTensor);
        if (i == 0) {
            node.parent = 0;
            node.name = shard.name;
            node.kind = TreeNodeKind::Object;
            node.className = InternedString(checkpointFormatName(part.format));
        } else {
            node.parent += base;
        }
        merged.tree.push_back(std::move(node));
    }
    merged.tree[0].children.push_back(base);
    for (const TensorEntry& original : part.tensors) {
        TensorEntry tensor = original;
        if (tensor.storage >= 0)
            tensor.storage += static_cast<std::int32_t>(shard.firstStorage);
        tensor.node = kNoNode;
        tensor.deviceArgumentTuple = kNoNode;
        tensor.treeNode += base;
        merged.tensors.push_back(std::move(tensor));
    }
}

BundleKind kindOf(archive* handle)
{
    const int format = libarchive().format(handle);
    const bool compressed = libarchive().filter_count(handle) > 1;
    if ((format & ARCHIVE_FORMAT_BASE_MASK) == ARCHIVE_FORMAT_ZIP)
        return BundleKind::Zip;
    if ((format & ARCHIVE_FORMAT_BASE_MASK) == ARCHIVE_FORMAT_RAW)
        return BundleKind::CompressedFile;
    return compressed ? BundleKind::CompressedTar : BundleKind::Tar;
}

std::string fileNameOf(const std::string& path)
{
    return std::filesystem::path(path).filename().string();
}

} // namespace

bool isBundleZip(const ZipArchive& zip)
{
    bool candidate = false;
    for (const ZipEntry& entry : zip.entries()) {
        const std::string_view name = entry.name();
        for (std::string_view torchRecord : {"data.pkl", "version", "constants.pkl", "archive_format",
                 "model.json", "bytecode.pkl", "byteorder", ".data/version"})
            if (name == torchRecord
                || (name.size() > torchRecord.size() && name.ends_with(torchRecord)
                    && name[name.size() - torchRecord.size() - 1] == '/'))
                return false;
        // A torch zip whose data.pkl and version were lost still has its storage records
        // ("archive/data/0"): it is a damaged checkpoint, read as one, never a bundle.
        if (const auto data = name.find("/data/"); data != std::string_view::npos) {
            const std::string_view key = name.substr(data + 6);
            if (!key.empty()
                && std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; }))
                return false;
        }
        if (checkpointName(std::string(name)))
            candidate = true;
        else if (const auto stored = zip.storedPayload(entry); stored && stored->size() >= 4
                 && (std::memcmp(stored->data(), "PK\3\4", 4) == 0
                     || (stored->size() >= 10 && (*stored)[0] == 0x80 && (*stored)[1] == 0x02
                         && (*stored)[2] == 0x8a && (*stored)[3] == 0x0a)))
            candidate = true; // a stored torch zip or legacy stream under another name
    }
    return candidate;
}

std::vector<BundleMemberDigest> bundleMemberDigests(ByteView bundle, std::string& damage)
{
    std::vector<BundleMemberDigest> digests;
    if (auto library = archiveLibrary(); !library) {
        damage = library.error().message;
        return digests;
    }
    ArchiveReader reader;
    if (!openArchive(reader, bundle)) {
        damage = archiveError(reader.handle, "not an archive libarchive can read");
        return digests;
    }
    archive_entry* entry = nullptr;
    int status = ARCHIVE_OK;
    while ((status = libarchive().read_next_header(reader.handle, &entry)) == ARCHIVE_OK
        || status == ARCHIVE_WARN) {
        if (libarchive().entry_filetype(entry) != AE_IFREG) {
            libarchive().read_data_skip(reader.handle);
            continue;
        }
        BundleMemberDigest digest;
        const char* path = libarchive().entry_pathname(entry);
        digest.name = path ? path : "";
        const void* block = nullptr;
        std::size_t length = 0;
        la_int64_t offset = 0;
        int data = ARCHIVE_OK;
        while ((data = libarchive().read_data_block(reader.handle, &block, &length, &offset)) == ARCHIVE_OK) {
            digest.crc = crc32Update(digest.crc, static_cast<const std::uint8_t*>(block), length);
            digest.size += length;
        }
        digests.push_back(std::move(digest));
        if (data != ARCHIVE_EOF) {
            damage = digests.back().name + ": " + archiveError(reader.handle, "damaged");
            return digests;
        }
    }
    if (status != ARCHIVE_EOF)
        damage = archiveError(reader.handle, "the archive is damaged");
    return digests;
}

namespace {

// What zlib can inflate of a gzip stream that libarchive refuses (a download cut short: libarchive
// fails on the first read when the stream ends before its output block fills). Up to `limit`
// bytes; `why` says where the stream stopped.
ByteBuffer gunzipReadablePart(ByteView bytes, std::uint64_t limit, std::string& why)
{
    ByteBuffer out;
    z_stream stream {};
    if (inflateInit2(&stream, 15 + 32) != Z_OK) {
        why = "zlib cannot start";
        return out;
    }
    stream.next_in = const_cast<Bytef*>(bytes.data());
    stream.avail_in = static_cast<uInt>(std::min<std::uint64_t>(bytes.size(), UINT32_MAX));
    std::array<std::uint8_t, 1 << 16> chunk {};
    int status = Z_OK;
    while (status == Z_OK && out.size() < limit) {
        stream.next_out = chunk.data();
        stream.avail_out = chunk.size();
        status = inflate(&stream, Z_NO_FLUSH);
        out.insert(out.end(), chunk.data(), chunk.data() + (chunk.size() - stream.avail_out));
        if (status == Z_BUF_ERROR && stream.avail_in == 0)
            break;
    }
    if (status == Z_STREAM_END)
        why.clear();
    else if (status == Z_OK || status == Z_BUF_ERROR)
        why = "the gzip stream ends early, after " + formatBytes(out.size()) + " of decompressed data";
    else
        why = std::string("the gzip stream is corrupt after ") + formatBytes(out.size()) + " ("
            + (stream.msg ? stream.msg : "inflate error") + ")";
    inflateEnd(&stream);
    return out;
}

Checkpoint readBundleFrom(const std::shared_ptr<const MappedFile>& file,
    const std::shared_ptr<const MappedFile>& archiveBytes, const ContainerGuess& container,
    const ReadOptions& options, const std::string& gzipDamage);

} // namespace

Checkpoint readBundle(
    std::shared_ptr<const MappedFile> file, const ContainerGuess& container, const ReadOptions& options)
{
    if (auto library = archiveLibrary(); !library) {
        // Listed as a file that cannot be opened here, and rated whole by the safety verdict.
        Checkpoint unopened;
        unopened.path = file->path();
        unopened.fileSize = file->size();
        unopened.ensureRoot();
        unopened.container = container;
        unopened.container.description += "; " + library.error().message;
        unopened.format = CheckpointFormat::NotACheckpoint;
        unopened.file = file;
        unopened.addFinding(Severity::Error, FindingCode::NotACheckpoint,
            "cannot open the bundle: " + unopened.container.description);
        return unopened;
    }
    const ByteView bytes = file->bytes();
    if (g_bundleDepth == 0 && bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
        ArchiveReader probe;
        archive_entry* entry = nullptr;
        if (!openArchive(probe, bytes)
            || libarchive().read_next_header(probe.handle, &entry) < ARCHIVE_WARN) {
            // libarchive gives up on a cut gzip stream at its first read: inflate what is there.
            std::string why;
            ByteBuffer readable = gunzipReadablePart(bytes, options.maxBundleMemberInMemory, why);
            if (!readable.empty() && !why.empty())
                return readBundleFrom(
                    file, MappedFile::fromBuffer(std::move(readable), file->path()), container, options, why);
        }
    }
    return readBundleFrom(file, file, container, options, {});
}

namespace {

Checkpoint readBundleFrom(const std::shared_ptr<const MappedFile>& file,
    const std::shared_ptr<const MappedFile>& archiveBytes, const ContainerGuess& container,
    const ReadOptions& options, const std::string& gzipDamage)
{
    const bool salvaged = archiveBytes != file;
    Checkpoint merged;
    merged.path = file->path();
    merged.fileSize = file->size();
    merged.ensureRoot();
    merged.container = container;
    merged.format = CheckpointFormat::NotACheckpoint;
    if (g_bundleDepth > 0) {
        merged.container.description = "an archive (" + container.description
            + ") inside a bundle: it is listed, not opened; extract it and open it on its own";
        merged.addFinding(Severity::Error, FindingCode::NotACheckpoint, merged.container.description);
        return merged;
    }
    auto set = std::make_shared<ShardSet>();
    set->layout = ShardLayout::Bundle;
    set->folder = file->path();
    BundleInfo info;

    ArchiveReader reader;
    const bool opened = openArchive(reader, archiveBytes->bytes());
    archive_entry* entry = nullptr;
    int status = opened ? ARCHIVE_OK : ARCHIVE_FATAL;
    std::string lastMember;
    ++g_bundleDepth;
    while (opened) {
        status = libarchive().read_next_header(reader.handle, &entry);
        if (status != ARCHIVE_OK && status != ARCHIVE_WARN)
            break;
        if (info.members.empty()) {
            info.kind = kindOf(reader.handle);
            info.formatCode = libarchive().format(reader.handle);
            const char* formatName = libarchive().format_name(reader.handle);
            info.format = formatName ? formatName : "";
            const int filters = libarchive().filter_count(reader.handle);
            info.filter = filters > 1 ? libarchive().filter_name(reader.handle, 0) : "none";
            for (int f = filters - 2; f >= 0; --f)
                info.filterCodes.push_back(libarchive().filter_code(reader.handle, f));
            if (info.kind == BundleKind::CompressedFile && filters <= 1) {
                // "raw" matched a file that is neither compressed nor an archive: not a bundle.
                break;
            }
        }
        BundleMember member;
        const char* path = libarchive().entry_pathname(entry);
        member.name = path ? path : "";
        if (info.kind == BundleKind::CompressedFile) {
            std::string inner = fileNameOf(file->path());
            for (std::string_view suffix : {".gz", ".bz2", ".xz", ".zst", ".lz4", ".Z"})
                if (endsWith(inner, suffix)) {
                    inner.resize(inner.size() - suffix.size());
                    break;
                }
            member.name = inner.empty() ? "data" : inner;
        }
        lastMember = member.name;
        member.type = typeOf(entry);
        bool declared = false;
        member.size = memberSize(entry, declared);
        if (member.type != "file") {
            if (const std::string damage = skipMember(reader.handle); !damage.empty()) {
                info.damage = member.name + ": " + damage;
                info.members.push_back(std::move(member));
                break;
            }
            info.members.push_back(std::move(member));
            continue;
        }
        // A member named like a checkpoint file is read whole; so is any other member up to 64 MiB,
        // whose first bytes then decide. Larger unnamed members are skipped (listed).
        const bool byName = checkpointName(member.name);
        const bool readWhole = byName || !declared || member.size <= (64u << 20);
        if (!readWhole) {
            member.readAs = "not read (not named like a checkpoint file)";
            member.description = formatBytes(member.size);
            if (const std::string damage = skipMember(reader.handle); !damage.empty()) {
                member.truncated = true;
                info.damage = member.name + ": " + damage;
                info.members.push_back(std::move(member));
                break;
            }
            info.members.push_back(std::move(member));
            continue;
        }
        MemberBytes bytes = readMemberBytes(
            reader.handle, archiveBytes, file->path() + "!/" + member.name, member.size, declared, options);
        member.readAs
            = salvaged ? "decompressed in memory (from the readable part of the gzip stream)" : bytes.readAs;
        member.dataOffset = salvaged ? std::nullopt : bytes.dataOffset;
        member.stored = bytes.stored && !salvaged;
        member.truncated = bytes.truncated;
        if (info.kind == BundleKind::CompressedFile && bytes.file)
            member.size = bytes.file->size();
        if (bytes.file && (byName || checkpointHead(bytes.file->bytes()))) {
            auto part = std::make_shared<Checkpoint>(readCheckpoint(bytes.file, options));
            part->path = file->path() + "!/" + member.name;
            if (part->format != CheckpointFormat::NotACheckpoint && !part->shardSet) {
                member.description = checkpointFormatName(part->format);
                member.shard = static_cast<std::int32_t>(set->shards.size());
                ShardFile shard;
                shard.name = displayName(member.name);
                shard.path = part->path;
                shard.present = true;
                shard.fileSize = part->fileSize;
                shard.setModel(std::move(part));
                set->shards.push_back(std::move(shard));
            } else {
                member.description = part->container.description;
            }
        } else if (bytes.file) {
            member.description = sniffContainer(bytes.file->bytes()).description;
        }
        if (!bytes.damage.empty()) {
            info.damage = member.name + ": " + bytes.damage;
            info.members.push_back(std::move(member));
            break;
        }
        info.members.push_back(std::move(member));
    }
    --g_bundleDepth;
    if (salvaged) {
        info.kind = BundleKind::CompressedTar;
        info.filter = "gzip";
        info.filterCodes = {ARCHIVE_FILTER_GZIP};
        if (info.kind == BundleKind::CompressedTar && status != ARCHIVE_EOF)
            status = ARCHIVE_EOF; // the tar's own end is lost with the stream: the gzip damage says it
        if (info.damage.empty())
            info.damage = gzipDamage;
        else
            info.damage += "; " + gzipDamage;
    }
    if (opened && status != ARCHIVE_EOF && info.damage.empty() && !info.members.empty())
        info.damage = "after " + lastMember + ": " + archiveError(reader.handle, "the archive is damaged");
    if (info.members.empty()) {
        merged.file = file; // no member: the file is rated whole, as any file that is no checkpoint
        merged.container.description = container.description
            + (opened ? "; libarchive finds no member in it: " + archiveError(reader.handle, "empty")
                      : "; libarchive cannot open it: " + archiveError(reader.handle, "unknown format"));
        merged.addFinding(Severity::Error, FindingCode::NotACheckpoint,
            "not a PyTorch checkpoint: " + merged.container.description);
        return merged;
    }

    for (std::size_t s = 0; s < set->shards.size(); ++s)
        mergeMember(merged, *set, s);
    for (const BundleMember& member : info.members) {
        if (member.shard >= 0 || member.type == "folder")
            continue;
        const std::uint32_t node = merged.addTreeNode(0, TreeNodeKind::Value, displayName(member.name));
        merged.tree[node].summary = RareText("<" + member.type + ", " + formatBytes(member.size)
            + ", not a checkpoint"
            + (member.description.empty() ? std::string() : ": " + member.description.substr(0, 120)) + ">");
    }
    std::uint64_t checkpointBytes = 0;
    for (const ShardFile& shard : set->shards)
        checkpointBytes += shard.fileSize;
    const std::string what = std::string(bundleKindName(info.kind)) + " bundle ("
        + (info.format.empty() ? std::string("archive") : info.format)
        + (info.filter == "none" ? std::string() : ", " + info.filter) + ", " + formatBytes(file->size())
        + ") of " + std::to_string(info.members.size()) + " member(s), " + std::to_string(set->shards.size())
        + " of them checkpoint(s)";
    merged.container.description = "a " + what;
    if (!set->shards.empty()) {
        merged.format = set->shards.front().model()->format;
        merged.addFinding(
            Severity::Info, FindingCode::BundleRead,
            "a " + what + " (" + formatBytes(checkpointBytes)
                + "); each checkpoint member is shown as a node of its own, read without unpacking the "
                  "bundle to disk: "
                + [&] {
                      std::string list;
                      for (const BundleMember& member : info.members)
                          if (member.shard >= 0)
                              list += (list.empty() ? "" : "; ") + member.name + " " + member.readAs;
                      return list;
                  }());
    } else {
        merged.addFinding(Severity::Error, FindingCode::NotACheckpoint,
            "not a PyTorch checkpoint: a " + what + "; no member is a checkpoint torch.load could read");
        // No checkpoint member: the archive is a file that is no checkpoint, rated whole as any
        // other (its members stay listed in the tree), and nothing is offered that a set has.
        merged.file = file;
        if (!info.damage.empty())
            merged.addFinding(
                Severity::Error, FindingCode::BundleDamaged, "the archive is damaged (" + info.damage + ")");
        return merged;
    }
    if (!info.damage.empty())
        merged.addFinding(Severity::Error, FindingCode::BundleDamaged,
            "the bundle is damaged (" + info.damage
                + "): the members before the damage are shown; what follows it is lost");
    info.file = file;
    set->bundle = std::move(info);
    merged.shardSet = std::move(set);
    return merged;
}

} // namespace

} // namespace ckpt
