// SPDX-License-Identifier: MIT
// The app opening archives from other writers (issue 26): a torch.save zip whose storage records
// are deflated and TorchScript's model.json layout (tests/fixtures/zipold/README.md). The window's
// tree shows every tensor torch (or the published format) reports, with its dtype, shape and
// recorded device; the details pane says how a deflated storage is kept.
#include "core/read/checkpointreader.h"
#include "tests/common/uitesthelpers.h"
#include "ui/document/checkpointdocument.h"
#include "ui/mainwindow.h"
#include "ui/models/tensortreemodel.h"
#include "ui/widgets/detailspane.h"

#include <QAbstractProxyModel>
#include <QApplication>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>
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
};

QTEST_MAIN(TestZipOldApp)
#include "tst_zipold.moc"
