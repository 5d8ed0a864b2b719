// SPDX-License-Identifier: MIT
// Issue 26 in the app: a pickle.dump of tensors (storages as torch.save files inside bytes) and a
// whole pickled quantized model open in the main window with every tensor, its dtype and its
// recorded device in the tree, as `ckpt-inspect info` shows them (tests/cli/tst_nested.cpp).
#include "tests/common/uitesthelpers.h"
#include "ui/document/checkpointdocument.h"
#include "ui/mainwindow.h"
#include "ui/models/tensortreemodel.h"

#include <QTest>

namespace {

QString nested(const QString& name)
{
    return QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/nested/") + name;
}

QModelIndex findPath(const QAbstractItemModel* model, const QString& path, const QModelIndex& parent = {})
{
    for (int row = 0; row < model->rowCount(parent); ++row) {
        const QModelIndex index = model->index(row, 0, parent);
        const QString here = index.data(ckpt::TensorTreeModel::PathRole).toString();
        if (here == path)
            return index;
        if (path.startsWith(here + u'.') || here.isEmpty()) {
            const QModelIndex found = findPath(model, path, index);
            if (found.isValid())
                return found;
        }
    }
    return {};
}

// Every column's text of the row of `index`.
QString rowText(const QModelIndex& index)
{
    QStringList cells;
    for (int column = 0; column < index.model()->columnCount(index.parent()); ++column)
        cells << index.siblingAtColumn(column).data().toString();
    return cells.join(u" | "_qs);
}

} // namespace

class TestNestedBytesInApp : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Protocol 5 keeps the nested files verbatim; protocols 0-2 as latin-1 text; the *_zipblobs
    // files hold zip archives instead of legacy streams (tests/fixtures/nested/README.md).
    void pickledTensorsShowTheirDevices_data()
    {
        QTest::addColumn<QString>("file");
        for (const char* name : {"torch-2/pickled_dict.pkl", "torch-2/pickled_dict_protocol0.pkl",
                 "torch-1.13/pickled_dict_protocol1.pkl", "torch-2/pickled_dict_zipblobs.pkl",
                 "torch-1.13/pickled_dict_zipblobs_protocol0.pkl"})
            QTest::newRow(name) << QString::fromLatin1(name);
    }

    void pickledTensorsShowTheirDevices()
    {
        QFETCH(QString, file);
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        QVERIFY(ckpt::testing::openAndWait(window, nested(file)));
        QVERIFY(window.document());
        QCOMPARE(window.document()->checkpoint().tensors.size(), std::size_t(5));
        const ckpt::TensorTreeModel* model = window.treeModel();
        const std::pair<const char*, const char*> rows[] = {{"encoder.weight", "cuda:0"},
            {"encoder.row", "cuda:0"}, {"bias", "cpu"}, {"head", "cuda:1"}, {"steps", "cuda"}};
        for (const auto& [path, device] : rows) {
            const QModelIndex index = findPath(model, QString::fromLatin1(path));
            QVERIFY2(index.isValid(), path);
            QCOMPARE(index.data(ckpt::TensorTreeModel::RecordedDeviceRole).toString(),
                QString::fromLatin1(device));
        }
        QVERIFY2(rowText(findPath(model, QStringLiteral("head"))).contains(QStringLiteral("float16")),
            qPrintable(rowText(findPath(model, QStringLiteral("head")))));
        QVERIFY(window.statusSummary().contains(QStringLiteral("pickle")));
    }

    void wholeQuantizedModelListsStateDictTensors()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        QVERIFY(ckpt::testing::openAndWait(window, nested(QStringLiteral("torch-1.13/quantized_model.pt"))));
        QVERIFY(window.document());
        QCOMPARE(window.document()->checkpoint().tensors.size(), std::size_t(10));
        const ckpt::TensorTreeModel* model = window.treeModel();
        for (const char* path : {"conv.weight", "conv.bias", "conv.scale", "conv.zero_point", "fc.scale",
                 "fc._packed_params._packed_params.0", "fc._packed_params._packed_params.1", "quant.scale"})
            QVERIFY2(findPath(model, QString::fromLatin1(path)).isValid(), path);
        const QModelIndex weight = findPath(model, QStringLiteral("fc._packed_params._packed_params.0"));
        QVERIFY2(rowText(weight).contains(QStringLiteral("qint8")), qPrintable(rowText(weight)));
        QCOMPARE(weight.data(ckpt::TensorTreeModel::RecordedDeviceRole).toString(), QStringLiteral("cpu"));
    }
};

QTEST_MAIN(TestNestedBytesInApp)
#include "tst_nestedbytes.moc"
