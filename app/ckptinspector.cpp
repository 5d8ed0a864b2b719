// The desktop app: parses the command line and shows the main window; everything else lives in ui/.
#include "ui/mainwindow.h"
#include "version.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>

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
    QApplication app(argc, argv);
    // Organisation and application names place QSettings at ~/.config/ckpt-inspector/ckpt-inspector.conf.
    QApplication::setOrganizationName(QStringLiteral("ckpt-inspector"));
    QApplication::setApplicationName(QStringLiteral("ckpt-inspector"));
    QApplication::setApplicationDisplayName(QStringLiteral("Checkpoint Inspector"));
    QApplication::setApplicationVersion(QLatin1String(ckpt::kVersion));
    QApplication::setDesktopFileName(QStringLiteral("ckpt-inspector"));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QApplication::translate("main", "Inspect PyTorch checkpoints without running their pickle code."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("FILE"),
        QApplication::translate("main", "Checkpoint to open (.pt, .pth, .bin, .ckpt, .safetensors, …)"),
        QStringLiteral("[FILE]"));
    parser.process(app);

    const QStringList files = parser.positionalArguments();
    if (files.size() > 1) {
        std::fputs("ckpt-inspector: give at most one FILE\n\n", stderr);
        parser.showHelp(1);
    }

    ckpt::MainWindow window;
    window.setDemoCheckpointPath(findDemoCheckpoint());
    window.show();
    // Without a FILE the demo opens, so the first run shows something real.
    if (!files.isEmpty())
        window.openFile(QFileInfo(files.first()).absoluteFilePath());
    else if (!window.demoCheckpointPath().isEmpty())
        window.openFile(window.demoCheckpointPath());

    return QApplication::exec();
}
