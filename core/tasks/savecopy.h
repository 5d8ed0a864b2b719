// SPDX-License-Identifier: MIT
#pragma once
// "Save a remapped copy", once for both faces: `ckpt-inspect remap` and the app's File > Save
// Remapped Copy run this task and render its outcome (core/report/savecopyreport.h). The policy
// lives here and nowhere else: what may be remapped, what is refused and why, and what the
// explicit override (`--allow-dangerous`, the app's "I trust this file: remap anyway") allows.
//
// A remap adds no code: the copy's pickle is the input's with only the device tags (and any
// renames asked for) changed, every storage byte for byte. So a file rated dangerous or "cannot
// verify" (a whole model saved with torch.save(model): its classes come from the user's package)
// is refused without the override, and with it the remapped copy is written, rated again before
// it takes its name, and must rate exactly as dangerous as the input: the same unsafe callables,
// the same calls. The task never prints and never asks.
#include "core/base/finding.h"
#include "core/safety/pickleverdict.h"
#include "core/tasks/exportplan.h"
#include "core/write/remapwriter.h"
#include "core/write/shardedwriter.h"

#include <optional>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;
struct MachineInventory;
class PlacementPlan;

struct SaveCopyRequest {
    const Checkpoint* input = nullptr; // a file, or a folder of shards (Checkpoint::shardSet)
    const PlacementPlan* plan = nullptr;
    std::string outputPath; // a file, or a new folder for shards
    // Where the plan is exported instead (safetensors, DCP): max_memory's capacities; may be null.
    const MachineInventory* machine = nullptr;
    // The explicit override: the person trusts this file, so a remapped copy of a file rated
    // dangerous (or that cannot be verified) is written, exactly as dangerous.
    bool allowDangerous = false;
    bool verify = true; // read the copy back (always, for a dangerous input: its promise is exact)
    std::vector<GlobalRename> renames;
    WriteProgress progress; // may cancel
};

// What a save of this input would do, judged before anything is written (the app asks its
// question from this; saveRemappedCopy judges the same way).
struct SaveCopyAssessment {
    SafetyVerdict inputSafety; // every shard of a folder, else the file
    bool folder = false;
    // Safetensors and DCP folders record no device: the plan is exported (a device_map), not
    // written into a copy. The reason, when so.
    std::optional<std::string> exportOnly;
    // Why this input cannot be remapped whatever the override (no checkpoint, a format that records
    // no device, a damaged pickle or storage, a shard missing), or nothing.
    std::optional<std::string> cannotRemap;
    // A run folder judged with its plan: the verdict of the files the plan rewrites, and the files
    // rated dangerous (or "cannot verify") that the save copies byte for byte. Copying a file runs
    // nothing of it and changes none of its bytes, so only the rewritten files ask for the override;
    // inputSafety still rates every file, and the copy says what it carries.
    std::optional<SafetyVerdict> rewrittenSafety;
    std::vector<std::string> dangerousCopiedUnchanged;
    // What the override is judged on: the rewritten files' verdict where known, else the input's.
    const SafetyVerdict& gatingSafety() const { return rewrittenSafety ? *rewrittenSafety : inputSafety; }
    // True when only the override lets a copy be written.
    bool needsOverride() const { return gatingSafety().dangerous() && !exportOnly && !cannotRemap; }
};
// `plan` (may be null): a run folder's save rewrites only the files whose devices it changes, and
// only those are judged for the override.
SaveCopyAssessment assessSaveCopy(const Checkpoint& input, const PlacementPlan* plan = nullptr);

enum class SaveCopyStatus {
    Written, // the remapped copy (file or folder) is under outputPath
    RefusedDangerous, // rated dangerous or cannot verify, and no override: nothing written (exit 4)
    CannotRemap, // this input cannot be remapped (cannotRemap says why): nothing written (exit 2)
    ExportOnly, // safetensors / DCP folder: the plan is exported instead (exportOnly says why, exported what)
    Failed, // writing, verifying or rating the copy failed: nothing under outputPath (exit 2)
};
const char* saveCopyStatusName(SaveCopyStatus status); // "written", "refused-dangerous", ...

struct SaveCopyOutcome {
    SaveCopyStatus status = SaveCopyStatus::Failed;
    std::string input; // the file or folder
    std::string outputPath;
    SaveCopyAssessment assessment;
    std::string why; // refused, cannot remap, export only, failed: the reason in one sentence
    std::optional<RemapResult> file; // written: a single file
    std::optional<ShardedRemapResult> folder; // written: a folder of .bin shards
    // ExportOnly: the plan exported into outputPath (core/tasks/exportplan.h), or refused there.
    std::optional<ExportPlanOutcome> exported;
    // A dangerous input written under the override: the copy's own verdict, taken from the written
    // bytes before the rename, rated exactly as the input's.
    std::optional<SafetyVerdict> copySafety;
    std::vector<Finding> findings; // what the faces should say besides (e.g. "copy-as-dangerous")

    bool written() const { return status == SaveCopyStatus::Written; }
    bool carriesDanger() const { return written() && assessment.inputSafety.dangerous(); }
    // ckpt-inspect's exit status: 0 written or the plan exported, 4 refused as dangerous, 2 anything else.
    int exitCode() const;
};

// The outcome of a save that stops before writing anything, judged exactly as saveRemappedCopy
// judges (refused as dangerous without the override, cannot remap, export only), or nothing when
// it would go on to write. The app asks its question from this before it starts the job.
std::optional<SaveCopyOutcome> refuseSaveCopy(
    const Checkpoint& input, bool allowDangerous, bool renaming = false, const PlacementPlan* plan = nullptr);

// Runs the save. Refuses (nothing written) unless the input can be remapped and is not rated
// dangerous, or the override is given; for an ExportOnly folder exports the plan (exportPlan)
// into outputPath instead.
SaveCopyOutcome saveRemappedCopy(const SaveCopyRequest& request);

// How two verdicts differ in what loading would run: the rating, the unsafe callables (names), the
// calls each makes (where the input's verdict spells them out), and the count of pickles that
// cannot be verified; nothing when they agree. `renames` (asked for with the copy) are applied to
// the input's names and calls first: a renamed class is the same callable under its new name.
std::optional<std::string> dangerDiffers(
    const SafetyVerdict& input, const SafetyVerdict& copy, const std::vector<GlobalRename>& renames = {});

} // namespace ckpt
