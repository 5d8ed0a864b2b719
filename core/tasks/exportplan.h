// SPDX-License-Identifier: MIT
#pragma once
// "Save the plan" for a folder whose format records no device (safetensors shards, a DCP
// checkpoint), once for both faces: there is no copy to write, so the plan is exported into a new
// folder as device_map.json (device_map and max_memory for from_pretrained, exportDeviceMap) and
// load_with_device_map.py, the one loader script. `ckpt-inspect remap DIR -o OUT`, `plan DIR
// --save OUT` and the app's File > Save Remapped Copy… reach it through saveRemappedCopy
// (core/tasks/savecopy.h); core/report/exportplanreport.h renders the outcome. Never into the
// input folder, a folder inside it, or over any file of the input. The task never prints and
// never asks.
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;
struct MachineInventory;
class PlacementPlan;

struct ExportPlanRequest {
    const Checkpoint* input = nullptr; // a folder (Checkpoint::shardSet) of safetensors or DCP shards
    const PlacementPlan* plan = nullptr;
    const MachineInventory* machine = nullptr; // max_memory's capacities; may be null
    std::string outputFolder; // created when missing
};

enum class ExportPlanStatus {
    Exported, // both files are in outputFolder
    NotExportOnly, // the input can be rewritten (a file, .bin shards): the save task writes a copy
    RefusedIntoInput, // outputFolder is the input folder, inside it, or a file there is the input's
    Failed, // creating the folder or writing a file failed (refusal says why)
};

struct ExportPlanOutcome {
    ExportPlanStatus status = ExportPlanStatus::Failed;
    std::string input; // the input folder
    std::string outputFolder;
    std::string layout; // shardLayoutName: "hf-safetensors-shards", "dcp"
    std::string why; // why the plan is exported and nothing rewritten (the format records no device)
    std::string refusal; // refused or failed: the reason, one sentence
    std::vector<std::string> exported; // the paths written: device_map.json, load_with_device_map.py
    std::string deviceMapJson; // what device_map.json holds
    std::string loaderScript; // what load_with_device_map.py holds

    bool ok() const { return status == ExportPlanStatus::Exported; }
    int exitCode() const { return ok() ? 0 : 2; } // ckpt-inspect's exit status
};

// Why saving `input` exports its plan instead of rewriting files (safetensors and DCP folders record
// no device), or nothing when a copy can be written.
std::optional<std::string> whyExportOnly(const Checkpoint& input);

// The one "never into the input" rule for an output folder written from an input folder: why
// `outputFolder` may not be used (it is the input folder, through a link or `..` too, or a folder
// inside it), or nothing. Saving a run folder asks it too (core/tasks/savecopy.h).
std::optional<std::string> whyOutputIntoInputFolder(
    const std::string& inputFolder, const std::string& outputFolder);

// Exports the plan (see above). Writes nothing unless it can write both files: every refusal is
// decided before the folder is created.
ExportPlanOutcome exportPlan(const ExportPlanRequest& request);

} // namespace ckpt
