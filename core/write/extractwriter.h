// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"
#include "core/format/zipwriter.h"
#include "core/read/numpyvalue.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;
class PlacementPlan;

struct ExtractOptions {
    // The tree path whose tensors form the state_dict ("state_dict" of a Lightning file,
    // "optimizer" for an optimizer's tensors, "" for the whole file). Unset: chosen automatically
    // (see chooseStateRoot).
    std::optional<std::string> root;
    // Name prefixes, relative to the root, on whole dotted components ("encoder" keeps
    // "encoder.0.weight", not "encoder_norm.weight"). Empty: every tensor under the root.
    std::vector<std::string> select;
    // The device recorded for storages the input records none for (safetensors) and no rule moves.
    std::string defaultDevice = "cpu";
    WriteProgress progress;
    bool verifyAfterWriting = true;
    // --dtype: the storages of float64, float32, float16 and bfloat16 tensors are written as this
    // dtype ("bfloat16", "float16" or "float32"), each value as torch's .to(dtype) computes it
    // (core/write/floatcast.h); empty: every storage as it is. A shared storage is cast once and
    // stays shared.
    std::string castFloatsTo;
    // --plain-values: NumPy scalars and arrays under the root are written into the state_dict
    // (under their dotted names, after the tensors; a dict of values is looked into) instead of
    // being dropped: an integer or bool scalar as a Python int or bool, a floating or complex scalar
    // as a 0-d tensor of its dtype (torch 1.13's weights_only unpickler reads no Python float), an
    // array as a tensor of the same dtype, shape, order and bytes (uint16/32/64, which torch 1.13
    // has no tensor for, as nested lists of Python ints), so torch.load(weights_only=True) needs no
    // NumPy allowlisting in torch 1.13 or 2.x.
    bool plainValues = false;
};

struct ExtractedTensor {
    std::string name; // in the output state_dict
    std::uint32_t tensor = 0; // index into the input's tensors
    std::string outputKey; // storage key in the output
    std::string device; // recorded in the output
};

// Something of the input that is not in the output, and why.
struct DroppedItem {
    std::string path; // dotted path in the input ("hyper_parameters", "optimizer_states.0.state.0.exp_avg")
    std::string what; // "argparse.Namespace", "tensor outside the state_dict root", "int 3"
};

struct SelectedTensor {
    std::string name; // in the output state_dict
    std::uint32_t tensor = 0; // index into the input's tensors
};

// A NumPy value the state_dict takes with --plain-values.
struct SelectedNumpyValue {
    std::string name; // in the output state_dict
    std::string path; // in the input
    NumpyValue value;
};

// Which tensors of a checkpoint form its state_dict, under which names, and what is left out.
struct StateDictSelection {
    std::string root;
    std::string rootReason;
    std::vector<SelectedTensor> tensors; // in state_dict() order
    std::vector<SelectedNumpyValue> numpyValues; // --plain-values, in tree order
    std::vector<DroppedItem> droppedTensors;
    std::vector<DroppedItem> droppedObjects;
    std::vector<std::string> globalsNotCarried;
};

// The naming rules of writeExtractedStateDict below, shared with the other writers (safetensors):
// refuses inputs whose pickles are incomplete, and an empty selection.
Expected<StateDictSelection> selectStateDict(const Checkpoint& checkpoint, const ExtractOptions& options);

struct ExtractResult {
    std::string outputPath;
    std::string root; // the root used ("" = whole file)
    std::string rootReason; // why that root ("Lightning/training checkpoint: its 'state_dict'")
    std::vector<ExtractedTensor> tensors;
    std::vector<DroppedItem> droppedTensors;
    std::vector<DroppedItem> droppedObjects; // values and objects that are not tensors
    std::vector<std::string>
        globalsNotCarried; // classes and functions the input named, absent from the output
    std::uint64_t storagesWritten = 0;
    std::uint64_t bytesWritten = 0;
    double seconds = 0;
    bool verified = false;
    // --dtype: the target, the tensors written in it ("encoder.weight (float32 -> bfloat16)") and
    // the floating tensors left in their dtype, with why (float8 keeps its scales' meaning).
    std::string castTo;
    std::uint64_t storagesCast = 0;
    std::vector<std::string> tensorsCast;
    std::vector<DroppedItem> notCast;
    // --plain-values: each NumPy value written, as "path: numpy.float64 scalar -> float" (its name
    // in the output is the path relative to the root).
    std::vector<DroppedItem> plainValues;
    // "wrote 12 tensors (9 storages, 1.2 MiB) from root 'state_dict'; dropped 4 tensors, 3 objects"
    std::string summary() const;
};

// The tree path a state_dict is taken from when none is given: a whole pickled module or a plain
// state_dict is used whole; a dict that holds a "state_dict" (Lightning), "model_state_dict",
// "model" or "module" entry with tensors gives that entry. Returns the path and the reason.
std::pair<std::string, std::string> chooseStateRoot(const Checkpoint& checkpoint);

// Writes the tensors under the root as a plain state_dict: an OrderedDict of dotted name ->
// tensor that torch.load(weights_only=True) opens (torch 1.13 and later), in torch.save's zip
// format. Nothing of the input is executed or imported; every storage's bytes are copied
// unchanged (and checked by CRC after writing); tensors that share a storage in the input share
// it in the output; each storage is recorded on the plan's device (its recorded one unless a rule
// moved it; "cpu" where the input records none). Names are the ones model.state_dict() gives: a
// whole pickled module's _parameters/_buffers/_modules are transparent and a submodule reached twice
// appears under both names, like torch's state_dict.
Expected<ExtractResult> writeExtractedStateDict(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const std::string& outputPath, const ExtractOptions& options = {});

} // namespace ckpt
