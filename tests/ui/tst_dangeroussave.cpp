// SPDX-License-Identifier: MIT
// The app's save of a file rated dangerous (issue 24): a whole model saved with torch.save(model)
// "on a GPU" (tests/remap/make_gpu_model.py, real torch 1.13; its classes come from the user's own
// package, so it is rightly "cannot verify"). File > Save Remapped Copy asks first; "Do Not Save"
// writes nothing and names both ways out; "I trust this file: remap anyway" runs the save task
// with the override, which writes the REMAPPED copy (every storage on the CPU, bytes identical),
// rated exactly like the input, and the window says it is as dangerous. Real torch loads the copy
// without map_location. The dialog is rendered to test-output/ui/dangerous-save-dialog.png.
#include "core/io/mappedfile.h"
#include "core/read/checkpointreader.h"
#include "core/safety/pickleverdict.h"
#include "tests/common/uitesthelpers.h"
#include "ui/dialogs/dangeroussave.h"
#include "ui/document/checkpointdocument.h"
#include "ui/mainwindow.h"

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTextDocument>

#include <algorithm>

using namespace ckpt;

namespace {

const QString kMakeGpuModel = QStringLiteral(CKPT_SOURCE_DIR "/tests/remap/make_gpu_model.py");
const QString kCheckGpuModel = QStringLiteral(CKPT_SOURCE_DIR "/tests/remap/check_gpu_model.py");

QStringList unsafeNames(const SafetyVerdict& verdict)
{
    QStringList names;
    for (const UnsafeCallable& callable : verdict.unsafe)
        names.append(QString::fromStdString(callable.name));
    names.sort();
    return names;
}

QByteArray storageBytes(const Checkpoint& checkpoint, const StorageRecord& storage)
{
    if (!checkpoint.file || !storage.dataOffset)
        return {};
    const ByteView bytes = checkpoint.file->bytes();
    return QByteArray(
        reinterpret_cast<const char*>(bytes.data() + *storage.dataOffset), qsizetype(storage.nbytes));
}

} // namespace

class TestDangerousSave : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_config;
    QTemporaryDir m_work;
    QString m_original;

    // Opens `input` (the whole model unless given), plans cuda:1 -> cpu and asks to save it to
    // `path`: the dialog.
    QMessageBox* askToSave(MainWindow& window, const QString& path, QString input = {})
    {
        window.setSuppressModalDialogs(true);
        if (!testing::openAndWait(window, input.isEmpty() ? m_original : input))
            return nullptr;
        window.document()->move(
            {{PlacementRule::Kind::MapTag, "cuda:1", "cpu"}}, QStringLiteral("cuda:1 to cpu"));
        window.saveRemappedCopyTo(path);
        return window.dangerousSaveGuard()->dialog();
    }

private Q_SLOTS:
    void initTestCase()
    {
        QApplication::setQuitOnLastWindowClosed(false);
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(m_config.isValid() && m_work.isValid());
        qputenv("XDG_CONFIG_HOME", QFile::encodeName(m_config.path()));
        QSettings().clear();
        QProcess writer;
        writer.start(QStringLiteral(CKPT_LEGACY_PYTHON), {kMakeGpuModel, m_work.path()});
        if (!writer.waitForFinished(300000) || writer.exitCode() != 0)
            QSKIP(qPrintable(QStringLiteral("torch could not write the whole model: ")
                + QString::fromUtf8(writer.readAllStandardError())));
        m_original = m_work.filePath(QStringLiteral("whole_model.pt"));
    }

    void declineWritesNothingAndNamesBothWaysOut()
    {
        MainWindow window;
        QSignalSpy saved(&window, &MainWindow::saveFinished);
        const QString path = m_work.filePath(QStringLiteral("declined.pt"));
        QMessageBox* box = askToSave(window, path);
        QVERIFY(box && box->isVisible());
        QCOMPARE(box->objectName(), QStringLiteral("dangerousSaveDialog"));
        QVERIFY2(box->text().startsWith(QStringLiteral("Refusing to write a copy of whole_model.pt")),
            qPrintable(box->text()));
        const QString details = box->informativeText();
        QVERIFY2(details.contains(QStringLiteral("gpunets.blocks.GpuNet"))
                && details.contains(QStringLiteral("I trust this file: remap anyway"))
                && details.contains(QStringLiteral("Export Weights")),
            qPrintable(details));
        QVERIFY(!details.contains(QStringLiteral("byte for byte")));
        QVERIFY(box->findChild<QPushButton*>(QStringLiteral("remapAnywayButton")));

        // Seen as a person sees it.
        box->adjustSize();
        const QImage image = box->grab().toImage();
        QVERIFY(!image.isNull());
        const QString dir = QStringLiteral(CKPT_BINARY_DIR "/test-output/ui");
        QVERIFY(QDir().mkpath(dir));
        QVERIFY(image.save(dir + QStringLiteral("/dangerous-save-dialog.png")));

        QTest::mouseClick(box->findChild<QPushButton*>(QStringLiteral("refuseButton")), Qt::LeftButton);
        QTRY_COMPARE(saved.count(), 1);
        QCOMPARE(saved.last().at(0).toBool(), false);
        const QString message = saved.last().at(1).toString();
        QVERIFY2(message.contains(QStringLiteral("I trust this file"))
                && message.contains(QStringLiteral("Export Weights")),
            qPrintable(message));
        QVERIFY(!QFileInfo::exists(path));
        QCOMPARE(
            QDir(m_work.path()).entryList({QStringLiteral("*declined*")}, QDir::AllEntries | QDir::Hidden),
            QStringList());
    }

    void overrideWritesTheRemappedCopy()
    {
        MainWindow window;
        QSignalSpy saved(&window, &MainWindow::saveFinished);
        const QString path = m_work.filePath(QStringLiteral("remapped.pt"));
        QMessageBox* box = askToSave(window, path);
        QVERIFY(box && box->isVisible());
        QTest::mouseClick(box->findChild<QPushButton*>(QStringLiteral("remapAnywayButton")), Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(saved.count(), 1, 60000);
        const QString message = saved.last().at(1).toString();
        QVERIFY2(saved.last().at(0).toBool(), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("still DANGEROUS"))
                && message.contains(QStringLiteral("exactly as dangerous as the input"))
                && message.contains(QStringLiteral("gpunets.blocks.GpuNet")),
            qPrintable(message));

        // The copy: every storage on the CPU, its bytes the input's, rated exactly like the input.
        const Checkpoint input = readCheckpoint(m_original.toStdString());
        const Checkpoint copy = readCheckpoint(path.toStdString());
        QCOMPARE(copy.storages.size(), input.storages.size());
        int moved = 0;
        for (std::size_t s = 0; s < input.storages.size(); ++s) {
            QCOMPARE(copy.storages[s].device.value_or("?"), std::string("cpu"));
            moved += input.storages[s].device != copy.storages[s].device ? 1 : 0;
            const QByteArray before = storageBytes(input, input.storages[s]);
            QVERIFY(!before.isEmpty());
            QCOMPARE(storageBytes(copy, copy.storages[s]), before);
        }
        QVERIFY(moved >= 10);
        const SafetyVerdict inputVerdict = ratePickleSafety(input);
        const SafetyVerdict copyVerdict = ratePickleSafety(copy);
        QVERIFY(copyVerdict.dangerous());
        QCOMPARE(unsafeNames(copyVerdict), unsafeNames(inputVerdict));

        // Real torch: plain torch.load of the copy, no map_location, on this CPU machine.
        QProcess judge;
        judge.start(QStringLiteral(CKPT_LEGACY_PYTHON),
            {kCheckGpuModel, m_original, path, m_original + QStringLiteral(".expected.json")});
        QVERIFY(judge.waitForFinished(300000));
        const QByteArray said = judge.readAllStandardOutput() + judge.readAllStandardError();
        QVERIFY2(judge.exitCode() == 0 && said.startsWith("ok "), said.constData());
    }

    // The two faces refuse a dangerous folder of .bin shards alike (issue 25): the dialog says,
    // line for line, what `ckpt-inspect remap DIR` prints, but for how each face names the two ways
    // out (the override, and the weights alone), and offers the override the command line offers.
    void bothFacesRefuseADangerousFolderAlike()
    {
        const QString input = m_work.filePath(QStringLiteral("shards"));
        const QString folder = m_work.filePath(QStringLiteral("shards-alike"));
        QProcess cli;
        cli.start(QStringLiteral(CKPT_INSPECT_BINARY),
            {QStringLiteral("remap"), input, QStringLiteral("-o"), folder, QStringLiteral("--map"),
                QStringLiteral("cuda:1=cpu")});
        QVERIFY(cli.waitForFinished(120000));
        QCOMPARE(cli.exitCode(), 4);
        const QString said = QString::fromUtf8(cli.readAllStandardError());

        MainWindow window;
        QMessageBox* box = askToSave(window, folder, input);
        QVERIFY(box && box->isVisible());
        QVERIFY(box->findChild<QPushButton*>(QStringLiteral("remapAnywayButton")));
        QTextDocument shown;
        shown.setHtml(box->informativeText());
        const QString dialog = shown.toPlainText();
        const QStringList lines = said.trimmed().split(QLatin1Char('\n'));
        QVERIFY2(
            lines.size() >= 4 && lines.first().startsWith(QStringLiteral("ckpt-inspect remap: refusing")),
            qPrintable(said));
        for (qsizetype i = 1; i < lines.size(); ++i) {
            QString line = lines[i].startsWith(QStringLiteral("  - ")) ? lines[i].mid(4) : lines[i];
            // How each face names the ways out: the rest of every line is the same.
            line.replace(
                QStringLiteral("--allow-dangerous"), QStringLiteral("“I trust this file: remap anyway”"));
            const qsizetype convert = line.indexOf(QStringLiteral("`ckpt-inspect convert"));
            if (convert >= 0)
                line = line.left(convert)
                    + QStringLiteral("File > Export Weights… of the folder (tensors only, no pickle)");
            QVERIFY2(dialog.contains(line),
                qPrintable(QStringLiteral("the dialog does not say\n  ") + line
                    + QStringLiteral("\nit says\n") + dialog));
        }
        QTest::mouseClick(box->findChild<QPushButton*>(QStringLiteral("refuseButton")), Qt::LeftButton);
        QVERIFY(!QFileInfo::exists(folder));
    }

    // A folder of .bin shards whose second shard holds the user's tensor subclass: the dialog
    // offers the same override (it once offered "Copy Byte for Byte", which for a folder only
    // repeated the refusal), and the remapped folder is written, every shard rated like its input.
    void overrideWritesTheRemappedFolder()
    {
        MainWindow window;
        QSignalSpy saved(&window, &MainWindow::saveFinished);
        const QString input = m_work.filePath(QStringLiteral("shards"));
        const QString folder = m_work.filePath(QStringLiteral("shards-cpu"));
        QMessageBox* box = askToSave(window, folder, input);
        QVERIFY(box && box->isVisible());
        QVERIFY2(box->informativeText().contains(QStringLiteral("gpunets.blocks.ScaledTensor")),
            qPrintable(box->informativeText()));
        QPushButton* trust = box->findChild<QPushButton*>(QStringLiteral("remapAnywayButton"));
        QVERIFY(trust);
        QTest::mouseClick(trust, Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(saved.count(), 1, 60000);
        QVERIFY2(saved.last().at(0).toBool(), qPrintable(saved.last().at(1).toString()));
        QVERIFY(saved.last().at(1).toString().contains(QStringLiteral("still DANGEROUS")));

        const Checkpoint original = readCheckpoint(input.toStdString());
        const Checkpoint copy = readCheckpoint(folder.toStdString());
        QVERIFY(copy.shardSet);
        QCOMPARE(copy.storages.size(), original.storages.size());
        for (const StorageRecord& storage : copy.storages)
            QCOMPARE(storage.device.value_or("?"), std::string("cpu"));
        QCOMPARE(
            unsafeNames(DangerousSaveGuard::rate(copy)), unsafeNames(DangerousSaveGuard::rate(original)));
    }
};

QTEST_MAIN(TestDangerousSave)
#include "tst_dangeroussave.moc"
