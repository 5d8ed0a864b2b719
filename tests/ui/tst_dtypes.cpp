// SPDX-License-Identifier: MIT
// The app shows the newer dtypes (issue 26) as the command line does and as the real readers load
// them: the window opens the safetensors 0.8 and torch 2.14 fixtures of tests/fixtures/dtypes and
// its tensor tree names torch's dtype, shape and bytes on each row (float4_e2m1fn_x2 with
// safetensors' F4 last dimension halved); the document's findings say the torch release each needs.
#include "tests/common/uitesthelpers.h"
#include "ui/models/tensortreemodel.h"

#include <QApplication>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

namespace {

QString fixture(const char* name)
{
    return QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/dtypes/") + QString::fromLatin1(name);
}

QModelIndex findPath(const QAbstractItemModel* model, const QString& path, const QModelIndex& parent = {})
{
    for (int row = 0; row < model->rowCount(parent); ++row) {
        const QModelIndex index = model->index(row, 0, parent);
        const QString here = index.data(ckpt::TensorTreeModel::PathRole).toString();
        if (here == path)
            return index;
        if (path.startsWith(here + u'.')) {
            const QModelIndex found = findPath(model, path, index);
            if (found.isValid())
                return found;
        }
    }
    return {};
}

} // namespace

class TestDtypesInTheApp : public QObject {
    Q_OBJECT

private:
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

    void treeRowsNameTorchsDtypes_data()
    {
        QTest::addColumn<QString>("file");
        QTest::newRow("safetensors") << fixture("newdtypes.safetensors");
        QTest::newRow("torch zip") << fixture("newdtypes.pt");
    }
    void treeRowsNameTorchsDtypes()
    {
        QFETCH(QString, file);
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        window.resize(1200, 800);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(ckpt::testing::openAndWait(window, file));
        const QAbstractItemModel* model = window.treeModel();
        struct Row {
            const char* path;
            const char* dtype;
            const char* shape;
        };
        // Expected from the real readers (newdtypes.*.expected.json).
        for (const Row& row : {Row {"mx.blocks", "float4_e2m1fn_x2", "[2, 3]"},
                 Row {"mx.scales", "float8_e8m0fnu", "[4]"}, Row {"fp8.e4m3fn", "float8_e4m3fn", "[5]"},
                 Row {"fp8.e5m2", "float8_e5m2", "[2, 2]"}, Row {"fp8.e4m3fnuz", "float8_e4m3fnuz", "[3]"},
                 Row {"fp8.e5m2fnuz", "float8_e5m2fnuz", "[3]"}, Row {"uint.u16", "uint16", "[3]"},
                 Row {"uint.u32", "uint32", "[1, 2]"}, Row {"uint.u64", "uint64", "[2]"},
                 Row {"complex.c64", "complex64", "[2]"}}) {
            const QModelIndex name = findPath(model, QString::fromLatin1(row.path));
            QVERIFY2(name.isValid(), row.path);
            const QString dtype = name.siblingAtColumn(ckpt::TensorTreeModel::DTypeColumn).data().toString();
            const QString shape = name.siblingAtColumn(ckpt::TensorTreeModel::ShapeColumn).data().toString();
            QVERIFY2(dtype == QString::fromLatin1(row.dtype),
                qPrintable(dtype + u" for "_qs + QString::fromLatin1(row.path)));
            QVERIFY2(shape == QString::fromUtf8(row.shape),
                qPrintable(shape + u" for "_qs + QString::fromLatin1(row.path)));
        }
        const QModelIndex blocks = findPath(model, QStringLiteral("mx.blocks"));
        QCOMPARE(blocks.siblingAtColumn(ckpt::TensorTreeModel::SizeColumn).data().toString(),
            QStringLiteral("6 B"));
        // The document carries the reader's findings: the release each dtype needs.
        bool float4Named = false;
        for (const ckpt::Finding& finding : window.document()->checkpoint().findings)
            float4Named = float4Named
                || (finding.code == ckpt::FindingCode::DtypeNeedsNewerTorch
                    && finding.message.find("float4_e2m1fn_x2 needs torch >= 2.8") != std::string::npos);
        QVERIFY(float4Named);
    }
};

QTEST_MAIN(TestDtypesInTheApp)
#include "tst_dtypes.moc"
