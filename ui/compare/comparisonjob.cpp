// SPDX-License-Identifier: MIT
#include "ui/compare/comparisonjob.h"

#include "core/io/process.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"
#include "ui/jobs/jobtracker.h"

namespace ckpt {

namespace {

// One run of the helper for every pair (it reads all pairs before it answers); cancelling kills it.
void measureValueDifferences(Comparison& comparison, const QString& helper, JobProgress& progress)
{
    const std::vector<std::size_t> members = changesToMeasure(comparison.diff);
    if (members.empty())
        return;
    if (helper.isEmpty()) {
        comparison.valuesProblem = QObject::tr("How far values moved needs ckpt-inspect-values, which is "
                                               "built only where libtorch is installed");
        return;
    }
    ProcessRequest request;
    request.program = helper.toStdString();
    request.arguments = {"--diff", comparison.pathA.toStdString(), comparison.pathB.toStdString()};
    request.input = valueHelperPairs(comparison.diff, members);
    request.keepGoing = [&progress] { return !progress.cancelled; };
    request.captureErrors = true;
    progress.report(0, members.size());
    const auto run = runProcess(request);
    if (!run) {
        comparison.valuesProblem = QString::fromStdString(run.error().message);
        return;
    }
    if (run->cancelled) {
        comparison.cancelled = true;
        return;
    }
    if (!run->succeeded()) {
        comparison.valuesProblem = QObject::tr("ckpt-inspect-values failed: %1")
                                       .arg(QString::fromStdString(run->errors).trimmed());
        return;
    }
    JsonParseLimits limits;
    limits.maxBytes = std::size_t(1) << 31;
    const auto json = parseJson(run->output, limits);
    if (!json) {
        comparison.valuesProblem = QObject::tr("ckpt-inspect-values wrote no JSON: %1")
                                       .arg(QString::fromStdString(json.error().message));
        return;
    }
    ValueDeltas deltas = readValueDeltas(*json, members, comparison.diff.changed.size());
    comparison.deltas = std::move(deltas.measured);
    for (std::size_t c = 0; c < deltas.errors.size(); ++c)
        if (deltas.errors[c])
            comparison.deltaErrors[c] = QString::fromStdString(*deltas.errors[c]);
    progress.report(members.size(), members.size());
}

} // namespace

Comparison compareWithFile(std::shared_ptr<const Checkpoint> a, const QString& pathB,
    const QString& valuesHelper, JobProgress& progress)
{
    Comparison comparison;
    comparison.pathA = QString::fromStdString(a->path);
    comparison.pathB = pathB;
    auto b = std::make_shared<const Checkpoint>(readCheckpoint(pathB.toStdString()));
    if (progress.cancelled) {
        comparison.cancelled = true;
        return comparison;
    }
    if (b->format == CheckpointFormat::NotACheckpoint) {
        comparison.error = QString::fromStdString(b->container.description);
        return comparison;
    }
    comparison.a = makeDiffSide(std::move(a));
    comparison.b = makeDiffSide(std::move(b));
    DiffOptions options;
    options.progress
        = [&progress](std::uint64_t done, std::uint64_t total) { return progress.report(done, total); };
    comparison.diff = diffCheckpoints(comparison.a.tensors, comparison.b.tensors, options);
    if (comparison.diff.cancelled) {
        comparison.cancelled = true;
        return comparison;
    }
    comparison.deltas.resize(comparison.diff.changed.size());
    comparison.deltaErrors.resize(comparison.diff.changed.size());
    measureValueDifferences(comparison, valuesHelper, progress);
    return comparison;
}

} // namespace ckpt
