// SPDX-License-Identifier: MIT
#pragma once
// The weights-only verdict: what torch.load(weights_only=True) of torch 1.13 and of 2.6+ would say
// about a checkpoint (torch-format.md §6: §6.2 the allowed globals, §6.3 the opcodes, §6.4 the
// messages), found by walking the pickles as torch's weights-only unpickler reads them, without
// unpickling anything. Not the safety verdict (core/safety/pickleverdict.h), which rates what a
// loader would run whatever torch's lists say. Defined in weightsonlyverdict.cpp.

#include "core/safety/torchgeneration.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;

// Every GLOBAL of the pickles, classified against torch's weights-only unpickler.
enum class GlobalVerdict {
    Allowed, // accepted by default
    NeedsAllowlist, // a harmless class torch rejects until add_safe_globals([...])
    Blocked, // runs code or reaches the system: os, subprocess, eval, getattr, ...
    Unknown, // a third-party class the tool knows nothing about
};
const char* globalVerdictName(GlobalVerdict verdict);

struct GlobalClassification {
    std::string name; // "torch.nn.modules.linear.Linear"
    GlobalVerdict verdict = GlobalVerdict::Unknown;
    std::string reason;
    std::uint64_t offset = 0; // first occurrence, within its pickle
    std::string record; // the pickle it is in
    std::string module, attribute; // as written in the pickle ("__builtin__", "eval")
    // The name the safety verdict lists it under when it is not vetted (the Python 3 spelling,
    // "builtins.eval"): every Blocked or Unknown global is among its unsafe callables (triage()).
    std::string safetyName;
};

enum class SafetyRating {
    LoadsWithWeightsOnly, // torch.load(weights_only=True) accepts it
    NeedsAllowlist, // only harmless classes stand in the way: the add_safe_globals call is given
    Dangerous, // would run code under weights_only=False
    NotApplicable, // safetensors or not a checkpoint: no pickle to judge
};
const char* safetyRatingName(SafetyRating rating);

struct WeightsOnlyVerdict {
    SafetyRating rating = SafetyRating::NotApplicable;
    TorchGeneration generation = TorchGeneration::Torch26Plus; // which allowlist was applied
    TorchImports imports; // and in which state of the process (see TorchImports)
    std::vector<GlobalClassification> globals;
    std::vector<std::string> rejectedOpcodes; // opcode names the weights-only unpickler refuses
    std::string addSafeGlobalsCall; // "torch.serialization.add_safe_globals([...])" when useful
    std::vector<std::string>
        dangerousCallChains; // "builtins.eval('__import__(\"os\")...')" quoted from the pickle
    std::string torchMessage; // the message torch.load(weights_only=True) would print, when it fails
    // Where the weights-only unpickler stops (the first rejected GLOBAL or opcode, in stream order),
    // so the load simulation can tell whether it or a storage's device fails first.
    std::optional<std::uint64_t> firstRejectionOffset;
    std::string firstRejectionRecord;
};

WeightsOnlyVerdict judgeWeightsOnly(
    const Checkpoint& checkpoint, TorchGeneration generation, const TorchImports& imports = {});

// One checkpoint's judgements shared by every caller that needs the same one: the app's triage and
// its load simulation bar start on two threads as a file opens, and judging the pickle of a million
// tensors costs half a second. The first caller of a generation and imports judges; another asking
// for the same meanwhile waits for that answer instead of judging again. Judgements of another
// checkpoint than the first one asked about are made and not kept.
class SharedWeightsOnlyVerdicts {
public:
    std::shared_ptr<const WeightsOnlyVerdict> get(
        const Checkpoint& checkpoint, TorchGeneration generation, const TorchImports& imports = {});
    // How many times it was asked, and how many judgements that took.
    std::size_t asked() const;
    std::size_t judged() const;

private:
    mutable std::mutex m_mutex;
    std::size_t m_asked = 0, m_judgements = 0;
    const Checkpoint* m_checkpoint = nullptr;
    std::vector<std::shared_ptr<const WeightsOnlyVerdict>> m_judged; // a few: one per generation and imports
};

} // namespace ckpt
