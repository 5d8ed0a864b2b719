// SPDX-License-Identifier: MIT
#pragma once
// Which torch a judgement stands for: its generation and what its process has imported. The safety
// verdict's catalog says which torch default list holds a vetted class (picklecatalog.h) and the
// load triage simulates that torch's torch.load (core/triage), so both rooms name a torch the same
// way; the definitions live beside the lists they read (picklecatalog.cpp, torchallowlists.inc).

#include "core/base/expected.h"

#include <string>
#include <vector>

namespace ckpt {

// The torch versions whose behaviour the simulation knows: 1.13 (weights_only off by default, a
// small allowlist) and 2.6 and later (weights_only on by default, torch-format.md §6).
enum class TorchGeneration { Torch113, Torch26Plus };
const char* torchGenerationName(TorchGeneration generation); // "torch 1.13", "torch 2.6+"

// What the process that calls torch.load has imported beyond `import torch`: torch 2.x's
// weights_only list grows as torch's own modules are imported (`import torch.distributed.tensor`
// allows DTensor; torchallowlists.inc, read from real torch, says which import adds what).
// `import torch` itself is always assumed: torch.load needs it.
struct TorchImports {
    std::vector<std::string> modules; // sorted, each one of growingTorchImports()
    // "torch" (the default), "torch,torch.distributed.tensor", "all" (every import that grows the
    // list); an error names the imports that do.
    static Expected<TorchImports> parse(const std::string& text);
    std::string text() const; // "torch" or "torch,torch.distributed.tensor": what parse reads back
    bool operator==(const TorchImports&) const = default;
};
// The imports that grow torch 2.x's list (from real torch), for the CLI's help and the app's chooser.
const std::vector<std::string>& growingTorchImports();
// The torch a simulation stands for, for headlines: "torch 2.6+, lists of 2.14.1+debian, after
// import torch, torch.distributed.tensor" or "torch 1.13, lists of 1.13.0a0" (the torch the
// lists were read from).
std::string simulatedTorchName(TorchGeneration generation, const TorchImports& imports);

} // namespace ckpt
