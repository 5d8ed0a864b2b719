// SPDX-License-Identifier: MIT
#include "core/tasks/comparison.h"

#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"

#include <array>

namespace ckpt {

int ComparisonOutcome::exitCode() const
{
    if (!compared())
        return 2;
    return diff.identical() ? 0 : 1;
}

namespace {

// One run of the helper for every pair (it reads all pairs before it answers); cancelling kills it.
void measureValueDifferences(ComparisonOutcome& outcome, const ComparisonRequest& request)
{
    const std::vector<std::size_t> changes = changesToMeasure(outcome.diff);
    if (changes.empty())
        return;
    const ValuesHelper helper = request.helper ? *request.helper : findValuesHelper();
    if (!helper) {
        outcome.valuesProblem = "value differences need " + helper.problem;
        return;
    }
    const std::uint64_t pairs = changes.size();
    const ValuesProgress progress
        = [&](std::uint64_t, std::uint64_t) { return !request.progress || request.progress(0, pairs); };
    auto answer = runValuesHelper(
        helper, {"--diff", outcome.pathA, outcome.pathB}, valueHelperPairs(outcome.diff, changes), progress);
    if (!answer) {
        outcome.valuesProblem = answer.error().message;
        return;
    }
    if (answer->cancelled) {
        outcome.cancelled = true;
        return;
    }
    outcome.deltas = readValueDeltas(answer->pairs, changes, outcome.diff.changed.size());
    if (request.progress)
        request.progress(pairs, pairs);
}

} // namespace

ComparisonOutcome compareCheckpoints(const ComparisonRequest& request)
{
    ComparisonOutcome outcome;
    outcome.pathA = request.openA ? request.openA->path : request.pathA;
    outcome.pathB = request.pathB;
    const auto stopped = [&] { return request.progress && !request.progress(0, 0); };
    std::array<std::shared_ptr<const Checkpoint>, 2> sides = {request.openA, nullptr};
    const std::array<const std::string*, 2> paths = {&outcome.pathA, &outcome.pathB};
    for (std::size_t s = 0; s < 2; ++s) {
        if (!sides[s])
            sides[s] = std::make_shared<const Checkpoint>(readCheckpoint(*paths[s]));
        if (stopped()) {
            outcome.cancelled = true;
            return outcome;
        }
        if (sides[s]->format == CheckpointFormat::NotACheckpoint) {
            outcome.unreadablePath = *paths[s];
            outcome.error = sides[s]->container.description;
            return outcome;
        }
    }
    outcome.a = makeDiffSide(std::move(sides[0]));
    outcome.b = makeDiffSide(std::move(sides[1]));
    DiffOptions options;
    options.threads = request.threads;
    options.progress = request.progress;
    outcome.diff = diffCheckpoints(outcome.a.tensors, outcome.b.tensors, options);
    if (outcome.diff.cancelled) {
        outcome.cancelled = true;
        return outcome;
    }
    outcome.deltas.measured.resize(outcome.diff.changed.size());
    outcome.deltas.errors.resize(outcome.diff.changed.size());
    if (request.values)
        measureValueDifferences(outcome, request);
    return outcome;
}

} // namespace ckpt
