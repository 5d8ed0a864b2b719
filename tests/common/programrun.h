// SPDX-License-Identifier: MIT
#pragma once

// Running a program (ckpt-inspect, a python with torch) from a suite and describing what it did
// when an assertion fails.

#include <QByteArray>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

#include <optional>

namespace ckpt::testing {

struct ProgramRun {
    int exitCode = -1; // -1 when it crashed, timed out or did not start
    QByteArray out;
    QByteArray err;

    // For failure messages: the exit code and the end of both streams.
    QString describe(qsizetype limit = 3000) const
    {
        return QStringLiteral("exit %1\nstdout: %2\nstderr: %3")
            .arg(exitCode)
            .arg(QString::fromUtf8(out.right(limit)), QString::fromUtf8(err.right(limit)));
    }
};

// Runs `program` to its end (or kills it after `timeoutMs`).
inline ProgramRun runProgram(const QString& program, const QStringList& arguments, int timeoutMs = 300'000,
    const std::optional<QProcessEnvironment>& environment = std::nullopt)
{
    QProcess process;
    if (environment)
        process.setProcessEnvironment(*environment);
    process.start(program, arguments);
    if (!process.waitForFinished(timeoutMs)) {
        process.kill();
        process.waitForFinished();
        return {-1, process.readAllStandardOutput(),
            "timed out or did not start: " + process.errorString().toUtf8()};
    }
    return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1,
        process.readAllStandardOutput(), process.readAllStandardError()};
}

} // namespace ckpt::testing
