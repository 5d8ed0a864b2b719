// SPDX-License-Identifier: MIT
// The app with a checkpoint of several files, as a user runs it: drop a folder of .bin shards on the
// window, see one tree across shards (each tensor naming its shard), drag a block onto a device
// card through the real viewport, save a new folder and judge it with real torch; a safetensors
// folder exports its plan instead; render the window.
#include "core/base/textformat.h"
#include "core/devices/deviceinventory.h"
#include "core/model/shardset.h"
#include "core/read/checkpointreader.h"
#include "tests/common/foldercopy.h"
#include "ui/document/checkpointdocument.h"
#include "ui/mainwindow.h"
#include "ui/models/tensortreemodel.h"
#include "ui/widgets/detailspane.h"
#include "ui/widgets/devicepanel.h"
#include "ui/widgets/safetybanner.h"

#include <QAbstractProxyModel>
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QElapsedTimer>
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

QByteArray fileBytes(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
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
            const std::string name(checkpoint.tensors[t].name);
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
            QCOMPARE(tensor.device.value_or("?"), planned[std::string(tensor.name)]);
            expected.insert(QString::fromStdString(tensor.name.str()),
                QString::fromStdString(planned[std::string(tensor.name)]));
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
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        QVERIFY(finished.first().at(0).toBool());
        const QString message = finished.first().at(1).toString();
        QVERIFY2(message.contains(QStringLiteral("nothing rewritten"))
                && message.contains(QStringLiteral("record no device")),
            qPrintable(message));
        QFile exported(folder + QStringLiteral("/device_map.json"));
        QVERIFY(exported.open(QIODevice::ReadOnly));
        const QJsonObject map = QJsonDocument::fromJson(exported.readAll()).object();
        QVERIFY(
            map.value(QStringLiteral("device_map")).toObject().contains(QStringLiteral("model.layers.0")));
        QVERIFY(map.value(QStringLiteral("max_memory")).toObject().contains(QStringLiteral("cpu")));
        QVERIFY(QFileInfo::exists(folder + QStringLiteral("/load_with_device_map.py")));

        // Its files in the details pane: three rows, no device recorded in any.
        const ckpt::Checkpoint& checkpoint = window.document()->checkpoint();
        QVERIFY(checkpoint.shardSet);
        auto* proxy = qobject_cast<QAbstractProxyModel*>(window.treeView()->model());
        QVERIFY(proxy);
        const QModelIndex top = findPath(window.treeModel(), QStringLiteral("model"));
        QVERIFY(top.isValid());
        window.treeView()->setCurrentIndex(proxy->mapFromSource(top));
        const QString text = window.detailsPane()->plainText();
        QVERIFY2(text.contains(QStringLiteral("Files of the set")), qPrintable(text));
        for (const ckpt::ShardFile& shard : checkpoint.shardSet->shards)
            QVERIFY2(text.contains(QString::fromStdString(shard.name) + QLatin1Char('\n')), qPrintable(text));
        QCOMPARE(text.count(QStringLiteral("none recorded")), 3);
    }

    // File > Save Remapped Copy… of a folder that records no device exports the plan into a new
    // folder, never into the input folder or a folder inside it, and over none of its files (issue
    // 25: the app wrote device_map.json over the one in the input folder, where `ckpt-inspect
    // remap` refused): refused with the save task's words, the input byte for byte as it was.
    void exportNeverWritesIntoTheInput_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("inside");
        for (const char* fixture : {"safetensors", "dcp"}) {
            QTest::addRow("%s, the input folder", fixture) << QString::fromLatin1(fixture) << QString();
            QTest::addRow("%s, a folder inside it", fixture)
                << QString::fromLatin1(fixture) << QStringLiteral("plan");
        }
    }
    void exportNeverWritesIntoTheInput()
    {
        QFETCH(QString, fixture);
        QFETCH(QString, inside);
        QTemporaryDir work;
        const QString input = ckpt::testing::copyFolderWithOwnDeviceMap(sharded(fixture), work, fixture);
        QVERIFY(!input.isEmpty());
        const std::map<QString, QByteArray> before = ckpt::testing::folderBytes(input);
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        useDescribedMachine(window);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(dropFolderAndWait(window, input));
        QSignalSpy finished(&window, &ckpt::MainWindow::saveFinished);
        window.saveRemappedCopyTo(inside.isEmpty() ? input : input + u'/' + inside);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        const QString message = finished.first().at(1).toString();
        QVERIFY2(!finished.first().at(0).toBool(), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("input folder")), qPrintable(message));
        QVERIFY(ckpt::testing::folderBytes(input) == before);
    }

    // The two faces export the same plan as the same two files, byte for byte: the balanced
    // automatic placement on the same described machine, saved by `ckpt-inspect plan DIR --target
    // SPEC --save OUT` and by File > Save Remapped Copy… (they once wrote different loader scripts).
    void bothFacesExportTheSameFiles_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::newRow("safetensors") << QStringLiteral("safetensors");
        QTest::newRow("dcp") << QStringLiteral("dcp");
    }
    void bothFacesExportTheSameFiles()
    {
        QFETCH(QString, fixture);
        QTemporaryDir work;
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        useDescribedMachine(window);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(dropFolderAndWait(window, sharded(fixture)));
        auto* balanced = window.findChild<QAction*>(QStringLiteral("actionAutoBalanced"));
        QVERIFY(balanced);
        balanced->trigger();
        QSignalSpy finished(&window, &ckpt::MainWindow::saveFinished);
        const QString fromApp = work.filePath(QStringLiteral("app"));
        window.saveRemappedCopyTo(fromApp);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        QVERIFY2(finished.first().at(0).toBool(), qPrintable(finished.first().at(1).toString()));

        const QString fromCli = work.filePath(QStringLiteral("cli"));
        QProcess cli;
        cli.start(QStringLiteral(CKPT_INSPECT_BINARY),
            {QStringLiteral("plan"), sharded(fixture), QStringLiteral("--target"),
                QStringLiteral("cuda:0=16GiB,cuda:1=16GiB,cpu=32GiB"), QStringLiteral("--strategy"),
                QStringLiteral("balanced"), QStringLiteral("--save"), fromCli});
        QVERIFY(cli.waitForFinished(120000));
        QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
        for (const QString& name :
            {QStringLiteral("device_map.json"), QStringLiteral("load_with_device_map.py")}) {
            const QByteArray app = fileBytes(fromApp + u'/' + name);
            const QByteArray command = fileBytes(fromCli + u'/' + name);
            QVERIFY2(!app.isEmpty() && app == command && (app.contains(": 0") || app.contains(": 1")),
                qPrintable(name + QStringLiteral(" differs:\n--- app\n") + QString::fromUtf8(app)
                    + QStringLiteral("\n--- ckpt-inspect\n") + QString::fromUtf8(command)));
        }
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
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        QVERIFY(finished.first().at(0).toBool());
        QVERIFY2(finished.first().at(1).toString().contains(QStringLiteral("records no device")),
            qPrintable(finished.first().at(1).toString()));
        QVERIFY(QFileInfo::exists(out.filePath(QStringLiteral("plan/device_map.json"))));
    }

    // Issue 26: a Megatron-core-shaped DCP folder (tests/fixtures/dcp/megatron: .metadata naming a
    // subclass of Metadata, two .distcp files of torch.save archives, common.pt, metadata.json)
    // opens as one document: every tensor DCP loads, its two-chunk tensors, the ShardedObjects, and
    // common.pt under its own node; the safety banner names the subclass.
    void megatronDcpFolderOpensAsOneDocument()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        useDescribedMachine(window);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(dropFolderAndWait(window, QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/dcp/megatron")));
        const ckpt::Checkpoint& checkpoint = window.document()->checkpoint();
        QCOMPARE(checkpoint.format, ckpt::CheckpointFormat::Distributed);
        QVERIFY(checkpoint.shardSet && checkpoint.shardSet->dcp);
        QCOMPARE(checkpoint.tensors.size(), std::size_t(4));
        const QModelIndex qkv
            = findPath(window.treeModel(), QStringLiteral("decoder.layers.self_attention.linear_qkv.weight"));
        QVERIFY(qkv.isValid());
        const std::uint32_t t = tensorNamed(checkpoint, "decoder.layers.self_attention.linear_qkv.weight");
        QVERIFY(t != UINT32_MAX);
        QCOMPARE(checkpoint.tensors[t].dtype, std::string("bfloat16"));
        QCOMPARE(
            std::vector<std::int64_t>(checkpoint.tensors[t].shape.begin(), checkpoint.tensors[t].shape.end()),
            (std::vector<std::int64_t> {2, 12, 8}));
        QVERIFY(findPath(window.treeModel(), QStringLiteral("rng_state")).isValid());
        const QModelIndex common = findPath(window.treeModel(), QStringLiteral("common.pt"));
        QVERIFY(common.isValid());
        QCOMPARE(window.treeModel()->rowCount(common), 4); // iteration, checkpoint_version, args, flops
        ckpt::SafetyBanner* banner = window.safetyBanner();
        QTRY_COMPARE_WITH_TIMEOUT(banner->rating(), ckpt::PickleSafety::DangerousOrUnknown, 60000);
        QVERIFY2(banner->text().contains(QStringLiteral("MCoreMetadata")), qPrintable(banner->text()));
    }

    // Issue 26: a DCP folder written through torch's ZStandard writer extension (dcp/zstd) and one
    // saved rank by rank without coordination (dcp/per_rank: __0.metadata, __1.metadata) open in
    // the window: every tensor DCP loads, each rank's state below its own node.
    void zstdAndPerRankDcpFoldersOpen()
    {
        {
            ckpt::MainWindow window;
            window.setSuppressModalDialogs(true);
            useDescribedMachine(window);
            window.show();
            QVERIFY(QTest::qWaitForWindowExposed(&window));
            QVERIFY(dropFolderAndWait(window, QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/dcp/zstd")));
            const ckpt::Checkpoint& checkpoint = window.document()->checkpoint();
            QCOMPARE(checkpoint.format, ckpt::CheckpointFormat::Distributed);
            QCOMPARE(checkpoint.tensors.size(), std::size_t(4));
            QVERIFY(findPath(window.treeModel(), QStringLiteral("model")).isValid());
            const std::uint32_t t = tensorNamed(checkpoint, "model.proj.weight");
            QVERIFY(t != UINT32_MAX);
            QCOMPARE(checkpoint.tensors[t].dtype, std::string("bfloat16"));
            QVERIFY(checkpoint.shardSet && checkpoint.shardSet->dcp);
            for (const ckpt::DcpDataFile& file : checkpoint.shardSet->dcp->files)
                for (const ckpt::DcpItem& item : file.items)
                    QVERIFY2(item.content.ends_with("through stream.zstd/1"), item.content.c_str());
        }
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        useDescribedMachine(window);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(dropFolderAndWait(window, QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/dcp/per_rank")));
        const ckpt::Checkpoint& checkpoint = window.document()->checkpoint();
        QCOMPARE(checkpoint.format, ckpt::CheckpointFormat::Distributed);
        QCOMPARE(checkpoint.tensors.size(), std::size_t(6)); // three tensors on each of two ranks
        QVERIFY(findPath(window.treeModel(), QStringLiteral("rank0")).isValid());
        QVERIFY(findPath(window.treeModel(), QStringLiteral("rank1")).isValid());
        const std::uint32_t local = tensorNamed(checkpoint, "rank1:local.rank1.weight");
        QVERIFY(local != UINT32_MAX);
        QCOMPARE(std::vector<std::int64_t>(
                     checkpoint.tensors[local].shape.begin(), checkpoint.tensors[local].shape.end()),
            (std::vector<std::int64_t> {3, 3}));
    }

    // The details pane's per-file totals, against what the shards hold read on their own: the root
    // lists every file of the set; a module spread over two files lists its split, which adds up
    // to the module's own total.
    void detailsPaneTotalsPerShard()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        useDescribedMachine(window);
        window.resize(1400, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(dropFolderAndWait(window, sharded(QStringLiteral("bin_cuda"))));
        const ckpt::Checkpoint& checkpoint = window.document()->checkpoint();
        QVERIFY(checkpoint.shardSet);
        const ckpt::ShardSet& set = *checkpoint.shardSet;
        QCOMPARE(set.shards.size(), std::size_t(3));

        // The top row ("model", the root's only child), made current in the tree as a click does:
        // one row per file, its tensors and bytes as the shard read alone has them.
        ckpt::DetailsPane* pane = window.detailsPane();
        QCOMPARE(checkpoint.tree[0].children.size(), std::size_t(1));
        const std::uint32_t top = checkpoint.tree[0].children[0];
        QVERIFY(ckpt::isTopOfSet(checkpoint, top));
        auto* proxy = qobject_cast<QAbstractProxyModel*>(window.treeView()->model());
        QVERIFY(proxy);
        window.treeView()->setCurrentIndex(
            proxy->mapFromSource(findPath(window.treeModel(), QStringLiteral("model"))));
        QCOMPARE(pane->treeNode(), std::optional<std::uint32_t>(top));
        QTRY_VERIFY(window.isDetailsShown());
        const QString rootText = pane->plainText();
        QVERIFY2(rootText.contains(QStringLiteral("Files of the set")), qPrintable(rootText));
        const std::vector<ckpt::ShardTotal> files = ckpt::shardTotals(checkpoint, top);
        QCOMPARE(ckpt::shardTotals(checkpoint, 0).size(), files.size());
        QCOMPARE(files.size(), set.shards.size());
        for (std::size_t k = 0; k < set.shards.size(); ++k) {
            const ckpt::ShardFile& shard = set.shards[k];
            QVERIFY(shard.model());
            std::uint64_t bytes = 0;
            std::set<std::string> devices;
            for (const ckpt::StorageRecord& storage : shard.model()->storages) {
                bytes += storage.nbytes;
                devices.insert(std::string(*storage.device));
            }
            QCOMPARE(files[k].shard, k);
            QCOMPARE(files[k].tensors, std::uint64_t(shard.model()->tensors.size()));
            QCOMPARE(files[k].bytes, bytes);
            QCOMPARE(files[k].devices, std::vector<std::string>(devices.begin(), devices.end()));
            // The row as shown: file name, tensor count, bytes in units, devices.
            const QString name = QString::fromStdString(shard.name);
            QStringList shown;
            for (const std::string& device : devices)
                shown.append(QString::fromStdString(device));
            const QString line = QStringLiteral("%1\n%2\n%3\n%4")
                                     .arg(name)
                                     .arg(shard.model()->tensors.size())
                                     .arg(QString::fromStdString(ckpt::formatBytes(bytes)),
                                         shown.join(QStringLiteral(", ")));
            QVERIFY2(rootText.contains(line), qPrintable(line + QStringLiteral(" in:\n") + rootText));
        }

        // model.layers.1: split over shards 1 and 2; the split adds up to the module's total.
        const std::uint32_t q = tensorNamed(checkpoint, "model.layers.1.self_attn.q_proj.weight");
        QVERIFY(q != UINT32_MAX);
        std::uint32_t layer = checkpoint.tensors[q].treeNode;
        while (layer != 0 && checkpoint.treePath(layer) != "model.layers.1")
            layer = checkpoint.tree[layer].parent;
        QVERIFY(layer != 0);
        std::set<std::int32_t> storages;
        std::uint64_t tensors = 0;
        for (const ckpt::TensorEntry& tensor : checkpoint.tensors)
            if (tensor.name.rfind("model.layers.1.", 0) == 0) {
                ++tensors;
                storages.insert(tensor.storage);
            }
        std::uint64_t moduleBytes = 0;
        for (const std::int32_t storage : storages)
            moduleBytes += checkpoint.storages[static_cast<std::size_t>(storage)].nbytes;
        std::uint64_t ledgerBytes = 0;
        for (const auto& [device, n] : window.document()->ledger().moduleBytes(layer))
            ledgerBytes += n;
        QCOMPARE(ledgerBytes, moduleBytes);
        const std::vector<ckpt::ShardTotal> split = ckpt::shardTotals(checkpoint, layer);
        QCOMPARE(split.size(), std::size_t(2));
        QCOMPARE(set.shards[split[0].shard].name, std::string("pytorch_model-00001-of-00003.bin"));
        QCOMPARE(set.shards[split[1].shard].name, std::string("pytorch_model-00002-of-00003.bin"));
        QVERIFY(split[0].tensors > 0 && split[1].tensors > 0);
        QCOMPARE(split[0].tensors + split[1].tensors, tensors);
        QCOMPARE(split[0].bytes + split[1].bytes, moduleBytes);
        window.treeView()->setCurrentIndex(
            proxy->mapFromSource(findPath(window.treeModel(), QStringLiteral("model.layers.1"))));
        QCOMPARE(pane->treeNode(), std::optional<std::uint32_t>(layer));
        const QString layerText = pane->plainText();
        QVERIFY2(layerText.contains(QStringLiteral("Split across shard files")), qPrintable(layerText));
        for (const ckpt::ShardTotal& part : split) {
            const QString line = QStringLiteral("%1\n%2\n%3\n")
                                     .arg(QString::fromStdString(set.shards[part.shard].name))
                                     .arg(part.tensors)
                                     .arg(QString::fromStdString(ckpt::formatBytes(part.bytes)));
            QVERIFY2(layerText.contains(line), qPrintable(line + QStringLiteral(" in:\n") + layerText));
        }
        QVERIFY(!layerText.contains(QStringLiteral("pytorch_model-00003-of-00003.bin")));

        // A module in one file has no split; a tensor still names its shard file.
        const std::uint32_t norm = tensorNamed(checkpoint, "model.norm.weight");
        pane->showTreeNode(checkpoint.tree[checkpoint.tensors[norm].treeNode].parent);
        QVERIFY(!pane->plainText().contains(QStringLiteral("Split across shard files")));
        pane->showTreeNode(checkpoint.tensors[norm].treeNode);
        QVERIFY(pane->plainText().contains(QStringLiteral("pytorch_model-00003-of-00003.bin")));

        // Looked at: the window with the root's table, then with the module's split.
        const QString dir = QStringLiteral(CKPT_BINARY_DIR "/test-output/ui");
        QVERIFY(QDir().mkpath(dir));
        window.treeView()->setCurrentIndex(
            proxy->mapFromSource(findPath(window.treeModel(), QStringLiteral("model"))));
        QTest::qWait(100);
        QVERIFY(window.grab().save(dir + QStringLiteral("/sharded-totals-root.png")));
        window.treeView()->setCurrentIndex(
            proxy->mapFromSource(findPath(window.treeModel(), QStringLiteral("model.layers.1"))));
        QTest::qWait(100);
        QVERIFY(window.grab().save(dir + QStringLiteral("/sharded-totals-module.png")));
    }

    // The totals are computed on the GUI thread on each refresh: one pass over the subtree and a
    // sort of its storages. At 100,000 tensors over 8 shards that stays in milliseconds (printed,
    // not asserted: machines differ), and the split adds up to what the storages hold.
    void shardTotalsOfAHundredThousandTensors()
    {
        constexpr std::uint32_t kTensors = 100000;
        constexpr std::size_t kShards = 8;
        ckpt::Checkpoint checkpoint;
        auto set = std::make_shared<ckpt::ShardSet>();
        set->shards.resize(kShards);
        checkpoint.tree.resize(2); // root, "model"
        checkpoint.tree[0].children.push_back(1);
        checkpoint.tree[1].parent = 0;
        checkpoint.tree[1].kind = ckpt::TreeNodeKind::Module;
        std::uint64_t expectedBytes = 0;
        for (std::uint32_t t = 0; t < kTensors; ++t) {
            ckpt::StorageRecord storage;
            storage.nbytes = std::uint64_t(4) * (t % 97 + 1);
            storage.device = (t % 2) ? "cuda:1" : "cuda:0";
            expectedBytes += storage.nbytes;
            checkpoint.storages.push_back(storage);
            set->storageShard.push_back(static_cast<std::int32_t>(t / (kTensors / kShards)));
            ckpt::TensorEntry tensor;
            tensor.storage = static_cast<std::int32_t>(t);
            tensor.treeNode = static_cast<std::uint32_t>(checkpoint.tree.size());
            checkpoint.tensors.push_back(tensor);
            ckpt::TreeNode node;
            node.parent = 1;
            node.kind = ckpt::TreeNodeKind::Tensor;
            node.tensor = static_cast<std::int32_t>(t);
            checkpoint.tree[1].children.push_back(tensor.treeNode);
            checkpoint.tree.push_back(node);
        }
        checkpoint.shardSet = set;
        QElapsedTimer timer;
        timer.start();
        const std::vector<ckpt::ShardTotal> totals = ckpt::shardTotals(checkpoint, 1);
        qInfo("shardTotals over %u tensors: %lld ms", kTensors, static_cast<long long>(timer.elapsed()));
        QCOMPARE(totals.size(), kShards);
        std::uint64_t tensors = 0;
        std::uint64_t bytes = 0;
        for (const ckpt::ShardTotal& total : totals) {
            tensors += total.tensors;
            bytes += total.bytes;
            QCOMPARE(total.devices, (std::vector<std::string> {"cuda:0", "cuda:1"}));
        }
        QCOMPARE(tensors, std::uint64_t(kTensors));
        QCOMPARE(bytes, expectedBytes);
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
