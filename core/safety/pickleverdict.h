// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;
class MappedFile;

// The safety verdict: a static, allowlist-first analysis of every pickle a loader could run from a
// file — whatever the reader made of it. Nothing is ever imported or called.
//
// Three ratings, never two: known inert (every global is a vetted inert class that torch's default
// weights_only list holds), needs allowlisting (only vetted inert classes that torch's default list
// lacks: the only case an add_safe_globals call is offered), and dangerous or unknown (anything
// else, any pickle not read to its end: "cannot verify; treat as dangerous").
enum class PickleSafety {
    NoPickle, // safetensors, a PNG, an LFS pointer: nothing a loader would unpickle
    KnownInert,
    NeedsAllowlist,
    DangerousOrUnknown,
};
const char* pickleSafetyName(
    PickleSafety safety); // "no-pickle", "known-inert", "needs-allowlisting", "dangerous"

// A callable the verdict cannot vouch for.
struct UnsafeCallable {
    std::string name; // "os.system", "pathlib.os.system", "copyreg extension code 1234"
    std::string reason; // why it is dangerous, or why it cannot be verified
    bool knownDangerous = false; // a known gadget (not merely unknown)
    std::string where; // "archive/data.pkl, byte 42"
    std::string call; // the call as it would run, when the pickle makes it: "os.system('touch x')"
};

// A vetted inert global torch's default weights_only list lacks.
struct AllowlistCandidate {
    std::string name; // "argparse.Namespace"
    std::string reason;
    bool torch113Default = false;
    bool torch2Default = false;
    bool offerAllowlist = true;
};

// The bytes of one rated pickle, for checks that hold them against the bytes a real reader hands
// its unpickler (tests/tools/container_differential.py): its first `length` bytes, to its STOP or
// to where reading stopped, whatever container or wrapper they came out of.
struct RatedPickleBytes {
    std::string label; // as in SafetyVerdict::pickles
    std::uint64_t length = 0;
    std::uint32_t crc32 = 0;
    bool complete = false; // read to its STOP
};

struct SafetyVerdict {
    PickleSafety rating = PickleSafety::NoPickle;
    std::string headline; // one line for the top of `info`, `check` and the app's banner
    std::vector<UnsafeCallable> unsafe; // dangerous or unknown callables, in the order found
    std::vector<std::string> cannotVerify; // pickles not read to their end, and why (which limit)
    std::vector<AllowlistCandidate> allowlist; // vetted inert globals some torch default list lacks
    std::vector<std::string> pickles; // every pickle rated: "archive/data.pkl (bytes 0-812)"
    std::vector<RatedPickleBytes> pickleBytes; // the same pickles' bytes, as length and CRC-32
    std::vector<std::string> notes; // wrappers, zip tricks (duplicate names, flags, name mismatches)
    std::string addSafeGlobals113; // only vetted names; empty when torch 1.13 needs none
    std::string addSafeGlobals2; // the same for torch 2.x
    bool dangerous() const { return rating == PickleSafety::DangerousOrUnknown; }
};

struct SafetyScanLimits {
    std::uint64_t maxUnpackedBytes = 2ull << 30; // gzip/bz2/xz/zstd/7z and deflated members, in all
    int maxNesting = 6; // wrappers, archives and pickles inside pickles
    std::uint64_t maxTrailingScan = 64ull << 20; // bytes after the last pickle searched for more
};

// Rates the whole file. `bytes` is the file as it is on disk.
SafetyVerdict ratePickleSafety(ByteView bytes, const SafetyScanLimits& limits = {});
// The same for an opened checkpoint (its mapped file); NoPickle when the file is not at hand. Every
// pickle the checkpoint's reader ran is rated too (one judgement of each pickle, whichever part of
// the tool shows it): one the scan did not rate itself is rated as the reader read it, with a note. Where
// the scan comes to a pickle the reader already ran, over the same bytes of the same mapping under
// the same limits, to its STOP, it rates the reader's run and nodes instead of running it again.
// `readerRunsReused`, when given, counts the runs rated that way (for tests).
SafetyVerdict ratePickleSafety(const Checkpoint& checkpoint, std::size_t* readerRunsReused = nullptr);
// The same for a file whose reader ran no pickle (a safetensors shard read into its set, which
// has no model of its own): the whole mapping rated, as for a checkpoint of it.
SafetyVerdict ratePickleSafety(const MappedFile& file);
// Rates a global some other reading of the file met (`where` says where) into `verdict`, judged as
// the scan judges its own, and concludes the verdict again: a part of the tool that finds a global
// the verdict lacks hands it over rather than judging it apart (triage does, for the weights-only walk).
void rateFurtherGlobal(
    SafetyVerdict& verdict, const std::string& module, const std::string& name, const std::string& where);
// The verdict made with no shortcut at all: every stackless opcode pass in full, every pickle run
// by the scanner itself. Slower, never different: tests hold the two functions above to it.
SafetyVerdict ratePickleSafetyReference(ByteView bytes, const SafetyScanLimits& limits = {});

} // namespace ckpt
