// SPDX-License-Identifier: MIT
#pragma once

#include "core/pickle/picklegraph.h"

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace ckpt {

// A value of a pickle graph as a short piece of Python a person can read in a finding: strings
// cut, at most four items per container, nested calls kept (they are the chain a person needs to
// see: eval(compile(...))). Not source to run: use base/pythonliteral.h for that.
//
// The verdicts differ only in how they name what is called, so that is what they pass in.
struct PickleSummaryNaming {
    // The dotted name of a GLOBAL node. Default: the graph's module.name.
    std::function<std::string(NodeId global)> globalName;
    // What a Call or NewObject calls, by name; empty to summarise the callee node itself.
    // Default: the graph's callee name.
    std::function<std::string(NodeId call)> calleeName;
    // The argument tuple to show for a call and how many of its items to skip (the safety verdict
    // shows methodcaller('m', *a)(x) as x.m(*a)). Default: the call's own arguments, none skipped.
    std::function<std::pair<NodeId, std::size_t>(NodeId call)> arguments;
};

std::string summarisePickleValue(
    const PickleGraph& graph, NodeId id, const PickleSummaryNaming& naming = {}, int depth = 0);

// A str (or, with `bytes`, a bytes) repr cut after `limit` characters: quotes, backslashes and
// control characters escaped, so a summary stays on one line of a terminal.
std::string shortPythonRepr(std::string_view text, std::size_t limit, bool bytes = false);

} // namespace ckpt
