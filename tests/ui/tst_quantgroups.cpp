// SPDX-License-Identifier: MIT
// The app shows each quantized weight with its scales (issue 29) as `info` does: the window opens
// the fixtures of tests/fixtures/quant (safetensors 0.8, torch 2.14) and the tensor tree's weight
// row says its scheme and scale layout after the dtype, each scale's row its weight and layout,
// the tooltip the whole group; a broken variant's finding marks the weight's row.
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
    return QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/quant/") + QString::fromLatin1(name);
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

QString dtypeText(const QModelIndex& name)
{
    return name.siblingAtColumn(ckpt::TensorTreeModel::DTypeColumn).data().toString();
}

} // namespace

class TestQuantGroupsInTheApp : public QObject {
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

    void weightRowsShowTheirScales_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("weight");
        QTest::addColumn<QString>("weightText");
        QTest::addColumn<QString>("scale");
        QTest::addColumn<QString>("scaleText");
        QTest::newRow("DeepSeek-V3 safetensors")
            << fixture("deepseek-v3-fp8.safetensors") << u"model.layers.0.self_attn.q_proj.weight"_qs
            << u"float8_e4m3fn · fp8, block 128x128"_qs
            << u"model.layers.0.self_attn.q_proj.weight_scale_inv"_qs
            << u"float32 · scale of weight: block 128x128"_qs;
        QTest::newRow("DeepSeek-V3 torch zip")
            << fixture("deepseek-v3-fp8.pt") << u"model.layers.0.mlp.experts.w1"_qs
            << u"float8_e4m3fn · fp8, block 128x128"_qs << u"model.layers.0.mlp.experts.w1_scale_inv"_qs
            << u"float32 · scale of w1: block 128x128"_qs;
        QTest::newRow("NVFP4") << fixture("nvfp4-modelopt.safetensors") << u"layers.0.gate_proj.weight"_qs
                               << u"uint8 · nvfp4, group 16"_qs << u"layers.0.gate_proj.weight_scale_2"_qs
                               << u"float32 · global scale of weight: per-tensor"_qs;
        QTest::newRow("transposed") << fixture("broken-scale-transposed.safetensors")
                                    << u"model.layers.0.self_attn.q_proj.weight"_qs
                                    << u"float8_e4m3fn · fp8, transposed"_qs
                                    << u"model.layers.0.self_attn.q_proj.weight_scale_inv"_qs
                                    << u"float32 · scale of weight: transposed"_qs;
        QTest::newRow("dropped") << fixture("broken-scale-dropped.safetensors")
                                 << u"model.layers.0.self_attn.q_proj.weight"_qs
                                 << u"float8_e4m3fn · fp8, no scale"_qs
                                 << u"model.layers.0.input_layernorm.weight"_qs << u"bfloat16"_qs;
    }
    void weightRowsShowTheirScales()
    {
        QFETCH(QString, file);
        QFETCH(QString, weight);
        QFETCH(QString, weightText);
        QFETCH(QString, scale);
        QFETCH(QString, scaleText);
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        window.resize(1200, 800);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(ckpt::testing::openAndWait(window, file));
        const QAbstractItemModel* model = window.treeModel();
        const QModelIndex weightRow = findPath(model, weight);
        QVERIFY2(weightRow.isValid(), qPrintable(weight));
        QCOMPARE(dtypeText(weightRow), weightText);
        const QModelIndex scaleRow = findPath(model, scale);
        QVERIFY2(scaleRow.isValid(), qPrintable(scale));
        QCOMPARE(dtypeText(scaleRow), scaleText);
        // Weight and scales are one group: the weight's tooltip names each of its scales.
        const QString tooltip = weightRow.data(Qt::ToolTipRole).toString();
        QVERIFY2(tooltip.contains(u"Quantized weight and its scales"_qs), qPrintable(tooltip));
        if (!scaleText.startsWith(u"bfloat16"_qs))
            QVERIFY2(tooltip.contains(scale), qPrintable(tooltip));
        // A broken variant: the window's findings (after its triage) mark the weight's row.
        if (file.contains(u"broken"_qs))
            QTRY_VERIFY_WITH_TIMEOUT(
                findPath(model, weight).data(ckpt::TensorTreeModel::FindingSeverityRole).isValid(), 60000);
    }
};

QTEST_MAIN(TestQuantGroupsInTheApp)
#include "tst_quantgroups.moc"
