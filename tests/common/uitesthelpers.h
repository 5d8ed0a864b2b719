// SPDX-License-Identifier: MIT
#pragma once

// Helpers the ui suites had each written for themselves: writing a fixture with real torch at test
// time, opening a document against a described target or a file in the main window and waiting
// for it, finding tensors by name. Header-only so
// each suite stays one executable linking its library (tests/CMakeLists.txt).

#include "core/devices/deviceinventory.h"
#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"
#include "ui/document/checkpointdocument.h"
#include "ui/mainwindow.h"

#include <QFileInfo>
#include <QProcess>
#include <QSignalSpy>
#include <QString>
#include <QStringList>

#include <memory>
#include <optional>
#include <string>

namespace ckpt::testing {

// Runs `script` under the python with torch 1.13 (CKPT_LEGACY_PYTHON) with `arguments` as
// sys.argv[1:]. Empty on success, else why it could not (no python, no torch, the script failed):
// the caller skips with that text, since the truth of the fixture must come from torch itself.
inline QString runTorchScript(const QString& script, const QStringList& arguments, int timeoutMs = 600000)
{
    const QString python = QStringLiteral(CKPT_LEGACY_PYTHON);
    if (!QFileInfo::exists(python))
        return QStringLiteral("no python with torch at " CKPT_LEGACY_PYTHON);
    QProcess process;
    process.start(python, QStringList {QStringLiteral("-c"), script} + arguments);
    if (!process.waitForFinished(timeoutMs))
        return QStringLiteral("python did not finish");
    if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0)
        return QStringLiteral("python could not run the script: ")
            + QString::fromUtf8(process.readAllStandardError());
    return {};
}

// The checkpoint at `path` as the app opens it, planned against the described machine `spec`.
inline std::unique_ptr<CheckpointDocument> openDocument(const QString& path, const char* spec)
{
    auto target = parseMachineSpec(spec);
    if (!target)
        return nullptr;
    auto checkpoint = std::make_shared<const Checkpoint>(readCheckpoint(path.toStdString()));
    return std::make_unique<CheckpointDocument>(checkpoint, *target);
}

inline std::optional<std::uint32_t> tensorIndexNamed(const Checkpoint& checkpoint, const std::string& name)
{
    for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t)
        if (checkpoint.tensors[t].name == name)
            return t;
    return std::nullopt;
}

// Opens `path` in `window` and waits until the tree shows it.
inline bool openAndWait(MainWindow& window, const QString& path, int timeoutMs = 30000)
{
    QSignalSpy opened(&window, &MainWindow::checkpointOpened);
    window.openFile(path);
    return opened.wait(timeoutMs);
}

// Opens `path` in `window` and waits for the first triage of it (the findings, the safety banner).
inline bool openAndTriage(MainWindow& window, const QString& path, int timeoutMs = 60000)
{
    QSignalSpy triaged(&window, &MainWindow::triageFinished);
    QSignalSpy failed(&window, &MainWindow::openFailed);
    window.openFile(path);
    if (!triaged.wait(timeoutMs)) {
        if (!failed.isEmpty())
            qWarning("open failed: %s", qPrintable(failed.first().first().toString()));
        return false;
    }
    return true;
}

} // namespace ckpt::testing
