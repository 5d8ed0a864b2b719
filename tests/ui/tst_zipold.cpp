// SPDX-License-Identifier: MIT
// The app opening archives from other writers (issue 26): a torch.save zip whose storage records
// are deflated and TorchScript's model.json layout (tests/fixtures/zipold/README.md). The window's
// tree shows every tensor torch (or the published format) reports, with its dtype, shape and
// recorded device; the details pane says how a deflated storage is kept.
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "tests/common/uitesthelpers.h"
#include "ui/document/checkpointdocument.h"
#include "ui/mainwindow.h"
#include "ui/models/tensortreemodel.h"
#include "ui/widgets/detailspane.h"
#include "ui/widgets/safetybanner.h"

#include <QAbstractProxyModel>
#include <QApplication>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>

namespace {

QString zipold(const QString& name)
{
    return QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/zipold/") + name;
}

QModelIndex findPath(const QAbstractItemModel* model, const QString& path, const QModelIndex& parent = {})
{
    for (int row = 0; row < model->rowCount(parent); ++row) {
        const QModelIndex index = model->index(row, 0, parent);
        if (index.data(ckpt::TensorTreeModel::PathRole).toString() == path)
            return index;
        const QModelIndex found = findPath(model, path, index);
        if (found.isValid())
            return found;
    }
    return {};
}

} // namespace

class TestZipOldApp : public QObject {
    Q_OBJECT

    QTemporaryDir m_config;

private Q_SLOTS:
    void initTestCase()
    {
        QApplication::setQuitOnLastWindowClosed(false);
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(m_config.isValid());
        qputenv("XDG_CONFIG_HOME", QFile::encodeName(m_config.path()));
        QSettings().clear();
    }

    void treeShowsWhatTorchReports_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::newRow("deflated storages") << QStringLiteral("deflated_state_dict");
        QTest::newRow("stored and deflated") << QStringLiteral("deflated_mixed");
        QTest::newRow("model.json TorchScript") << QStringLiteral("torchscript_modeljson");
        QTest::newRow("model.json with attributes.pkl")
            << QStringLiteral("../modeljson/torchscript_attributes");
        QTest::newRow("model.json, hostile attributes.pkl")
            << QStringLiteral("../modeljson/torchscript_attributes_hostile");
    }
    void treeShowsWhatTorchReports()
    {
        QFETCH(QString, fixture);
        QFile expectedFile(zipold(fixture + QStringLiteral(".expected.json")));
        QVERIFY(expectedFile.open(QIODevice::ReadOnly));
        const QJsonArray tensors
            = QJsonDocument::fromJson(expectedFile.readAll()).object()[u"tensors"_qs].toArray();
        QVERIFY(!tensors.isEmpty());

        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        window.show();
        QVERIFY(ckpt::testing::openAndWait(window, zipold(fixture + QStringLiteral(".pt"))));
        QVERIFY(window.document());
        QCOMPARE(window.document()->checkpoint().tensors.size(), std::size_t(tensors.size()));
        const QAbstractItemModel* model = window.treeView()->model();
        window.treeView()->expandAll();
        for (const QJsonValue value : tensors) {
            const QJsonObject want = value.toObject();
            const QString name = want[u"name"_qs].toString();
            const QModelIndex index = findPath(model, name);
            QVERIFY2(index.isValid(), qPrintable(u"no row for "_qs + name));
            const auto column = [&](int c) { return index.siblingAtColumn(c).data().toString(); };
            QCOMPARE(column(ckpt::TensorTreeModel::DTypeColumn), want[u"dtype"_qs].toString());
            QStringList dims;
            for (const QJsonValue dim : want[u"shape"_qs].toArray())
                dims << QString::number(dim.toInteger());
            QVERIFY2(column(ckpt::TensorTreeModel::ShapeColumn).contains(dims.join(u", "_qs)),
                qPrintable(name + u": "_qs + column(ckpt::TensorTreeModel::ShapeColumn)));
            QCOMPARE(index.data(ckpt::TensorTreeModel::RecordedDeviceRole).toString(),
                want[u"device"_qs].toString());
        }
        // The details of a tensor whose storage is deflated say so; a stored one gives its offset.
        const ckpt::Checkpoint& checkpoint = window.document()->checkpoint();
        window.detailsPane()->showTreeNode(checkpoint.tensors.front().treeNode);
        const QString details = window.detailsPane()->plainText();
        const ckpt::StorageRecord& storage
            = checkpoint.storages[std::size_t(checkpoint.tensors.front().storage)];
        if (storage.deflated)
            QVERIFY2(details.contains(u"deflated in its zip record"_qs), qPrintable(details));
        else
            QVERIFY2(details.contains(u"Offset in file"_qs), qPrintable(details));
    }

    // attributes.pkl of the model.json layout: a row "attributes" in the tree, rated by the safety
    // banner (posix.system: dangerous), and File > Save remapped copy writes the layout with the
    // planned devices, read back by the project's reader.
    void modelJsonAttributesAndSaveCopy()
    {
        {
            ckpt::MainWindow window;
            window.setSuppressModalDialogs(true);
            window.show();
            QVERIFY(ckpt::testing::openAndWait(
                window, zipold(QStringLiteral("../modeljson/torchscript_attributes_hostile.pt"))));
            const QAbstractItemModel* model = window.treeView()->model();
            bool attributesRow = false;
            for (int row = 0; row < model->rowCount(); ++row)
                attributesRow = attributesRow || model->index(row, 0).data().toString() == u"attributes"_qs;
            QVERIFY(attributesRow);
            QTRY_COMPARE_WITH_TIMEOUT(
                window.safetyBanner()->rating(), ckpt::PickleSafety::DangerousOrUnknown, 30000);
        }
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        window.show();
        QVERIFY(ckpt::testing::openAndWait(
            window, zipold(QStringLiteral("../modeljson/torchscript_attributes.pt"))));
        QTRY_COMPARE_WITH_TIMEOUT(window.safetyBanner()->rating(), ckpt::PickleSafety::KnownInert, 30000);
        window.document()->move({ckpt::PlacementRule {ckpt::PlacementRule::Kind::MapTag, "*", "cpu"}},
            QStringLiteral("Map every device to cpu"));
        QTemporaryDir out;
        const QString copy = out.filePath(QStringLiteral("attributes_cpu.pt"));
        QSignalSpy finished(&window, &ckpt::MainWindow::saveFinished);
        window.saveRemappedCopyTo(copy);
        QVERIFY(finished.wait(60000));
        QVERIFY2(finished.first().at(0).toBool(), qPrintable(finished.first().at(1).toString()));
        const ckpt::Checkpoint written = ckpt::readCheckpoint(copy.toStdString());
        QCOMPARE(written.format, ckpt::CheckpointFormat::TorchScriptJson);
        QCOMPARE(written.tensors.size(), window.document()->checkpoint().tensors.size());
        for (const ckpt::TensorEntry& tensor : written.tensors)
            QCOMPARE(tensor.device.value_or("none").str(), std::string("cpu"));
    }
};

QTEST_MAIN(TestZipOldApp)
#include "tst_zipold.moc"
