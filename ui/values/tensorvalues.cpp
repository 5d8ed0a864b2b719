// SPDX-License-Identifier: MIT
#include "ui/values/tensorvalues.h"

#include "core/io/process.h"
#include "core/json/json.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace ckpt {

HelperProcessValues::HelperProcessValues(QString program)
    : m_program(std::move(program))
{ }

QString HelperProcessValues::programForThisProcess()
{
    QString program = qEnvironmentVariable("CKPT_VALUES_HELPER");
    if (program.isEmpty())
        program
            = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("ckpt-inspect-values"));
    const QFileInfo info(program);
    if (!info.isFile() || !info.isExecutable())
        return {};
    return info.absoluteFilePath();
}

std::shared_ptr<TensorValuesSource> HelperProcessValues::findForThisProgram()
{
    const QString program = programForThisProcess();
    if (program.isEmpty())
        return nullptr;
    return std::make_shared<HelperProcessValues>(program);
}

namespace {

// One entry of the helper's "tensors" array.
Expected<TensorValues> valuesFromJson(const JsonValue& entry)
{
    if (const JsonValue* error = entry.find("error"))
        return makeError(error->toString());
    const auto count = [&](std::string_view key) { return entry.member(key).toUInt64().value_or(0); };
    TensorValues values;
    values.domain = QString::fromStdString(entry.member("domain").toString());
    values.count = count("count");
    values.nanCount = count("nan");
    values.positiveInfinityCount = count("posinf");
    values.negativeInfinityCount = count("neginf");
    values.zeroCount = count("zeros");
    values.finiteCount = count("finite");
    values.min = entry.member("min").toDouble();
    values.max = entry.member("max").toDouble();
    values.mean = entry.member("mean").toDouble();
    values.std = entry.member("std").toDouble();
    values.copied = entry.member("copied").toBool();
    const JsonValue& histogram = entry.member("histogram");
    values.histogramLow = histogram.member("low").toDouble();
    values.histogramHigh = histogram.member("high").toDouble();
    for (const JsonValue& bin : histogram.member("counts").items())
        values.histogramCounts.push_back(bin.toUInt64().value_or(0));
    return values;
}

// Runs the helper to its end (core/io/process, as the CLI runs it), or kills it when `keepGoing`
// turns false (then "cancelled"). Every line it writes on stderr goes to `onErrorLine` as it comes;
// stdout is returned.
Expected<std::string> runHelper(const QString& program, const QStringList& arguments,
    const std::function<bool()>& keepGoing, const std::function<void(std::string_view)>& onErrorLine = {})
{
    ProcessRequest request;
    request.program = program.toStdString();
    for (const QString& argument : arguments)
        request.arguments.push_back(argument.toStdString());
    request.keepGoing = keepGoing;
    request.onErrorLine = onErrorLine;
    request.captureErrors = true;
    auto run = runProcess(request);
    if (!run)
        return run.error();
    if (run->cancelled)
        return makeError("cancelled");
    if (!run->succeeded())
        return makeError(
            "ckpt-inspect-values failed: " + QByteArray::fromStdString(run->errors).trimmed().toStdString());
    return std::move(run->output);
}

} // namespace

Expected<TensorValues> HelperProcessValues::compute(
    const std::string& checkpointPath, std::uint32_t tensor, const std::function<bool()>& keepGoing) const
{
    const auto output = runHelper(m_program,
        {QStringLiteral("--tensor=%1").arg(tensor), QString::fromStdString(checkpointPath)}, keepGoing);
    if (!output)
        return output.error();
    const auto json = parseJson(*output);
    if (!json)
        return makeError("ckpt-inspect-values wrote no JSON: " + json.error().message);
    const JsonValue* found = nullptr;
    for (const JsonValue& entry : json->member("tensors").items())
        if (entry.member("index").toUInt64() == tensor)
            found = &entry;
    if (!found)
        return makeError("no values: the tensor has no storage of its own");
    return valuesFromJson(*found);
}

Expected<ValueScanResult> HelperProcessValues::scan(const std::string& checkpointPath,
    const std::function<bool(std::uint64_t done, std::uint64_t total)>& progress) const
{
    // Asked between progress lines too, so that Cancel takes effect while the helper is still
    // loading libtorch or reading one large tensor.
    bool keepGoing = true;
    std::uint64_t done = 0, total = 0;
    const auto ask = [&] {
        keepGoing = keepGoing && (!progress || progress(done, total));
        return keepGoing;
    };
    const auto output
        = runHelper(m_program, {QStringLiteral("--progress"), QString::fromStdString(checkpointPath)}, ask,
            [&](std::string_view line) {
                // "progress DONE TOTAL"
                const QList<QByteArray> parts = QByteArray(line.data(), qsizetype(line.size())).split(' ');
                if (parts.size() == 3 && parts[0] == "progress") {
                    done = parts[1].toULongLong();
                    total = parts[2].toULongLong();
                    ask();
                }
            });
    ValueScanResult result;
    if (!output) {
        if (!keepGoing) {
            result.cancelled = true;
            return result;
        }
        return output.error();
    }
    const auto json = parseJson(*output);
    if (!json)
        return makeError("ckpt-inspect-values wrote no JSON: " + json.error().message);
    for (const JsonValue& entry : json->member("tensors").items()) {
        ++result.tensorsScanned;
        const auto values = valuesFromJson(entry);
        if (!values) {
            ++result.tensorsWithoutValues;
            continue;
        }
        if (values->nonFiniteCount() == 0)
            continue;
        result.nonFinite.push_back({static_cast<std::uint32_t>(entry.member("index").toUInt64().value_or(0)),
            QString::fromStdString(entry.member("name").toString()), *values});
    }
    return result;
}

} // namespace ckpt
