// SPDX-License-Identifier: MIT
// The desktop app: parses the command line and shows the main window; everything else lives in ui/.
#include "core/base/mallocpolicy.h"
#include "ui/mainwindow.h"
#include "version.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QTimer>

#include <memory>

#include <cstdio>

namespace {

// The bundled demo: in the source tree when run from a build, next to the executable under
// ../share/ckpt-inspector/ when installed.
QString findDemoCheckpoint()
{
    const QString appDir = QCoreApplication::applicationDirPath();
    const QStringList candidates {
        QDir(appDir).filePath(QStringLiteral("../share/ckpt-inspector/demo-checkpoint.pt")),
        QDir(appDir).filePath(QStringLiteral("../share/ckpt-inspector/demo/demo-checkpoint.pt")),
        QStringLiteral(CKPT_SOURCE_DIR "/resources/demo/demo-checkpoint.pt"),
    };
    for (const QString& candidate : candidates) {
        if (QFileInfo::exists(candidate))
            return QDir::cleanPath(QFileInfo(candidate).absoluteFilePath());
    }
    return {};
}

} // namespace

int main(int argc, char* argv[])
{
    ckpt::returnLargeBlocksToTheSystem();
    QApplication app(argc, argv);
    // Organisation and application names place QSettings at ~/.config/ckpt-inspector/ckpt-inspector.conf.
    QApplication::setOrganizationName(QStringLiteral("ckpt-inspector"));
    QApplication::setApplicationName(QStringLiteral("ckpt-inspector"));
    QApplication::setApplicationDisplayName(QStringLiteral("Checkpoint Inspector"));
    QApplication::setApplicationVersion(QLatin1String(ckpt::kVersion));
    // The installed desktop entry (data/), so that Wayland compositors and docks match the window to it.
    QApplication::setDesktopFileName(QStringLiteral("io.github.ckpt_inspector.CheckpointInspector"));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QApplication::translate("main", "Inspect PyTorch checkpoints without running their pickle code."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("FILE"),
        QApplication::translate("main", "Checkpoint to open (.pt, .pth, .bin, .ckpt, .safetensors, ...)"),
        QStringLiteral("[FILE]"));
    // For checks of an installed copy (packaging/test-package-install.sh) and scripted screenshots:
    // the app starts, opens the file (or the demo) as usual, and exits with whether that worked.
    const QCommandLineOption quitAfterLoad(QStringLiteral("quit-after-load"),
        QApplication::translate("main",
            "Exit once the file (or the demo) is open: status 0 when it opened, 1 when it could not."));
    const QCommandLineOption screenshot(QStringLiteral("screenshot"),
        QApplication::translate(
            "main", "Once the file is open, save a picture of the window to PNG, then exit."),
        QStringLiteral("PNG"));
    parser.addOption(quitAfterLoad);
    parser.addOption(screenshot);
    parser.process(app);

    const QStringList files = parser.positionalArguments();
    if (files.size() > 1) {
        std::fputs("ckpt-inspector: give at most one FILE\n\n", stderr);
        parser.showHelp(1);
    }

    ckpt::MainWindow window;
    window.setDemoCheckpointPath(findDemoCheckpoint());
    const QString screenshotPath = parser.value(screenshot);
    if (parser.isSet(quitAfterLoad) || !screenshotPath.isEmpty()) {
        // Nothing may wait for a click: errors are only emitted, and reported here.
        window.setSuppressModalDialogs(true);
        // The picture is taken once the Findings panel shows the file's triage (a screenshot of
        // "Checking what loading this file would run..." shows nothing a reader came for), or after
        // 30 s without it; --quit-after-load ends as soon as the tree shows the file.
        auto finish = [&window, screenshotPath, done = std::make_shared<bool>(false)] {
            if (*done)
                return;
            *done = true;
            // A turn of the event loop first, so the tree, the cards and the chart are laid out.
            QTimer::singleShot(0, &window, [&window, screenshotPath] {
                if (!screenshotPath.isEmpty() && !window.grab().save(screenshotPath, "PNG")) {
                    std::fprintf(stderr, "ckpt-inspector: cannot write %s\n", qPrintable(screenshotPath));
                    QApplication::exit(1);
                    return;
                }
                std::fprintf(stdout, "ckpt-inspector: opened %s\n", qPrintable(window.currentFile()));
                QApplication::exit(0);
            });
        };
        QObject::connect(
            &window, &ckpt::MainWindow::checkpointOpened, &app, [&window, screenshotPath, finish] {
                if (screenshotPath.isEmpty())
                    finish();
                else
                    QTimer::singleShot(30'000, &window, finish);
            });
        if (!screenshotPath.isEmpty())
            QObject::connect(&window, &ckpt::MainWindow::triageFinished, &app, finish);
        // Queued: a file that fails at once fails inside openFile(), before exec() could see exit().
        QObject::connect(
            &window, &ckpt::MainWindow::openFailed, &app,
            [](const QString& message) {
                std::fprintf(stderr, "ckpt-inspector: could not open: %s\n", qPrintable(message));
                QApplication::exit(1);
            },
            Qt::QueuedConnection);
    }
    window.show();
    // Without a FILE the demo opens, so the first run shows something real.
    if (!files.isEmpty())
        window.openFile(QFileInfo(files.first()).absoluteFilePath());
    else if (!window.demoCheckpointPath().isEmpty())
        window.openFile(window.demoCheckpointPath());
    else if (parser.isSet(quitAfterLoad) || !screenshotPath.isEmpty()) {
        std::fputs("ckpt-inspector: no FILE and no demo checkpoint to open\n", stderr);
        return 1;
    }

    return QApplication::exec();
}
