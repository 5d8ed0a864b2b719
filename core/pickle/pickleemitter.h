// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"
#include "core/base/expected.h"
#include "core/pickle/picklegraph.h"

#include <map>
#include <string>
#include <utility>

namespace ckpt {

// What to write instead of a value at one place in the pickle.
struct PickleReplacement {
    enum class Kind {
        Text, // a str literal (a device tag)
        TorchDevice, // torch.device('<text>'): GLOBAL torch device + ('<text>',) + REDUCE
        Node, // another value of the graph (a legacy 'module' persistent id -> its class)
        StoragePid, // ('storage', <node>, '<key>', '<text>', <number>): a legacy persistent id in zip form
        StoragePersistentId, // the same tuple followed by BINPERSID: a tar-format storage reference
        Global, // GLOBAL '<text>' '<key>': a class or function under another module path or name
        Bytes, // a bytes literal holding `text` (a rewritten torch.save file inside bytes)
    };
    Kind kind = Kind::Text;
    std::string text;
    NodeId node = kNoNode;
    std::string key;
    std::int64_t number = 0;
};

// Re-emits a pickle from the symbolic graph, so that only chosen values change. Shared values stay
// shared (a value referenced twice is memoized once and fetched again), except where a
// replacement stands: it is written as a fresh literal, so a location tag that the original shared
// through the memo with user data (a 'cpu' string elsewhere, torch-format.md §2.1) changes alone.
//
// Output uses only the opcodes torch's weights_only unpickler accepts (§6.3) for everything a
// weights-only-loadable input can contain; other values (bytes, sets, protocol-4 objects) are
// written with the opcodes of their protocol, as the input must have had them.
class PickleEmitter {
public:
    explicit PickleEmitter(const PickleGraph& graph);

    // Replaces item `index` of tuple `tuple` wherever that tuple is written.
    void replaceItem(NodeId tuple, std::uint32_t index, PickleReplacement replacement);
    // Replaces every occurrence of `node`.
    void replaceNode(NodeId node, PickleReplacement replacement);

    // TorchScript's C++ unpickler knows APPENDS but not APPEND: write one-item lists as
    // MARK item APPENDS too (as torch.jit.save's pickler does).
    void setAppendsOnly(bool appendsOnly) { m_appendsOnly = appendsOnly; }

    // A complete pickle: PROTO max(2, protocol), the value, STOP.
    Expected<ByteBuffer> emit(NodeId root, int protocol) const;

private:
    bool m_appendsOnly = false;
    const PickleGraph& m_graph;
    std::map<std::pair<NodeId, std::uint32_t>, PickleReplacement> m_itemReplacements;
    std::map<NodeId, PickleReplacement> m_nodeReplacements;
};

} // namespace ckpt
