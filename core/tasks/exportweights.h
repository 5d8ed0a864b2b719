// SPDX-License-Identifier: MIT
#pragma once
// "Export the weights", once for both faces: `ckpt-inspect convert`, `ckpt-inspect extract` and
// the app's File > Export Weights… run this task and render its outcome
// (core/report/extractreport.h). The policy lives here and nowhere else: which inputs (a file, a
// folder of .bin or safetensors shards, a DCP folder) give which outputs (a plain state_dict that
// torch.load(weights_only=True) opens, safetensors in one file or shards), which tensors are
// selected (--root, --select; every shard of a folder, DCP's tensor entries), what is not carried
// and why, and the dangerous callables the safety verdict names among what is left behind (a hostile
// file may hide a pickle where the state_dict reader does not look). Nothing of the input is
// executed; the task never prints and never asks.
#include "core/write/extractwriter.h"
#include "core/write/safetensorswriter.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;
class PlacementPlan;

enum class WeightsFormat {
    TorchStateDict, // one torch.save file holding an OrderedDict of name -> tensor
    Safetensors, // one .safetensors file, or a folder of shards with model.safetensors.index.json
};
// The format an output path asks for: safetensors for "*.safetensors" or when shards are asked for
// (a size), else a torch state_dict.
WeightsFormat weightsFormatFor(const std::string& outputPath, std::uint64_t maxShardBytes = 0);

// What the face offers, which decides what it may be given (the rest is the same policy).
enum class WeightsExportKind {
    Export, // the app: any readable file or folder to either format
    Convert, // `convert`: a change of format (a torch file or folder to safetensors; safetensors or a
             // folder to a torch file: from one torch file, that is `extract`)
    Extract, // `extract`: one torch state_dict from one file
};

struct ExportWeightsRequest {
    // A file, or a folder read as one (Checkpoint::shardSet). Shared: a DCP folder's tensors are
    // read from archives inside its .distcp files, which live as long as the outcome needs them.
    std::shared_ptr<const Checkpoint> input;
    // Torch output: the devices recorded for the storages (their recorded ones where null).
    const PlacementPlan* plan = nullptr;
    std::string outputPath;
    WeightsFormat format = WeightsFormat::TorchStateDict; // weightsFormatFor(outputPath) unless told
    WeightsExportKind kind = WeightsExportKind::Export;
    std::uint64_t maxShardBytes = 0; // safetensors: shards of at most this size and an index
    // The request names devices (a plan's rules, a default device): only a torch file records them.
    bool devicesGiven = false;
    // A bundle (docs/bundles.md): the checkpoint member to take, named as `info` shows it (an
    // archive's "./" may be left out). Empty: extract takes the bundle's one checkpoint member (a
    // bundle with several asks which), convert takes every member.
    std::string member;
    // --root, --select, the device for storages that record none, verify, progress (may cancel).
    ExtractOptions options;
};

// One file of the input and what of it is not in the output: a single file, each shard of a folder,
// or (DCP) the folder's .metadata with its entries.
struct ExportedInput {
    std::string file;
    std::string root; // the state_dict root taken ("" = whole file)
    std::vector<DroppedItem> droppedTensors;
    std::vector<DroppedItem> droppedObjects;
    std::vector<std::string> globalsNotCarried; // the first input's also names the verdict's callables
};

enum class ExportWeightsStatus {
    Written,
    Usage, // the request asks what this kind of export does not do: nothing written (exit 64)
    Failed, // the input cannot give these weights, or writing or verifying failed (exit 2)
};

struct ExportWeightsOutcome {
    ExportWeightsStatus status = ExportWeightsStatus::Failed;
    std::string input;
    std::string outputPath;
    WeightsFormat format = WeightsFormat::TorchStateDict;
    std::string why; // usage or failed: the reason in one sentence
    // Torch output: the state_dict written. For a folder it is written from the tensors gathered
    // into one safetensors file first (stateDictSource), so tensors that shared a storage are
    // separate copies (sharedWrittenAsCopies) and views contiguous.
    std::optional<ExtractResult> stateDict;
    std::shared_ptr<const Checkpoint> stateDictSource; // what stateDict's tensor indices refer to
    bool fromFolder = false;
    // Safetensors output, and for a folder's torch output the gathering step.
    std::optional<SafetensorsResult> safetensors;
    std::vector<ExportedInput> inputs; // what each input file left behind, in order
    // The safety verdict's callables (every pickle of the file or of each shard): never imported,
    // not in the output, named in inputs.front().globalsNotCarried too.
    std::vector<std::string> unsafeCallables;

    bool written() const { return status == ExportWeightsStatus::Written; }
    std::uint64_t tensorsWritten() const;
    std::string summary() const; // the writer's one line: "wrote 12 tensors ..."
    int exitCode() const; // ckpt-inspect's: 0 written, 64 usage, 2 failed
};

// The outcome of an export that stops before writing anything (not a checkpoint, a request this
// kind does not take), judged exactly as exportWeights judges, or nothing when it would go on: the
// CLI asks before it builds a plan for the input.
std::optional<ExportWeightsOutcome> refuseExportWeights(const ExportWeightsRequest& request);

ExportWeightsOutcome exportWeights(const ExportWeightsRequest& request);

} // namespace ckpt
