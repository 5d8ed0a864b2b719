// SPDX-License-Identifier: MIT
// The app as a user runs it: open the demo, drag a module onto a device card through the real
// views, undo and redo, save a remapped copy and load it back with real torch; open a broken file;
// render the window for the README.
#include "core/read/checkpointreader.h"
#include "tests/common/uitesthelpers.h"
#include "ui/document/checkpointdocument.h"
#include "ui/mainwindow.h"
#include "ui/models/tensortreemodel.h"
#include "ui/widgets/detailspane.h"
#include "ui/widgets/devicepanel.h"

#include <QAbstractItemView>
#include <QAbstractProxyModel>
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMimeData>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>
#include <QUndoStack>

#include <map>
#include <memory>

namespace {

const QString kDemo = QStringLiteral(CKPT_SOURCE_DIR "/resources/demo/demo-checkpoint.pt");
const QString kBrokenFile
    = QStringLiteral("/work/shared/corpus/files/lukesin__nas-for-kws__checkpoint.pth.tar");

QModelIndex findPath(const QAbstractItemModel* model, const QString& path, const QModelIndex& parent = {})
{
    for (int row = 0; row < model->rowCount(parent); ++row) {
        const QModelIndex index = model->index(row, 0, parent);
        if (index.data(ckpt::TensorTreeModel::PathRole).toString() == path)
            return index;
        if (path.startsWith(index.data(ckpt::TensorTreeModel::PathRole).toString())) {
            const QModelIndex found = findPath(model, path, index);
            if (found.isValid())
                return found;
        }
    }
    return {};
}

QAction* findAction(const QMainWindow& window, const QString& name)
{
    return window.findChild<QAction*>(name);
}

std::uint32_t tensorNamed(const ckpt::Checkpoint& checkpoint, const std::string& name)
{
    return ckpt::testing::tensorIndexNamed(checkpoint, name).value_or(UINT32_MAX);
}

using ckpt::testing::openAndWait;

// Sends enter, move and drop to `target` at `pos`, as a drag from the tree would.
bool dropOnto(QWidget* target, const QPoint& pos, const QMimeData* mime)
{
    const Qt::DropActions actions = Qt::MoveAction | Qt::CopyAction;
    QDragEnterEvent enter(pos, actions, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &enter);
    QDragMoveEvent move(pos, actions, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &move);
    if (!move.isAccepted())
        return false;
    QDropEvent drop(QPointF(pos), actions, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &drop);
    return drop.isAccepted();
}

} // namespace

class TestAppFlow : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        QApplication::setQuitOnLastWindowClosed(false);
        // Settings and saved targets of the test, never the user's.
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(m_config.isValid());
        qputenv("XDG_CONFIG_HOME", QFile::encodeName(m_config.path()));
        QSettings().clear();
        QVERIFY2(QFileInfo::exists(kDemo), qPrintable(kDemo));
    }

    void opensTheDemo()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        QVERIFY(openAndWait(window, kDemo));
        QVERIFY(window.document());
        const ckpt::Checkpoint& checkpoint = window.document()->checkpoint();

        auto* summary = window.statusBar()->findChild<QLabel*>(QStringLiteral("summaryLabel"));
        QVERIFY(summary);
        QCOMPARE(summary->text(), window.statusSummary());
        QVERIFY2(summary->text().startsWith(QStringLiteral("%1 tensors · %2 storages · ")
                                                .arg(checkpoint.tensors.size())
                                                .arg(checkpoint.storages.size())),
            qPrintable(summary->text()));
        QVERIFY(summary->text().contains(QStringLiteral("torch-zip")));
        QCOMPARE(window.windowTitle(), QStringLiteral("demo-checkpoint.pt[*] — Checkpoint Inspector"));
        QVERIFY(!window.isWindowModified());

        // The tree: the root dict's entries at the top level.
        QTreeView* tree = window.treeView();
        QVERIFY(tree->model()->rowCount() > 0);
        QCOMPARE(tree->model()->rowCount(), window.treeModel()->rowCount());
        QVERIFY(findPath(window.treeModel(), QStringLiteral("model.layers.1")).isValid());
        QCOMPARE(
            window.centralWidget()->objectName(), QStringLiteral("treePanel")); // the tree has the centre

        // Details of a tied weight name the other tensor on the storage.
        const std::uint32_t embed = tensorNamed(checkpoint, "model.embed.weight");
        QVERIFY(embed != UINT32_MAX);
        window.detailsPane()->showTreeNode(checkpoint.tensors[embed].treeNode);
        QVERIFY2(window.detailsPane()->plainText().contains(QStringLiteral("model.lm_head.weight")),
            qPrintable(window.detailsPane()->plainText()));
    }

    void dragUndoRedoSaveAndLoadWithTorch()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        window.resize(1400, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(openAndWait(window, kDemo));
        ckpt::CheckpointDocument* document = window.document();
        const ckpt::Checkpoint& checkpoint = document->checkpoint();
        const std::uint32_t probe = tensorNamed(checkpoint, "model.layers.1.mlp.0.weight");
        QVERIFY(probe != UINT32_MAX);
        QCOMPARE(document->plannedDeviceOfTensor(probe).value_or("?"), std::string("cuda:1"));

        // Drag "model.layers.1" from the tree onto the cpu card.
        const QModelIndex source = findPath(window.treeModel(), QStringLiteral("model.layers.1"));
        QVERIFY(source.isValid());
        std::unique_ptr<QMimeData> mime(window.treeModel()->mimeData({source}));
        QVERIFY(mime);
        ckpt::DevicePanel* panel = window.devicePanel();
        QTRY_VERIFY(!panel->cardRect(QStringLiteral("cpu")).isEmpty());
        QVERIFY(
            dropOnto(panel->view()->viewport(), panel->cardRect(QStringLiteral("cpu")).center(), mime.get()));

        QCOMPARE(document->plannedDeviceOfTensor(probe).value_or("?"), std::string("cpu"));
        QCOMPARE(document->undoStack()->count(), 1);
        QVERIFY(window.isWindowModified());
        QVERIFY(!window.statusBar()->currentMessage().isEmpty());

        QAction* undo = findAction(window, QStringLiteral("actionUndo"));
        QAction* redo = findAction(window, QStringLiteral("actionRedo"));
        QVERIFY(undo && redo);
        QCOMPARE(undo->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_Z));
        QCOMPARE(redo->shortcut(), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z));
        QVERIFY(undo->isEnabled());
        undo->trigger();
        QCOMPARE(document->plannedDeviceOfTensor(probe).value_or("?"), std::string("cuda:1"));
        QVERIFY(!window.isWindowModified());
        QVERIFY(redo->isEnabled());
        redo->trigger();
        QCOMPARE(document->plannedDeviceOfTensor(probe).value_or("?"), std::string("cpu"));
        QVERIFY(window.isWindowModified());

        // Save as the menu does after its dialog.
        QTemporaryDir out;
        QVERIFY(out.isValid());
        const QString saved = out.filePath(QStringLiteral("remapped.pt"));
        QSignalSpy finished(&window, &ckpt::MainWindow::saveFinished);
        window.saveRemappedCopyTo(saved);
        QVERIFY(finished.wait(60000));
        QVERIFY2(finished.first().at(0).toBool(), qPrintable(finished.first().at(1).toString()));
        QVERIFY(QFileInfo::exists(saved));
        QVERIFY(!window.isWindowModified());

        // Saving over the input is refused with the writer's message.
        QSignalSpy refused(&window, &ckpt::MainWindow::saveFinished);
        window.saveRemappedCopyTo(kDemo);
        QVERIFY(refused.wait(60000));
        QVERIFY(!refused.first().at(0).toBool());
        QVERIFY(!refused.first().at(1).toString().isEmpty());

        // File > Export Weights…: a state_dict with the plan's devices, and safetensors; both read back
        // with every tensor (torch loads them in tests/cli/tst_extract and tst_convert).
        for (const QString& name : {u"weights.pt"_qs, u"weights.safetensors"_qs}) {
            QSignalSpy exported(&window, &ckpt::MainWindow::exportFinished);
            window.exportWeightsTo(out.filePath(name));
            QVERIFY(exported.wait(60000));
            QVERIFY2(exported.first().at(0).toBool(), qPrintable(exported.first().at(1).toString()));
            const ckpt::Checkpoint weights = ckpt::readCheckpoint(out.filePath(name).toStdString());
            QVERIFY(!weights.hasErrors());
            QVERIFY(!weights.tensors.empty());
            if (name.endsWith(u".pt"_qs)) {
                for (const ckpt::TensorEntry& tensor : weights.tensors)
                    if (tensor.name == document->checkpoint().tensors[probe].name)
                        QCOMPARE(tensor.device.value_or("?"), std::string("cpu"));
            }
        }

        // Exports.
        QVERIFY(window.exportMapLocationTo(out.filePath(QStringLiteral("load.py"))));
        QVERIFY(window.exportDeviceMapTo(out.filePath(QStringLiteral("device_map.json"))));
        QFile deviceMapFile(out.filePath(QStringLiteral("device_map.json")));
        QVERIFY(deviceMapFile.open(QIODevice::ReadOnly));
        const QJsonObject deviceMap = QJsonDocument::fromJson(deviceMapFile.readAll()).object();
        QCOMPARE(deviceMap.value(QStringLiteral("model.layers.1")).toString(), QStringLiteral("cpu"));
        QCOMPARE(deviceMap.value(QStringLiteral("model.layers.0")).toInt(-1), 0);

        // What the plan says, storage by storage...
        std::map<QString, int> expected;
        for (std::uint32_t s = 0; s < checkpoint.storages.size(); ++s)
            ++expected[QString::fromStdString(document->plan().plannedDeviceOfStorage(s).value_or("(none)"))];

        // ... is what real torch sees.
        const QString python = QStringLiteral(CKPT_LEGACY_PYTHON);
        if (!QFileInfo::exists(python))
            QSKIP("no python with torch at " CKPT_LEGACY_PYTHON);
        QProcess process;
        process.start(python,
            {QStringLiteral("-c"),
                QStringLiteral("import json, sys, torch\n"
                               "seen = {}\n"
                               "def record(storage, location):\n"
                               "    seen[location] = seen.get(location, 0) + 1\n"
                               "    return storage\n"
                               "torch.load(sys.argv[1], map_location=record)\n"
                               "print(json.dumps(seen))\n"),
                saved});
        QVERIFY(process.waitForFinished(120000));
        const QByteArray stdErr = process.readAllStandardError();
        if (stdErr.contains("No module named 'torch'"))
            QSKIP("torch is not installed for " CKPT_LEGACY_PYTHON);
        QVERIFY2(process.exitCode() == 0, stdErr.constData());
        const QJsonObject seen = QJsonDocument::fromJson(process.readAllStandardOutput()).object();
        std::map<QString, int> actual;
        for (auto it = seen.begin(); it != seen.end(); ++it)
            actual[it.key()] = it.value().toInt();
        QCOMPARE(actual, expected);
        QVERIFY(actual.count(QStringLiteral("cpu")));
        QVERIFY(actual.count(QStringLiteral("cuda:1"))); // final_norm stays there
    }

    void brokenFileShowsAMessage()
    {
        if (!QFileInfo::exists(kBrokenFile))
            QSKIP("the corpus file is not here");
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        window.show();
        QSignalSpy errors(&window, &ckpt::MainWindow::errorShown);
        QSignalSpy failed(&window, &ckpt::MainWindow::openFailed);
        window.openFile(kBrokenFile);
        QVERIFY(errors.wait(30000));
        QCOMPARE(failed.count(), 1);
        const QString message = errors.first().at(0).toString();
        QVERIFY2(message.contains(QStringLiteral("LFS"), Qt::CaseInsensitive), qPrintable(message));
        QVERIFY(!window.document());
        QVERIFY(window.centralWidget()->objectName() == QStringLiteral("startPage"));

        // The window still works: the demo opens after it.
        QVERIFY(openAndWait(window, kDemo));
        QVERIFY(window.document());
    }

    void staleOpenIsDropped()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        QSignalSpy opened(&window, &ckpt::MainWindow::checkpointOpened);
        QSignalSpy failed(&window, &ckpt::MainWindow::openFailed);
        if (QFileInfo::exists(kBrokenFile))
            window.openFile(kBrokenFile); // superseded at once: its failure must not show
        window.openFile(kDemo);
        QVERIFY(opened.wait(30000));
        QTest::qWait(100);
        QCOMPARE(opened.count(), 1);
        QCOMPARE(failed.count(), 0);
        QCOMPARE(window.currentFile(), kDemo);
    }

    void screenshot()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        // A described target, so the picture is the same on every machine.
        auto machine = ckpt::parseMachineSpec("cuda:0=16GiB,cuda:1=16GiB,cpu=32GiB", "lab box (2 GPUs)");
        QVERIFY(machine);
        window.setTarget(std::move(machine.value()), QString());
        window.resize(1400, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(openAndWait(window, kDemo));
        window.resize(1400, 900);

        // A plan in progress: layer 1 dragged to the CPU, the tied embedding selected.
        const QModelIndex layer = findPath(window.treeModel(), QStringLiteral("model.layers.1"));
        QVERIFY(layer.isValid());
        std::unique_ptr<QMimeData> mime(window.treeModel()->mimeData({layer}));
        ckpt::DevicePanel* panel = window.devicePanel();
        QTRY_VERIFY(!panel->cardRect(QStringLiteral("cpu")).isEmpty());
        QVERIFY(
            dropOnto(panel->view()->viewport(), panel->cardRect(QStringLiteral("cpu")).center(), mime.get()));
        const ckpt::Checkpoint& checkpoint = window.document()->checkpoint();
        const std::uint32_t embed = tensorNamed(checkpoint, "model.embed.weight");
        const QModelIndex embedIndex = window.treeModel()->indexForTensor(embed);
        auto* proxy = qobject_cast<QAbstractProxyModel*>(window.treeView()->model());
        QVERIFY(proxy);
#ifdef CKPT_HAVE_TORCHBRIDGE
        // The values come from a helper process now (the GUI never loads libtorch): wait for them.
        QSignalSpy valuesShown(window.detailsPane(), &ckpt::DetailsPane::valuesShown);
        window.treeView()->setCurrentIndex(proxy->mapFromSource(embedIndex));
        QVERIFY(valuesShown.wait(30000));
#else
        window.treeView()->setCurrentIndex(proxy->mapFromSource(embedIndex));
#endif
        QTest::qWait(300);

        const QImage image = window.grab().toImage();
        QVERIFY(!image.isNull());

        // The same window under a dark palette, for a look (build dir only).
        const QPalette lightPalette = QApplication::palette();
        QPalette dark;
        dark.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2b));
        dark.setColor(QPalette::WindowText, QColor(0xe6, 0xe6, 0xe6));
        dark.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
        dark.setColor(QPalette::AlternateBase, QColor(0x26, 0x26, 0x26));
        dark.setColor(QPalette::Text, QColor(0xe6, 0xe6, 0xe6));
        dark.setColor(QPalette::Button, QColor(0x33, 0x33, 0x33));
        dark.setColor(QPalette::ButtonText, QColor(0xe6, 0xe6, 0xe6));
        dark.setColor(QPalette::Highlight, QColor(0x2f, 0x6f, 0xb3));
        dark.setColor(QPalette::HighlightedText, Qt::white);
        dark.setColor(QPalette::Link, QColor(0x6c, 0xb4, 0xff));
        dark.setColor(QPalette::PlaceholderText, QColor(0x90, 0x90, 0x90));
        QApplication::setPalette(dark);
        QTest::qWait(200);
        const QImage darkImage = window.grab().toImage();
        QApplication::setPalette(lightPalette);
        const QString darkDir = QStringLiteral(CKPT_BINARY_DIR "/test-output/ui");
        QVERIFY(QDir().mkpath(darkDir));
        QVERIFY(darkImage.save(darkDir + QStringLiteral("/screenshot-dark.png")));

        const bool update = qEnvironmentVariableIntValue("CKPT_UPDATE_SCREENSHOT") == 1;
        const QString dir = update ? QStringLiteral(CKPT_SOURCE_DIR "/docs")
                                   : QStringLiteral(CKPT_BINARY_DIR "/test-output/ui");
        QVERIFY(QDir().mkpath(dir));
        const QString path = dir + QStringLiteral("/screenshot.png");
        QVERIFY2(image.save(path), qPrintable(path));
        qInfo("screenshot written to %s", qPrintable(path));
    }

private:
    QTemporaryDir m_config;
};

QTEST_MAIN(TestAppFlow)
#include "tst_appflow.moc"
