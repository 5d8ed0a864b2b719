// SPDX-License-Identifier: MIT
#pragma once

#include "core/triage/triage.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ckpt {

// The vetted list behind the safety verdict: globals known to be inert (calling them builds data and
// nothing else), each with the reason it is inert and whether torch's default weights_only
// allowlist already holds it. Everything not in here is "cannot verify; treat as dangerous" — an
// allowlist, never a blocklist, because blocklists miss gadgets (hostile-techniques.md §C).
struct InertGlobal {
    std::string reason;
    bool torch113Default = false; // on torch 1.13's _get_allowed_globals()
    bool torch2Default = false; // on torch 2.x's _get_allowed_globals() (printed from torch 2.14)
    // False for the few vetted names whose add_safe_globals would let other code in (a nested
    // loader whose bytes the verdict rated itself): no add_safe_globals call is ever offered for them.
    bool offerAllowlist = true;
};

// Looks a global up by its Python 3 name (map Python 2 names first with python3Name).
std::optional<InertGlobal> findInertGlobal(std::string_view module, std::string_view name);

// On torch's default weights_only allowlist of that generation (the exact lists torch prints).
bool onTorchDefaultAllowlist(std::string_view path, TorchGeneration generation);

// Python 2 names as torch 2.x (and _compat_pickle) map them: __builtin__.set is builtins.set.
std::pair<std::string, std::string> python3Name(const std::string& module, const std::string& name);

// Why a global is known to be dangerous ("runs a shell command"), for the names that published
// exploits use; nothing for names the catalog knows nothing about (those are "unknown"). Dotted
// names are searched component by component: "pathlib.os.system" reaches os.
std::optional<std::string> knownDanger(std::string_view qualifiedName);

// Loaders that unpickle a bytes argument: the verdict rates those bytes as a pickle of their own.
bool isNestedPickleLoader(std::string_view qualifiedName);

} // namespace ckpt
