// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"
#include "core/base/expected.h"
#include "core/format/zipwriter.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ckpt {

class AtomicOutputFile;
struct Checkpoint;
class PlacementPlan;

// A class or function the copy names under another path: "numpy.core.multiarray.scalar" ->
// "numpy._core.multiarray.scalar" (one global), or "models" -> "mypackage.models" (a module path:
// every global in that module or below it).
struct GlobalRename {
    std::string from;
    std::string to;
    // Parses the command line's OLD=NEW.
    static Expected<GlobalRename> parse(const std::string& text);
    // The new (module, name) of a global, or nothing when the rename does not apply to it. A `from`
    // equal to "module.name" renames that global (`to` split at its last dot); a `from` equal to the
    // module or a dotted prefix of it replaces that prefix of the module path.
    std::optional<std::pair<std::string, std::string>> apply(
        const std::string& module, const std::string& name) const;
};

struct RemapOptions {
    WriteProgress progress; // may cancel
    bool verifyAfterWriting = true; // re-open the output, check tags and storage bytes (CRC)
    std::vector<GlobalRename> renameGlobals; // applied in order; the first that applies wins
    // Called with the input and the finished, flushed copy under its temporary name, after the
    // verification and before the rename: an error refuses the copy (nothing takes the target's
    // name). The save task rates the copy of a dangerous input here (core/tasks/savecopy.h).
    std::function<Status(const Checkpoint& input, const std::string& writtenPath)> beforeRename;
};

// What happened to one storage.
struct RemappedStorage {
    std::string key; // in the input
    std::string outputKey; // in the output (legacy inputs get torch.save's "0", "1", ...)
    std::optional<std::string> recorded;
    std::optional<std::string> planned;
};

struct RemapResult {
    std::string outputPath;
    std::vector<RemappedStorage> storages;
    std::vector<std::string>
        globalsRenamed; // "numpy.core.multiarray.scalar -> numpy._core.multiarray.scalar"
    std::vector<std::string> renamesUnused; // renames that matched no global of the file (OLD=NEW)
    std::uint64_t recordsCopied = 0; // byte for byte
    std::uint64_t recordsRewritten = 0; // pickles (and a fresh serialization id)
    std::uint64_t recordsInflated = 0; // of recordsCopied: deflated storages written stored
    std::uint64_t bytesWritten = 0;
    double seconds = 0;
    bool verified = false;
    // "moved 45 storages cuda:0 -> cpu, 48 cuda:1 -> cpu; 1.6 MiB written in 0.02 s; verified"
    std::string summary() const;
};

// The copy may name only globals the input named, byte for byte (plus torch.device where the
// writer itself writes a torch.device tag): the writer changes device tags and nothing else, so a
// new name means the emitter wrote something the input did not say (issue 9: a STACK_GLOBAL name
// holding a newline came back as a GLOBAL line calling posix.system). `rewrittenPickle` is read
// back by the same machine that read the input. writeRemappedCopy runs this on every pickle it
// rewrites, whether or not verification is asked for, before the output is renamed. Globals the
// user renamed on purpose (--rename-global) are passed in `renamedTo`: only those names are new.
Status checkRewrittenGlobals(const Checkpoint& input, const std::string& record, ByteView rewrittenPickle,
    bool torchDeviceWritten, const std::set<std::pair<std::string, std::string>>& renamedTo = {});

// Why `checkpoint` cannot be remapped at all (its format records no device, it is no checkpoint, a
// pickle or a storage is damaged), or nothing when writeRemappedCopy can try. Says nothing about
// safety: that is the save task's judgement (core/tasks/savecopy.h).
Status whyCannotBeRemapped(const Checkpoint& checkpoint);

// Writes a copy of `checkpoint` whose recorded devices are the plan's, and nothing else changed:
// records in the input's order and names with torch.save's framing, storage records copied byte
// for byte (their CRC reused), pickles re-emitted with only the device tags replaced, a fresh
// .data/serialization_id where the input had one. Legacy inputs are written in the zip format.
// Written atomically next to the target; never over the input.
Expected<RemapResult> writeRemappedCopy(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const std::string& outputPath, const RemapOptions& options = {});

// The last steps of every remapped copy once it is written and read back (the writers of each
// format end here): the caller's check of the written file (RemapOptions::beforeRename), the
// rename onto the target, and the time taken since `start`.
Expected<RemapResult> finishRemappedCopy(const Checkpoint& checkpoint, const RemapOptions& options,
    AtomicOutputFile& output, RemapResult result, std::chrono::steady_clock::time_point start);

} // namespace ckpt
