// SPDX-License-Identifier: MIT
// The desktop app's moments that must not keep a person waiting, on a checkpoint of a million
// tensors: from launch to a usable tree, and applying a drop of a 100,000-tensor module (the tree
// model, the device cards and the memory chart all updated) and its undo. Runs offscreen; prints
// each figure next to its aim (issue 13) as a ratio, with the CPU time beside the wall time: the
// machine is shared, and the GUI thread's CPU time is what a person waits for when it is not.
// usage: bench_gui FILE MODULE [LAUNCH_AIM_MS]   (MODULE: a dotted prefix holding many tensors;
// LAUNCH_AIM_MS: the aim for a usable tree, 3000 by default, 500 for the 160-shard folder of issue 28)
#include "core/base/mallocpolicy.h"
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

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace {

double threadCpuMs()
{
    timespec now {};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

double processCpuMs()
{
    timespec now {};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

double peakRssMiB()
{
    rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// The GUI thread's work for one step: wall and CPU time, and the ratio to the aim (<= 1 meets it).
void report(const char* what, qint64 wallMs, double cpuMs, double aimMs)
{
    std::printf("%-58s wall %6lld ms, GUI-thread CPU %7.1f ms  (aim %4.0f ms: x%.2f by CPU, x%.2f by wall)\n",
        what, static_cast<long long>(wallMs), cpuMs, aimMs, cpuMs / aimMs,
        static_cast<double>(wallMs) / aimMs);
}

} // namespace

int main(int argc, char** argv)
{
    ckpt::returnLargeBlocksToTheSystem(); // as the app
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    if (argc < 3) {
        std::fprintf(stderr, "usage: bench_gui FILE MODULE [LAUNCH_AIM_MS]\n");
        return 64;
    }
    const QString file = QString::fromLocal8Bit(argv[1]);
    const std::string module = argv[2];
    const double launchAimMs = argc > 3 ? std::atof(argv[3]) : 3000;
    constexpr double kLaunchAimMiB = 1024, kDropAimMs = 150;

    QElapsedTimer launch;
    launch.start();
    const double launchCpu = processCpuMs();
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
    const double guiCpuBefore = threadCpuMs();
    window.openFile(file);
    waiting.exec();
    if (!opened) {
        std::fprintf(stderr, "the checkpoint did not open\n");
        return 2;
    }
    QApplication::processEvents(); // the first paint of the tree
    const qint64 usable = launch.elapsed();
    const double usableCpu = processCpuMs() - launchCpu;
    const double usableGuiCpu = threadCpuMs() - guiCpuBefore;
    const double usableRss = peakRssMiB();
    ckpt::CheckpointDocument* document = window.document();
    std::printf("%s: %zu tensors, %zu storages, %zu tree nodes\n", argv[1],
        document->checkpoint().tensors.size(), document->checkpoint().storages.size(),
        document->checkpoint().tree.size());
    std::printf(
        "launch to a usable tree (window built, file read off the GUI thread, tree shown):\n"
        "  wall %lld ms (aim %.0f: x%.2f), CPU of all threads %.0f ms (the read, the document and the "
        "tree model; the triage starts after the first paint), GUI thread %.0f ms\n"
        "  peak RSS %.0f MiB (aim %.0f: x%.2f)\n",
        static_cast<long long>(usable), launchAimMs, static_cast<double>(usable) / launchAimMs, usableCpu,
        usableGuiCpu, usableRss, kLaunchAimMiB, usableRss / kLaunchAimMiB);

    std::size_t moving = 0;
    for (const ckpt::TensorEntry& tensor : document->checkpoint().tensors)
        moving += tensor.name.rfind(module + ".", 0) == 0 ? 1 : 0;
    QMimeData mime;
    mime.setData(QString::fromLatin1(ckpt::kPlacementMimeType),
        ckpt::CheckpointDocument::mimeDataFor({{true, module}}));
    for (const char* device : {"cuda:1", "cpu", "cuda:0"}) {
        QElapsedTimer drop;
        drop.start();
        const double cpu = threadCpuMs();
        ckpt::DeviceModel* model = window.devicePanel()->model();
        model->dropMimeData(&mime, Qt::MoveAction, model->rowOfTag(QString::fromLatin1(device)), 0, {});
        QApplication::processEvents(); // repaint of tree, cards and chart
        const std::string what
            = "drop of " + module + " (" + std::to_string(moving) + " tensors) on " + device + ":";
        report(what.c_str(), drop.elapsed(), threadCpuMs() - cpu, kDropAimMs);
    }
    QElapsedTimer undo;
    undo.start();
    const double undoCpu = threadCpuMs();
    document->undoStack()->undo();
    QApplication::processEvents();
    report("undo of the last drop:", undo.elapsed(), threadCpuMs() - undoCpu, kDropAimMs);
    std::printf("peak RSS at the end: %.0f MiB\n", peakRssMiB());
    return 0;
}
