// SPDX-License-Identifier: MIT
// The device panel, the memory chart and their models: drops through the real views, then undo
// and redo; every model under QAbstractItemModelTester; renders to look at.

#include "ui/document/checkpointdocument.h"
#include "ui/models/devicemodel.h"
#include "ui/models/memorytablemodel.h"
#include "ui/widgets/devicepanel.h"
#include "ui/widgets/memorychartwidget.h"

#include "core/devices/deviceinventory.h"
#include "core/read/checkpointreader.h"

#include <QAbstractItemModelTester>
#include <QAbstractItemView>
#include <QApplication>
#include <QChartView>
#include <QDir>
#include <QDragEnterEvent>
#include <QMimeData>
#include <QSignalSpy>
#include <QTest>
#include <QUndoStack>

#include <memory>
#include <set>

using namespace ckpt;

namespace {

const char* kDemoPath = CKPT_SOURCE_DIR "/resources/demo/demo-checkpoint.pt";
const char* kTarget = "cuda:0=4GiB,cuda:1=4GiB,cpu=16GiB";

std::unique_ptr<CheckpointDocument> openDemo()
{
    auto checkpoint = std::make_shared<const Checkpoint>(readCheckpoint(kDemoPath));
    auto target = parseMachineSpec(kTarget);
    if (!target)
        return nullptr;
    return std::make_unique<CheckpointDocument>(checkpoint, *target);
}

bool under(const std::string& name, const std::string& prefix)
{
    return name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0
        && (name[prefix.size()] == '.' || name[prefix.size()] == '[');
}

std::vector<std::uint32_t> tensorsUnder(const Checkpoint& checkpoint, const std::string& prefix)
{
    std::vector<std::uint32_t> found;
    for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t)
        if (under(checkpoint.tensors[t].name.str(), prefix))
            found.push_back(t);
    return found;
}

DeviceLedgerLine ledgerLine(const CheckpointDocument& document, const std::string& tag)
{
    for (const DeviceLedgerLine& line : document.ledger().lines())
        if (line.tag == tag)
            return line;
    return {};
}

// Bytes of the storages of `tensors` not already planned on `device` (each storage once).
std::uint64_t bytesMovingTo(
    const CheckpointDocument& document, const std::vector<std::uint32_t>& tensors, const std::string& device)
{
    std::set<std::int32_t> storages;
    std::uint64_t bytes = 0;
    for (std::uint32_t t : tensors) {
        const std::int32_t storage = document.checkpoint().tensors[t].storage;
        if (storage < 0 || !storages.insert(storage).second)
            continue;
        if (document.plan().plannedDeviceOfStorage(std::uint32_t(storage)) != device)
            bytes += document.checkpoint().storages[std::size_t(storage)].nbytes;
    }
    return bytes;
}

// A drag from the tree arriving at `position` of `target`, as a window system delivers it.
bool dragAndDrop(QWidget* target, const QPoint& position, const QMimeData& data)
{
    QDragEnterEvent enter(position, Qt::CopyAction | Qt::MoveAction, &data, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &enter);
    if (!enter.isAccepted())
        return false;
    QDragMoveEvent move(position, Qt::CopyAction | Qt::MoveAction, &data, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &move);
    if (!move.isAccepted())
        return false;
    QDropEvent drop(
        QPointF(position), Qt::CopyAction | Qt::MoveAction, &data, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &drop);
    return drop.isAccepted();
}

QString renderDir()
{
    QString dir = QStringLiteral(CKPT_BINARY_DIR "/renders");
    QDir().mkpath(dir);
    return dir;
}

QPalette darkPalette()
{
    QPalette palette;
    palette.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2b));
    palette.setColor(QPalette::WindowText, QColor(0xe0, 0xe0, 0xe0));
    palette.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
    palette.setColor(QPalette::AlternateBase, QColor(0x33, 0x33, 0x33));
    palette.setColor(QPalette::Text, QColor(0xe0, 0xe0, 0xe0));
    palette.setColor(QPalette::Button, QColor(0x35, 0x35, 0x35));
    palette.setColor(QPalette::ButtonText, QColor(0xe0, 0xe0, 0xe0));
    palette.setColor(QPalette::Mid, QColor(0x60, 0x60, 0x60));
    palette.setColor(QPalette::Highlight, QColor(0x3d, 0x8e, 0xe6));
    palette.setColor(QPalette::HighlightedText, Qt::white);
    palette.setColor(QPalette::ToolTipBase, QColor(0x35, 0x35, 0x35));
    palette.setColor(QPalette::ToolTipText, QColor(0xe0, 0xe0, 0xe0));
    return palette;
}

} // namespace

class TestDevicePanel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void deviceModelFollowsTheLedger();
    void memoryTableModelFollowsTheLedger();
    void dropOnACardMovesAndUndoes();
    void dropOnAChartBarMovesAndUndoes();
    void dropOfSomethingElseIsRefused();
    void storagesWithoutADeviceAreNotAnAbsentDevice();
    void emptyPanelAndChart();
    void renders();
};

void TestDevicePanel::deviceModelFollowsTheLedger()
{
    auto document = openDemo();
    QVERIFY(document);
    DeviceModel model(document.get());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);

    const auto lines = document->ledger().lines();
    QCOMPARE(model.rowCount(), int(lines.size()));
    QVERIFY(model.rowOfTag(QStringLiteral("cuda:0")) >= 0);
    QVERIFY(model.rowOfTag(QStringLiteral("cuda:1")) >= 0);
    const int cpu = model.rowOfTag(QStringLiteral("cpu"));
    QVERIFY(cpu >= 0);
    const QModelIndex cpuIndex = model.index(cpu);
    QCOMPARE(model.data(cpuIndex, DeviceModel::TagRole).toString(), QStringLiteral("cpu"));
    QCOMPARE(model.data(cpuIndex, DeviceModel::CapacityRole).toULongLong(), 16ull << 30);
    QCOMPARE(model.data(cpuIndex, DeviceModel::InTargetRole).toBool(), true);
    QCOMPARE(model.data(cpuIndex, DeviceModel::PlannedBytesRole).toULongLong(),
        qulonglong(ledgerLine(*document, "cpu").plannedBytes));
    QVERIFY(model.data(cpuIndex, Qt::ToolTipRole).toString().contains(QStringLiteral("Planned")));
    QVERIFY(model.flags(cpuIndex) & Qt::ItemIsDropEnabled);
    QCOMPARE(model.mimeTypes(), QStringList {QString::fromLatin1(kPlacementMimeType)});

    // A move: dataChanged, same rows.
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    document->move(CheckpointDocument::rulesFromMimeData(
                       CheckpointDocument::mimeDataFor({{true, "model.layers.0"}}), "cpu"),
        QStringLiteral("Move model.layers.0 to cpu"));
    QVERIFY(!changed.isEmpty());
    QCOMPARE(model.data(model.index(cpu), DeviceModel::PlannedBytesRole).toULongLong(),
        qulonglong(ledgerLine(*document, "cpu").plannedBytes));

    // A new target: a reset with the new devices.
    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    auto smaller = parseMachineSpec("cuda:0=2GiB,cpu=8GiB");
    QVERIFY(smaller);
    document->setTarget(*smaller);
    QCOMPARE(reset.size(), 1);
    QCOMPARE(model.data(model.index(model.rowOfTag(QStringLiteral("cpu"))), DeviceModel::CapacityRole)
                 .toULongLong(),
        8ull << 30);
    document->undoStack()->undo();
}

void TestDevicePanel::memoryTableModelFollowsTheLedger()
{
    auto document = openDemo();
    QVERIFY(document);
    MemoryTableModel model(document.get());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.columnCount(), int(MemoryTableModel::ColumnCount));
    QVERIFY(model.headerData(MemoryTableModel::PlannedColumn, Qt::Horizontal)
                .toString()
                .contains(QStringLiteral("GiB")));
    const int cpu = model.rowOfTag(QStringLiteral("cpu"));
    QVERIFY(cpu >= 0);
    QCOMPARE(model.data(model.index(cpu, MemoryTableModel::CapacityColumn)).toDouble(), 16.0);
    QCOMPARE(model.headerData(cpu, Qt::Vertical).toString(), QStringLiteral("cpu"));

    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    document->move({{PlacementRule::Kind::MapTag, "cuda:1", "cpu"}}, QStringLiteral("Map cuda:1 to cpu"));
    QVERIFY(!changed.isEmpty());
    QCOMPARE(model.data(model.index(cpu, MemoryTableModel::PlannedColumn), MemoryTableModel::BytesRole)
                 .toULongLong(),
        qulonglong(ledgerLine(*document, "cpu").plannedBytes));
    document->undoStack()->undo();
    QCOMPARE(model.data(model.index(cpu, MemoryTableModel::PlannedColumn), MemoryTableModel::BytesRole)
                 .toULongLong(),
        qulonglong(ledgerLine(*document, "cpu").plannedBytes));
}

void TestDevicePanel::dropOnACardMovesAndUndoes()
{
    auto document = openDemo();
    QVERIFY(document);
    const std::vector<std::uint32_t> layer = tensorsUnder(document->checkpoint(), "model.layers.1");
    QVERIFY(!layer.empty());
    const std::uint64_t moving = bytesMovingTo(*document, layer, "cpu");
    QVERIFY2(moving > 0, "the demo's model.layers.1 should not be on the CPU already");
    const DeviceLedgerLine before = ledgerLine(*document, "cpu");
    std::vector<std::optional<std::string>> devicesBefore;
    devicesBefore.reserve(layer.size());
    for (std::uint32_t t : layer)
        devicesBefore.push_back(document->plan().plannedDeviceOfTensor(t));

    DevicePanel panel(document.get());
    QAbstractItemModelTester tester(panel.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    panel.resize(600, 400);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    const QRect card = panel.cardRect(QStringLiteral("cpu"));
    QVERIFY(card.isValid());
    QVERIFY(panel.view()->viewport()->rect().contains(card.center()));

    QSignalSpy moved(&panel, &DevicePanel::moved);
    QMimeData data;
    data.setData(
        QString::fromLatin1(kPlacementMimeType), CheckpointDocument::mimeDataFor({{true, "model.layers.1"}}));
    QVERIFY(dragAndDrop(panel.view()->viewport(), card.center(), data));

    for (std::uint32_t t : layer)
        QCOMPARE(document->plan().plannedDeviceOfTensor(t), std::optional<std::string>("cpu"));
    QCOMPARE(ledgerLine(*document, "cpu").plannedBytes, before.plannedBytes + moving);
    QCOMPARE(moved.size(), 1);
    const QString status = moved.front().front().toString();
    QVERIFY2(status.contains(QStringLiteral("model.layers.1")) && status.contains(QStringLiteral("cpu")),
        qPrintable(status));
    QCOMPARE(panel.model()->lastMoveReport().text, status);
    QVERIFY(document->isModified());
    QCOMPARE(panel.model()
                 ->data(panel.model()->index(panel.model()->rowOfTag(QStringLiteral("cpu"))),
                     DeviceModel::PlannedBytesRole)
                 .toULongLong(),
        qulonglong(before.plannedBytes + moving));

    document->undoStack()->undo();
    for (std::size_t i = 0; i < layer.size(); ++i)
        QCOMPARE(document->plan().plannedDeviceOfTensor(layer[i]), devicesBefore[i]);
    QCOMPARE(ledgerLine(*document, "cpu").plannedBytes, before.plannedBytes);
    QVERIFY(!document->isModified());

    document->undoStack()->redo();
    for (std::uint32_t t : layer)
        QCOMPARE(document->plan().plannedDeviceOfTensor(t), std::optional<std::string>("cpu"));
    QCOMPARE(ledgerLine(*document, "cpu").plannedBytes, before.plannedBytes + moving);
}

void TestDevicePanel::dropOnAChartBarMovesAndUndoes()
{
    auto document = openDemo();
    QVERIFY(document);
    const std::vector<std::uint32_t> layer = tensorsUnder(document->checkpoint(), "model.layers.1");
    // Somewhere the layer is not: cuda:1 unless it is there already.
    const std::string device = bytesMovingTo(*document, layer, "cuda:1") > 0 ? "cuda:1" : "cuda:0";
    const std::uint64_t moving = bytesMovingTo(*document, layer, device);
    QVERIFY(moving > 0);
    const DeviceLedgerLine before = ledgerLine(*document, device);
    std::vector<std::optional<std::string>> devicesBefore;
    devicesBefore.reserve(layer.size());
    for (std::uint32_t t : layer)
        devicesBefore.push_back(document->plan().plannedDeviceOfTensor(t));

    MemoryChartWidget chart(document.get());
    QAbstractItemModelTester tester(chart.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    chart.resize(700, 420);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    QCoreApplication::processEvents();

    const QString tag = QString::fromStdString(device);
    const QPoint center = chart.categoryCenter(tag);
    QCOMPARE(chart.tagAt(center), tag);

    QSignalSpy moved(&chart, &MemoryChartWidget::moved);
    QMimeData data;
    data.setData(
        QString::fromLatin1(kPlacementMimeType), CheckpointDocument::mimeDataFor({{true, "model.layers.1"}}));
    QVERIFY(dragAndDrop(chart.chartView()->viewport(), center, data));
    for (std::uint32_t t : layer)
        QCOMPARE(document->plan().plannedDeviceOfTensor(t), std::optional<std::string>(device));
    QCOMPARE(ledgerLine(*document, device).plannedBytes, before.plannedBytes + moving);
    QCOMPARE(moved.size(), 1);
    QVERIFY(moved.front().front().toString().contains(tag));

    // The chart's planned bar follows (the mapper reads the model's dataChanged).
    const int row = chart.model()->rowOfTag(tag);
    QCOMPARE(
        chart.model()
            ->data(chart.model()->index(row, MemoryTableModel::PlannedColumn), MemoryTableModel::BytesRole)
            .toULongLong(),
        qulonglong(before.plannedBytes + moving));

    document->undoStack()->undo();
    for (std::size_t i = 0; i < layer.size(); ++i)
        QCOMPARE(document->plan().plannedDeviceOfTensor(layer[i]), devicesBefore[i]);
    QCOMPARE(ledgerLine(*document, device).plannedBytes, before.plannedBytes);
    document->undoStack()->redo();
    QCOMPARE(ledgerLine(*document, device).plannedBytes, before.plannedBytes + moving);

    // Outside every bar group: refused.
    QVERIFY(chart.tagAt(QPoint(1, 1)).isEmpty());
}

void TestDevicePanel::dropOfSomethingElseIsRefused()
{
    auto document = openDemo();
    QVERIFY(document);
    DevicePanel panel(document.get());
    panel.resize(600, 400);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QMimeData text;
    text.setText(QStringLiteral("model.layers.1"));
    QVERIFY(!dragAndDrop(panel.view()->viewport(), panel.cardRect(QStringLiteral("cpu")).center(), text));
    QCOMPARE(document->undoStack()->count(), 0);
    QVERIFY(!panel.model()->canDropMimeData(&text, Qt::MoveAction, -1, -1, panel.model()->index(0)));
}

// safetensors records no device: its storages sit on the "(none)" line, which is neither a device
// the target lacks (torch.load would not raise for it: the loader places them) nor a drop target.
void TestDevicePanel::storagesWithoutADeviceAreNotAnAbsentDevice()
{
    auto checkpoint = std::make_shared<const Checkpoint>(
        readCheckpoint(CKPT_SOURCE_DIR "/tests/fixtures/sharded/safetensors"));
    QVERIFY(!checkpoint->storages.empty());
    auto target = parseMachineSpec(kTarget);
    QVERIFY(target);
    CheckpointDocument document(checkpoint, *target);
    QCOMPARE(ledgerLine(document, "(none)").recordsNoDevice, true);
    QCOMPARE(ledgerLine(document, "cpu").recordsNoDevice, false);

    DevicePanel panel(&document);
    QAbstractItemModelTester tester(panel.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const int none = panel.model()->rowOfTag(QStringLiteral("(none)"));
    QVERIFY(none >= 0);
    const QModelIndex noneIndex = panel.model()->index(none);
    QVERIFY(noneIndex.data(DeviceModel::RecordsNoDeviceRole).toBool());
    QVERIFY(!(panel.model()->flags(noneIndex) & Qt::ItemIsDropEnabled));
    QMimeData norm;
    norm.setData(
        QString::fromLatin1(kPlacementMimeType), CheckpointDocument::mimeDataFor({{true, "model.norm"}}));
    QVERIFY(!panel.model()->canDropMimeData(&norm, Qt::MoveAction, -1, -1, noneIndex));
    QVERIFY(panel.model()->canDropMimeData(
        &norm, Qt::MoveAction, -1, -1, panel.model()->index(panel.model()->rowOfTag(QStringLiteral("cpu")))));
    const QString tip = panel.cardToolTip(none);
    QVERIFY2(tip.contains(QStringLiteral("records no device")), qPrintable(tip));
    QVERIFY2(!tip.contains(QStringLiteral("raises")), qPrintable(tip));
    QVERIFY(!tip.contains(QStringLiteral("has no (none)")));

    panel.resize(600, 200);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.grab().save(renderDir() + QStringLiteral("/devicepanel-safetensors.png"));
}

void TestDevicePanel::emptyPanelAndChart()
{
    auto document = openDemo();
    QVERIFY(document);
    DevicePanel panel(document.get());
    MemoryChartWidget chart(document.get());
    QVERIFY(panel.model()->rowCount() > 0);
    panel.setDocument(nullptr);
    chart.setDocument(nullptr);
    QCOMPARE(panel.model()->rowCount(), 0);
    QCOMPARE(chart.model()->rowCount(), 0);
    QVERIFY(panel.cardRect(QStringLiteral("cpu")).isNull());
    panel.setDocument(document.get());
    chart.setDocument(document.get());
    QVERIFY(panel.model()->rowCount() > 0);
    QVERIFY(chart.model()->rowCount() > 0);
    // A document that goes away leaves empty views behind, not dangling ones.
    document.reset();
    QCOMPARE(panel.model()->rowCount(), 0);
    QCOMPARE(chart.model()->rowCount(), 0);
    QVERIFY(!panel.accessibleName().isEmpty());
    QVERIFY(!chart.accessibleName().isEmpty());
}

void TestDevicePanel::renders()
{
    auto document = openDemo();
    QVERIFY(document);
    // A small cuda:0 (its assumed CUDA context alone overfills it), so the warning colours show.
    auto tight = parseMachineSpec("cuda:0=1GiB,cuda:1=4GiB,cpu=16GiB");
    QVERIFY(tight);
    document->setTarget(*tight);
    document->move(
        {{PlacementRule::Kind::MapTag, "cuda:1", "cuda:0"}}, QStringLiteral("Map cuda:1 to cuda:0"));
    const QString dir = renderDir();
    for (const bool dark : {false, true}) {
        DevicePanel panel(document.get());
        MemoryChartWidget chart(document.get());
        if (dark) {
            panel.setPalette(darkPalette());
            chart.setPalette(darkPalette());
        }
        panel.resize(560, 330);
        chart.resize(640, 420);
        panel.show();
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        QCoreApplication::processEvents();
        const QString suffix = dark ? QStringLiteral("-dark.png") : QStringLiteral("-light.png");
        QVERIFY(panel.grab().save(dir + QStringLiteral("/devicepanel") + suffix));
        QVERIFY(chart.grab().save(dir + QStringLiteral("/memorychart") + suffix));
        qInfo("rendered %s", qPrintable(dir + QStringLiteral("/{devicepanel,memorychart}") + suffix));
    }
}

QTEST_MAIN(TestDevicePanel)
#include "tst_devicepanel.moc"
