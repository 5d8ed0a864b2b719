// SPDX-License-Identifier: MIT
// The app with a checkpoint of several files, as a user runs it: drop a folder of .bin shards on the
// window, see one tree across shards (each tensor naming its shard), drag a block onto a device
// card through the real viewport, save a new folder and judge it with real torch; a safetensors
// folder exports its plan instead; render the window.
#include "core/model/shardset.h"
#include "core/read/checkpointreader.h"
#include "ui/document/checkpointdocument.h"
#include "ui/mainwindow.h"
#include "ui/models/tensortreemodel.h"
#include "ui/widgets/detailspane.h"
#include "ui/widgets/devicepanel.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>
#include <QMimeData>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>
#include <QUndoStack>
#include <QUrl>

#include <map>
#include <memory>
#include <set>

namespace {

QString sharded(const QString& name)
{
    return QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/sharded/") + name;
}

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

bool dropOnto(QWidget* target, const QPoint& pos, const QMimeData* mime)
{
    const Qt::DropActions actions = Qt::MoveAction | Qt::CopyAction;
    QDragEnterEvent enter(pos, actions, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &enter);
    if (!enter.isAccepted())
        return false;
    QDragMoveEvent move(pos, actions, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &move);
    QDropEvent drop(QPointF(pos), actions, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &drop);
    return drop.isAccepted();
}

// Drops `folder` on the window as a file manager would, and waits for it to open.
bool dropFolderAndWait(ckpt::MainWindow& window, const QString& folder)
{
    QSignalSpy opened(&window, &ckpt::MainWindow::checkpointOpened);
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(folder)});
    if (!dropOnto(&window, window.rect().center(), &mime))
        return false;
    return opened.wait(30000);
}

std::uint32_t tensorNamed(const ckpt::Checkpoint& checkpoint, const std::string& name)
{
    for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t)
        if (checkpoint.tensors[t].name == name)
            return t;
    return UINT32_MAX;
}

void useDescribedMachine(ckpt::MainWindow& window)
{
    auto machine = ckpt::parseMachineSpec("cuda:0=16GiB,cuda:1=16GiB,cpu=32GiB", "lab box (2 GPUs)");
    QVERIFY(machine);
    window.setTarget(std::move(machine.value()), QString());
}

} // namespace

class TestShardedFlow : public QObject {
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

    void fileMenuOpensFolders()
    {
        ckpt::MainWindow window;
        auto* action = window.findChild<QAction*>(QStringLiteral("actionOpenFolder"));
        QVERIFY(action);
        auto* fileMenu = window.findChild<QMenu*>(QStringLiteral("fileMenu"));
        QVERIFY(fileMenu && fileMenu->actions().contains(action));
        QCOMPARE(action->text(), QStringLiteral("Open &Folder…"));
    }

    void dropFolderPlanAcrossShardsAndSaveAFolder()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        useDescribedMachine(window);
        window.resize(1400, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(dropFolderAndWait(window, sharded(QStringLiteral("bin_cuda"))));
        ckpt::CheckpointDocument* document = window.document();
        QVERIFY(document);
        const ckpt::Checkpoint& checkpoint = document->checkpoint();
        QVERIFY(checkpoint.shardSet);
        QCOMPARE(checkpoint.shardSet->shards.size(), std::size_t(3));
        QCOMPARE(checkpoint.tensors.size(), std::size_t(38));

        // One module tree across the shards; each tensor names its shard.
        for (const char* path : {"model.embed_tokens", "model.layers.0", "model.layers.3", "model.norm"})
            QVERIFY2(findPath(window.treeModel(), QString::fromLatin1(path)).isValid(), path);
        const std::uint32_t norm = tensorNamed(checkpoint, "model.norm.weight");
        QVERIFY(norm != UINT32_MAX);
        const QModelIndex normIndex = window.treeModel()->indexForTensor(norm);
        QCOMPARE(normIndex.data(Qt::ToolTipRole).toString(),
            QStringLiteral("In shard pytorch_model-00003-of-00003.bin"));
        window.detailsPane()->showTreeNode(checkpoint.tensors[norm].treeNode);
        QVERIFY2(
            window.detailsPane()->plainText().contains(QStringLiteral("pytorch_model-00003-of-00003.bin")),
            qPrintable(window.detailsPane()->plainText()));

        // Plan across shards: drag model.layers.1 (split over shards 1 and 2 on cuda:0) onto cuda:1,
        // and model.layers.3 onto the CPU, through the device panel's viewport.
        ckpt::DevicePanel* panel = window.devicePanel();
        QTRY_VERIFY(!panel->cardRect(QStringLiteral("cpu")).isEmpty());
        for (const auto& [block, device] :
            {std::pair<QString, QString>(QStringLiteral("model.layers.1"), QStringLiteral("cuda:1")),
                std::pair<QString, QString>(QStringLiteral("model.layers.3"), QStringLiteral("cpu"))}) {
            const QModelIndex source = findPath(window.treeModel(), block);
            QVERIFY(source.isValid());
            std::unique_ptr<QMimeData> mime(window.treeModel()->mimeData({source}));
            QVERIFY(dropOnto(panel->view()->viewport(), panel->cardRect(device).center(), mime.get()));
        }
        QCOMPARE(document->undoStack()->count(), 2);
        std::map<std::string, std::string> planned;
        std::set<std::string> shardsOfLayer1;
        for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t) {
            const std::string& name = checkpoint.tensors[t].name;
            planned[name] = document->plannedDeviceOfTensor(t).value_or("?");
            if (name.starts_with("model.layers.1."))
                shardsOfLayer1.insert(
                    checkpoint.shardSet->shardOfStorage(checkpoint.tensors[t].storage)->name);
            if (name.starts_with("model.layers.1.") || name.starts_with("model.layers.2.")
                || name == "model.norm.weight")
                QCOMPARE(planned[name], std::string("cuda:1"));
            else if (name.starts_with("model.layers.3."))
                QCOMPARE(planned[name], std::string("cpu"));
            else
                QCOMPARE(planned[name], std::string("cuda:0"));
        }
        QCOMPARE(shardsOfLayer1.size(), std::size_t(2)); // the block spans two shards

        // Save a new folder, as File > Save does after its dialog.
        QTemporaryDir out;
        const QString folder = out.filePath(QStringLiteral("bin_cuda-remapped"));
        QSignalSpy finished(&window, &ckpt::MainWindow::saveFinished);
        window.saveRemappedCopyTo(folder);
        QVERIFY(finished.wait(60000));
        QVERIFY2(finished.first().at(0).toBool(), qPrintable(finished.first().at(1).toString()));
        QVERIFY(!window.isWindowModified());

        // Read back: every tensor recorded where it was planned; then real torch judges it.
        const ckpt::Checkpoint written = ckpt::readCheckpoint(folder.toStdString());
        QVERIFY(written.shardSet);
        QCOMPARE(written.tensors.size(), std::size_t(38));
        QJsonObject expected;
        for (const ckpt::TensorEntry& tensor : written.tensors) {
            QCOMPARE(tensor.device.value_or("?"), planned[tensor.name]);
            expected.insert(
                QString::fromStdString(tensor.name), QString::fromStdString(planned[tensor.name]));
        }
        const QString python = QStringLiteral(CKPT_MODERN_PYTHON);
        if (python.isEmpty())
            QSKIP("no modern torch configured (CKPT_MODERN_PYTHON is empty)");
        QFile expectedFile(out.filePath(QStringLiteral("expected.json")));
        QVERIFY(expectedFile.open(QIODevice::WriteOnly));
        expectedFile.write(QJsonDocument(expected).toJson());
        expectedFile.close();
        QProcess process;
        process.start(python,
            {QStringLiteral(CKPT_SOURCE_DIR "/tests/remap/verify_sharded.py"),
                sharded(QStringLiteral("bin_cuda")), folder, expectedFile.fileName()});
        QVERIFY(process.waitForFinished(300000));
        QVERIFY2(process.exitCode() == 0, process.readAllStandardError().right(3000).constData());
        const QByteArray verdict = process.readAllStandardOutput().trimmed().split('\n').last();
        QVERIFY2(QJsonDocument::fromJson(verdict).object().value(QStringLiteral("ok")).toBool(),
            verdict.constData());
    }

    void safetensorsFolderExportsItsPlan()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        useDescribedMachine(window);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(dropFolderAndWait(window, sharded(QStringLiteral("safetensors"))));
        QTemporaryDir out;
        const QString folder = out.filePath(QStringLiteral("plan"));
        QSignalSpy finished(&window, &ckpt::MainWindow::saveFinished);
        window.saveRemappedCopyTo(folder);
        QCOMPARE(finished.count(), 1);
        QVERIFY(finished.first().at(0).toBool());
        const QString message = finished.first().at(1).toString();
        QVERIFY2(message.contains(QStringLiteral("Nothing was rewritten"))
                && message.contains(QStringLiteral("record no device")),
            qPrintable(message));
        QFile exported(folder + QStringLiteral("/device_map.json"));
        QVERIFY(exported.open(QIODevice::ReadOnly));
        const QJsonObject map = QJsonDocument::fromJson(exported.readAll()).object();
        QVERIFY(
            map.value(QStringLiteral("device_map")).toObject().contains(QStringLiteral("model.layers.0")));
        QVERIFY(map.value(QStringLiteral("max_memory")).toObject().contains(QStringLiteral("cpu")));
        QVERIFY(QFileInfo::exists(folder + QStringLiteral("/load_with_device_map.py")));
    }

    void dcpFolderOpensAndExportsItsPlan()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        useDescribedMachine(window);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(dropFolderAndWait(window, sharded(QStringLiteral("dcp"))));
        const ckpt::Checkpoint& checkpoint = window.document()->checkpoint();
        QCOMPARE(checkpoint.format, ckpt::CheckpointFormat::Distributed);
        QCOMPARE(checkpoint.tensors.size(), std::size_t(39));
        QVERIFY(findPath(window.treeModel(), QStringLiteral("model.model.layers.3")).isValid());
        QVERIFY(findPath(window.treeModel(), QStringLiteral("step"))
                    .isValid()); // a BytesStorageMetadata placeholder
        QTemporaryDir out;
        QSignalSpy finished(&window, &ckpt::MainWindow::saveFinished);
        window.saveRemappedCopyTo(out.filePath(QStringLiteral("plan")));
        QCOMPARE(finished.count(), 1);
        QVERIFY(finished.first().at(0).toBool());
        QVERIFY2(finished.first().at(1).toString().contains(QStringLiteral("records no device")),
            qPrintable(finished.first().at(1).toString()));
        QVERIFY(QFileInfo::exists(out.filePath(QStringLiteral("plan/device_map.json"))));
    }

    void screenshot()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        useDescribedMachine(window);
        window.resize(1400, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(dropFolderAndWait(window, sharded(QStringLiteral("bin_cuda"))));
        window.resize(1400, 900);
        const QModelIndex layer = findPath(window.treeModel(), QStringLiteral("model.layers.3"));
        QVERIFY(layer.isValid());
        std::unique_ptr<QMimeData> mime(window.treeModel()->mimeData({layer}));
        ckpt::DevicePanel* panel = window.devicePanel();
        QTRY_VERIFY(!panel->cardRect(QStringLiteral("cpu")).isEmpty());
        QVERIFY(
            dropOnto(panel->view()->viewport(), panel->cardRect(QStringLiteral("cpu")).center(), mime.get()));
        const ckpt::Checkpoint& checkpoint = window.document()->checkpoint();
        const std::uint32_t norm = tensorNamed(checkpoint, "model.norm.weight");
        window.treeView()->expandAll();
        QSignalSpy valuesShown(window.detailsPane(), &ckpt::DetailsPane::valuesShown);
        window.detailsPane()->showTreeNode(checkpoint.tensors[norm].treeNode);
#ifdef CKPT_HAVE_TORCHBRIDGE
        // The values of a tensor come from its own shard's bytes: the helper process opens the
        // folder and finds the shard (the last one, where the tensor has another index).
        QVERIFY(valuesShown.wait(30000));
        const QString values = window.detailsPane()->valuesText();
        QVERIFY2(values.contains(QStringLiteral("Mean")), qPrintable(values));
#endif
        QTest::qWait(300);
        const QImage image = window.grab().toImage();
        QVERIFY(!image.isNull());
        const QString dir = QStringLiteral(CKPT_BINARY_DIR "/test-output/ui");
        QVERIFY(QDir().mkpath(dir));
        QVERIFY(image.save(dir + QStringLiteral("/screenshot-sharded.png")));
        qInfo("screenshot written to %s", qPrintable(dir + QStringLiteral("/screenshot-sharded.png")));
    }

private:
    QTemporaryDir m_config;
};

QTEST_MAIN(TestShardedFlow)
#include "tst_shardedflow.moc"
