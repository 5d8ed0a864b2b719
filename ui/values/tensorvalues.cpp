#include "ui/values/tensorvalues.h"

#include "core/json/json.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QProcess>

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

Expected<TensorValues> HelperProcessValues::compute(
    const std::string& checkpointPath, std::uint32_t tensor, const std::function<bool()>& keepGoing) const
{
    QProcess process;
    process.setProgram(m_program);
    process.setArguments({QStringLiteral("--tensor=%1").arg(tensor), QString::fromStdString(checkpointPath)});
    process.start(QIODevice::ReadOnly);
    if (!process.waitForStarted())
        return makeError(
            "cannot run " + m_program.toStdString() + ": " + process.errorString().toStdString());
    while (!process.waitForFinished(50)) {
        if (process.state() == QProcess::NotRunning)
            break;
        if (!keepGoing()) {
            process.kill();
            process.waitForFinished();
            return makeError("cancelled");
        }
    }
    if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0)
        return makeError(
            "ckpt-inspect-values failed: " + process.readAllStandardError().trimmed().toStdString());
    const QByteArray output = process.readAllStandardOutput();
    const auto json = parseJson(std::string_view(output.constData(), std::size_t(output.size())));
    if (!json)
        return makeError("ckpt-inspect-values wrote no JSON: " + json.error().message);
    const JsonValue* found = nullptr;
    for (const JsonValue& entry : json->member("tensors").items())
        if (entry.member("index").toUInt64() == tensor)
            found = &entry;
    if (!found)
        return makeError("no values: the tensor has no storage of its own");
    const JsonValue& entry = *found;
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

} // namespace ckpt
