// The desktop app's two moments that must not keep a person waiting: from launch to a usable tree
// for a 100,000-tensor checkpoint, and applying a drop of a 10,000-tensor module (the tree model,
// the device cards and the memory chart all updated). Runs offscreen; prints figures.
// usage: bench_gui FILE MODULE   (MODULE: a dotted prefix holding many tensors)
#include "ui/document/checkpointdocument.h"
#include "ui/mainwindow.h"
#include "ui/models/devicemodel.h"
#include "ui/models/tensortreemodel.h"
#include "ui/widgets/devicepanel.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QMimeData>
#include <QTimer>
#include <QUndoStack>

#include <cstdio>

int main(int argc, char** argv)
{
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    if (argc < 3) {
        std::fprintf(stderr, "usage: bench_gui FILE MODULE\n");
        return 64;
    }
    const QString file = QString::fromLocal8Bit(argv[1]);
    const std::string module = argv[2];

    QElapsedTimer launch;
    launch.start();
    ckpt::MainWindow window;
    window.setSuppressModalDialogs(true);
    auto machine = ckpt::parseMachineSpec("cuda:0=80GiB,cuda:1=80GiB,cpu=512GiB", "bench");
    window.setTarget(*machine, QStringLiteral("bench"));
    window.resize(1400, 900);
    window.show();
    QEventLoop waiting;
    bool opened = false;
    QObject::connect(&window, &ckpt::MainWindow::checkpointOpened, &waiting, [&] {
        opened = true;
        waiting.quit();
    });
    QObject::connect(&window, &ckpt::MainWindow::openFailed, &waiting, &QEventLoop::quit);
    QTimer::singleShot(600'000, &waiting, &QEventLoop::quit);
    window.openFile(file);
    waiting.exec();
    if (!opened) {
        std::fprintf(stderr, "the checkpoint did not open\n");
        return 2;
    }
    QApplication::processEvents(); // the first paint of the tree
    const qint64 usable = launch.elapsed();
    ckpt::CheckpointDocument* document = window.document();
    std::printf("%s: %zu tensors, %zu storages\n", argv[1], document->checkpoint().tensors.size(),
        document->checkpoint().storages.size());
    std::printf("launch to a usable tree (window built, file read off the GUI thread, tree shown): %lld ms\n",
        static_cast<long long>(usable));

    std::size_t moving = 0;
    for (const ckpt::TensorEntry& tensor : document->checkpoint().tensors)
        moving += tensor.name.rfind(module + ".", 0) == 0 ? 1 : 0;
    QMimeData mime;
    mime.setData(QString::fromLatin1(ckpt::kPlacementMimeType),
        ckpt::CheckpointDocument::mimeDataFor({{true, module}}));
    for (const char* device : {"cuda:1", "cpu", "cuda:0"}) {
        QElapsedTimer drop;
        drop.start();
        ckpt::DeviceModel* model = window.devicePanel()->model();
        model->dropMimeData(&mime, Qt::MoveAction, model->rowOfTag(QString::fromLatin1(device)), 0, {});
        const qint64 applied = drop.elapsed();
        QApplication::processEvents(); // repaint of tree, cards and chart
        std::printf("drop of %s (%zu tensors) on %s: applied with models and chart updated in %lld ms, "
                    "repainted after %lld ms\n",
            module.c_str(), moving, device, static_cast<long long>(applied),
            static_cast<long long>(drop.elapsed()));
    }
    QElapsedTimer undo;
    undo.start();
    document->undoStack()->undo();
    QApplication::processEvents();
    std::printf("undo of the last drop: %lld ms\n", static_cast<long long>(undo.elapsed()));
    return 0;
}
