// SPDX-License-Identifier: MIT
#pragma once

#include "core/safety/torchgeneration.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;

// Where the code behind a pickled GLOBAL comes from, which decides whether torch.load with
// weights_only=False can import it wherever the file is opened.
enum class ImportProvider {
    StandardLibrary, // always importable
    Torch, // torch itself
    Declared, // a module the caller said is importable where torch.load runs (`--importable`)
    ThirdParty, // a library that must be installed (numpy, transformers, omegaconf, ...)
    UserCode, // the saver's own package (`models.yolo`): importable only from its source tree
    MainScript, // `__main__`: the class had to be defined in the script that saved the file
};
const char* importProviderName(ImportProvider provider); // "standard library", "user code", ...

// One module the unpickler must import (Unpickler.find_class) for torch.load(weights_only=False).
struct ImportRequirement {
    std::string module; // as named in the pickle ("models.yolo", "__main__")
    std::vector<std::string> names; // the attributes taken from it ("Model")
    ImportProvider provider = ImportProvider::UserCode;
    bool importable = false; // assumed importable where torch.load runs
    std::string record; // the pickle of its first use
    std::uint64_t offset = 0; // of its first GLOBAL in that pickle
};

// The modules a weights_only=False load imports, in the order the unpickler meets them. Storage
// classes are not imported (torch's find_class maps any name containing "Storage"), nor Python 2
// names that pickle's fix_imports maps to the standard library. `importable` lists modules (and
// their submodules) the caller declares present; the standard library, torch and numpy are assumed.
std::vector<ImportRequirement> importRequirements(
    const Checkpoint& checkpoint, const std::vector<std::string>& importable = {});

// The exception torch.load raises when `requirement` cannot be imported, as Python prints it
// ("ModuleNotFoundError: No module named 'models'"). `__main__` classes: Python 3.11 (torch 1.13 on
// Debian 12) names the running script, given here as <your script>; Python 3.14 (torch 2.14) says
// "module '__main__' has no attribute 'Net'".
std::string missingImportMessage(const ImportRequirement& requirement, TorchGeneration generation);

// What makes `requirement` importable, for a person.
std::string importFix(const ImportRequirement& requirement);

} // namespace ckpt
