// SPDX-License-Identifier: MIT
// Storages saved inside bytes (docs/formats.md, "Tensors saved inside bytes"): pickle.dump of a
// tensor or a storage runs Storage.__reduce__ (torch/storage.py, torch 1.13 and 2.14 alike), which
// writes torch.storage._load_from_bytes(<torch.save(storage, _use_new_zipfile_serialization=False)>)
// where torch.save would write a persistent id. The bytes are a torch.save file of their own: read
// here with the same readers as a file (legacy stream or zip, whatever torch wrote), and their
// storage joins this checkpoint with its recorded device. Nothing in them is executed; the safety
// verdict rates their pickle as a nested loader's (core/safety/picklecatalog.cpp).
#include "core/read/checkpointbuilder.h"

#include "core/base/textformat.h"
#include "core/io/mappedfile.h"
#include "core/read/checkpointreader.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace ckpt {

namespace {

// Python's latin-1 encoding of a str the pickle holds as UTF-8: protocols 0-2 write bytes as
// _codecs.encode(<the bytes read as latin-1>, 'latin1'). Nothing when a character is past U+00FF
// (Python would raise UnicodeEncodeError: no bytes are handed on).
std::optional<std::string> latin1FromUtf8(std::string_view text)
{
    std::string bytes;
    bytes.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            bytes.push_back(static_cast<char>(c));
        } else if ((c == 0xC2 || c == 0xC3) && i + 1 < text.size()) {
            const auto next = static_cast<unsigned char>(text[i + 1]);
            if ((next & 0xC0) != 0x80)
                return std::nullopt;
            bytes.push_back(static_cast<char>(((c & 0x03) << 6) | (next & 0x3F)));
            ++i;
        } else {
            return std::nullopt;
        }
    }
    return bytes;
}

thread_local int t_nestingDepth = 0;
constexpr int kMaxNesting = 4;

} // namespace

std::optional<std::string> nestedBlobBytes(const PickleGraph& graph, NodeId call)
{
    if (graph.kind(call) != NodeKind::Call || graph.calleeName(call) != "torch.storage._load_from_bytes")
        return std::nullopt;
    const NodeId argument = graph.tupleItem(graph.arguments(call), 0);
    if (graph.kind(argument) == NodeKind::Bytes)
        return std::string(graph.text(argument));
    // _codecs.encode(str, 'latin1'), as protocols 0-2 write bytes.
    if (graph.kind(argument) == NodeKind::Call) {
        const std::string encoder = graph.calleeName(argument);
        const NodeId args = graph.arguments(argument);
        if ((encoder == "_codecs.encode" || encoder == "codecs.encode") && graph.tupleSize(args) == 2
            && graph.isString(graph.tupleItem(args, 0))) {
            const std::string_view encoding = graph.text(graph.tupleItem(args, 1));
            if (encoding == "latin1" || encoding == "latin-1" || encoding == "latin_1"
                || encoding == "iso-8859-1")
                return latin1FromUtf8(graph.text(graph.tupleItem(args, 0)));
        }
    }
    return std::nullopt;
}

std::int32_t CheckpointBuilder::storageFromNestedBlob(NodeId call)
{
    if (const auto seen = m_nestedStorages.find(call); seen != m_nestedStorages.end())
        return seen->second; // the same bytes object (a memo reference): torch loads it once
    m_nestedStorages[call] = -1;
    const std::optional<std::string> blob = nestedBlobBytes(m_graph, call);
    if (!blob)
        return -1;
    if (t_nestingDepth >= kMaxNesting) {
        m_checkpoint.addFinding(Severity::Warning, FindingCode::NestingTooDeep,
            "torch.save files inside bytes nest deeper than " + std::to_string(kMaxNesting)
                + " levels; the deeper ones are not read");
        return -1;
    }
    const std::size_t number = m_checkpoint.nestedBlobs.size();
    // Where the bytes lie in the file as they are (protocol 3 and later write them verbatim): the
    // storage's bytes are then located in the file itself. Text-encoded bytes (protocols 0-2) are
    // read from a decoded copy, which the NestedBlob keeps: their storage bytes are not in the file
    // as such.
    std::optional<std::uint64_t> blobOffset;
    std::shared_ptr<const MappedFile> file;
    if (m_checkpoint.file && !blob->empty()) {
        const ByteView whole = m_checkpoint.file->bytes();
        const auto* begin = reinterpret_cast<const char*>(whole.data());
        const auto* end = begin + whole.size();
        // Blobs come in pickle order: look after the last one first, so a pickle of many tensors is
        // searched once rather than once per tensor.
        const std::boyer_moore_horspool_searcher searcher(blob->begin(), blob->end());
        const char* from = begin;
        if (!m_checkpoint.nestedBlobs.empty() && m_checkpoint.nestedBlobs.back().fileOffset)
            from = begin + *m_checkpoint.nestedBlobs.back().fileOffset;
        const auto* found = std::search(from, end, searcher);
        if (found == end && from != begin)
            found = std::search(begin, end, searcher);
        if (found != end) {
            blobOffset = static_cast<std::uint64_t>(found - begin);
            file = MappedFile::slice(m_checkpoint.file, *blobOffset, blob->size());
        }
    }
    if (!file) {
        ByteBuffer buffer(blob->size());
        std::memcpy(buffer.data(), blob->data(), blob->size());
        file = MappedFile::fromBuffer(std::move(buffer), "bytes " + std::to_string(number));
    }
    ++t_nestingDepth;
    Checkpoint inner = readCheckpoint(file);
    --t_nestingDepth;

    const std::string where = "the torch.save file inside bytes #" + std::to_string(number);
    for (const Finding& finding : inner.findings)
        if (finding.severity != Severity::Info)
            m_checkpoint.addFinding(finding.severity, finding.code, where + ": " + finding.message);
    if (inner.format != CheckpointFormat::TorchLegacy && inner.format != CheckpointFormat::TorchZip) {
        m_checkpoint.addFinding(Severity::Warning, FindingCode::UnreadableTensor,
            where + " is not a torch.save file (" + inner.container.description
                + "); torch.load of it fails, and its storage is unknown");
        return -1;
    }
    if (inner.storages.empty()) {
        m_checkpoint.addFinding(Severity::Warning, FindingCode::UnreadableTensor,
            where + " holds no storage; the tensor built on it cannot be located");
        return -1;
    }
    // Storage.__reduce__ saves exactly one storage; the one its pickle's root names is the value.
    StorageRecord storage = inner.storages.front();
    const std::string innerRecord = storage.record(); // before the key changes: a zip record ends in it
    storage.key = "bytes" + std::to_string(number) + "/" + storage.key;
    const std::string stem = "bytes #" + std::to_string(number) + ", ";
    storage.setRecord(InternedString(stem + innerRecord));
    storage.persistentIdTuples = {};
    storage.firstPersistentId = kNoNode;
    storage.tensors = {};
    storage.pickleSection = static_cast<std::uint32_t>(m_checkpoint.pickles.size());
    NestedBlob record;
    if (storage.dataOffset && blobOffset) {
        storage.dataOffset = *storage.dataOffset + *blobOffset;
    } else if (storage.dataOffset && !storage.deflated) {
        // Bytes held as text (protocols 0-2): the storage's bytes exist only in the decoded copy,
        // which the record keeps so that extract, convert and the value scan can read them.
        record.decoded = file;
        record.decodedDataOffset = *storage.dataOffset;
        storage.dataOffset.reset();
        storage.inDecodedBlob = true;
    } else {
        storage.dataOffset.reset();
        storage.availableBytes.reset();
    }
    const auto index = static_cast<std::uint32_t>(m_checkpoint.storages.size());
    m_checkpoint.storages.push_back(std::move(storage));
    m_checkpoint.indexStorage(index);
    record.call = call;
    record.storage = index;
    record.fileOffset = blobOffset;
    record.innerFormat = inner.format;
    record.bytesComplete = inner.storages.front().bytesComplete();
    m_checkpoint.nestedBlobs.push_back(record);
    m_nestedStorages[call] = static_cast<std::int32_t>(index);
    return static_cast<std::int32_t>(index);
}

} // namespace ckpt
