// SPDX-License-Identifier: MIT
// File > Export Weights… with the choices `convert`/`extract` take as --dtype and --plain-values:
// the dialog after the path offers them, and the export runs the same task with them. The copies
// are judged by torch 1.13 with the same checkers as the CLI's (tests/cli/tst_dtypecast.cpp,
// tst_plainvalues.cpp), each in one run.
#include "tests/common/uitesthelpers.h"
#include "ui/mainwindow.h"
#include "ui/models/tensortreemodel.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFile>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

namespace {

QString castFixture(const QString& name)
{
    return QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/dtype-cast/") + name;
}

bool exportWeights(
    ckpt::MainWindow& window, const QString& path, const ckpt::WeightsValueChoices& choices, QString& message)
{
    QSignalSpy exported(&window, &ckpt::MainWindow::exportFinished);
    window.exportWeightsTo(path, choices);
    if (!exported.wait(120000))
        return false;
    message = exported.first().at(1).toString();
    return exported.first().at(0).toBool();
}

// Runs a checker under torch 1.13 with a jobs file holding `jobs` (a JSON array).
QString judge(const QString& checker, const QString& jobsFile, const QString& jobs)
{
    QFile file(jobsFile);
    if (!file.open(QIODevice::WriteOnly))
        return QStringLiteral("cannot write ") + jobsFile;
    file.write(jobs.toUtf8());
    file.close();
    QProcess process;
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(QStringLiteral(CKPT_LEGACY_PYTHON), {checker, jobsFile});
    if (!process.waitForFinished(300000) || process.exitCode() != 0)
        return QString::fromUtf8(process.readAll());
    return {};
}

} // namespace

class TestExportValues : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void dialogOffersTheChoices()
    {
        // Filled in as a user would: bfloat16 and plain values, then OK.
        QTimer::singleShot(0, [] {
            auto* dialog = qobject_cast<QDialog*>(QApplication::activeModalWidget());
            QVERIFY(dialog);
            auto* dtype = dialog->findChild<QComboBox*>(QStringLiteral("exportDtype"));
            auto* plain = dialog->findChild<QCheckBox*>(QStringLiteral("exportPlainValues"));
            QVERIFY(dtype && plain && plain->isEnabled());
            dtype->setCurrentIndex(dtype->findData(QStringLiteral("bfloat16")));
            plain->setChecked(true);
            dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->click();
        });
        const auto choices = ckpt::askWeightsValueChoices(nullptr, QStringLiteral("/tmp/out.pt"));
        QVERIFY(choices);
        QCOMPARE(choices->castFloatsTo, std::string("bfloat16"));
        QVERIFY(choices->plainValues);

        // safetensors holds only tensors: no plain values; cancel gives nothing.
        QTimer::singleShot(0, [] {
            auto* dialog = qobject_cast<QDialog*>(QApplication::activeModalWidget());
            QVERIFY(dialog);
            QVERIFY(!dialog->findChild<QCheckBox*>(QStringLiteral("exportPlainValues"))->isEnabled());
            dialog->reject();
        });
        QVERIFY(!ckpt::askWeightsValueChoices(nullptr, QStringLiteral("/tmp/out.safetensors")));
    }

    void exportCastsAndWritesPlainValues()
    {
        QTemporaryDir out;
        QVERIFY(out.isValid());
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);

        // The tree shows the fixture's tensors as the core reads them, then the export casts them.
        QVERIFY(ckpt::testing::openAndWait(window, castFixture(QStringLiteral("floats-1.13.pt"))));
        QCOMPARE(window.treeModel()->rowCount(),
            12); // f16, bf16, f32, f64, view, tied, scalar, empty, half, ints, bool, complex
        const QString cast = out.filePath(QStringLiteral("cast.pt"));
        QString message;
        QVERIFY2(exportWeights(window, cast, {"float16", false}, message), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("cast to float16")), qPrintable(message));
        const QString castProblem
            = judge(QStringLiteral(CKPT_SOURCE_DIR "/tests/convert/check_dtype_cast.py"),
                out.filePath(QStringLiteral("cast.json")),
                u"[{\"input\":\"%1\",\"output\":\"%2\",\"to\":\"float16\"}]"_qs.arg(
                    castFixture(QStringLiteral("floats-1.13.pt")), cast));
        QVERIFY2(castProblem.isEmpty(), qPrintable(castProblem));

        // NumPy values: without the choice they are dropped, with it written plainly.
        QVERIFY(ckpt::testing::openAndWait(window, castFixture(QStringLiteral("numpy-values-p2.pt"))));
        const QString plain = out.filePath(QStringLiteral("plain.pt"));
        QVERIFY2(exportWeights(window, plain, {{}, true}, message), qPrintable(message));
        QVERIFY2(
            message.contains(QStringLiteral("NumPy values written as plain values")), qPrintable(message));
        const QString plainProblem
            = judge(QStringLiteral(CKPT_SOURCE_DIR "/tests/extract/check_plain_values.py"),
                out.filePath(QStringLiteral("plain.json")),
                u"[{\"output\":\"%1\",\"expected\":\"%2\"}]"_qs.arg(
                    plain, castFixture(QStringLiteral("numpy-values-p2.pt.expected.json"))));
        QVERIFY2(plainProblem.isEmpty(), qPrintable(plainProblem));
        QVERIFY2(exportWeights(window, out.filePath(QStringLiteral("dropped.pt")), {}, message),
            qPrintable(message));
        QVERIFY(!message.contains(QStringLiteral("NumPy values written as plain values")));
    }
};

QTEST_MAIN(TestExportValues)
#include "tst_exportvalues.moc"
