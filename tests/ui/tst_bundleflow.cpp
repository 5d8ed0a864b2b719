// SPDX-License-Identifier: MIT
// The app with a bundle (an archive that carries checkpoint files): open a NeMo .nemo and an
// AllenNLP model.tar.gz, see each checkpoint member as a top-level node holding its tensors with
// their recorded devices and the other members listed as rows; plan, save a remapped bundle (the
// save task `ckpt-inspect remap` runs) and read it back; a truncated bundle shows what came before
// the damage and names it in the Findings.
#include "core/model/shardset.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "ui/document/checkpointdocument.h"
#include "ui/mainwindow.h"
#include "ui/models/findingsmodel.h"
#include "ui/models/tensortreemodel.h"
#include "ui/widgets/findingspanel.h"

#include <QApplication>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

namespace {

QString bundle(const QString& name)
{
    return QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/bundles/") + name;
}

bool openAndWait(ckpt::MainWindow& window, const QString& path)
{
    QSignalSpy opened(&window, &ckpt::MainWindow::checkpointOpened);
    window.openFile(path);
    return opened.wait(30000);
}

// The top-level rows of the tree: name -> index.
QMap<QString, QModelIndex> topRows(const QAbstractItemModel* model)
{
    QMap<QString, QModelIndex> rows;
    for (int row = 0; row < model->rowCount(); ++row) {
        const QModelIndex index = model->index(row, 0);
        rows.insert(index.data(Qt::DisplayRole).toString(), index);
    }
    return rows;
}

} // namespace

class TestBundleFlow : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        QApplication::setQuitOnLastWindowClosed(false);
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(m_config.isValid());
        qputenv("XDG_CONFIG_HOME", QFile::encodeName(m_config.path()));
        QSettings().clear();
    }

    void membersAreNodes_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("member");
        QTest::addColumn<QString>("other");
        QTest::newRow("nemo") << QStringLiteral("nemo_model.nemo") << QStringLiteral("model_weights.ckpt")
                              << QStringLiteral("model_config.yaml");
        QTest::newRow("allennlp") << QStringLiteral("allennlp_model.tar.gz") << QStringLiteral("weights.th")
                                  << QStringLiteral("config.json");
    }
    void membersAreNodes()
    {
        QFETCH(QString, name);
        QFETCH(QString, member);
        QFETCH(QString, other);
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        window.resize(1200, 800);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(openAndWait(window, bundle(name)));
        const ckpt::Checkpoint& checkpoint = window.document()->checkpoint();
        QVERIFY(checkpoint.shardSet && checkpoint.shardSet->bundle);
        const QAbstractItemModel* model = window.treeModel();
        const auto rows = topRows(model);
        QVERIFY2(rows.contains(member), qPrintable(QStringList(rows.keys()).join(QLatin1Char(','))));
        QVERIFY2(rows.contains(other), qPrintable(QStringList(rows.keys()).join(QLatin1Char(','))));
        // The member's node holds its modules; each tensor row shows its recorded device.
        const QModelIndex node = rows.value(member);
        QVERIFY(model->rowCount(node) >= 3);
        for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t) {
            const QModelIndex index = window.treeModel()->indexForTensor(t);
            QVERIFY(index.isValid());
            QModelIndex top = index;
            while (top.parent().isValid())
                top = top.parent();
            QCOMPARE(top.data(Qt::DisplayRole).toString(), member);
            bool shown = false;
            for (int column = 0; column < model->columnCount(index.parent()); ++column)
                shown = shown
                    || model->index(index.row(), column, index.parent()).data(Qt::DisplayRole).toString()
                        == QString::fromStdString(checkpoint.tensors[t].device->str());
            QVERIFY2(shown, checkpoint.tensors[t].name.str().c_str());
        }
        // Save a remapped bundle, everything on the CPU, as File > Save Remapped Copy does.
        window.document()->move({ckpt::PlacementRule {ckpt::PlacementRule::Kind::MapTag, "*", "cpu"}},
            QStringLiteral("Map every device to cpu"));
        QTemporaryDir out;
        const QString copy = out.filePath(name);
        QSignalSpy finished(&window, &ckpt::MainWindow::saveFinished);
        window.saveRemappedCopyTo(copy);
        QVERIFY(finished.wait(60000));
        QVERIFY2(finished.first().at(0).toBool(), qPrintable(finished.first().at(1).toString()));
        const ckpt::Checkpoint written = ckpt::readCheckpoint(copy.toStdString());
        QVERIFY(written.shardSet && written.shardSet->bundle);
        QCOMPARE(written.shardSet->bundle->kind, checkpoint.shardSet->bundle->kind);
        QCOMPARE(written.tensors.size(), checkpoint.tensors.size());
        for (const ckpt::StorageRecord& storage : written.storages)
            QCOMPARE(storage.device.value_or("none").str(), std::string("cpu"));
    }

    void truncatedBundleShowsWhatCameBefore()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(openAndWait(window, bundle(QStringLiteral("broken_truncated.tar.gz"))));
        const auto rows = topRows(window.treeModel());
        QVERIFY(rows.contains(QStringLiteral("weights.th")));
        QCOMPARE(window.document()->checkpoint().tensors.size(), std::size_t(5));
        bool named = false;
        for (const ckpt::Finding& finding : window.document()->checkpoint().findings)
            named = named || finding.code == ckpt::FindingCode::BundleDamaged;
        QVERIFY(named);
        // The Findings panel lists it, with the reader's words.
        const QAbstractItemModel* findings = window.findingsPanel()->model();
        auto listed = [&] {
            for (int row = 0; row < findings->rowCount(); ++row)
                for (int column = 0; column < findings->columnCount(); ++column)
                    if (findings->index(row, column)
                            .data()
                            .toString()
                            .contains(QStringLiteral("the bundle is damaged")))
                        return true;
            return false;
        };
        QTRY_VERIFY_WITH_TIMEOUT(listed(), 30000);
    }

private:
    QTemporaryDir m_config;
};

QTEST_MAIN(TestBundleFlow)
#include "tst_bundleflow.moc"
