// SPDX-License-Identifier: MIT
// The Findings panel: its model under QAbstractItemModelTester, the triage of a CUDA checkpoint on a
// CPU-only target in a main window (torch's message, selection of the tensors concerned, badges in
// the tree), the weights_only rating of a hostile file, the Values section, and a render to look at.
#include "core/devices/deviceinventory.h"
#include "core/read/checkpointreader.h"
#include "core/triage/triage.h"
#include "tests/common/uitesthelpers.h"
#include "ui/document/checkpointdocument.h"
#include "ui/mainwindow.h"
#include "ui/models/findingsmodel.h"
#include "ui/models/tensorfilterproxymodel.h"
#include "ui/models/tensortreemodel.h"
#include "ui/widgets/detailspane.h"
#include "ui/widgets/findingspanel.h"
#include "ui/widgets/loadsimulationbar.h"
#include "ui/widgets/onelinebanner.h"
#include "ui/widgets/tensortreepanel.h"
#include "ui/widgets/valueschartwidget.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QItemSelectionModel>
#include <QSettings>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QTest>
#include <QTreeView>

#include <memory>
#include <set>

using namespace ckpt;

namespace {

QString fixture(const char* relative)
{
    return QStringLiteral(CKPT_SOURCE_DIR "/tests/") + QLatin1String(relative);
}

MachineInventory cpuOnly()
{
    auto machine = parseMachineSpec("cpu=16GiB", "cpu only");
    if (!machine)
        qFatal("cpu=16GiB does not parse: %s", machine.error().message.c_str());
    return *machine;
}

using testing::openAndTriage;

int findRow(const QAbstractItemModel* model, const QString& needle, int column)
{
    for (int row = 0; row < model->rowCount(); ++row)
        if (model->index(row, column).data().toString().contains(needle))
            return row;
    return -1;
}

} // namespace

class TestFindingsPanel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        QApplication::setQuitOnLastWindowClosed(false);
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
    }

    void modelUnderTester()
    {
        FindingsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSortFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        proxy.setSortRole(FindingsModel::SortRole);
        QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);

        const auto checkpoint = std::make_shared<Checkpoint>(
            readCheckpoint(fixture("fixtures/torch-2/devices_cuda1.pt").toStdString()));
        TriageOptions options;
        options.target = cpuOnly();
        const TriageReport report = triage(*checkpoint, options);
        QVERIFY(!report.findings.empty());
        model.setFindings(report.findings, checkpoint);
        QCOMPARE(model.rowCount(), int(report.findings.size()));
        QCOMPARE(model.columnCount(), int(FindingsModel::ColumnCount));
        proxy.sort(FindingsModel::SeverityColumn, Qt::AscendingOrder);
        // Errors first.
        QCOMPARE(proxy.index(0, 0).data(FindingsModel::SeverityRole).toInt(), int(Severity::Error));
        for (int row = 0; row < model.rowCount(); ++row) {
            QVERIFY(!model.index(row, FindingsModel::MessageColumn).data().toString().isEmpty());
            QVERIFY(!model.index(row, FindingsModel::ConcernsColumn).data().toString().isEmpty());
        }
        model.clear();
        QCOMPARE(model.rowCount(), 0);

        // Hand-made findings: every column and role answers.
        Finding record {
            Severity::Info, FindingCode::CrcMismatch, "torch never checks CRC-32", "archive/data/0", 128};
        Finding tensors {Severity::Warning, FindingCode::MixedDevicesInModule, "a module mixes devices"};
        tensors.tensors = {0, 1, 2, 3, 4};
        tensors.fix = "map everything to one device";
        model.setFindings({record, tensors}, nullptr);
        QCOMPARE(model.rowCount(), 2);
        // A finding without an explanation of its own says what its code means, from the table.
        QVERIFY(model.index(0, 0)
                    .data(Qt::ToolTipRole)
                    .toString()
                    .contains(QString::fromUtf8(findingCodeInfo(FindingCode::CrcMismatch).explanation.data(),
                        qsizetype(findingCodeInfo(FindingCode::CrcMismatch).explanation.size()))));
        QVERIFY(model.index(0, FindingsModel::ConcernsColumn)
                    .data()
                    .toString()
                    .contains(QStringLiteral("archive/data/0")));
        QVERIFY(model.index(1, FindingsModel::ConcernsColumn)
                    .data()
                    .toString()
                    .contains(QStringLiteral("2 more")));
        QCOMPARE(model.index(1, 0).data(FindingsModel::TensorsRole).value<QList<uint>>().size(), 5);
        QCOMPARE(model.index(1, 0).data(FindingsModel::FixRole).toString(),
            QStringLiteral("map everything to one device"));
        proxy.sort(FindingsModel::SeverityColumn, Qt::AscendingOrder);
        QCOMPARE(proxy.index(0, FindingsModel::CodeColumn).data().toString(),
            QStringLiteral("mixed-devices-in-module"));
        proxy.sort(FindingsModel::SeverityColumn, Qt::DescendingOrder);
        QCOMPARE(proxy.index(0, FindingsModel::CodeColumn).data().toString(), QStringLiteral("crc-mismatch"));
    }

    // The triage and the load simulation bar start together as a file opens; the weights_only
    // judgement of its pickles (half a second for a million tensors) is made once for both.
    void triageAndSimulationJudgeOnce()
    {
        MainWindow window;
        window.setSuppressModalDialogs(true);
        window.setTarget(cpuOnly(), QString());
        QVERIFY(openAndTriage(window, fixture("fixtures/torch-2/devices_cuda1.pt")));
        LoadSimulationBar* bar = window.findingsPanel()->simulationBar();
        QTRY_VERIFY2(
            bar->resultText().contains(QStringLiteral("The file as it is")), qPrintable(bar->resultText()));
        const auto& verdicts = window.document()->weightsOnlyVerdicts();
        QTRY_COMPARE(verdicts->asked(), std::size_t(2));
        QCOMPARE(verdicts->judged(), std::size_t(1));
    }

    void cudaFileOnCpuTarget()
    {
        MainWindow window;
        window.setSuppressModalDialogs(true);
        window.setTarget(cpuOnly(), QString());
        QVERIFY(openAndTriage(window, fixture("fixtures/torch-2/devices_cuda1.pt")));

        FindingsPanel* panel = window.findingsPanel();
        QVERIFY(panel->hasReport());
        QVERIFY(window.findingsDock()->isVisibleTo(&window));
        QAbstractItemModelTester tester(
            panel->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);

        QSortFilterProxyModel* proxy = panel->proxyModel();
        const int row = findRow(proxy, QStringLiteral("Attempting to deserialize object on a CUDA device"),
            FindingsModel::MessageColumn);
        QVERIFY2(row >= 0, "no finding quotes torch's CUDA message");
        const QModelIndex finding = proxy->index(row, FindingsModel::MessageColumn);
        QCOMPARE(finding.data(FindingsModel::SeverityRole).toInt(), int(Severity::Error));
        const QList<uint> concerned = finding.data(FindingsModel::TensorsRole).value<QList<uint>>();
        QVERIFY(!concerned.isEmpty());
        // What torch.load does is said once, by the load simulation bar (issue 27), not again in
        // the summary.
        LoadSimulationBar* bar = panel->simulationBar();
        QTRY_VERIFY2(bar->resultText().contains(QStringLiteral("torch 2.6+ and 1.13 fail")),
            qPrintable(bar->resultText()));
        QVERIFY2(
            !panel->summaryText().contains(QStringLiteral("torch 1.13")), qPrintable(panel->summaryText()));

        // Every tensor of this file is on cuda:1, so the finding names them all: a badge on every row
        // would point nowhere (issue 14). It is said once above the tree, and no row carries it.
        TensorTreeModel* tree = window.treeModel();
        QCOMPARE(std::size_t(concerned.size()), window.document()->checkpoint().tensors.size());
        // One line (issue 27), torch's message when it is expanded.
        const QString top = window.treePanel()->fileFindingsText();
        QVERIFY2(top.contains(QStringLiteral("torch.load fails on the target")), qPrintable(top));
        const QString more = window.treePanel()->fileFindingsBanner()->moreText();
        QVERIFY2(more.contains(QStringLiteral("Attempting to deserialize object on a CUDA device")),
            qPrintable(more));
        for (const uint tensor : concerned) {
            const QModelIndex index = tree->indexForTensor(tensor);
            QVERIFY(index.data(TensorTreeModel::FindingSeverityRole).isNull());
            if (index.parent().isValid()) {
                QVERIFY(index.parent().data(TensorTreeModel::FindingsBelowSeverityRole).isNull());
            }
        }

        // Clicking the finding selects exactly its tensors in the tree.
        QSignalSpy activated(panel, &FindingsPanel::tensorsActivated);
        panel->view()->selectionModel()->setCurrentIndex(
            finding, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        QCOMPARE(activated.count(), 1);
        std::set<int> selected;
        const QModelIndexList rows = window.treeView()->selectionModel()->selectedRows();
        for (const QModelIndex& index : rows)
            selected.insert(
                window.filterModel()->mapToSource(index).data(TensorTreeModel::TensorIndexRole).toInt());
        std::set<int> expected;
        for (const uint tensor : concerned)
            expected.insert(int(tensor));
        QCOMPARE(selected, expected);
        QVERIFY(window.treeView()->currentIndex().isValid());

        // A target with two GPUs: the triage runs again and the CUDA message is gone.
        QSignalSpy again(&window, &MainWindow::triageFinished);
        auto twoGpus = parseMachineSpec("cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB", "two gpus");
        QVERIFY(twoGpus.hasValue());
        window.setTarget(*twoGpus, QString());
        QVERIFY(again.wait(60000));
        QCOMPARE(findRow(proxy, QStringLiteral("Attempting to deserialize object on a CUDA device"),
                     FindingsModel::MessageColumn),
            -1);
        const QVariant severity
            = tree->indexForTensor(concerned.first()).data(TensorTreeModel::FindingSeverityRole);
        QVERIFY(severity.isNull() || severity.toInt() != int(Severity::Error));
    }

    void hostileFileIsDangerous()
    {
        MainWindow window;
        window.setSuppressModalDialogs(true);
        window.setTarget(cpuOnly(), QString());
        if (openAndTriage(window, fixture("data/hostile/os_system.pt"))) {
            QCOMPARE(window.findingsPanel()->weightsOnlyRating(), SafetyRating::Dangerous);
            QVERIFY2(window.findingsPanel()->summaryText().contains(QStringLiteral("Dangerous")),
                qPrintable(window.findingsPanel()->summaryText()));
            return;
        }
        // The window shows nothing for a file without a tree: the panel alone still says it.
        const auto checkpoint = std::make_shared<Checkpoint>(
            readCheckpoint(fixture("data/hostile/os_system.pt").toStdString()));
        TriageOptions options;
        options.target = cpuOnly();
        FindingsPanel panel;
        panel.setReport(triage(*checkpoint, options), checkpoint, QStringLiteral("cpu only"));
        QCOMPARE(panel.weightsOnlyRating(), SafetyRating::Dangerous);
        QVERIFY(panel.summaryText().contains(QStringLiteral("Dangerous")));
    }

    void valuesOfSelectedTensor()
    {
#ifndef CKPT_HAVE_TORCHBRIDGE
        QSKIP("built without libtorch: no Values section");
#else
        MainWindow window;
        window.setSuppressModalDialogs(true);
        window.setTarget(cpuOnly(), QString());
        QVERIFY(openAndTriage(window, fixture("fixtures/torch-2/state_dict.pt")));
        DetailsPane* details = window.detailsPane();
        QSignalSpy shown(details, &DetailsPane::valuesShown);
        // The first floating tensor with a storage.
        const Checkpoint checkpoint = readCheckpoint(fixture("fixtures/torch-2/state_dict.pt").toStdString());
        int chosen = -1;
        for (std::size_t i = 0; i < checkpoint.tensors.size(); ++i)
            if (checkpoint.tensors[i].storage >= 0
                && checkpoint.tensors[i].dtype.find("float") != std::string::npos
                && checkpoint.tensors[i].nbytes() > 8) {
                chosen = int(i);
                break;
            }
        QVERIFY(chosen >= 0);
        const QModelIndex index
            = window.filterModel()->mapFromSource(window.treeModel()->indexForTensor(uint(chosen)));
        window.treeView()->setCurrentIndex(index);
        QVERIFY(shown.wait(30000));
        QCOMPARE(shown.last().first().value<std::uint32_t>(), std::uint32_t(chosen));
        const QString text = details->valuesText();
        QVERIFY2(text.contains(QStringLiteral("NaN")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Mean")), qPrintable(text));
        QVERIFY(details->valuesChart()->model()->rowCount() > 0);
        QAbstractItemModelTester tester(
            details->valuesChart()->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
#endif
    }

    void rendersWithFindings()
    {
        MainWindow window;
        window.setSuppressModalDialogs(true);
        window.setTarget(cpuOnly(), QString());
        window.resize(1400, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(openAndTriage(window, fixture("fixtures/torch-2/devices_cuda1.pt")));
        QSortFilterProxyModel* proxy = window.findingsPanel()->proxyModel();
        const int row
            = findRow(proxy, QStringLiteral("Attempting to deserialize"), FindingsModel::MessageColumn);
        if (row >= 0)
            window.findingsPanel()->view()->setCurrentIndex(proxy->index(row, 0));
        QSignalSpy shown(window.detailsPane(), &DetailsPane::valuesShown);
#ifdef CKPT_HAVE_TORCHBRIDGE
        shown.wait(10000);
#endif
        QTest::qWait(50);
        const QString dir = QStringLiteral(CKPT_BINARY_DIR "/renders");
        QDir().mkpath(dir);
        const QString path = dir + QStringLiteral("/findings.png");
        QVERIFY(window.grab().save(path));
        qInfo("rendered %s", qPrintable(path));
    }
};

QTEST_MAIN(TestFindingsPanel)
#include "tst_findingspanel.moc"
