// SPDX-License-Identifier: MIT
#pragma once
// What extract and convert share on the command line: the --select and --root options, and how a
// parsed command runs the export task (core/tasks/exportweights.h) and prints its outcome.
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/report/extractreport.h"
#include "core/tasks/exportweights.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

namespace cli {

// What extract and convert keep: --select PREFIX... and --root PATH.
inline void addSelectionOptions(CLI::App& command, ckpt::ExtractOptions& options)
{
    command.add_option("--select", options.select, "keep only the tensors under PREFIX; repeatable")
        ->type_name("PREFIX");
    command.add_option("--root", options.root, "the object in the file that holds the state_dict")
        ->type_name("PATH");
}

// What extract and convert write differently: --dtype (floating tensors cast as torch's .to casts)
// and --plain-values (NumPy values as plain Python numbers and tensors).
inline void addValueOptions(CLI::App& command, ckpt::ExtractOptions& options)
{
    command
        .add_option("--dtype", options.castFloatsTo,
            "write float64/float32/float16/bfloat16 tensors as this dtype, rounded as torch's .to(dtype) "
            "rounds them (shared storages cast once); float8/float4, integers and bool stay as they are")
        ->check(CLI::IsMember({"bfloat16", "float16", "float32"}))
        ->type_name("bfloat16|float16|float32");
    command.add_flag("--plain-values", options.plainValues,
        "torch output: NumPy scalars under the root written as Python numbers, NumPy arrays as tensors "
        "(same dtype, shape and values), so weights_only=True needs no allowlisting");
}

// Prints the outcome as `command` says it (text or --json on stdout, a refusal on stderr) and
// returns the exit status.
inline int printExportWeights(
    const std::string& command, const ckpt::ExportWeightsOutcome& outcome, bool json)
{
    if (!outcome.written()) {
        std::cerr << "ckpt-inspect " << command << ": " << outcome.why << "\n";
        return outcome.exitCode();
    }
    if (json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        ckpt::writeExportWeightsJson(writer, outcome);
        std::cout << writer.takeText() << "\n";
    } else {
        ckpt::writeExportWeightsText(std::cout, outcome);
    }
    return outcome.exitCode();
}

} // namespace cli
