// SPDX-License-Identifier: MIT
// A remapped copy of a bundle (bundlewriter.h, docs/bundles.md).
#include "core/write/bundlewriter.h"

#include "core/format/crc32.h"
#include "core/io/atomicoutputfile.h"
#include "core/io/mappedfile.h"
#include "core/io/optionallibraries.h"
#include "core/io/temporaryfolder.h"
#include "core/model/checkpoint.h"
#include "core/model/shardset.h"
#include "core/plan/placementplan.h"
#include "core/read/bundlereader.h"
#include "core/read/checkpointreader.h"

#include <chrono>
#include <filesystem>

namespace ckpt {

namespace fs = std::filesystem;

namespace {

// The member's own plan: each of its storages goes where the bundle's plan puts it. Also says
// whether any of them moves.
PlacementPlan memberPlan(const ShardFile& shard, const Checkpoint& member, const Checkpoint& bundle,
    const PlacementPlan& plan, bool& moves)
{
    PlacementPlan own(member);
    std::vector<std::pair<std::uint32_t, std::optional<std::string>>> devices;
    moves = false;
    for (std::uint32_t k = 0; k < shard.storageCount; ++k) {
        const std::int32_t unit = own.unitOfStorage(k);
        const auto planned = plan.plannedDeviceOfStorage(shard.firstStorage + k);
        const auto& recorded = bundle.storages[shard.firstStorage + k].device;
        if (planned && (!recorded || recorded->str() != *planned))
            moves = true;
        if (unit >= 0)
            devices.emplace_back(static_cast<std::uint32_t>(unit), planned);
    }
    for (std::uint32_t t = 0; t < member.tensors.size(); ++t)
        if (member.tensors[t].storage < 0)
            if (const std::int32_t unit = own.unitOfTensor(t); unit >= 0) {
                const auto planned = plan.plannedDeviceOfTensor(shard.firstTensor + t);
                const auto& recorded = bundle.tensors[shard.firstTensor + t].device;
                if (planned && (!recorded || recorded->str() != *planned))
                    moves = true;
                devices.emplace_back(static_cast<std::uint32_t>(unit), planned);
            }
    own.restore(devices);
    return own;
}

struct ArchiveWriter {
    archive* handle = libarchive().write_new();
    AtomicOutputFile* out = nullptr;
    std::string error;
    ArchiveWriter() = default;
    ArchiveWriter(const ArchiveWriter&) = delete;
    ArchiveWriter& operator=(const ArchiveWriter&) = delete;
    ~ArchiveWriter() { libarchive().write_free(handle); }

    static la_ssize_t write(archive*, void* self, const void* data, std::size_t length)
    {
        auto* writer = static_cast<ArchiveWriter*>(self);
        if (Status failed = writer->out->write(ByteView(static_cast<const std::uint8_t*>(data), length))) {
            writer->error = failed->message;
            return -1;
        }
        return static_cast<la_ssize_t>(length);
    }
};

std::string archiveError(archive* handle, const std::string& fallback)
{
    const char* message = libarchive().error_string(handle);
    return message && *message ? std::string(message) : fallback;
}

// Sets the writer to the bundle's own kind: the same tar variant (pax, GNU), zip, or one
// compressed file, through the same filters.
Status configure(archive* handle, const BundleInfo& bundle)
{
    int status = ARCHIVE_OK;
    switch (bundle.kind) {
    case BundleKind::Zip:
        status = libarchive().write_set_format_zip(handle);
        break;
    case BundleKind::CompressedFile:
        status = libarchive().write_set_format_raw(handle);
        break;
    case BundleKind::Tar:
    case BundleKind::CompressedTar:
        status = bundle.formatCode == ARCHIVE_FORMAT_TAR_GNUTAR
            ? libarchive().write_set_format_gnutar(handle)
            : libarchive().write_set_format_pax_restricted(handle);
        break;
    }
    if (status != ARCHIVE_OK)
        return makeError("cannot write a " + std::string(bundleKindName(bundle.kind))
            + " bundle: " + archiveError(handle, "format not supported"));
    for (const int filter : bundle.filterCodes)
        if (libarchive().write_add_filter(handle, filter) != ARCHIVE_OK)
            return makeError("cannot compress the bundle as the input is (" + bundle.filter
                + "): " + archiveError(handle, "filter not supported"));
    // An uncompressed tar ends on a whole 10240-byte record, as tar and Python's tarfile write
    // it; a compressed stream or a zip ends where its data ends.
    if (bundle.kind != BundleKind::Tar)
        libarchive().write_set_bytes_in_last_block(handle, 1);
    return std::nullopt;
}

} // namespace

std::optional<std::string> whyBundleCannotBeRemapped(const Checkpoint& checkpoint)
{
    if (!checkpoint.shardSet || !checkpoint.shardSet->bundle)
        return "not a bundle";
    const ShardSet& set = *checkpoint.shardSet;
    if (!set.bundle->damage.empty())
        return "the bundle is damaged (" + set.bundle->damage
            + "): a copy would lose every member after the damage; download or copy it again first";
    if (set.shards.empty())
        return "the bundle holds no checkpoint member";
    bool any = false;
    for (const ShardFile& shard : set.shards)
        if (shard.model() && !whyCannotBeRemapped(*shard.model()))
            any = true;
    if (!any)
        return "no checkpoint member of the bundle can be rewritten with a plan ("
            + whyCannotBeRemapped(*set.shards.front().model())->message + ")";
    return std::nullopt;
}

Expected<ShardedRemapResult> writeRemappedBundle(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const std::string& outputPath, const RemapOptions& options)
{
    const auto started = std::chrono::steady_clock::now();
    if (auto why = whyBundleCannotBeRemapped(checkpoint))
        return makeError("cannot write a remapped bundle: " + *why);
    if (auto library = archiveLibrary(); !library)
        return makeError("cannot write a remapped bundle: " + library.error().message);
    const ShardSet& set = *checkpoint.shardSet;
    const BundleInfo& bundle = *set.bundle;
    auto input = MappedFile::open(set.folder);
    if (!input)
        return makeError("cannot read the bundle again: " + input.error().message);

    ShardedRemapResult result;
    result.outputFolder = outputPath;
    // 1. Each member whose devices change, remapped on its own (read back and verified by the one
    // verifier) into a temporary folder beside the target.
    RemoveFolderOnExit cleanup;
    std::vector<std::shared_ptr<const MappedFile>> rewritten(set.shards.size());
    for (std::size_t s = 0; s < set.shards.size(); ++s) {
        const ShardFile& shard = set.shards[s];
        bool moves = false;
        (void)memberPlan(shard, *shard.model(), checkpoint, plan, moves);
        if (!moves)
            continue;
        if (Status why = whyCannotBeRemapped(*shard.model()))
            return makeError(shard.name + ": " + why->message);
        if (cleanup.path.empty()) {
            cleanup.path = makeTemporaryFolderBeside(fs::path(outputPath), "members");
            if (cleanup.path.empty())
                return makeError(
                    "cannot create a temporary folder beside " + outputPath + " (is its folder writable?)");
        }
        // The remap writer copies storage records from a file: the member's bytes (in place in
        // the bundle, or decompressed) are put in one beside the target first, and read from there.
        const std::string inputPath
            = (fs::path(cleanup.path) / ("member-" + std::to_string(s) + ".input")).string();
        {
            auto copy = AtomicOutputFile::create(inputPath, set.folder, shard.model()->fileSize);
            if (!copy)
                return makeError(shard.name + ": " + copy.error().message);
            if (Status failed = (*copy)->write(shard.model()->file->bytes()))
                return makeError(shard.name + ": " + failed->message);
            if (Status failed = (*copy)->commit())
                return makeError(shard.name + ": " + failed->message);
        }
        const Checkpoint member = readCheckpoint(inputPath);
        if (member.storages.size() != shard.storageCount)
            return makeError(shard.name + ": the member reads differently once extracted");
        const PlacementPlan own = memberPlan(shard, member, checkpoint, plan, moves);
        const std::string memberPath = (fs::path(cleanup.path) / ("member-" + std::to_string(s))).string();
        auto written = writeRemappedCopy(member, own, memberPath, options);
        if (!written)
            return makeError(shard.name + ": " + written.error().message);
        if (options.verifyAfterWriting && !written->verified)
            return makeError(shard.name + ": the rewritten member did not verify");
        auto mapped = MappedFile::open(memberPath);
        if (!mapped)
            return makeError(shard.name + ": " + mapped.error().message);
        rewritten[s] = *mapped;
        written->outputPath = outputPath + "!/" + shard.name;
        result.shards.push_back(std::move(*written));
    }

    // 2. The new bundle: every member in the input's order, the rewritten ones with their new bytes,
    // the rest copied as they are (header and bytes).
    std::uint64_t expected = (*input)->size();
    for (const auto& member : rewritten)
        expected += member ? member->size() : 0;
    auto out = AtomicOutputFile::create(outputPath, set.folder, expected);
    if (!out)
        return makeError(out.error().message);
    ArchiveWriter writer;
    writer.out = out->get();
    if (Status failed = configure(writer.handle, bundle))
        return makeError(failed->message);
    if (libarchive().write_open2(writer.handle, &writer, nullptr, &ArchiveWriter::write, nullptr, nullptr)
        != ARCHIVE_OK)
        return makeError("cannot start the bundle: " + archiveError(writer.handle, writer.error));

    archive* reader = libarchive().read_new();
    struct FreeReader {
        archive* handle;
        ~FreeReader() { libarchive().read_free(handle); }
    } freeReader {reader};
    libarchive().read_support_filter_all(reader);
    libarchive().read_support_format_tar(reader);
    libarchive().read_support_format_gnutar(reader);
    libarchive().read_support_format_zip(reader);
    libarchive().read_support_format_raw(reader);
    if (libarchive().read_open_memory(reader, (*input)->bytes().data(), (*input)->size()) != ARCHIVE_OK)
        return makeError("cannot read the bundle again: " + archiveError(reader, "unknown format"));
    archive_entry* entry = nullptr;
    std::size_t index = 0;
    int status = ARCHIVE_OK;
    auto writeFailed = [&](const std::string& what) {
        return makeError(
            "cannot write " + what + " into the bundle: " + archiveError(writer.handle, writer.error));
    };
    while ((status = libarchive().read_next_header(reader, &entry)) == ARCHIVE_OK || status == ARCHIVE_WARN) {
        if (index >= bundle.members.size())
            return makeError("the bundle changed since it was read: it has more members now");
        const BundleMember& member = bundle.members[index++];
        const std::shared_ptr<const MappedFile> replacement
            = member.shard >= 0 ? rewritten[static_cast<std::size_t>(member.shard)] : nullptr;
        if (bundle.kind == BundleKind::Zip) {
            // Stored members stay stored (a checkpoint in a stored member can be read in place),
            // the others are deflated again.
            if (member.stored || replacement)
                libarchive().write_zip_set_compression_store(writer.handle);
            else
                libarchive().write_zip_set_compression_deflate(writer.handle);
        }
        if (replacement)
            libarchive().entry_set_size(entry, static_cast<la_int64_t>(replacement->size()));
        if (libarchive().write_header(writer.handle, entry) < ARCHIVE_WARN)
            return writeFailed(member.name);
        if (replacement) {
            const ByteView bytes = replacement->bytes();
            for (std::size_t at = 0; at < bytes.size();) {
                const la_ssize_t n
                    = libarchive().write_data(writer.handle, bytes.data() + at, bytes.size() - at);
                if (n <= 0)
                    return writeFailed(member.name);
                at += static_cast<std::size_t>(n);
            }
            if (libarchive().read_data_skip(reader) != ARCHIVE_OK)
                return makeError(member.name + ": " + archiveError(reader, "the input is damaged"));
            result.bytesWritten += bytes.size();
        } else if (libarchive().entry_filetype(entry) == AE_IFREG) {
            const void* block = nullptr;
            std::size_t length = 0;
            la_int64_t offset = 0;
            int data = ARCHIVE_OK;
            while ((data = libarchive().read_data_block(reader, &block, &length, &offset)) == ARCHIVE_OK) {
                const auto* bytes = static_cast<const std::uint8_t*>(block);
                for (std::size_t at = 0; at < length;) {
                    const la_ssize_t n = libarchive().write_data(writer.handle, bytes + at, length - at);
                    if (n <= 0)
                        return writeFailed(member.name);
                    at += static_cast<std::size_t>(n);
                }
                result.bytesWritten += length;
            }
            if (data != ARCHIVE_EOF)
                return makeError(member.name + ": " + archiveError(reader, "the input is damaged"));
            result.filesCopied.push_back(member.name);
        } else {
            libarchive().read_data_skip(reader);
        }
        if (options.progress && !options.progress(index, bundle.members.size()))
            return makeError("cancelled");
    }
    if (status != ARCHIVE_EOF)
        return makeError("cannot read the bundle again: " + archiveError(reader, "damaged"));
    if (libarchive().write_close(writer.handle) != ARCHIVE_OK)
        return makeError("cannot finish the bundle: " + archiveError(writer.handle, writer.error));

    // 3. Read back: the copy lists the input's members in order; the copied ones byte for byte,
    // the rewritten ones exactly the verified member files; and each rewritten member, read from
    // the copy, records the planned devices.
    if (options.verifyAfterWriting) {
        auto copy = MappedFile::open((*out)->temporaryPath());
        if (!copy)
            return makeError("cannot read the written bundle back: " + copy.error().message);
        std::string inputDamage;
        std::string copyDamage;
        const auto before = bundleMemberDigests((*input)->bytes(), inputDamage);
        const auto after = bundleMemberDigests((*copy)->bytes(), copyDamage);
        if (!copyDamage.empty())
            return makeError("the written bundle does not read back: " + copyDamage);
        if (before.size() != after.size())
            return makeError("the written bundle holds " + std::to_string(after.size())
                + " files where the input holds " + std::to_string(before.size()));
        std::size_t file = 0;
        for (const BundleMember& member : bundle.members) {
            if (member.type != "file")
                continue;
            if (file >= after.size() || after[file].name != before[file].name)
                return makeError("the written bundle lists its members differently from the input");
            std::uint64_t size = before[file].size;
            std::uint32_t crc = before[file].crc;
            if (member.shard >= 0 && rewritten[static_cast<std::size_t>(member.shard)]) {
                const ByteView bytes = rewritten[static_cast<std::size_t>(member.shard)]->bytes();
                size = bytes.size();
                crc = crc32Update(0, bytes.data(), bytes.size());
            }
            if (after[file].size != size || after[file].crc != crc)
                return makeError(
                    "the written bundle's " + member.name + " is not what was meant to be written");
            ++file;
        }
        const Checkpoint reread = readCheckpoint(*copy);
        if (!reread.shardSet || !reread.shardSet->bundle
            || reread.shardSet->shards.size() != set.shards.size())
            return makeError("the written bundle does not read back as a bundle of the same checkpoints");
        for (std::size_t s = 0; s < set.shards.size(); ++s) {
            if (!rewritten[s])
                continue;
            const ShardFile& was = set.shards[s];
            const ShardFile& now = reread.shardSet->shards[s];
            if (now.storageCount != was.storageCount)
                return makeError(was.name + ": the written member holds other storages");
            for (std::uint32_t k = 0; k < was.storageCount; ++k) {
                const auto planned = plan.plannedDeviceOfStorage(was.firstStorage + k);
                const auto& recorded = reread.storages[now.firstStorage + k].device;
                if (planned && (!recorded || recorded->str() != *planned))
                    return makeError(was.name + ": storage " + std::to_string(k)
                        + " of the written member does not record its planned device");
            }
        }
    }
    std::error_code sizeError;
    result.bytesWritten = fs::file_size((*out)->temporaryPath(), sizeError);
    if (Status failed = (*out)->commit())
        return makeError(failed->message);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    result.bundleKind = bundleKindName(bundle.kind);
    return result;
}

} // namespace ckpt
