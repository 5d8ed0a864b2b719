// SPDX-License-Identifier: MIT
// Runs tests/triage/torch_load_probe.py under a real torch and returns its answers: the truth the
// load simulation and the weights_only verdict are compared with.
#pragma once

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStringList>
#include <QTemporaryFile>

#include <optional>

struct TorchProbeJob {
    QString path;
    QString mapLocation; // Python text, empty for None
    std::optional<bool> weightsOnly;
    bool trusted = false; // corpus files are not: the probe then insists on weights_only=True
};

struct TorchProbeResult {
    bool ok = false;
    QString type; // the exception's class name
    QString error; // str() of the exception
};

// `python` is a command line ("/usr/bin/python3", "/work/main/tests/tools/modern-python").
// Empty on failure, with the reason in `why`. `pythonPaths`, when given, holds per job a folder the
// probe puts first on sys.path for that job (a user's package), or an empty string.
inline std::vector<TorchProbeResult> runTorchProbe(const QString& python,
    const std::vector<TorchProbeJob>& jobs, QString& why, const std::vector<QString>& pythonPaths = {})
{
    QJsonArray array;
    for (const auto& job : jobs) {
        QJsonObject object;
        object[QStringLiteral("path")] = job.path;
        object[QStringLiteral("map_location")]
            = job.mapLocation.isEmpty() ? QJsonValue() : QJsonValue(job.mapLocation);
        object[QStringLiteral("weights_only")]
            = job.weightsOnly ? QJsonValue(*job.weightsOnly) : QJsonValue();
        object[QStringLiteral("trusted")] = job.trusted;
        object[QStringLiteral("python_path")] = array.size() < static_cast<qsizetype>(pythonPaths.size())
                && !pythonPaths[static_cast<std::size_t>(array.size())].isEmpty()
            ? QJsonValue(pythonPaths[static_cast<std::size_t>(array.size())])
            : QJsonValue();
        array.append(object);
    }
    QTemporaryFile jobsFile;
    if (!jobsFile.open()) {
        why = QStringLiteral("cannot write the jobs file");
        return {};
    }
    jobsFile.write(QJsonDocument(array).toJson(QJsonDocument::Compact));
    jobsFile.flush();
    QStringList command = QProcess::splitCommand(python);
    const QString program = command.takeFirst();
    command << QStringLiteral(CKPT_SOURCE_DIR "/tests/triage/torch_load_probe.py") << jobsFile.fileName();
    QProcess process;
    process.start(program, command);
    if (!process.waitForFinished(600'000) || process.exitCode() != 0) {
        why = python + QStringLiteral(" failed: ")
            + QString::fromUtf8(process.readAllStandardError().right(2000));
        return {};
    }
    const auto document = QJsonDocument::fromJson(process.readAllStandardOutput());
    std::vector<TorchProbeResult> results;
    for (const auto& value : document.object().value(QStringLiteral("results")).toArray()) {
        const auto object = value.toObject();
        results.push_back(
            {object.value(QStringLiteral("ok")).toBool(), object.value(QStringLiteral("type")).toString(),
                object.value(QStringLiteral("error")).toString()});
    }
    if (results.size() != jobs.size())
        why = QStringLiteral("the probe answered %1 of %2 jobs").arg(results.size()).arg(jobs.size());
    return results;
}
