// SPDX-License-Identifier: MIT
// Plan > Trial on This Machine's GPUs and Trial Load as a user runs them, with a fake CUDA runtime
// (tests/common/fakecudaruntime.h) in place of libcuda: the same report as `plan --trial-load`
// (tests/cli/tst_plan.cpp), the measured contexts then shown by the ledger and the device panel,
// Cancel, and a machine without a driver.
#include "core/plan/memoryledger.h"
#include "tests/common/fakecudaruntime.h"
#include "tests/common/uitesthelpers.h"
#include "ui/document/checkpointdocument.h"
#include "ui/mainwindow.h"
#include "ui/models/devicemodel.h"
#include "ui/planactions.h"

#include <QAction>
#include <QMenu>
#include <QSemaphore>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

using ckpt::PlanActions;
using ckpt::test::FakeCudaRuntime;

namespace {

constexpr std::uint64_t MiB = 1ull << 20;

// Written by torch 2.x: storages recorded on cpu, cuda:0, cuda:1 and bare "cuda".
const QString kMixed = QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/devices_mixed.pt");

PlanActions::CudaAccess twoFakeGpus()
{
    auto runtime = std::make_unique<FakeCudaRuntime>();
    runtime->addGpu(80ull << 30, 400 * MiB);
    runtime->addGpu(80ull << 30, 410 * MiB);
    ckpt::NvmlFreeSnapshot nvml = runtime->nvml();
    return {std::move(runtime), std::move(nvml)};
}

} // namespace

class TestCudaTrialWindow : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void trialLoadMeasuresAndLoads()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        QVERIFY(ckpt::testing::openAndWait(window, kMixed));
        PlanActions* actions = window.planActions();
        actions->setCudaAccess(twoFakeGpus);
        const QMenu* planMenu = window.findChild<QMenu*>(QStringLiteral("planMenu"));
        QVERIFY(planMenu);
        QVERIFY(planMenu->actions().contains(actions->trialLoadAction()));
        QVERIFY(planMenu->actions().contains(actions->trialPlacementAction()));
        QVERIFY(actions->trialLoadAction()->isEnabled());

        QSignalSpy finished(actions, &PlanActions::trialFinished);
        actions->trialLoadAction()->trigger();
        QVERIFY(finished.wait(30000));
        const QString report = finished.first().at(0).toString();
        QVERIFY2(finished.first().at(1).toBool(), qPrintable(report));
        QVERIFY2(report.contains(u"cuda:0: CUDA context 400 MiB"_qs), qPrintable(report));
        QVERIFY(report.contains(u"cuda:1: 1 storage, 48 B planned, 2.00 MiB reserved in 1 segment: fits"_qs));
        QVERIFY(report.contains(u"every byte read back equal"_qs));
        QVERIFY(report.endsWith(u"The plan fits, and every byte loaded came back equal."_qs));

        // The measured contexts now stand in the ledger and the device panel's rows.
        const ckpt::CheckpointDocument* document = window.document();
        QVERIFY(document);
        int measured = 0;
        for (const ckpt::DeviceLedgerLine& line : document->ledger().lines()) {
            if (line.tag == "cuda:0" || line.tag == "cuda:1") {
                QVERIFY(line.contextMeasured);
                QCOMPARE(line.contextBytes, line.tag == "cuda:0" ? 400 * MiB : 410 * MiB);
                ++measured;
            }
        }
        QCOMPARE(measured, 2);
        const auto* devices = window.findChild<ckpt::DeviceModel*>();
        QVERIFY(devices);
        bool tipSaysMeasured = false;
        for (int row = 0; row < devices->rowCount(); ++row)
            tipSaysMeasured |= devices->data(devices->index(row), Qt::ToolTipRole)
                                   .toString()
                                   .contains(u"400 MiB, measured on this machine"_qs);
        QVERIFY(tipSaysMeasured);
    }

    void cancelStopsTheTrial()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        QVERIFY(ckpt::testing::openAndWait(window, kMixed));
        PlanActions* actions = window.planActions();
        auto gate = std::make_shared<QSemaphore>();
        actions->setCudaAccess([gate] {
            gate->acquire(); // the worker waits here until the test has pressed Cancel
            return twoFakeGpus();
        });
        QSignalSpy finished(actions, &PlanActions::trialFinished);
        actions->startTrial(true);
        QVERIFY(actions->isTrialRunning());
        QVERIFY(!actions->trialLoadAction()->isEnabled());
        actions->cancelTrial();
        gate->release();
        QVERIFY(finished.wait(30000));
        QVERIFY(!finished.first().at(1).toBool());
        QVERIFY2(finished.first().at(0).toString().endsWith(u"Cancelled."_qs),
            qPrintable(finished.first().at(0).toString()));
        QVERIFY(actions->trialLoadAction()->isEnabled());
    }

    void noDriver()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        QVERIFY(ckpt::testing::openAndWait(window, kMixed));
        PlanActions* actions = window.planActions();
        actions->setCudaAccess([] {
            auto runtime = std::make_unique<FakeCudaRuntime>();
            runtime->reason = "no NVIDIA driver is installed (libcuda.so.1 not found)";
            return PlanActions::CudaAccess {std::move(runtime), {}};
        });
        QSignalSpy finished(actions, &PlanActions::trialFinished);
        actions->trialPlacementAction()->trigger();
        QVERIFY(finished.wait(30000));
        QVERIFY(!finished.first().at(1).toBool());
        QCOMPARE(finished.first().at(0).toString(),
            u"Trial on this machine's GPUs: not run: no NVIDIA driver is installed (libcuda.so.1 not found)"_qs);
    }
};

QTEST_MAIN(TestCudaTrialWindow)
#include "tst_cudatrial.moc"
