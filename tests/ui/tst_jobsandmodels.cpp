// SPDX-License-Identifier: MIT
// The pieces the main window is built from: the job tracker drops stale results and delivers on
// the GUI thread; the document controller's views let go of a document before it is destroyed;
// the histogram model behaves under QAbstractItemModelTester.

#include "tests/common/uitesthelpers.h"
#include "ui/document/checkpointdocument.h"
#include "ui/document/documentcontroller.h"
#include "ui/jobs/jobtracker.h"
#include "ui/models/histogramtablemodel.h"
#include "ui/models/tensortreemodel.h"

#include <QAbstractItemModelTester>
#include <QPointer>
#include <QSignalSpy>
#include <QTest>
#include <QThread>
#include <QThreadPool>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

using namespace ckpt;

namespace {

// Runs `onEvent` when its low-priority event arrives, as the update requests that paint widgets do.
class LowPriorityProbe : public QObject {
public:
    std::function<void()> onEvent;
    void post() { QCoreApplication::postEvent(this, new QEvent(QEvent::User), Qt::LowEventPriority); }

protected:
    bool event(QEvent* event) override
    {
        if (event->type() != QEvent::User)
            return QObject::event(event);
        onEvent();
        return true;
    }
};

} // namespace

class TestJobsAndModels : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void staleJobIsDropped()
    {
        JobTracker tracker;
        std::atomic<bool> release {false};
        std::vector<int> delivered;
        QThread* deliveredOn = nullptr;
        tracker.start(
            [&release](JobProgress& progress) {
                while (!release && !progress.cancelled)
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                return 1;
            },
            [&](int value) { delivered.push_back(value); });
        QVERIFY(tracker.isRunning());
        const auto first = tracker.progress();
        QSignalSpy finished(&tracker, &JobTracker::finished);
        tracker.start([](JobProgress&) { return 2; },
            [&](int value) {
                delivered.push_back(value);
                deliveredOn = QThread::currentThread();
            });
        QVERIFY(first->cancelled); // the superseded job is asked to stop
        release = true;
        QTRY_VERIFY(!tracker.isRunning());
        QTest::qWait(50); // the first job's watcher finishes too, and must deliver nothing
        QCOMPARE(delivered, std::vector<int> {2});
        QCOMPARE(deliveredOn, QThread::currentThread());
        QVERIFY(finished.count() >= 1);
    }

    // Jobs leave Qt's global pool to Qt: its raster paint engine runs parts of each repaint there
    // and waits for them, so jobs filling it made every repaint wait for a job to end.
    void jobsLeaveTheGlobalPoolFree()
    {
        QThreadPool* global = QThreadPool::globalInstance();
        std::atomic<bool> release {false};
        std::vector<std::unique_ptr<JobTracker>> trackers;
        // More jobs than the global pool has threads, all holding their thread.
        for (int i = 0; i < std::max(2, global->maxThreadCount()) + 1; ++i) {
            trackers.push_back(std::make_unique<JobTracker>());
            trackers.back()->start(
                [&release](JobProgress& progress) {
                    while (!release && !progress.cancelled)
                        std::this_thread::sleep_for(std::chrono::milliseconds(1));
                    return QThread::currentThread();
                },
                [](QThread*) {});
        }
        QTRY_VERIFY(jobThreadPool()->activeThreadCount() > 0);
        QVERIFY(jobThreadPool() != global);
        // A task of Qt's own still runs at once.
        std::atomic<bool> ran {false};
        global->start([&ran] { ran = true; });
        QTRY_VERIFY_WITH_TIMEOUT(ran, 2000);
        release = true;
        for (const auto& tracker : trackers)
            QTRY_VERIFY(!tracker->isRunning());
    }

    void resetDropsTheRunningJob()
    {
        JobTracker tracker;
        bool delivered = false;
        tracker.start(
            [](JobProgress& progress) { return progress.report(1, 2); }, [&](bool) { delivered = true; });
        tracker.reset();
        QVERIFY(!tracker.isRunning());
        QTest::qWait(100);
        QVERIFY(!delivered);
    }

    void cancelledJobStillDelivers()
    {
        JobTracker tracker;
        std::atomic<bool> started {false};
        bool sawCancel = false;
        tracker.start(
            [&started](JobProgress& progress) {
                started = true;
                while (progress.report(0, 1))
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                return true;
            },
            [&](bool cancelled) { sawCancel = cancelled; });
        QTRY_VERIFY(started);
        tracker.cancel();
        QTRY_VERIFY(sawCancel);
    }

    void viewsLetGoBeforeTheDocumentGoes()
    {
        DocumentController controller;
        auto target = parseMachineSpec("cuda:0=4GiB,cpu=16GiB");
        QVERIFY(target);
        controller.setTarget(*target);
        // The tree model is not the controller's (ui/document includes no models): the open job
        // builds it beside the document, as the window asks, and it is the taker's from
        // documentChanged() on.
        controller.setBuildBeside([](CheckpointDocument* document) -> std::unique_ptr<QObject> {
            return std::make_unique<TensorTreeModel>(document);
        });
        std::unique_ptr<QObject> model;
        const auto taking = connect(&controller, &DocumentController::documentChanged, this,
            [&](CheckpointDocument* current, CheckpointDocument*) {
                model = controller.takeBuiltBeside();
                QVERIFY(current && model && model->thread() == thread());
            });
        QSignalSpy opened(&controller, &DocumentController::opened);
        controller.openFile(QStringLiteral(CKPT_SOURCE_DIR "/resources/demo/demo-checkpoint.pt"));
        QVERIFY(opened.wait(30000));
        disconnect(taking);
        QPointer<CheckpointDocument> first = controller.document();
        QPointer<TensorTreeModel> firstModel = qobject_cast<TensorTreeModel*>(model.get());
        QVERIFY(first && firstModel);
        QVERIFY(firstModel->rowCount() > 0);
        QCOMPARE(first->target().name, target->name);

        bool previousAliveDuringSignal = false;
        connect(&controller, &DocumentController::documentChanged, this,
            [&](CheckpointDocument* current, CheckpointDocument* previous) {
                previousAliveDuringSignal = !current && previous == first.data() && first && firstModel;
                QVERIFY(!controller.takeBuiltBeside()); // nothing is built for no document
                model.reset(); // the view lets go while the document it reads still exists
            });
        controller.close();
        QVERIFY(previousAliveDuringSignal);
        QVERIFY(!first); // destroyed right after
        QVERIFY(!firstModel);
        QVERIFY(!controller.document());
    }

    void triageWaitsForTheFirstPaint()
    {
        // On two cores the triage's job must not take the GUI thread's core while the tree of the
        // file just opened is laid out and painted: it starts behind every event posted by then
        // (the low-priority update requests among them); the panels are told at once.
        DocumentController controller;
        QSignalSpy jobStarted(controller.triageJobs(), &JobTracker::started);
        QSignalSpy announced(&controller, &DocumentController::triageStarted);
        QSignalSpy finished(&controller, &DocumentController::triageFinished);
        LowPriorityProbe paint;
        qsizetype startedAtOpened = -1, announcedAtOpened = -1, startedAtPaint = -1;
        bool runningAtOpened = false;
        paint.onEvent = [&] { startedAtPaint = jobStarted.count(); };
        connect(&controller, &DocumentController::opened, this, [&] {
            startedAtOpened = jobStarted.count();
            announcedAtOpened = announced.count();
            runningAtOpened = controller.isTriageRunning();
            paint.post();
        });
        controller.openFile(QStringLiteral(CKPT_SOURCE_DIR "/resources/demo/demo-checkpoint.pt"));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        QCOMPARE(startedAtOpened, 0);
        QCOMPARE(announcedAtOpened, 1);
        QVERIFY(runningAtOpened);
        QCOMPARE(startedAtPaint, 0);
        QCOMPARE(jobStarted.count(), 1);
        QVERIFY(!controller.isTriageRunning());
    }

    void histogramModel()
    {
        HistogramTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.rowCount(), 0);
        model.setHistogram(-1.0, 1.0, {1, 4, 2, 0});
        QCOMPARE(model.rowCount(), 4);
        QCOMPARE(model.columnCount(), int(HistogramTableModel::ColumnCount));
        QCOMPARE(model.maximumCount(), std::uint64_t(4));
        QCOMPARE(model.index(1, HistogramTableModel::CountColumn).data().toDouble(), 4.0);
        QCOMPARE(model.index(1, HistogramTableModel::LowColumn).data().toDouble(), -0.5);
        QCOMPARE(model.index(3, HistogramTableModel::HighColumn).data().toDouble(), 1.0);
        // The last bin is closed, as torch.histc counts values equal to max.
        QVERIFY(model.index(3, 0).data(Qt::ToolTipRole).toString().endsWith(QLatin1Char(']')));
        QVERIFY(model.index(2, 0).data(Qt::ToolTipRole).toString().endsWith(QLatin1Char(')')));
        model.setHistogram(0, 0, {});
        QCOMPARE(model.rowCount(), 0);
    }
};

QTEST_MAIN(TestJobsAndModels)
#include "tst_jobsandmodels.moc"
