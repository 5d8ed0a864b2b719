// SPDX-License-Identifier: MIT
#include "core/pickle/picklesummary.h"

namespace ckpt {

std::string shortPythonRepr(std::string_view text, std::size_t limit, bool bytes)
{
    std::string out = "'";
    std::size_t count = 0;
    for (unsigned char c : text) {
        if (count++ >= limit) {
            out += "...";
            break;
        }
        if (c == '\'' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c < 0x20 || c == 0x7f || (bytes && c >= 0x80)) {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "'";
}

std::string summarisePickleValue(
    const PickleGraph& graph, NodeId id, const PickleSummaryNaming& naming, int depth)
{
    if (depth > 4)
        return "...";
    const auto inner = [&](NodeId item) { return summarisePickleValue(graph, item, naming, depth + 1); };
    switch (graph.kind(id)) {
    case NodeKind::None:
        return "None";
    case NodeKind::Bool:
        return graph.intValue(id) ? "True" : "False";
    case NodeKind::Int:
        return std::to_string(graph.intValue(id));
    case NodeKind::Float:
        return std::to_string(graph.floatValue(id));
    case NodeKind::String:
        return shortPythonRepr(graph.text(id), 120);
    case NodeKind::Bytes:
        return "b" + shortPythonRepr(graph.text(id), 40, true);
    case NodeKind::Global:
        return naming.globalName ? naming.globalName(id) : graph.qualifiedName(id);
    case NodeKind::Extension:
        return "<copyreg extension " + std::to_string(graph.extensionCode(id)) + ">";
    case NodeKind::Call:
    case NodeKind::NewObject: {
        std::string callee = naming.calleeName ? naming.calleeName(id) : graph.calleeName(id);
        if (callee.empty())
            callee = inner(graph.callee(id));
        std::string out = callee + "(";
        const auto [args, skip]
            = naming.arguments ? naming.arguments(id) : std::pair {graph.arguments(id), std::size_t {0}};
        if (graph.kind(args) == NodeKind::Tuple) {
            const auto items = graph.sequence(args);
            for (std::size_t i = skip; i < items.size() && i < 4 + skip; ++i)
                out += (i > skip ? ", " : "") + inner(items[i]);
            if (items.size() > 4 + skip)
                out += ", ...";
        } else {
            out += "*" + inner(args);
        }
        return out + ")";
    }
    case NodeKind::Tuple:
    case NodeKind::List: {
        const auto items = graph.sequence(id);
        const bool tuple = graph.kind(id) == NodeKind::Tuple;
        std::string out = tuple ? "(" : "[";
        for (std::size_t i = 0; i < items.size() && i < 4; ++i)
            out += (i ? ", " : "") + inner(items[i]);
        if (items.size() > 4)
            out += ", ...";
        if (tuple && items.size() == 1)
            out += ","; // (x,) is a tuple, (x) is not
        return out + (tuple ? ")" : "]");
    }
    case NodeKind::Dict:
        return "{...}";
    default:
        return "<...>";
    }
}

} // namespace ckpt
