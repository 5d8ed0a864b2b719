// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"
#include "core/pickle/picklegraph.h"

#include <bitset>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ckpt {

// Limits that keep a hostile pickle from exhausting memory or time. The defaults are far above
// anything a real checkpoint needs (a 10-million-tensor state_dict stays below them).
struct PickleLimits {
    std::uint64_t maxPickleBytes = 8ull << 30;
    std::uint64_t maxOpcodes = 2'000'000'000ull;
    std::size_t maxStackDepth = 50'000'000;
    std::size_t maxMarkDepth = 100'000;
    std::size_t maxMemoEntries = 100'000'000;
    std::size_t maxIntegerBytes = 1 << 20; // LONG1/LONG4/LONG text: wider integers are refused
    std::size_t maxNodes = 400'000'000;
    // Called every 65,536 opcodes with (bytes read, pickle size); returning false stops the
    // machine with the error "cancelled" (the desktop app opens files off its GUI thread).
    std::function<bool(std::uint64_t done, std::uint64_t total)> progress;
};

// Whether two sets of limits bound a run alike: every limit but `progress` (which can only cancel
// a run) is equal. A field added to PickleLimits belongs here too.
inline bool sameBounds(const PickleLimits& a, const PickleLimits& b)
{
    return a.maxPickleBytes == b.maxPickleBytes && a.maxOpcodes == b.maxOpcodes
        && a.maxStackDepth == b.maxStackDepth && a.maxMarkDepth == b.maxMarkDepth
        && a.maxMemoEntries == b.maxMemoEntries && a.maxIntegerBytes == b.maxIntegerBytes
        && a.maxNodes == b.maxNodes;
}

// A GLOBAL (or STACK_GLOBAL, INST) the pickle references, where it does.
struct GlobalReference {
    std::string module;
    std::string name;
    std::uint64_t offset = 0; // of the opcode, within the pickle
};

// An opcode that changes a GLOBAL itself rather than a value the pickle built: APPEND to
// sys.path, SETITEM on os.environ, BUILD setting a class's attributes. The process that loads the
// pickle changes, whatever the global is.
struct GlobalMutation {
    std::string opcode; // "APPEND", "SETITEM", "BUILD", ...
    std::string module;
    std::string name;
    std::uint64_t offset = 0;
};

struct PickleRun {
    NodeId root = kNoNode; // the value STOP returned; kNoNode when the pickle did not finish
    std::uint64_t endOffset = 0; // one past the STOP opcode (or where reading stopped)
    int protocol = 0; // from PROTO, 0 when absent
    std::uint64_t opcodeCount = 0;
    std::bitset<256> opcodesSeen; // for the weights_only verdict
    std::vector<GlobalReference> globals;
    std::vector<GlobalMutation> globalMutations;
    std::vector<std::uint64_t> persistentIdOffsets; // offsets of BINPERSID/PERSID opcodes
    // The first Python 2 string (STRING/BINSTRING/SHORT_BINSTRING) that is not UTF-8, which
    // torch.load's default encoding='utf-8' refuses: its opcode's offset and Python's reason.
    std::optional<std::uint64_t> undecodableStringOffset;
    std::string undecodableStringError;
    // Set when the pickle could not be read to its STOP: what went wrong, where.
    std::optional<std::string> error;
    std::uint64_t errorOffset = 0;
    // The error is one of this reader's limits (size, depth, count, cancel, memory), not a fault
    // CPython stops at too: a loader would read on.
    bool stoppedAtLimit = false;
    // What was on the stack when an error stopped the machine: partial containers that may still
    // hold tensors worth showing (salvage).
    std::vector<NodeId> stackAtError;

    bool complete() const { return !error && root != kNoNode; }
};

// A symbolic pickle virtual machine for protocols 0-5. It never imports or calls anything:
// GLOBALs become names and REDUCE/NEWOBJ/BUILD build inert nodes in a PickleGraph. Several pickles
// (e.g. the legacy format's header, main object and key list) can be run into one graph.
class PickleMachine {
public:
    explicit PickleMachine(PickleLimits limits = {})
        : m_limits(std::move(limits))
    { }

    // Runs one pickle starting at data[0], stopping at its STOP opcode.
    PickleRun run(ByteView data, PickleGraph& graph) const;

private:
    PickleLimits m_limits;
};

} // namespace ckpt
