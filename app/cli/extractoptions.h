// SPDX-License-Identifier: MIT
#pragma once
// What extract and convert share on the command line: the --select and --root options, and the
// dangerous callables named among the globals not carried.
#include "core/model/checkpoint.h"
#include "core/safety/pickleverdict.h"
#include "core/triage/triage.h"
#include "core/write/extractwriter.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>

namespace cli {

// The writers list the globals of the pickle they read. A hostile file may hide a pickle where
// that reader does not look (before the zip, in a second archive root, a duplicate member, a
// storage record): the safety verdict, which scans every pickle in the file, names its callables,
// and they are not carried either. Adds those `globals` lacks.
inline void addUnsafeNotCarried(const ckpt::Checkpoint& checkpoint, std::vector<std::string>& globals)
{
    const ckpt::SafetyVerdict safety
        = checkpoint.shardSet ? ckpt::rateShardSafety(checkpoint) : ckpt::ratePickleSafety(checkpoint);
    for (const ckpt::UnsafeCallable& callable : safety.unsafe)
        if (std::find(globals.begin(), globals.end(), callable.name) == globals.end())
            globals.push_back(callable.name);
}

// What extract and convert keep: --select PREFIX... and --root PATH.
inline void addSelectionOptions(CLI::App& command, ckpt::ExtractOptions& options)
{
    command.add_option("--select", options.select, "keep only the tensors under PREFIX; repeatable")
        ->type_name("PREFIX");
    command.add_option("--root", options.root, "the object in the file that holds the state_dict")
        ->type_name("PATH");
}

} // namespace cli
