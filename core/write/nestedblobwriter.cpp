// SPDX-License-Identifier: MIT
#include "core/write/nestedblobwriter.h"

#include "core/format/ziparchive.h"
#include "core/format/zipwriter.h"
#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/pickle/pickleemitter.h"
#include "core/read/checkpointbuilder.h"
#include "core/read/checkpointreader.h"
#include "core/write/remapwriter.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace ckpt {

namespace {

std::string utf8FromLatin1(const std::string& bytes)
{
    std::string text;
    text.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x80) {
            text.push_back(static_cast<char>(byte));
        } else {
            text.push_back(static_cast<char>(0xC0 | (byte >> 6)));
            text.push_back(static_cast<char>(0x80 | (byte & 0x3F)));
        }
    }
    return text;
}

// A zip archive (torch.save's format since 1.6; what Storage.__reduce__ wrote before
// pytorch/pytorch#39893 made it write a legacy stream) with its main pickle replaced by `pickle`:
// every other record's bytes kept (a deflated one written stored, as torch.save writes them), in
// the same order and alignment, written by the writer torch.save's framing is copied from.
Expected<std::string> rewriteZipBlob(const Checkpoint& inner, const PickleSection& main, ByteView pickle)
{
    const auto archive = inner.zipArchive();
    std::vector<const ZipEntry*> entries;
    for (const ZipEntry& entry : archive->entries())
        entries.push_back(&entry);
    std::stable_sort(entries.begin(), entries.end(),
        [](const ZipEntry* a, const ZipEntry* b) { return a->localHeaderOffset < b->localHeaderOffset; });
    std::uint32_t alignment = 64;
    const std::string prefix = inner.archivePrefix.empty() ? std::string() : inner.archivePrefix + "/";
    if (const ZipEntry* record = archive->find(prefix + ".storage_alignment"))
        if (auto text = archive->readPayload(*record, 64)) {
            const unsigned long parsed
                = std::strtoul(std::string(text->begin(), text->end()).c_str(), nullptr, 10);
            if (parsed > 0 && parsed < 65531)
                alignment = static_cast<std::uint32_t>(parsed);
        }
    // The writer writes to a file: an anonymous one in memory, read back whole.
    const int fd = ::memfd_create("ckpt-nested-blob", MFD_CLOEXEC);
    if (fd < 0)
        return makeError(
            std::string("cannot make a file in memory for the rewritten bytes: ") + std::strerror(errno));
    const std::unique_ptr<const int, void (*)(const int*)> closer(
        &fd, [](const int* open) { ::close(*open); });
    TorchZipWriter writer(fd, alignment);
    bool rewritten = false;
    for (const ZipEntry* entry : entries) {
        Status status;
        if (entry->name() == main.record) {
            status = writer.addRecord(entry->name(), pickle);
            rewritten = true;
        } else {
            status = writer.addRecordFromPieces(
                entry->name(), entry->uncompressedSize, [&](const TorchZipWriter::ByteSink& sink) {
                    return archive->forEachPayloadChunk(*entry, sink);
                });
        }
        if (status)
            return *status;
    }
    if (!rewritten)
        return makeError("the archive inside bytes has no record " + main.record);
    if (Status status = writer.finish())
        return *status;
    std::string bytes(writer.bytesWritten(), '\0');
    for (std::size_t done = 0; done < bytes.size();) {
        const ssize_t got = ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
        if (got <= 0)
            return makeError(std::string("cannot read the rewritten bytes back: ")
                + (got < 0 ? std::strerror(errno) : "the file ends early"));
        done += static_cast<std::size_t>(got);
    }
    return bytes;
}

} // namespace

Expected<std::string> rewriteNestedBlob(
    const Checkpoint& outer, const NestedBlob& blob, const std::string& device)
{
    const std::optional<std::string> bytes = nestedBlobBytes(outer.graph, blob.call);
    if (!bytes)
        return makeError("the bytes handed to torch.storage._load_from_bytes cannot be read");
    ByteBuffer buffer(bytes->size());
    std::memcpy(buffer.data(), bytes->data(), bytes->size());
    const Checkpoint inner = readCheckpoint(MappedFile::fromBuffer(std::move(buffer), "bytes"));
    if (inner.format != CheckpointFormat::TorchLegacy && inner.format != CheckpointFormat::TorchZip)
        return makeError("the torch.save file inside bytes is a "
            + std::string(checkpointFormatName(inner.format))
            + " file; only torch.save's legacy stream and zip archive are rewritten");
    if (inner.pickles.size() != 1 || inner.storages.size() != 1 || !inner.pickles.front().run.complete())
        return makeError("the torch.save file inside bytes does not hold exactly one storage");
    if (Status problem = whyCannotBeRemapped(inner))
        return makeError("the torch.save file inside bytes cannot be rewritten: " + problem->message);
    PickleEmitter emitter(inner.graph);
    for (const NodeId tuple : inner.storages.front().persistentIdTuples)
        emitter.replaceItem(tuple, 3, {PickleReplacement::Kind::Text, device, kNoNode, {}, 0});
    const PickleSection& main = inner.pickles.front();
    auto emitted = emitter.emit(main.run.root, main.run.protocol);
    if (!emitted)
        return makeError("cannot rewrite the pickle inside bytes: " + emitted.error().message);
    if (Status problem
        = checkRewrittenGlobals(inner, main.record, ByteView(emitted->data(), emitted->size()), false))
        return *problem;
    if (inner.format == CheckpointFormat::TorchZip)
        return rewriteZipBlob(inner, main, ByteView(emitted->data(), emitted->size()));
    const std::uint64_t end = main.fileOffset + main.run.endOffset;
    std::string rewritten = bytes->substr(0, main.fileOffset);
    rewritten.append(reinterpret_cast<const char*>(emitted->data()), emitted->size());
    rewritten.append(*bytes, end, std::string::npos);
    return rewritten;
}

Status replaceNestedBlob(
    PickleEmitter& emitter, const Checkpoint& outer, const NestedBlob& blob, const std::string& device)
{
    auto rewritten = rewriteNestedBlob(outer, blob, device);
    if (!rewritten)
        return rewritten.error();
    const PickleGraph& graph = outer.graph;
    const NodeId argument = graph.tupleItem(graph.arguments(blob.call), 0);
    if (graph.kind(argument) == NodeKind::Bytes) {
        emitter.replaceNode(
            argument, {PickleReplacement::Kind::Bytes, std::move(*rewritten), kNoNode, {}, 0});
        return std::nullopt;
    }
    // _codecs.encode(<text>, 'latin1'): the text is the bytes read as latin-1.
    const NodeId text = graph.tupleItem(graph.arguments(argument), 0);
    if (!graph.isString(text))
        return makeError(
            "the bytes handed to torch.storage._load_from_bytes are neither bytes nor latin-1 text");
    emitter.replaceNode(text, {PickleReplacement::Kind::Text, utf8FromLatin1(*rewritten), kNoNode, {}, 0});
    return std::nullopt;
}

} // namespace ckpt
