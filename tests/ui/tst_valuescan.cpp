// SPDX-License-Identifier: MIT
// "Scan values" through the real widgets: a checkpoint written by torch 1.13 with NaN and ±Inf in
// some tensors (and a folder of two shards holding the same tensors) is opened in the main window,
// the action runs the scan through the ckpt-inspect-values helper, and the list must hold exactly
// the tensors torch itself counts NaN/Inf in, with torch's counts, most first; a click on a row
// shows its histogram and selects the tensor in the tree. Cancel stops a running scan.

#include "tests/common/uitesthelpers.h"
#include "ui/mainwindow.h"
#include "ui/models/histogramtablemodel.h"
#include "ui/models/nonfinitetablemodel.h"
#include "ui/models/tensortreemodel.h"
#include "ui/widgets/valuescanpanel.h"
#include "ui/widgets/valueschartwidget.h"

#include <QAction>
#include <QDockWidget>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>

#include <algorithm>

using namespace ckpt;

namespace {

// Writes values.pt, and shards/ (two .bin files and their index), and expected.json: per tensor
// name [nan, +inf, -inf, numel] as torch counts them.
const QString kWriteFixture = QStringLiteral(R"(
import sys, os, json, torch
out = sys.argv[1]
torch.manual_seed(0)
a = torch.randn(1000); a[[3, 17, 500]] = float('nan'); a[10] = float('inf')
b = torch.randn(64, 8); b[0, :5] = float('-inf'); b[1, 1] = float('nan')
c = torch.randn(100)
d = torch.randn(50).half(); d[7] = float('inf'); d[8] = float('inf'); d[9] = float('-inf')
e = torch.arange(10, dtype=torch.int64)
state = {'layer.a': a, 'layer.b': b, 'clean.c': c, 'half.d': d, 'ints.e': e}
torch.save(state, os.path.join(out, 'values.pt'))
os.makedirs(os.path.join(out, 'shards'))
first = {'layer.a': a, 'clean.c': c}
second = {'layer.b': b, 'half.d': d, 'ints.e': e}
torch.save(first, os.path.join(out, 'shards', 'pytorch_model-00001-of-00002.bin'))
torch.save(second, os.path.join(out, 'shards', 'pytorch_model-00002-of-00002.bin'))
weight_map = {k: 'pytorch_model-00001-of-00002.bin' for k in first}
weight_map.update({k: 'pytorch_model-00002-of-00002.bin' for k in second})
total = sum(v.numel() * v.element_size() for v in state.values())
with open(os.path.join(out, 'shards', 'pytorch_model.bin.index.json'), 'w') as f:
    json.dump({'metadata': {'total_size': total}, 'weight_map': weight_map}, f)
expected = {}
for k, v in state.items():
    if v.is_floating_point():
        expected[k] = [int(torch.isnan(v).sum()), int(torch.isposinf(v).sum()), int(torch.isneginf(v).sum()), v.numel()]
with open(os.path.join(out, 'expected.json'), 'w') as f:
    json.dump(expected, f)
)");

} // namespace

class TestValueScan : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QJsonObject m_expected;

private Q_SLOTS:
    void initTestCase()
    {
#ifndef CKPT_HAVE_TORCHBRIDGE
        QSKIP("no ckpt-inspect-values helper in this build (no libtorch)");
#endif
        QVERIFY(m_dir.isValid());
        const QString problem = testing::runTorchScript(kWriteFixture, {m_dir.path()});
        if (!problem.isEmpty())
            QSKIP(qPrintable(problem));
        QFile file(m_dir.filePath(QStringLiteral("expected.json")));
        QVERIFY(file.open(QIODevice::ReadOnly));
        m_expected = QJsonDocument::fromJson(file.readAll()).object();
        QCOMPARE(m_expected.size(), 4);
    }

    void scanListsWhatTorchCounts_data()
    {
        QTest::addColumn<QString>("path");
        QTest::newRow("one file") << QStringLiteral("values.pt");
        QTest::newRow("folder of shards") << QStringLiteral("shards");
    }

    void scanListsWhatTorchCounts()
    {
        QFETCH(QString, path);
        MainWindow window;
        window.setSuppressModalDialogs(true);
        window.resize(1200, 800);
        window.show();
        QVERIFY(testing::openAndWait(window, m_dir.filePath(path)));
        ValueScanPanel* panel = window.valueScanPanel();
        QVERIFY(panel->hasValuesSource());
        auto* action = window.findChild<QAction*>(QStringLiteral("actionScanValues"));
        QVERIFY(action && action->isEnabled());
        QSignalSpy finished(panel, &ValueScanPanel::scanFinished);
        action->trigger();
        QVERIFY(panel->isScanning());
        QVERIFY(window.findChild<QDockWidget*>(QStringLiteral("valueScanDock"))->isVisible());
        QVERIFY(finished.wait(120000));
        QVERIFY2(panel->statusText().contains(QStringLiteral("hold")), qPrintable(panel->statusText()));

        // Exactly the tensors torch counts NaN or Inf in, with torch's counts.
        const NonFiniteTableModel* model = panel->model();
        QStringList listed;
        for (const ScannedTensor& tensor : model->tensors()) {
            listed << tensor.name;
            const QJsonArray counts = m_expected.value(tensor.name).toArray();
            QCOMPARE(counts.size(), 4);
            QCOMPARE(qint64(tensor.values.nanCount), counts[0].toInteger());
            QCOMPARE(qint64(tensor.values.positiveInfinityCount), counts[1].toInteger());
            QCOMPARE(qint64(tensor.values.negativeInfinityCount), counts[2].toInteger());
            QCOMPARE(qint64(tensor.values.count), counts[3].toInteger());
        }
        QStringList expectedNames;
        for (auto it = m_expected.begin(); it != m_expected.end(); ++it) {
            const QJsonArray counts = it.value().toArray();
            if (counts[0].toInteger() + counts[1].toInteger() + counts[2].toInteger() > 0)
                expectedNames << it.key();
        }
        listed.sort();
        expectedNames.sort();
        QCOMPARE(listed, expectedNames);
        QCOMPARE(listed,
            QStringList({QStringLiteral("half.d"), QStringLiteral("layer.a"), QStringLiteral("layer.b")}));
        // And a finding for each, as `ckpt-inspect check --values` gives it (tests/cli/tst_check.cpp).
        QCOMPARE(panel->findings().size(), model->tensors().size());
        for (const ScannedTensor& tensor : model->tensors()) {
            const QJsonArray counts = m_expected.value(tensor.name).toArray();
            const std::string message = "tensor '" + tensor.name.toStdString() + "' holds "
                + std::to_string(counts[0].toInteger()) + " NaN, " + std::to_string(counts[1].toInteger())
                + " +Inf and " + std::to_string(counts[2].toInteger()) + " -Inf of its "
                + std::to_string(counts[3].toInteger()) + " values";
            QVERIFY2(std::any_of(panel->findings().begin(), panel->findings().end(),
                         [&](const Finding& finding) {
                             return finding.code == FindingCode::ValuesNonfinite && finding.message == message
                                 && finding.tensors.size() == 1;
                         }),
                message.c_str());
        }

        // Most first (layer.b: 6), then by a click on a header, fewest first.
        QTableView* table = panel->table();
        const QAbstractItemModel* shown = table->model();
        QCOMPARE(
            shown->index(0, NonFiniteTableModel::NameColumn).data().toString(), QStringLiteral("layer.b"));
        QCOMPARE(shown->index(0, NonFiniteTableModel::NonFiniteColumn).data().toULongLong(), 6ull);
        table->sortByColumn(NonFiniteTableModel::NonFiniteColumn, Qt::AscendingOrder);
        QCOMPARE(
            shown->index(0, NonFiniteTableModel::NameColumn).data().toString(), QStringLiteral("half.d"));
        table->sortByColumn(NonFiniteTableModel::NanColumn, Qt::DescendingOrder);
        QCOMPARE(
            shown->index(0, NonFiniteTableModel::NameColumn).data().toString(), QStringLiteral("layer.a"));

        // A click on layer.a: its histogram of finite values beside the list, and the tree selects it.
        const QRect cell = table->visualRect(shown->index(0, NonFiniteTableModel::NameColumn));
        QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell.center());
        const HistogramTableModel* histogram = panel->chart()->model();
        QVERIFY(histogram->rowCount() > 0);
        quint64 binned = 0;
        for (int row = 0; row < histogram->rowCount(); ++row)
            binned += histogram->index(row, HistogramTableModel::CountColumn).data().toULongLong();
        const QJsonArray counts = m_expected.value(QStringLiteral("layer.a")).toArray();
        QCOMPARE(qint64(binned),
            counts[3].toInteger() - counts[0].toInteger() - counts[1].toInteger()
                - counts[2].toInteger()); // every finite value, once
        const QModelIndex current
            = window.findChild<QTreeView*>(QStringLiteral("tensorTree"))->currentIndex();
        QVERIFY(current.isValid());
        QCOMPARE(current.data(TensorTreeModel::PathRole).toString(), QStringLiteral("layer.a"));
        QVERIFY2(panel->findingText().startsWith(
                     u"tensor 'layer.a' holds 3 NaN, 1 +Inf and 0 -Inf of its 1000 values\n"_qs),
            qPrintable(panel->findingText()));
        QVERIFY(panel->findChild<QLabel*>(QStringLiteral("valueScanFinding"))->isVisible());

        // For a person to look at: CKPT_GRAB_DIR=DIR writes the window as it is now.
        if (const QString grabDir = qEnvironmentVariable("CKPT_GRAB_DIR"); !grabDir.isEmpty()) {
            QTest::qWait(100); // the chart's scene repaints on its next turn of the event loop
            QVERIFY(window.grab().save(grabDir + QStringLiteral("/valuescan-")
                + QString::fromLatin1(QTest::currentDataTag()).replace(QLatin1Char(' '), QLatin1Char('-'))
                + QStringLiteral(".png")));
        }
    }

    // One rule finds the helper and one limit bounds its answer, in both faces: a stand-in named by
    // $CKPT_VALUES_HELPER (tests/tools/fake-values-helper.py) answers with more than 64 MiB of
    // statistics (about 83,000 tensors the size of a large model's), which the app once refused
    // while `check --values` took it (tests/cli/tst_check.cpp runs the same through the CLI). The
    // tensor it says holds NaN and +Inf is listed and is a finding, in the CLI's words.
    void scanReadsWhatTheCliReads()
    {
        const QByteArray saved = qgetenv("CKPT_VALUES_HELPER");
        const auto restore = qScopeGuard([&] {
            qputenv("CKPT_VALUES_HELPER", saved);
            qunsetenv("FAKE_VALUES_BYTES");
        });
        qputenv("CKPT_VALUES_HELPER", CKPT_SOURCE_DIR "/tests/tools/fake-values-helper.py");
        qputenv("FAKE_VALUES_BYTES", "70000000"); // > 64 MiB
        {
            MainWindow window;
            window.setSuppressModalDialogs(true);
            window.show();
            QVERIFY(testing::openAndWait(window, m_dir.filePath(QStringLiteral("values.pt"))));
            ValueScanPanel* panel = window.valueScanPanel();
            QVERIFY(panel->hasValuesSource());
            QSignalSpy finished(panel, &ValueScanPanel::scanFinished);
            window.findChild<QAction*>(QStringLiteral("actionScanValues"))->trigger();
            QVERIFY(finished.wait(120000));
            QVERIFY2(panel->model()->tensors().size() == 1, qPrintable(panel->statusText()));
            const ScannedTensor& bad = panel->model()->tensors()[0];
            QCOMPARE(bad.name, QStringLiteral("bad"));
            QCOMPARE(bad.values.nanCount, std::uint64_t(2));
            QCOMPARE(bad.values.positiveInfinityCount, std::uint64_t(1));
            QCOMPARE(bad.values.count, std::uint64_t(10));
            QVERIFY2(panel->statusText().contains(u"tensors scanned, 1 holds NaN or infinities"_qs),
                qPrintable(panel->statusText()));
            QCOMPARE(panel->findings().size(), std::size_t(1));
            QVERIFY(panel->findings()[0].code == FindingCode::ValuesNonfinite);
            QCOMPARE(panel->findings()[0].message,
                std::string("tensor 'bad' holds 2 NaN, 1 +Inf and 0 -Inf of its 10 values"));
        }

        // A variable that names no program is said, as the CLI says it, never passed over.
        qputenv("CKPT_VALUES_HELPER", "/nonexistent/ckpt-inspect-values");
        MainWindow window;
        QVERIFY(!window.valueScanPanel()->hasValuesSource());
        QCOMPARE(window.valueScanPanel()->statusText(),
            u"Scanning values needs ckpt-inspect-values (CKPT_VALUES_HELPER names /nonexistent/ckpt-inspect-values, which is not an executable file)."_qs);
    }

    void cancelStopsTheScan()
    {
        MainWindow window;
        window.setSuppressModalDialogs(true);
        window.show();
        QVERIFY(testing::openAndWait(window, m_dir.filePath(QStringLiteral("values.pt"))));
        ValueScanPanel* panel = window.valueScanPanel();
        QSignalSpy finished(panel, &ValueScanPanel::scanFinished);
        window.findChild<QAction*>(QStringLiteral("actionScanValues"))->trigger();
        QVERIFY(panel->isScanning());
        auto* cancel = panel->findChild<QWidget*>(QStringLiteral("valueScanCancel"));
        QVERIFY(cancel && cancel->isVisible());
        QTest::mouseClick(cancel, Qt::LeftButton);
        QVERIFY(finished.wait(60000));
        QVERIFY(!panel->isScanning());
        QCOMPARE(panel->statusText(), QStringLiteral("Scan cancelled."));
        QCOMPARE(panel->model()->rowCount(), 0);
    }
};

QTEST_MAIN(TestValueScan)
#include "tst_valuescan.moc"
