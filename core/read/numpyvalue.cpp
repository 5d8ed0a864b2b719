// SPDX-License-Identifier: MIT
#include "core/read/numpyvalue.h"

#include "core/base/checkedarithmetic.h"

#include <algorithm>
#include <utility>

namespace ckpt {

namespace {

bool isNumpyName(std::string_view name, std::string_view leaf)
{
    return name == "numpy.core.multiarray." + std::string(leaf)
        || name == "numpy._core.multiarray." + std::string(leaf);
}

// The bytes a node holds: BINBYTES (protocol 3+) or _codecs.encode(text, 'latin1') (protocol 2).
Expected<ByteBuffer> bytesOf(const PickleGraph& graph, NodeId id)
{
    if (graph.kind(id) == NodeKind::Bytes || graph.kind(id) == NodeKind::ByteArray) {
        const std::string_view text = graph.text(id);
        return ByteBuffer(text.begin(), text.end());
    }
    if (graph.kind(id) == NodeKind::Call && graph.calleeName(id) == "_codecs.encode") {
        const NodeId args = graph.arguments(id);
        const std::string_view encoding = graph.text(graph.tupleItem(args, 1));
        if (encoding != "latin1" && encoding != "latin-1")
            return makeError("bytes encoded as '" + std::string(encoding) + "'");
        const std::string_view text = graph.text(graph.tupleItem(args, 0));
        ByteBuffer out;
        out.reserve(text.size());
        // UTF-8 of code points below 256: one byte, or 0xc2/0xc3 and one more.
        for (std::size_t i = 0; i < text.size(); ++i) {
            const auto c = static_cast<unsigned char>(text[i]);
            if (c < 0x80) {
                out.push_back(c);
            } else if ((c == 0xc2 || c == 0xc3) && i + 1 < text.size()) {
                out.push_back(static_cast<std::uint8_t>(((c & 0x03U) << 6) | (text[++i] & 0x3fU)));
            } else {
                return makeError("latin1 text with a character above U+00FF");
            }
        }
        return out;
    }
    // Protocol 2 writes empty bytes as bytes() (a REDUCE of builtins.bytes without arguments).
    if (graph.kind(id) == NodeKind::Call
        && (graph.calleeName(id) == "__builtin__.bytes" || graph.calleeName(id) == "builtins.bytes")
        && graph.tupleSize(graph.arguments(id)) == 0)
        return ByteBuffer();
    return makeError("no bytes where NumPy keeps its data");
}

struct Dtype {
    std::string numpyType, torchDtype;
    std::uint32_t size = 0;
    bool bigEndian = false;
};

Expected<Dtype> dtypeOf(const PickleGraph& graph, NodeId id)
{
    if (graph.kind(id) != NodeKind::Call || graph.calleeName(id) != "numpy.dtype")
        return makeError("no numpy.dtype where the value's dtype belongs");
    const std::string code(graph.text(graph.tupleItem(graph.arguments(id), 0)));
    char order = '=';
    if (const ContainerBody* body = graph.bodyOf(id); body && !body->states.empty()) {
        const std::string_view text = graph.text(graph.tupleItem(body->states.back(), 1));
        if (text.size() == 1)
            order = text[0];
    }
    static const std::pair<std::string_view, std::pair<const char*, const char*>> kTypes[]
        = {{"f8", {"float64", "float64"}}, {"f4", {"float32", "float32"}}, {"f2", {"float16", "float16"}},
            {"i8", {"int64", "int64"}}, {"i4", {"int32", "int32"}}, {"i2", {"int16", "int16"}},
            {"i1", {"int8", "int8"}}, {"u1", {"uint8", "uint8"}}, {"b1", {"bool", "bool"}},
            {"c8", {"complex64", "complex64"}}, {"c16", {"complex128", "complex128"}}};
    for (const auto& [name, types] : kTypes) {
        if (code != name)
            continue;
        Dtype dtype;
        dtype.numpyType = types.first;
        dtype.torchDtype = types.second;
        dtype.size = static_cast<std::uint32_t>(std::stoul(std::string(name.substr(1))));
        dtype.bigEndian = order == '>';
        return dtype;
    }
    if (code == "u2" || code == "u4" || code == "u8") { // no tensor in torch 1.13: Python ints
        Dtype dtype;
        dtype.size = static_cast<std::uint32_t>(std::stoul(code.substr(1)));
        dtype.numpyType = "uint" + std::to_string(8 * dtype.size);
        dtype.bigEndian = order == '>';
        return dtype;
    }
    return makeError("NumPy dtype '" + code + "' holds no plain numbers");
}

// Little-endian element bytes: a big-endian dtype's elements byte-swapped (complex: each half).
void toLittleEndian(ByteBuffer& bytes, const Dtype& dtype)
{
    if (!dtype.bigEndian || dtype.size == 1)
        return;
    const std::size_t part = dtype.torchDtype.starts_with("complex") ? dtype.size / 2 : dtype.size;
    for (std::size_t at = 0; at + part <= bytes.size(); at += part)
        std::reverse(bytes.begin() + static_cast<std::ptrdiff_t>(at),
            bytes.begin() + static_cast<std::ptrdiff_t>(at + part));
}

} // namespace

bool isNumpyValueCall(const PickleGraph& graph, NodeId id)
{
    if (graph.kind(id) != NodeKind::Call)
        return false;
    const std::string name = graph.calleeName(id);
    return isNumpyName(name, "scalar") || isNumpyName(name, "_reconstruct");
}

Expected<NumpyValue> decodeNumpyValue(const PickleGraph& graph, NodeId id)
{
    if (!isNumpyValueCall(graph, id))
        return makeError("not a NumPy scalar or array");
    NumpyValue value;
    const std::string name = graph.calleeName(id);
    NodeId dtypeNode = kNoNode;
    NodeId dataNode = kNoNode;
    if (isNumpyName(name, "scalar")) {
        const NodeId args = graph.arguments(id);
        dtypeNode = graph.tupleItem(args, 0);
        dataNode = graph.tupleItem(args, 1);
    } else {
        value.array = true;
        const ContainerBody* body = graph.bodyOf(id);
        if (!body || body->states.empty())
            return makeError("a NumPy array without its state");
        const NodeId state = body->states.back();
        if (graph.tupleSize(state) != 5)
            return makeError("a NumPy array state of " + std::to_string(graph.tupleSize(state)) + " items");
        for (NodeId dim : graph.sequence(graph.tupleItem(state, 1))) {
            if (graph.kind(dim) != NodeKind::Int || graph.intValue(dim) < 0)
                return makeError("a NumPy array shape that is not a tuple of sizes");
            value.shape.push_back(graph.intValue(dim));
        }
        dtypeNode = graph.tupleItem(state, 2);
        value.fortran = graph.kind(graph.tupleItem(state, 3)) == NodeKind::Bool
            && graph.intValue(graph.tupleItem(state, 3)) != 0;
        dataNode = graph.tupleItem(state, 4);
    }
    auto dtype = dtypeOf(graph, dtypeNode);
    if (!dtype)
        return dtype.error();
    auto bytes = bytesOf(graph, dataNode);
    if (!bytes)
        return bytes.error();
    std::optional<std::uint64_t> count = 1;
    for (std::int64_t dim : value.shape) {
        count = checkedMultiply<std::uint64_t>(*count, static_cast<std::uint64_t>(dim));
        if (!count)
            return makeError("a NumPy array shape too large");
    }
    const std::optional<std::uint64_t> expected = checkedMultiply<std::uint64_t>(*count, dtype->size);
    if (!expected || *expected != bytes->size())
        return makeError("a NumPy " + dtype->numpyType + " value of " + std::to_string(bytes->size())
            + " bytes where its shape needs " + (expected ? std::to_string(*expected) : std::string("more")));
    toLittleEndian(*bytes, *dtype);
    value.numpyType = dtype->numpyType;
    value.torchDtype = dtype->torchDtype;
    value.bytes = std::move(*bytes);
    return value;
}

} // namespace ckpt
