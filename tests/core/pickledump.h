// SPDX-License-Identifier: MIT
#pragma once
// A canonical text form of a pickled value, the same one tests/data/pickle/make_pickle_samples.py
// computes from the Python object: used to compare what the pickle machine read, and what the
// emitter wrote, with what Python holds.
#include "core/pickle/picklegraph.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace pickledump {

using namespace ckpt;

inline std::string hex(std::string_view bytes)
{
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

// Little-endian two's complement to decimal, by long division.
inline std::string bigIntToDecimal(std::string_view bytes)
{
    std::vector<std::uint8_t> magnitude(bytes.begin(), bytes.end());
    const bool negative = !magnitude.empty() && (magnitude.back() & 0x80);
    if (negative) {
        unsigned carry = 1;
        for (auto& b : magnitude) {
            unsigned v = static_cast<std::uint8_t>(~b) + carry;
            b = static_cast<std::uint8_t>(v);
            carry = v >> 8;
        }
    }
    std::string digits;
    while (std::any_of(magnitude.begin(), magnitude.end(), [](std::uint8_t b) { return b != 0; })) {
        unsigned remainder = 0;
        for (auto it = magnitude.rbegin(); it != magnitude.rend(); ++it) {
            unsigned v = (remainder << 8) | *it;
            *it = static_cast<std::uint8_t>(v / 10);
            remainder = v % 10;
        }
        digits += static_cast<char>('0' + remainder);
    }
    if (digits.empty())
        digits = "0";
    std::reverse(digits.begin(), digits.end());
    return (negative ? "-" : "") + digits;
}

inline std::string latin1FromUtf8(std::string_view text)
{
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            out += static_cast<char>(c);
        } else if ((c & 0xE0) == 0xC0 && i + 1 < text.size()) {
            out += static_cast<char>(((c & 0x1F) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3F));
            ++i;
        }
    }
    return out;
}

// The same canonical form make_pickle_samples.py computes from the Python object.
inline std::string dump(const PickleGraph& g, NodeId id)
{
    auto join = [&](const std::vector<NodeId>& items, bool sorted) {
        std::vector<std::string> parts;
        parts.reserve(items.size());
        for (NodeId item : items)
            parts.push_back(dump(g, item));
        if (sorted)
            std::sort(parts.begin(), parts.end());
        std::string out;
        for (std::size_t i = 0; i < parts.size(); ++i)
            out += (i ? "," : "") + parts[i];
        return out;
    };
    auto dictDump = [&](const std::vector<NodeId>& kv) {
        std::string out;
        for (std::size_t i = 0; i + 1 < kv.size(); i += 2)
            out += (i ? "," : "") + dump(g, kv[i]) + ":" + dump(g, kv[i + 1]);
        return out;
    };
    switch (g.kind(id)) {
    case NodeKind::None:
        return "None";
    case NodeKind::Bool:
        return g.intValue(id) ? "True" : "False";
    case NodeKind::Int:
        return "i" + std::to_string(g.intValue(id));
    case NodeKind::BigInt:
        return "i" + bigIntToDecimal(g.text(id));
    case NodeKind::Float: {
        char buffer[40];
        std::snprintf(buffer, sizeof buffer, "%.17g", g.floatValue(id));
        return std::string("f") + buffer;
    }
    case NodeKind::String:
        return "s" + hex(g.text(id));
    case NodeKind::Bytes:
    case NodeKind::ByteArray:
        return "b" + hex(g.text(id));
    case NodeKind::Tuple:
        return "(" + join(g.sequence(id), false) + ")";
    case NodeKind::List:
        return "[" + join(g.sequence(id), false) + "]";
    case NodeKind::Set:
    case NodeKind::FrozenSet:
        return "{" + join(g.sequence(id), true) + "}";
    case NodeKind::Dict:
        return "<" + (g.bodyOf(id) ? dictDump(g.bodyOf(id)->dictItems) : std::string()) + ">";
    case NodeKind::Call:
    case NodeKind::NewObject: {
        const std::string name = g.calleeName(id);
        const NodeId args = g.arguments(id);
        const NodeId first = g.tupleItem(args, 0);
        if (name == "_codecs.encode")
            return "b" + hex(latin1FromUtf8(g.text(first)));
        if ((name == "builtins.bytes" || name == "__builtin__.bytes") && g.tupleSize(args) == 0)
            return "b"; // protocols 0-2 write b"" as bytes()
        if (name == "builtins.bytearray" || name == "__builtin__.bytearray") {
            if (g.tupleSize(args) == 0)
                return "b";
            if (g.kind(first) == NodeKind::String)
                return "b" + hex(latin1FromUtf8(g.text(first)));
            if (g.kind(first) == NodeKind::Call) // bytearray(bytes), the bytes written as _codecs.encode
                return dump(g, first);
            return "b" + hex(g.text(first));
        }
        if (name == "builtins.set" || name == "builtins.frozenset" || name == "__builtin__.set"
            || name == "__builtin__.frozenset")
            return "{" + join(g.sequence(first), true) + "}";
        if (name == "collections.OrderedDict") {
            std::vector<NodeId> kv;
            for (NodeId pair : g.sequence(first)) {
                kv.push_back(g.tupleItem(pair, 0));
                kv.push_back(g.tupleItem(pair, 1));
            }
            if (const ContainerBody* body = g.bodyOf(id))
                kv.insert(kv.end(), body->dictItems.begin(), body->dictItems.end());
            return "<" + dictDump(kv) + ">";
        }
        std::string out = "R(" + name + "," + dump(g, args);
        if (const ContainerBody* body = g.bodyOf(id)) {
            for (NodeId item : body->items)
                out += ",+" + dump(g, item);
            for (std::size_t i = 0; i + 1 < body->dictItems.size(); i += 2)
                out += ",+" + dump(g, body->dictItems[i]) + ":" + dump(g, body->dictItems[i + 1]);
            for (NodeId state : body->states)
                out += ",state=" + dump(g, state);
        }
        return out + ")";
    }
    case NodeKind::PersistentId:
        return "P(" + dump(g, g.persistentIdPayload(id)) + ")";
    case NodeKind::Global:
        return "G(" + g.qualifiedName(id) + ")";
    default:
        return "?";
    }
}

} // namespace pickledump
