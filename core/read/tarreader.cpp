// SPDX-License-Identifier: MIT
// Reads the PyTorch 0.1.x tar layout (torch-format.md §4.3): members sys_info, pickle, tensors,
// storages inside a POSIX tar.
#include "core/read/tarreader.h"

#include "core/base/checkedarithmetic.h"
#include "core/io/mappedfile.h"
#include "core/model/dtype.h"
#include "core/read/checkpointbuilder.h"
#include "core/read/checkpointreader.h"
#include "core/read/picklesection.h"

#include <map>

namespace ckpt {

namespace {

struct TarMember {
    std::uint64_t offset = 0; // of the member's data in the file
    std::uint64_t size = 0;
    bool complete = true;
};

std::uint64_t parseOctal(ByteView field)
{
    std::uint64_t value = 0;
    for (std::uint8_t c : field) {
        if (c == 0 || c == ' ')
            continue;
        if (c < '0' || c > '7')
            break;
        value = value * 8 + (c - '0');
    }
    return value;
}

std::map<std::string, TarMember> listMembers(ByteView bytes, Checkpoint& checkpoint)
{
    std::map<std::string, TarMember> members;
    std::uint64_t offset = 0;
    std::string paxPath;
    while (offset + 512 <= bytes.size()) {
        ByteView header = bytes.subspan(offset, 512);
        bool zero = true;
        for (std::uint8_t c : header)
            zero = zero && c == 0;
        if (zero)
            break;
        std::string name(reinterpret_cast<const char*>(header.data()), 100);
        name = name.substr(0, name.find('\0'));
        std::string prefix(reinterpret_cast<const char*>(header.data()) + 345, 155);
        prefix = prefix.substr(0, prefix.find('\0'));
        if (!prefix.empty())
            name = prefix + "/" + name;
        const std::uint64_t size = parseOctal(header.subspan(124, 12));
        const char type = static_cast<char>(header[156]);
        const std::uint64_t dataOffset = offset + 512;
        if (type == 'x') {
            // PAX extended header: "<len> path=<name>\n" records override the next name.
            const auto body
                = subView(bytes, dataOffset, std::min<std::uint64_t>(size, bytes.size() - dataOffset));
            std::string_view text = body ? asText(*body) : std::string_view();
            if (auto at = text.find(" path="); at != std::string_view::npos) {
                auto end = text.find('\n', at);
                paxPath = std::string(text.substr(
                    at + 6, end == std::string_view::npos ? std::string_view::npos : end - at - 6));
            }
        } else if (type == '0' || type == '\0') {
            TarMember member;
            member.offset = dataOffset;
            member.size = size;
            member.complete = dataOffset + size <= bytes.size();
            if (!member.complete)
                checkpoint.addFinding(Severity::Error, FindingCode::Truncated,
                    "tar member " + name + " is cut off by the end of the file: the file is truncated", name,
                    dataOffset);
            members[paxPath.empty() ? name : paxPath] = member;
            paxPath.clear();
        }
        const std::uint64_t next = dataOffset + (size + 511) / 512 * 512;
        if (next <= offset)
            break;
        offset = next;
    }
    return members;
}

} // namespace

void readTorchTar(Checkpoint& checkpoint, const ReadOptions& options)
{
    checkpoint.format = CheckpointFormat::TorchTar;
    const ByteView bytes = checkpoint.file->bytes();
    const auto members = listMembers(bytes, checkpoint);
    const PickleMachine machine(options.pickleLimits);
    auto member = [&](const char* name) -> const TarMember* {
        auto it = members.find(name);
        return it == members.end() ? nullptr : &it->second;
    };
    auto memberBytes = [&](const TarMember& m) {
        return bytes.subspan(
            m.offset, static_cast<std::size_t>(std::min<std::uint64_t>(m.size, bytes.size() - m.offset)));
    };
    for (const char* required : {"sys_info", "pickle", "storages"})
        if (!member(required))
            checkpoint.addFinding(Severity::Error, FindingCode::TarMemberMissing,
                std::string("the tar archive has no '") + required
                    + "' member, which the 0.1.x format requires");

    CheckpointBuilder builder(checkpoint);

    // storages: count, then per storage (key, location, storage class) + int64 count + raw bytes.
    if (const TarMember* storages = member("storages")) {
        const ByteView data = memberBytes(*storages);
        std::uint64_t offset = 0;
        PickleRun countRun = machine.run(data, checkpoint.graph);
        const std::int64_t count = countRun.complete() ? checkpoint.graph.intValue(countRun.root) : 0;
        offset = countRun.endOffset;
        for (std::int64_t i = 0; i < count && offset < data.size(); ++i) {
            PickleRun run = machine.run(data.subspan(offset), checkpoint.graph);
            if (!run.complete()) {
                checkpoint.addFinding(Severity::Error, FindingCode::TarStorageUnreadable,
                    "storage " + std::to_string(i)
                        + " of the tar 'storages' member cannot be read: " + run.error.value_or("?"),
                    "storages", storages->offset + offset);
                break;
            }
            offset += run.endOffset;
            const PickleGraph& g = checkpoint.graph;
            const NodeId keyNode = g.tupleItem(run.root, 0);
            StorageRecord storage;
            storage.key = g.kind(keyNode) == NodeKind::Int ? std::to_string(g.intValue(keyNode))
                                                           : std::string(g.text(keyNode));
            storage.device = std::string(g.text(g.tupleItem(run.root, 1)));
            const NodeId cls = g.tupleItem(run.root, 2);
            storage.storageClass = std::string(g.name(cls));
            const auto info = dtypeByStorageClass(storage.storageClass);
            storage.dtype = info ? InternedString(info->name) : storage.storageClass;
            const std::uint64_t elementSize = info ? info->elementSize : 1;
            auto numel = readLittleEndian<std::uint64_t>(data, offset);
            storage.numel = numel.value_or(0);
            // Checked like the zip format's sizes: a wrapped product would make a storage of
            // 2^62 floats "need 0 bytes" and misplace every storage after it.
            const std::optional<std::uint64_t> nbytes
                = checkedMultiply<std::uint64_t>(storage.numel, elementSize);
            if (!nbytes) {
                checkpoint.addFinding(Severity::Error, FindingCode::StorageSizeOverflow,
                    "storage " + storage.key + " of the tar 'storages' member records "
                        + formatThousands(storage.numel) + " elements of " + std::to_string(elementSize)
                        + " bytes: its size in bytes overflows 64 bits, so the member is damaged or hostile",
                    "storages", storages->offset + offset);
                break;
            }
            storage.nbytes = *nbytes;
            storage.setRecord(InternedString("tar member storages"));
            storage.dataOffset = storages->offset + offset + 8;
            storage.availableBytes = offset + 8 <= data.size()
                ? std::min<std::uint64_t>(storage.nbytes, data.size() - offset - 8)
                : 0;
            const std::optional<std::uint64_t> next = checkedAdd<std::uint64_t>(offset, 8);
            offset = next ? checkedAdd(*next, storage.nbytes).value_or(UINT64_MAX) : UINT64_MAX;
            checkpoint.storages.push_back(storage);
            checkpoint.tarReferences[static_cast<std::uint32_t>(checkpoint.storages.size() - 1)].classNode
                = cls;
            checkpoint.indexStorage(static_cast<std::uint32_t>(checkpoint.storages.size() - 1));
        }
    }

    // tensors (optional): count, then per tensor (key, storage key, type) + geometry.
    std::map<std::string, TensorEntry> tensorsByKey;
    if (const TarMember* tensors = member("tensors")) {
        const ByteView data = memberBytes(*tensors);
        PickleRun countRun = machine.run(data, checkpoint.graph);
        const std::int64_t count = countRun.complete() ? checkpoint.graph.intValue(countRun.root) : 0;
        std::uint64_t offset = countRun.endOffset;
        for (std::int64_t i = 0; i < count && offset < data.size(); ++i) {
            PickleRun run = machine.run(data.subspan(offset), checkpoint.graph);
            if (!run.complete())
                break;
            offset += run.endOffset;
            const PickleGraph& g = checkpoint.graph;
            auto keyText = [&](NodeId n) {
                return g.kind(n) == NodeKind::Int ? std::to_string(g.intValue(n)) : std::string(g.text(n));
            };
            TensorEntry tensor;
            const std::string key = keyText(g.tupleItem(run.root, 0));
            const std::string storageKey = keyText(g.tupleItem(run.root, 1));
            auto ndim = readLittleEndian<std::uint32_t>(data, offset);
            if (!ndim || *ndim > 64)
                break;
            offset += 8;
            for (std::uint32_t d = 0; d < *ndim; ++d)
                tensor.shape.push_back(static_cast<std::int64_t>(
                    readLittleEndian<std::uint64_t>(data, offset + 8ull * d).value_or(0)));
            offset += 8ull * *ndim;
            std::vector<std::int64_t> stride;
            for (std::uint32_t d = 0; d < *ndim; ++d)
                stride.push_back(static_cast<std::int64_t>(
                    readLittleEndian<std::uint64_t>(data, offset + 8ull * d).value_or(0)));
            offset += 8ull * *ndim;
            tensor.stride = stride;
            tensor.storageOffset
                = static_cast<std::int64_t>(readLittleEndian<std::uint64_t>(data, offset).value_or(0));
            offset += 8;
            tensor.rebuildFunction = "tar tensors member";
            if (const auto index = checkpoint.storageIndex(storageKey)) {
                tensor.storage = static_cast<std::int32_t>(*index);
                tensor.dtype = checkpoint.storages[*index].dtype;
                tensor.device = checkpoint.storages[*index].device;
            }
            tensorsByKey[key] = tensor;
        }
        if (!tensorsByKey.empty())
            checkpoint.tarTensorsMember = true;
        builder.tensorForKey = [&tensorsByKey](const std::string& key) -> std::optional<TensorEntry> {
            auto it = tensorsByKey.find(key);
            if (it == tensorsByKey.end())
                return std::nullopt;
            return it->second;
        };
    }

    if (const TarMember* pickle = member("pickle")) {
        PickleSection section;
        section.record = "tar member pickle";
        section.fileOffset = pickle->offset;
        section.run = machine.run(memberBytes(*pickle), checkpoint.graph);
        addPickleRoots(builder, section.run);
        addUnreadablePickleFinding(
            checkpoint, section.run, "the tar member 'pickle'", "pickle", pickle->offset);
        section.storagesUsed = builder.storagesUsed();
        checkpoint.pickles.push_back(std::move(section));
    }
    builder.checkViews();
}

} // namespace ckpt
