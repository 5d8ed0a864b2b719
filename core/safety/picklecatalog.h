// SPDX-License-Identifier: MIT
#pragma once

#include "core/safety/torchgeneration.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ckpt {

// The vetted list behind the safety verdict: globals known to be inert (calling them builds data and
// nothing else), each with the reason it is inert and whether torch's default weights_only
// allowlist already holds it. Everything not in here is "cannot verify; treat as dangerous" — an
// allowlist, never a blocklist, because blocklists miss gadgets (hostile-techniques.md §C).
struct InertGlobal {
    std::string reason;
    // On the list torch.load(weights_only=True) consults in a process that imported torch and
    // nothing else (read from real torch: torchallowlists.inc).
    bool torch113Default = false; // torch 1.13's _get_allowed_globals()
    bool torch2Default = false; // torch 2.x's _get_allowed_globals() and add_safe_globals list
    // False for the few vetted names whose add_safe_globals would let other code in (a nested
    // loader whose bytes the verdict rated itself): no add_safe_globals call is ever offered for them.
    bool offerAllowlist = true;
};

// Looks a global up by its Python 3 name (map Python 2 names first with python3Name).
std::optional<InertGlobal> findInertGlobal(std::string_view module, std::string_view name);

// On the list torch.load(weights_only=True) of that generation consults in a process that has
// made `imports` (the exact lists real torch holds: torchallowlists.inc, generated from torch).
bool onTorchDefaultAllowlist(
    std::string_view path, TorchGeneration generation, const TorchImports& imports = {});

// Every name on some list of torchallowlists.inc (either torch, any state), sorted: for the test that
// holds the table to real torch.
std::vector<std::string_view> everyTorchAllowlistName();

// The one import (of growingTorchImports()) after which torch 2.x's list holds `path` when a plain
// `import torch` does not: "torch.distributed.tensor" for DTensor.
std::optional<std::string> torchImportThatAllows(std::string_view path);

// Python 2 names as _compat_pickle maps them (CPython's unpickler): __builtin__.set is builtins.set.
std::pair<std::string, std::string> python3Name(const std::string& module, const std::string& name);
// Python 2 names as torch 2.x's weights-only unpickler maps them (torch._utils IMPORT_MAPPING and
// NAME_MAPPING, from real torch): fewer than _compat_pickle (exceptions.WindowsError stays).
std::pair<std::string, std::string> torch2Python3Name(const std::string& module, const std::string& name);

// torch 2.x: the modules whose globals are refused whatever the lists say (_blocklisted_modules),
// and the message of its own the unpickler gives for some names on no list.
bool torch2BlocksModule(std::string_view module);
std::optional<std::string_view> torch2SpecialMessage(std::string_view path);

// A third-party class known to subclass a vetted one (Megatron-core's MCoreMetadata subclasses
// torch.distributed.checkpoint's Metadata): the vetted base, to say so. The subclass itself stays
// unverified: its own code (__setstate__, __post_init__, properties) is not vetted.
std::optional<std::string> vettedBaseOf(std::string_view path);

// Why a global is known to be dangerous ("runs a shell command"), for the names that published
// exploits use; nothing for names the catalog knows nothing about (those are "unknown"). Dotted
// names are searched component by component: "pathlib.os.system" reaches os.
std::optional<std::string> knownDanger(std::string_view qualifiedName);

// Loaders that unpickle a bytes argument: the verdict rates those bytes as a pickle of their own.
bool isNestedPickleLoader(std::string_view qualifiedName);

} // namespace ckpt
