// SPDX-License-Identifier: MIT
// The tensor tree model and its filter proxy: model invariants (QAbstractItemModelTester), the
// whole tree of several fixtures as indented text against golden files, targeted updates after a
// move, drag data, filtering, and a large generated checkpoint.
//
// Regenerate the golden files after an intended change with CKPT_UPDATE_GOLDEN=1, then read the
// diff before committing it.

#include "core/devices/deviceinventory.h"
#include "core/read/checkpointreader.h"
#include "ui/base/devicecolors.h"
#include "ui/document/checkpointdocument.h"
#include "ui/models/tensorfilterproxymodel.h"
#include "ui/models/tensortreemodel.h"

#include <QAbstractItemModelTester>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QMimeData>
#include <QPixmap>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>

#include <memory>

using namespace ckpt;

namespace {

const QString kSourceDir = QStringLiteral(CKPT_SOURCE_DIR);

QString fixturePath(const QString& relative)
{
    return kSourceDir + QLatin1Char('/') + relative;
}

std::unique_ptr<CheckpointDocument> openDocument(const QString& path)
{
    auto checkpoint = std::make_shared<const Checkpoint>(readCheckpoint(path.toStdString()));
    auto machine = parseMachineSpec("cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB");
    if (!machine)
        qFatal("machine spec: %s", machine.error().message.c_str());
    return std::make_unique<CheckpointDocument>(std::move(checkpoint), *machine);
}

// One line per row: "name | dtype | shape | size | recorded | planned", two spaces per depth.
void dumpRows(const QAbstractItemModel& model, const QModelIndex& parent, int depth, QString& out)
{
    for (int row = 0; row < model.rowCount(parent); ++row) {
        QStringList cells;
        for (int column = 0; column < TensorTreeModel::ColumnCount; ++column)
            cells << model.index(row, column, parent).data().toString();
        out += QString(qsizetype {depth} * 2, QLatin1Char(' ')) + cells.join(QStringLiteral(" | "))
            + QLatin1Char('\n');
        dumpRows(model, model.index(row, 0, parent), depth + 1, out);
    }
}

QString dumpTree(const QAbstractItemModel& model)
{
    QString out;
    dumpRows(model, {}, 0, out);
    return out;
}

const QStringList kFixtures = {
    QStringLiteral("tests/fixtures/torch-2/training_checkpoint.pt"),
    QStringLiteral("tests/fixtures/torch-2/whole_module.pt"),
    QStringLiteral("tests/fixtures/torch-2/tied_weights.pt"),
    QStringLiteral("tests/fixtures/torch-2/devices_mixed.pt"),
    QStringLiteral("tests/fixtures/torch-2/sparse.pt"),
    QStringLiteral("resources/demo/demo-checkpoint.pt"),
};

QModelIndex findPath(const QAbstractItemModel& model, const QStringList& names)
{
    QModelIndex current;
    for (const QString& name : names) {
        QModelIndex next;
        for (int row = 0; row < model.rowCount(current); ++row) {
            const QModelIndex candidate = model.index(row, 0, current);
            if (candidate.data().toString() == name) {
                next = candidate;
                break;
            }
        }
        if (!next.isValid())
            return {};
        current = next;
    }
    return current;
}

} // namespace

class TestTensorTreeModel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void modelTester_data()
    {
        QTest::addColumn<QString>("fixture");
        for (const QString& fixture : kFixtures)
            QTest::newRow(qPrintable(QFileInfo(fixture).baseName())) << fixture;
    }

    void modelTester()
    {
        QFETCH(QString, fixture);
        auto document = openDocument(fixturePath(fixture));
        TensorTreeModel model(document.get());
        QAbstractItemModelTester modelTester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        TensorFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);

        QVERIFY(model.rowCount() > 0);
        proxy.sort(TensorTreeModel::SizeColumn, Qt::DescendingOrder);
        proxy.sort(TensorTreeModel::NameColumn, Qt::AscendingOrder);
        proxy.setFilterText(QStringLiteral("weight"));
        proxy.setFilterText(QStringLiteral("device:cpu"));
        proxy.setFilterText(QString());
        QCOMPARE(proxy.rowCount(), model.rowCount());

        // Every tensor's row says which tensor it is, and indexForTensor finds it again.
        const Checkpoint& checkpoint = document->checkpoint();
        for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t) {
            const QModelIndex index = model.indexForTensor(t, TensorTreeModel::SizeColumn);
            QVERIFY(index.isValid());
            QCOMPARE(index.data(TensorTreeModel::TensorIndexRole).toInt(), int(t));
            QCOMPARE(index.data(TensorTreeModel::TreeNodeRole).toUInt(), checkpoint.tensors[t].treeNode);
            QVERIFY(model.flags(index).testFlag(Qt::ItemIsDragEnabled));
        }

        // Move everything to the CPU and back while both testers watch the signals.
        document->move({{PlacementRule::Kind::MapTag, "*", "cpu"}}, QStringLiteral("Everything to CPU"));
        document->undoStack()->undo();
        document->undoStack()->redo();
    }

    void goldenDump_data() { modelTester_data(); }

    void goldenDump()
    {
        QFETCH(QString, fixture);
        auto document = openDocument(fixturePath(fixture));
        TensorTreeModel model(document.get());
        const QString actual = dumpTree(model);
        const QString goldenPath = kSourceDir + QStringLiteral("/tests/ui/golden/")
            + QFileInfo(fixture).baseName() + QStringLiteral(".txt");
        if (qEnvironmentVariableIsSet("CKPT_UPDATE_GOLDEN")) {
            QFile file(goldenPath);
            QVERIFY2(file.open(QIODevice::WriteOnly | QIODevice::Truncate), qPrintable(goldenPath));
            file.write(actual.toUtf8());
            qInfo("wrote %s", qPrintable(goldenPath));
            return;
        }
        QFile file(goldenPath);
        QVERIFY2(file.open(QIODevice::ReadOnly),
            qPrintable(goldenPath + QStringLiteral(" is missing; run with CKPT_UPDATE_GOLDEN=1")));
        const QString expected = QString::fromUtf8(file.readAll());
        if (actual != expected) {
            const QStringList actualLines = actual.split(QLatin1Char('\n'));
            const QStringList expectedLines = expected.split(QLatin1Char('\n'));
            for (qsizetype i = 0; i < qMax(actualLines.size(), expectedLines.size()); ++i) {
                const QString a = actualLines.value(i), e = expectedLines.value(i);
                if (a != e)
                    QFAIL(qPrintable(QStringLiteral("line %1 differs:\n  expected: %2\n  actual:   %3")
                                         .arg(i + 1)
                                         .arg(e, a)));
            }
        }
    }

    void moveUpdatesTiedRowsWithoutReset()
    {
        auto document = openDocument(fixturePath(QStringLiteral("tests/fixtures/torch-2/tied_weights.pt")));
        TensorTreeModel model(document.get());
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy resets(&model, &QAbstractItemModel::modelReset);
        QSignalSpy layouts(&model, &QAbstractItemModel::layoutChanged);
        QSignalSpy changes(&model, &QAbstractItemModel::dataChanged);

        const QModelIndex embed = findPath(model, {QStringLiteral("embed"), QStringLiteral("weight")});
        const QModelIndex head = findPath(model, {QStringLiteral("lm_head"), QStringLiteral("weight")});
        const QModelIndex bias = findPath(model, {QStringLiteral("block"), QStringLiteral("bias")});
        QVERIFY(embed.isValid() && head.isValid() && bias.isValid());
        QCOMPARE(head.data(TensorTreeModel::SharedStorageTensorsRole).value<QList<int>>(),
            QList<int> {embed.data(TensorTreeModel::TensorIndexRole).toInt()});

        // cpu -> cpu would change nothing; go through cuda:1 so the move is real.
        document->move({{PlacementRule::Kind::MoveTensor, "lm_head.weight", "cuda:1"}},
            QStringLiteral("Move lm_head.weight"));
        QCOMPARE(resets.count(), 0);
        QCOMPARE(layouts.count(), 0);
        QVERIFY(changes.count() > 0);

        // Which rows were refreshed: both tied tensors and their parents, nothing else.
        QSet<QPair<QModelIndex, int>> refreshed; // (parent, row)
        for (const QList<QVariant>& signal : changes) {
            const auto topLeft = signal.at(0).value<QModelIndex>();
            const auto bottomRight = signal.at(1).value<QModelIndex>();
            QCOMPARE(topLeft.parent(), bottomRight.parent());
            QCOMPARE(topLeft.column(), 0);
            QCOMPARE(bottomRight.column(), TensorTreeModel::ColumnCount - 1);
            for (int row = topLeft.row(); row <= bottomRight.row(); ++row)
                refreshed.insert({QModelIndex(topLeft.parent()), row});
        }
        const auto refreshedRow = [&](const QModelIndex& index) {
            return refreshed.contains({QModelIndex(index.parent()), index.row()});
        };
        QVERIFY(refreshedRow(embed));
        QVERIFY(refreshedRow(head));
        QVERIFY(refreshedRow(embed.parent()));
        QVERIFY(refreshedRow(head.parent()));
        QVERIFY(!refreshedRow(bias));
        QVERIFY(!refreshedRow(bias.parent()));

        const QModelIndex headPlanned = head.siblingAtColumn(TensorTreeModel::PlannedDeviceColumn);
        const QModelIndex embedPlanned = embed.siblingAtColumn(TensorTreeModel::PlannedDeviceColumn);
        QCOMPARE(headPlanned.data().toString(), QStringLiteral("cpu → cuda:1"));
        QCOMPARE(embedPlanned.data().toString(), QStringLiteral("cpu → cuda:1"));
        QVERIFY(embedPlanned.data(Qt::FontRole).value<QFont>().bold());
        QVERIFY(embed.data(TensorTreeModel::ChangedRole).toBool());
        QVERIFY(embed.parent().data(TensorTreeModel::ChangedRole).toBool());
        QVERIFY(!bias.data(TensorTreeModel::ChangedRole).toBool());
        QCOMPARE(embedPlanned.data(TensorTreeModel::PlannedDeviceRole).toString(), QStringLiteral("cuda:1"));
        QCOMPARE(
            embedPlanned.data(Qt::BackgroundRole).value<QColor>(), deviceColor(QStringLiteral("cuda:1")));

        changes.clear();
        document->undoStack()->undo();
        QCOMPARE(resets.count(), 0);
        QVERIFY(changes.count() > 0);
        QCOMPARE(headPlanned.data().toString(), QStringLiteral("cpu"));
        QCOMPARE(embedPlanned.data().toString(), QStringLiteral("cpu"));
        QVERIFY(!embed.data(TensorTreeModel::ChangedRole).toBool());
        QVERIFY(!embed.parent().data(TensorTreeModel::ChangedRole).toBool());
        QVERIFY(!embedPlanned.data(Qt::FontRole).value<QFont>().bold());

        // A target switch refreshes without a reset.
        document->setTarget(*parseMachineSpec("cpu=16GiB"));
        QCOMPARE(resets.count(), 0);
    }

    // Rows under a node no index of whose children was ever handed out get no dataChanged (a drop
    // of a 100,000-tensor module would otherwise send one per collapsed parent); they read the new
    // plan when first asked, and once handed out they are signalled like any other.
    void unseenRowsAreNotSignalled()
    {
        auto document = openDocument(fixturePath(QStringLiteral("tests/fixtures/torch-2/tied_weights.pt")));
        TensorTreeModel model(document.get());
        QSignalSpy changes(&model, &QAbstractItemModel::dataChanged);
        const QModelIndex lmHead = findPath(model, {QStringLiteral("lm_head")}); // its children: never
        QVERIFY(lmHead.isValid());
        const auto signalledRows = [&] {
            QSet<QPair<QModelIndex, int>> rows; // (parent, row)
            for (const QList<QVariant>& signal : changes) {
                const auto topLeft = signal.at(0).value<QModelIndex>();
                for (int row = topLeft.row(); row <= signal.at(1).value<QModelIndex>().row(); ++row)
                    rows.insert({QModelIndex(topLeft.parent()), row});
            }
            return rows;
        };

        document->move({{PlacementRule::Kind::MoveTensor, "lm_head.weight", "cuda:1"}},
            QStringLiteral("Move lm_head.weight"));
        QSet<QPair<QModelIndex, int>> rows = signalledRows();
        QVERIFY(rows.contains({QModelIndex(), lmHead.row()})); // the module's row: its parent was seen
        for (const auto& [parent, row] : rows)
            QVERIFY2(parent != lmHead, "a row under lm_head, whose children were never handed out");
        // Asked for now, the tensor's row says where it goes.
        const QModelIndex weight = model.index(0, TensorTreeModel::PlannedDeviceColumn, lmHead);
        QCOMPARE(weight.data().toString(), QStringLiteral("cpu → cuda:1"));

        changes.clear();
        document->undoStack()->undo();
        rows = signalledRows();
        QVERIFY(rows.contains({QModelIndex(), lmHead.row()}));
        QVERIFY(rows.contains({QModelIndex(lmHead), weight.row()})); // handed out now: signalled
        QCOMPARE(weight.data().toString(), QStringLiteral("cpu"));

        // The model's invariants hold with rows skipped (the tester walks every row, so check a
        // model it watches from the start, through the same moves).
        TensorTreeModel watched(document.get());
        QAbstractItemModelTester tester(&watched, QAbstractItemModelTester::FailureReportingMode::QtTest);
        document->move(
            {{PlacementRule::Kind::MoveModule, "lm_head", "cuda:0"}}, QStringLiteral("Move lm_head"));
        document->undoStack()->undo();
    }

    void mixedModuleShowsShares()
    {
        auto document
            = openDocument(fixturePath(QStringLiteral("tests/fixtures/torch-2/training_checkpoint.pt")));
        TensorTreeModel model(document.get());
        document->move({{PlacementRule::Kind::MoveModule, "model.encoder.0", "cuda:0"}},
            QStringLiteral("Move encoder.0"));
        const QModelIndex encoder = findPath(model, {QStringLiteral("model"), QStringLiteral("encoder")});
        QVERIFY(encoder.isValid());
        // encoder.0 holds 160 B, encoder.2 288 B.
        QCOMPARE(encoder.siblingAtColumn(TensorTreeModel::PlannedDeviceColumn).data().toString(),
            QStringLiteral("mixed (cpu 64%, cuda:0 36%)"));
        QCOMPARE(encoder.data(TensorTreeModel::PlannedDeviceRole).toString(), QString());
        const QVariantList mix = encoder.data(TensorTreeModel::DeviceMixRole).toList();
        QCOMPARE(mix.size(), 2);
        QCOMPARE(mix[0].toMap().value(QStringLiteral("tag")).toString(), QStringLiteral("cpu"));
        QCOMPARE(mix[0].toMap().value(QStringLiteral("bytes")).toULongLong(), 288ull);
        QCOMPARE(mix[1].toMap().value(QStringLiteral("bytes")).toULongLong(), 160ull);
        QVERIFY(!encoder.data(Qt::DecorationRole).value<QPixmap>().isNull());
        const QModelIndex first
            = findPath(model, {QStringLiteral("model"), QStringLiteral("encoder"), QStringLiteral("0")});
        QCOMPARE(first.siblingAtColumn(TensorTreeModel::PlannedDeviceColumn).data().toString(),
            QStringLiteral("cpu → cuda:0"));
        QCOMPARE(
            first.siblingAtColumn(TensorTreeModel::SizeColumn).data(TensorTreeModel::SortRole).toULongLong(),
            160ull);
    }

    void mimeDataRoundTrips()
    {
        auto document = openDocument(fixturePath(QStringLiteral("resources/demo/demo-checkpoint.pt")));
        TensorTreeModel model(document.get());
        QCOMPARE(model.mimeTypes(), QStringList {QLatin1String(kPlacementMimeType)});
        QCOMPARE(model.supportedDragActions(), Qt::MoveAction);
        const QModelIndex layer
            = findPath(model, {QStringLiteral("model"), QStringLiteral("layers"), QStringLiteral("1")});
        const QModelIndex tensor
            = findPath(model, {QStringLiteral("model"), QStringLiteral("lm_head"), QStringLiteral("weight")});
        QVERIFY(layer.isValid() && tensor.isValid());
        QVERIFY(model.flags(layer).testFlag(Qt::ItemIsDragEnabled));
        // A row arrives once per selected column; each counts once.
        std::unique_ptr<QMimeData> mime(
            model.mimeData({layer, layer.siblingAtColumn(TensorTreeModel::SizeColumn), tensor}));
        QVERIFY(mime);
        QVERIFY(mime->hasFormat(QLatin1String(kPlacementMimeType)));
        const auto rules
            = CheckpointDocument::rulesFromMimeData(mime->data(QLatin1String(kPlacementMimeType)), "cpu");
        QCOMPARE(rules.size(), std::size_t(2));
        QCOMPARE(rules[0].kind, PlacementRule::Kind::MoveModule);
        QCOMPARE(rules[0].subject, std::string("model.layers.1"));
        QCOMPARE(rules[0].target, std::string("cpu"));
        QCOMPARE(rules[1].kind, PlacementRule::Kind::MoveTensor);
        QCOMPARE(rules[1].subject, std::string("model.lm_head.weight"));

        document->move(rules, QStringLiteral("Drop on cpu"));
        QCOMPARE(layer.siblingAtColumn(TensorTreeModel::PlannedDeviceColumn).data().toString(),
            QStringLiteral("cuda:1 → cpu"));
        QCOMPARE(tensor.siblingAtColumn(TensorTreeModel::PlannedDeviceColumn).data().toString(),
            QStringLiteral("cuda:0 → cpu"));

        // Values and placeholders cannot be dragged.
        auto training
            = openDocument(fixturePath(QStringLiteral("tests/fixtures/torch-2/training_checkpoint.pt")));
        TensorTreeModel trainingModel(training.get());
        const QModelIndex epoch = findPath(trainingModel, {QStringLiteral("epoch")});
        QVERIFY(epoch.isValid());
        QVERIFY(!trainingModel.flags(epoch).testFlag(Qt::ItemIsDragEnabled));
        QVERIFY(!trainingModel.mimeData({epoch}));
    }

    void filterKeepsAncestors()
    {
        auto document
            = openDocument(fixturePath(QStringLiteral("tests/fixtures/torch-2/training_checkpoint.pt")));
        TensorTreeModel model(document.get());
        TensorFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);

        proxy.setFilterText(QStringLiteral("exp_avg"));
        QCOMPARE(proxy.rowCount(), 1); // optimizer only
        const QModelIndex optimizer = proxy.index(0, 0);
        QCOMPARE(optimizer.data().toString(), QStringLiteral("optimizer"));
        const QModelIndex state = proxy.index(0, 0, optimizer);
        QCOMPARE(state.data().toString(), QStringLiteral("state"));
        QCOMPARE(proxy.rowCount(optimizer), 1); // param_groups is gone
        QCOMPARE(proxy.rowCount(state), 8);
        const QModelIndex group = proxy.index(0, 0, state);
        QCOMPARE(proxy.rowCount(group), 2);
        QCOMPARE(proxy.index(0, 0, group).data().toString(), QStringLiteral("exp_avg"));
        QCOMPARE(proxy.index(1, 0, group).data().toString(), QStringLiteral("exp_avg_sq"));

        proxy.setFilterText(QStringLiteral("dtype:INT64"));
        QCOMPARE(proxy.rowCount(), 1);
        const QModelIndex norm = proxy.index(0, 0, proxy.index(0, 0));
        QCOMPARE(norm.data().toString(), QStringLiteral("norm"));
        QCOMPARE(proxy.rowCount(norm), 1);

        proxy.setFilterText(QStringLiteral("device:cuda:1"));
        QCOMPARE(proxy.rowCount(), 0);
        document->move(
            {{PlacementRule::Kind::MoveModule, "model.head", "cuda:1"}}, QStringLiteral("Move head"));
        proxy.setFilterText(QStringLiteral("device:cuda"));
        proxy.setFilterText(QStringLiteral("device:cuda:1"));
        QCOMPARE(proxy.rowCount(), 1);
        QCOMPARE(proxy.rowCount(proxy.index(0, 0)), 1);

        // Natural order: "2" before "10" would need ten rows; check 0 < 2 among encoder's modules.
        proxy.setFilterText(QString());
        proxy.sort(TensorTreeModel::NameColumn, Qt::DescendingOrder);
        const QModelIndex encoder = findPath(proxy, {QStringLiteral("model"), QStringLiteral("encoder")});
        QCOMPARE(proxy.index(0, 0, encoder).data().toString(), QStringLiteral("2"));
        proxy.sort(TensorTreeModel::SizeColumn, Qt::DescendingOrder);
        const QModelIndex model2 = findPath(proxy, {QStringLiteral("model")});
        QCOMPARE(proxy.index(0, 0, model2).data().toString(), QStringLiteral("encoder"));
    }

    void deviceColours()
    {
        QCOMPARE(deviceColor(QStringLiteral("cuda:0")), deviceColor(QStringLiteral("cuda:0")));
        QVERIFY(deviceColor(QStringLiteral("cuda:0")) != deviceColor(QStringLiteral("cuda:1")));
        QVERIFY(deviceColor(QStringLiteral("cuda:1")) != deviceColor(QStringLiteral("cpu")));
        QVERIFY(deviceColor(QStringLiteral("mps")) != deviceColor(QStringLiteral("cuda:0")));
        QCOMPARE(deviceColor(QStringLiteral("cuda:9")), deviceColor(QStringLiteral("cuda:0")));
        QCOMPARE(deviceTooltip(QStringLiteral("cuda:1")),
            QStringLiteral("cuda:1: the second CUDA GPU as torch numbers them"));
        QVERIFY(deviceTextColor(QStringLiteral("cuda:0")) == QColor(Qt::white));
        QVERIFY(deviceTextColor(QStringLiteral("(none)")) == QColor(Qt::black));
    }

    void largeCheckpoint()
    {
        const QString python = QStringLiteral(CKPT_LEGACY_PYTHON);
        if (!QFileInfo::exists(python))
            QSKIP("no /usr/bin/python3 with torch to write the large checkpoint");
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("large.pt"));
        QProcess process;
        process.start(python,
            {QStringLiteral("-c"),
                QStringLiteral("import sys, torch; torch.save({f'm.b{i//100}.t{i%100}': torch.zeros(1) "
                               "for i in range(200000)}, sys.argv[1])"),
                path});
        QVERIFY(process.waitForFinished(600000));
        if (process.exitCode() != 0)
            QSKIP(qPrintable(QStringLiteral("python could not write it: ")
                + QString::fromUtf8(process.readAllStandardError())));

        QElapsedTimer timer;
        timer.start();
        auto document = openDocument(path);
        const qint64 readMs = timer.restart();
        TensorTreeModel model(document.get());
        const qint64 buildMs = timer.restart();
        // Walk every row as a view would: index, parent, and the text of every column.
        std::size_t rows = 0;
        std::vector<QModelIndex> stack {QModelIndex()};
        while (!stack.empty()) {
            const QModelIndex parent = stack.back();
            stack.pop_back();
            const int count = model.rowCount(parent);
            for (int row = 0; row < count; ++row) {
                const QModelIndex index = model.index(row, 0, parent);
                ++rows;
                if (index.parent() != parent)
                    QFAIL("parent() does not lead back");
                for (int column = 0; column < TensorTreeModel::ColumnCount; ++column)
                    (void)model.index(row, column, parent).data();
                if (model.hasChildren(index))
                    stack.push_back(index);
            }
        }
        const qint64 walkMs = timer.restart();
        TensorFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        // A tree this large filters in a job: the window stays responsive while it runs.
        QSignalSpy applied(&proxy, &TensorFilterProxyModel::filterApplied);
        proxy.setFilterText(QStringLiteral("t99"));
        QVERIFY(proxy.isFiltering());
        QVERIFY(applied.wait(120000));
        const int filteredBlocks = proxy.rowCount(proxy.index(0, 0));
        const qint64 filterMs = timer.restart();
        qInfo(
            "200,000 tensors: read %lld ms, model built %lld ms, %zu rows walked in %lld ms, filter %lld ms",
            readMs, buildMs, rows, walkMs, filterMs);
        QCOMPARE(rows, std::size_t(200000 + 2000 + 1));
        QCOMPARE(filteredBlocks, 2000);
        QCOMPARE(proxy.rowCount(proxy.index(0, 0, proxy.index(0, 0))), 1); // b0 keeps t99 only

        // A move while a device filter is on: the filter looks again, in its job.
        proxy.setFilterText(QStringLiteral("device:cuda:1"));
        QVERIFY(applied.wait(120000));
        QCOMPARE(proxy.rowCount(), 0);
        document->move({{PlacementRule::Kind::MoveModule, "m.b7", "cuda:1"}}, QStringLiteral("Move m.b7"));
        QVERIFY(applied.wait(120000));
        QCOMPARE(proxy.rowCount(proxy.index(0, 0)), 1);
        QCOMPARE(proxy.rowCount(proxy.index(0, 0, proxy.index(0, 0))), 100);
        QVERIFY(buildMs + walkMs < 20000);
    }
};

QTEST_MAIN(TestTensorTreeModel)
#include "tst_tensortreemodel.moc"
