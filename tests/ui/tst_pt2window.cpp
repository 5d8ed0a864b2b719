// SPDX-License-Identifier: MIT
// The app opening torch.export archives (.pt2, tests/fixtures/torch-export/): the main window shows
// what the core reader reads (every weight, constant and sample input with its recorded device,
// the same rows `ckpt-inspect info` lists), and the AOTInductor package's banner says it carries
// code.
#include "core/model/checkpoint.h"
#include "tests/common/uitesthelpers.h"
#include "ui/document/checkpointdocument.h"
#include "ui/mainwindow.h"
#include "ui/models/tensortreemodel.h"
#include "ui/widgets/safetybanner.h"

#include <QApplication>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>

#include <algorithm>

namespace {

const QString kDir = QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/torch-export/");

QModelIndex findPath(const QAbstractItemModel* model, const QString& path, const QModelIndex& parent = {})
{
    for (int row = 0; row < model->rowCount(parent); ++row) {
        const QModelIndex index = model->index(row, 0, parent);
        const QString here = index.data(ckpt::TensorTreeModel::PathRole).toString();
        if (here == path)
            return index;
        if (path.startsWith(here + QLatin1Char('.')) || path.startsWith(here + QLatin1Char('['))) {
            const QModelIndex found = findPath(model, path, index);
            if (found.isValid())
                return found;
        }
    }
    return {};
}

} // namespace

class TestPt2Window : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        QApplication::setQuitOnLastWindowClosed(false);
        QStandardPaths::setTestModeEnabled(true);
        qputenv("XDG_CONFIG_HOME", QFile::encodeName(m_config.path()));
        QSettings().clear();
    }

    void showsEveryWeightWithItsDevice()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        QVERIFY(ckpt::testing::openAndWait(window, kDir + QStringLiteral("small.pt2")));
        QVERIFY(window.document());
        const ckpt::Checkpoint& checkpoint = window.document()->checkpoint();
        QCOMPARE(checkpoint.format, ckpt::CheckpointFormat::ExportArchive);
        QCOMPARE(checkpoint.tensors.size(), std::size_t {8});
        auto* summary = window.statusBar()->findChild<QLabel*>(QStringLiteral("summaryLabel"));
        QVERIFY(summary);
        QVERIFY2(summary->text().startsWith(QStringLiteral("8 tensors · 7 storages · ")),
            qPrintable(summary->text()));
        QVERIFY2(summary->text().contains(QStringLiteral("torch-export")), qPrintable(summary->text()));

        const QAbstractItemModel* model = window.treeModel();
        for (const ckpt::TensorEntry& tensor : checkpoint.tensors) {
            const QModelIndex row = findPath(model, QString::fromStdString(tensor.name.str()));
            QVERIFY2(row.isValid(), tensor.name.str().c_str());
            QCOMPARE(row.data(ckpt::TensorTreeModel::TensorIndexRole).toInt(),
                static_cast<int>(&tensor - checkpoint.tensors.data()));
            QCOMPARE(row.siblingAtColumn(ckpt::TensorTreeModel::RecordedDeviceColumn).data().toString(),
                QStringLiteral("cpu"));
        }
        const QModelIndex window2 = findPath(model, QStringLiteral("state_dict.window"));
        QCOMPARE(window2.siblingAtColumn(ckpt::TensorTreeModel::DTypeColumn).data().toString(),
            QStringLiteral("float32"));
        QVERIFY(findPath(model, QStringLiteral("constants.const")).isValid());
        QVERIFY(findPath(model, QStringLiteral("sample_inputs.0.0")).isValid());
        // The verdict comes from a job: wait for it, then it says the nested pickles are inert.
        QTRY_VERIFY_WITH_TIMEOUT(
            window.safetyBanner()->text().contains(QStringLiteral("inert"), Qt::CaseInsensitive), 30000);
        QVERIFY(!window.safetyBanner()->text().contains(QStringLiteral("dangerous"), Qt::CaseInsensitive));
    }

    void aotInductorPackageBannerSaysCode()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        QVERIFY(ckpt::testing::openAndWait(window, kDir + QStringLiteral("aoti_stub.pt2")));
        QVERIFY(window.document());
        QTRY_VERIFY_WITH_TIMEOUT(
            window.safetyBanner()->text().contains(QStringLiteral("dangerous"), Qt::CaseInsensitive), 30000);
        QVERIFY2(window.safetyBanner()->text().contains(QStringLiteral("aotinductor"), Qt::CaseInsensitive),
            qPrintable(window.safetyBanner()->text()));
        QVERIFY(findPath(window.treeModel(), QStringLiteral("state_dict.lin.weight")).isValid());
    }

    // Weights recorded on CUDA (cuda_faked.pt2): each row shows the device torch.export.load moves
    // its record to (cuda_faked.expected.json); the 2.1-2.5 layout's nested state dict and a
    // use_pickle weight (TwoTensor, with the tensors of its state) are rows of the tree too.
    void showsRecordedCudaDevicesAndNestedWeights()
    {
        QFile expected(kDir + QStringLiteral("cuda_faked.expected.json"));
        QVERIFY(expected.open(QIODevice::ReadOnly));
        const QJsonArray rows
            = QJsonDocument::fromJson(expected.readAll()).object().value(QStringLiteral("tensors")).toArray();
        QVERIFY(!rows.isEmpty());
        {
            ckpt::MainWindow window;
            window.setSuppressModalDialogs(true);
            QVERIFY(ckpt::testing::openAndWait(window, kDir + QStringLiteral("cuda_faked.pt2")));
            const QAbstractItemModel* model = window.treeModel();
            for (const QJsonValue value : rows) {
                const QJsonObject row = value.toObject();
                const QString name
                    = (row.value(QStringLiteral("kind")).toString() == QStringLiteral("constant")
                              ? QStringLiteral("constants.")
                              : QStringLiteral("state_dict."))
                    + row.value(QStringLiteral("name")).toString();
                const QModelIndex index = findPath(model, name);
                QVERIFY2(index.isValid(), qPrintable(name));
                QCOMPARE(index.siblingAtColumn(ckpt::TensorTreeModel::RecordedDeviceColumn).data().toString(),
                    row.value(QStringLiteral("device")).toString());
            }
        }
        {
            ckpt::MainWindow window;
            window.setSuppressModalDialogs(true);
            QVERIFY(ckpt::testing::openAndWait(window, kDir + QStringLiteral("legacy_2_5.pt2")));
            for (const char* name : {"state_dict.lin.weight", "state_dict.window", "constants.const"})
                QVERIFY2(findPath(window.treeModel(), QString::fromLatin1(name)).isValid(), name);
        }
        {
            ckpt::MainWindow window;
            window.setSuppressModalDialogs(true);
            QVERIFY(ckpt::testing::openAndWait(window, kDir + QStringLiteral("subclass.pt2")));
            const ckpt::Checkpoint& checkpoint = window.document()->checkpoint();
            for (const ckpt::TensorEntry& tensor : checkpoint.tensors) {
                const QModelIndex row
                    = findPath(window.treeModel(), QString::fromStdString(tensor.name.str()));
                QVERIFY2(row.isValid(), tensor.name.str().c_str());
                QCOMPARE(row.data(ckpt::TensorTreeModel::TensorIndexRole).toInt(),
                    static_cast<int>(&tensor - checkpoint.tensors.data()));
            }
            QVERIFY(std::any_of(checkpoint.tensors.begin(), checkpoint.tensors.end(),
                [](const ckpt::TensorEntry& tensor) { return tensor.name == "state_dict.pair[a]"; }));
        }
    }

private:
    QTemporaryDir m_config;
};

QTEST_MAIN(TestPt2Window)
#include "tst_pt2window.moc"
