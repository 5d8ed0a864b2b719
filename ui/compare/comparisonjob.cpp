// SPDX-License-Identifier: MIT
#include "ui/compare/comparisonjob.h"

#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"
#include "ui/jobs/jobtracker.h"

#include <QProcess>

namespace ckpt {

namespace {

bool isFloat(const std::string& dtype)
{
    return dtype == "float64" || dtype == "float32" || dtype == "float16" || dtype == "bfloat16";
}

// One run of the helper for every pair (it reads all pairs before it answers); cancelling kills it.
void measureValueDifferences(Comparison& comparison, const QString& helper, JobProgress& progress)
{
    std::vector<std::size_t> members;
    for (std::size_t c = 0; c < comparison.diff.changed.size(); ++c) {
        const TensorChange& change = comparison.diff.changed[c];
        if (change.valueChangeComparable() && isFloat(change.a.checkpoint->tensors[change.a.tensor].dtype))
            members.push_back(c);
    }
    if (members.empty())
        return;
    if (helper.isEmpty()) {
        comparison.valuesProblem = QObject::tr("How far values moved needs ckpt-inspect-values, which is "
                                               "built only where libtorch is installed");
        return;
    }
    QByteArray pairs;
    for (std::size_t c : members)
        pairs += QByteArray::number(comparison.diff.changed[c].a.sideIndex) + ' '
            + QByteArray::number(comparison.diff.changed[c].b.sideIndex) + '\n';
    QProcess process;
    process.setProgram(helper);
    process.setArguments({QStringLiteral("--diff"), comparison.pathA, comparison.pathB});
    process.start();
    if (!process.waitForStarted()) {
        comparison.valuesProblem = QObject::tr("Cannot run %1: %2").arg(helper, process.errorString());
        return;
    }
    process.write(pairs);
    process.closeWriteChannel();
    progress.report(0, members.size());
    while (!process.waitForFinished(50)) {
        if (process.state() == QProcess::NotRunning)
            break;
        if (progress.cancelled) {
            process.kill();
            process.waitForFinished();
            comparison.cancelled = true;
            return;
        }
    }
    if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0) {
        comparison.valuesProblem = QObject::tr("ckpt-inspect-values failed: %1")
                                       .arg(QString::fromUtf8(process.readAllStandardError().trimmed()));
        return;
    }
    const QByteArray output = process.readAllStandardOutput();
    JsonParseLimits limits;
    limits.maxBytes = std::size_t(1) << 31;
    const auto json = parseJson(std::string_view(output.constData(), std::size_t(output.size())), limits);
    if (!json) {
        comparison.valuesProblem = QObject::tr("ckpt-inspect-values wrote no JSON: %1")
                                       .arg(QString::fromStdString(json.error().message));
        return;
    }
    const auto& items = json->member("pairs").items();
    for (std::size_t k = 0; k < members.size() && k < items.size(); ++k) {
        if (const JsonValue* error = items[k].find("error")) {
            comparison.deltaErrors[members[k]] = QString::fromStdString(error->toString());
            continue;
        }
        ValueDelta delta;
        delta.count = items[k].member("count").toUInt64().value_or(0);
        delta.differing = items[k].member("differing").toUInt64().value_or(0);
        delta.maxAbsolute = items[k].member("max_abs").toDouble();
        delta.maxRelative = items[k].member("max_rel").toDouble();
        comparison.deltas[members[k]] = delta;
    }
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
