// SPDX-License-Identifier: MIT
#pragma once
// triage(): every judgement of one checkpoint in one report, most severe first. The judgements each
// have a header of their own (below); this one includes them all because TriageReport holds their
// results and callers that run one of them (the app's load-simulation bar, savecopy's shard rating)
// reach it through here. Defined in triage.cpp.

#include "core/base/finding.h"
#include "core/devices/machineinventory.h"
#include "core/safety/pickleverdict.h"
#include "core/safety/shardsafety.h"
#include "core/safety/torchgeneration.h"
#include "core/triage/globalmoves.h"
#include "core/triage/integritychecks.h"
#include "core/triage/loadsimulation.h"
#include "core/triage/shardchecks.h"
#include "core/triage/weightsonlyverdict.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;

struct TriageOptions {
    std::optional<MachineInventory> target; // the machine torch.load would run on (default: this one)
    MapLocation mapLocation;
    // Python modules (and their submodules) importable where torch.load runs, beyond the standard
    // library, torch and numpy (`check --importable models`); "__main__" declares the saving
    // script's classes defined.
    std::vector<std::string> importableModules;
    // The torch whose torch.load is simulated (`check --torch`): nullopt simulates both 1.13 and
    // 2.6+ and judges weights_only as 2.6+ does; and what its process has imported (`--assume-imports`).
    std::optional<TorchGeneration> torch;
    TorchImports imports;
    bool values = false; // compute value statistics (through libtorch; see torchbridge)
    std::vector<KnownRecordCrc> knownRecordCrcs;
    // false for a checkpoint read where it lies (an http(s) URL): the CRC of every record would
    // download every tensor byte, so a finding says it was not checked instead.
    bool checkRecordCrcs = true;
    // The weights_only judgement of the checkpoint's own pickles, shared with another caller that
    // needs it (the app's load simulation bar); none: judged here.
    std::shared_ptr<SharedWeightsOnlyVerdicts> sharedVerdicts;
    // The safety verdict and the known-move findings, judged from the pickle graph before the
    // caller released it (judgePickleGraphAhead); none: judged here.
    std::shared_ptr<const SafetyVerdict> judgedSafety;
    std::shared_ptr<const std::vector<Finding>> judgedGlobalMoves;
    // The weights-only verdict of the torch and imports asked for, judged the same way: the
    // checkpoint judged may have been read into another object than the one triaged, which
    // sharedVerdicts would judge again.
    std::shared_ptr<const WeightsOnlyVerdict> judgedWeightsOnly;
};

struct TriageReport {
    std::vector<Finding> findings; // every check's findings, most severe first
    std::vector<LoadSimulation> loadSimulations; // one per torch generation
    WeightsOnlyVerdict weightsOnly;
    SafetyVerdict safety; // every pickle a loader could run, rated allowlist-first (pickleverdict.h)
    // 0 clean, 1 warnings, 2 errors, 4 dangerous or cannot verify (before all others: loading it may
    // run code); 3 "could not read" is decided by the caller.
    int exitCode() const;
};

TriageReport triage(const Checkpoint& checkpoint, const TriageOptions& options);

// Judges into `options` all that triage() reads of the checkpoint's pickle graph (the safety,
// weights-only and known-move verdicts), so that the caller may release the graph
// (PickleGraph::release) before triage() allocates the rest: the load simulation, the report. It
// reads no record: `check` calls it while the checkpoint is read (ReadOptions::judgeGraph).
void judgePickleGraphAhead(const Checkpoint& checkpoint, TriageOptions& options);

} // namespace ckpt
