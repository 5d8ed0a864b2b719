// SPDX-License-Identifier: MIT
#include "core/write/nestedblobwriter.h"

#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/pickle/pickleemitter.h"
#include "core/read/checkpointbuilder.h"
#include "core/read/checkpointreader.h"
#include "core/write/remapwriter.h"

#include <cstring>

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
    if (inner.format != CheckpointFormat::TorchLegacy)
        return makeError("the torch.save file inside bytes is a "
            + std::string(checkpointFormatName(inner.format))
            + " file; only the legacy stream Storage.__reduce__ writes is rewritten");
    if (inner.pickles.size() != 1 || inner.storages.size() != 1 || !inner.pickles.front().run.complete())
        return makeError("the torch.save file inside bytes does not hold exactly one storage");
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
