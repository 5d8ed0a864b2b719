// SPDX-License-Identifier: MIT
#include "ui/compare/comparisonjob.h"

#include "core/model/checkpoint.h"
#include "core/tasks/comparison.h"
#include "ui/jobs/jobtracker.h"

namespace ckpt {

Comparison compareWithFile(std::shared_ptr<const Checkpoint> a, const QString& pathB,
    const ValuesHelper& valuesHelper, JobProgress& progress)
{
    ComparisonRequest request;
    request.openA = std::move(a);
    request.pathB = pathB.toStdString();
    request.helper = valuesHelper;
    request.progress
        = [&progress](std::uint64_t done, std::uint64_t total) { return progress.report(done, total); };
    ComparisonOutcome outcome = compareCheckpoints(request);

    Comparison comparison;
    comparison.pathA = QString::fromStdString(outcome.pathA);
    comparison.pathB = pathB;
    comparison.cancelled = outcome.cancelled;
    comparison.error = QString::fromStdString(outcome.error);
    if (!outcome.compared())
        return comparison;
    comparison.a = std::move(outcome.a);
    comparison.b = std::move(outcome.b);
    comparison.diff = std::move(outcome.diff);
    comparison.deltas = std::move(outcome.deltas.measured);
    comparison.deltaErrors.resize(comparison.diff.changed.size());
    for (std::size_t c = 0; c < outcome.deltas.errors.size() && c < comparison.deltaErrors.size(); ++c)
        if (outcome.deltas.errors[c])
            comparison.deltaErrors[c] = QString::fromStdString(*outcome.deltas.errors[c]);
    comparison.valuesProblem = QString::fromStdString(outcome.valuesProblem);
    return comparison;
}

} // namespace ckpt
