// SPDX-License-Identifier: MIT
// The memory ledger against a brute-force recount after random sequences of moves on torch-written
// fixtures: bytes per device and per module, each storage counted once however many tensors view it.
#include "core/devices/machineinventory.h"
#include "core/plan/memoryledger.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"

#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>

#include <map>
#include <optional>
#include <set>
#include <tuple>

using namespace ckpt;

namespace {

MachineInventory twoGpus()
{
    MachineInventory machine;
    machine.name = "test";
    machine.described = true;
    machine.devices.push_back({"cuda:0", "GPU 0", 1ull << 30, std::nullopt, std::nullopt, {}, {}, false});
    machine.devices.push_back({"cuda:1", "GPU 1", 1ull << 30, std::nullopt, std::nullopt, {}, {}, false});
    machine.devices.push_back({"cpu", "CPU", 4ull << 30, std::nullopt, std::nullopt, {}, {}, false});
    return machine;
}

// Everything recounted from scratch: storage by storage, from the plan.
std::map<std::string, std::uint64_t> recountDevices(const Checkpoint& checkpoint, const PlacementPlan& plan)
{
    std::map<std::string, std::uint64_t> bytes;
    for (std::uint32_t s = 0; s < checkpoint.storages.size(); ++s)
        bytes[plan.plannedDeviceOfStorage(s).value_or("(none)")] += checkpoint.storages[s].nbytes;
    return bytes;
}

std::map<std::string, std::uint64_t> recountNode(
    const Checkpoint& checkpoint, const PlacementPlan& plan, std::uint32_t node)
{
    std::set<std::int32_t> storages;
    for (const TensorEntry& tensor : checkpoint.tensors) {
        for (std::uint32_t n = tensor.treeNode;; n = checkpoint.tree[n].parent) {
            if (n == node) {
                if (tensor.storage >= 0)
                    storages.insert(tensor.storage);
                break;
            }
            if (n == 0)
                break;
        }
    }
    std::map<std::string, std::uint64_t> bytes;
    for (std::int32_t s : storages)
        bytes[plan.plannedDeviceOfStorage(static_cast<std::uint32_t>(s)).value_or("(none)")]
            += checkpoint.storages[static_cast<std::size_t>(s)].nbytes;
    return bytes;
}

// Written by Debian's torch 1.13: nested modules (blocks of attention, norm and a Sequential), a
// tied embedding and head (one storage, two module paths), and one tensor's storage viewed from
// three subtrees at different depths, in three dtypes so sizes differ.
const char* const kNestedSharedFixture = R"PY(
import sys, torch
torch.manual_seed(0)
class Block(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.attn = torch.nn.Linear(width, width)
        self.norm = torch.nn.LayerNorm(width)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 2 * width), torch.nn.ReLU(), torch.nn.Linear(2 * width, width))
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.blocks = torch.nn.ModuleList([Block(4) for _ in range(3)])
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight
net = Net()
shared = torch.arange(96, dtype=torch.float64)
state = {
    "model": net.state_dict(),
    "views": {"a": {"first": shared[:16], "second": shared[16:40]}, "b": shared.view(12, 8)[2:]},
    "extra": {"deep": {"deeper": {"half": torch.ones(7, dtype=torch.float16), "tail": shared[40:]}},
              "step": torch.tensor(5, dtype=torch.int64)},
}
torch.save(state, sys.argv[1])
)PY";

// One device line's figures, recounted storage by storage from the plan alone.
using LineFigures = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t>;

std::uint64_t cachingAllocatorSize(std::uint64_t bytes)
{
    if (bytes == 0)
        return 0;
    if (bytes <= (1ull << 20))
        return (bytes + 511) / 512 * 512;
    return (bytes + (2ull << 20) - 1) / (2ull << 20) * (2ull << 20);
}

std::map<std::string, LineFigures> recountLines(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const MachineInventory& machine, const LedgerAssumptions& assumptions)
{
    std::map<std::string, LineFigures> lines;
    for (const DeviceInfo& device : machine.devices)
        lines[device.tag] = {};
    for (std::uint32_t s = 0; s < checkpoint.storages.size(); ++s) {
        const StorageRecord& storage = checkpoint.storages[s];
        std::get<0>(lines[storage.device.value_or("(none)")]) += storage.nbytes;
        auto& [recorded, planned, allocated, count, context]
            = lines[plan.plannedDeviceOfStorage(s).value_or("(none)")];
        planned += storage.nbytes;
        allocated += assumptions.allocatorRounding ? cachingAllocatorSize(storage.nbytes) : storage.nbytes;
        ++count;
    }
    for (auto& [tag, figures] : lines)
        if (tag.starts_with("cuda") && std::get<3>(figures) > 0)
            std::get<4>(figures) = assumptions.cudaContextBytes;
    return lines;
}

} // namespace

class TestMemoryLedger : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void agreesWithRecount_data()
    {
        QTest::addColumn<QString>("file");
        for (const char* name : {"torch-2/training_checkpoint.pt", "torch-2/tied_weights.pt",
                 "torch-2/views_and_strides.pt", "torch-1.13/devices_mixed.pt", "torch-2/many_tensors.pt",
                 "torch-2/whole_module.pt", "torch-2/quantized.pt"})
            QTest::newRow(name) << QString::fromLatin1(name);
    }
    void agreesWithRecount()
    {
        QFETCH(QString, file);
        const Checkpoint checkpoint
            = readCheckpoint(std::string(CKPT_SOURCE_DIR "/tests/fixtures/") + file.toStdString());
        QVERIFY(!checkpoint.tensors.empty());
        const MachineInventory machine = twoGpus();
        PlacementPlan plan(checkpoint);
        MemoryLedger ledger(checkpoint, plan, machine);
        const char* devices[] = {"cpu", "cuda:0", "cuda:1", "cuda:2", "mps"};
        QRandomGenerator random(static_cast<quint32>(qHash(file)));
        for (int step = 0; step < 300; ++step) {
            PlacementRule rule;
            rule.target = devices[random.bounded(5)];
            const TensorEntry& tensor
                = checkpoint.tensors[random.bounded(static_cast<int>(checkpoint.tensors.size()))];
            switch (random.bounded(3)) {
            case 0:
                rule.kind = PlacementRule::Kind::MoveTensor;
                rule.subject = tensor.name;
                break;
            case 1:
                rule.kind = PlacementRule::Kind::MoveModule;
                rule.subject = tensor.name.substr(0, tensor.name.find('.'));
                break;
            default:
                rule.kind = PlacementRule::Kind::MapTag;
                rule.subject = random.bounded(4) == 0 ? std::string("*") : devices[random.bounded(5)];
            }
            ledger.apply(plan.apply(rule));

            std::map<std::string, std::uint64_t> fromLedger;
            for (const DeviceLedgerLine& line : ledger.lines())
                if (line.plannedBytes > 0)
                    fromLedger[line.tag] = line.plannedBytes;
            std::map<std::string, std::uint64_t> recount = recountDevices(checkpoint, plan);
            for (auto it = recount.begin(); it != recount.end();)
                it = it->second == 0 ? recount.erase(it) : std::next(it);
            QVERIFY2(fromLedger == recount,
                qPrintable(
                    QStringLiteral("step %1 (%2)").arg(step).arg(QString::fromStdString(rule.describe()))));

            const std::uint32_t node
                = static_cast<std::uint32_t>(random.bounded(static_cast<int>(checkpoint.tree.size())));
            std::map<std::string, std::uint64_t> moduleFromLedger;
            for (const auto& [tag, bytes] : ledger.moduleBytes(node))
                moduleFromLedger[tag] = bytes;
            std::map<std::string, std::uint64_t> moduleRecount = recountNode(checkpoint, plan, node);
            for (auto it = moduleRecount.begin(); it != moduleRecount.end();)
                it = it->second == 0 ? moduleRecount.erase(it) : std::next(it);
            QVERIFY2(moduleFromLedger == moduleRecount,
                qPrintable(QStringLiteral("module %1 at step %2")
                               .arg(QString::fromStdString(checkpoint.treePath(node)))
                               .arg(step)));
        }
        // Each storage once: the totals equal the checkpoint's storage bytes.
        std::uint64_t total = 0;
        for (const DeviceLedgerLine& line : ledger.lines())
            total += line.plannedBytes;
        QCOMPARE(total, checkpoint.totalStorageBytes());
    }

    // Every device line in full and every tree node's bytes, against a recount from scratch, after
    // each of many random plan changes: module moves at any depth, single tensors, tag maps.
    void everyLineAndNodeAgreeWithRecountAfterRandomMoves()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("nested_shared.pt"));
        QProcess python;
        python.start(QStringLiteral("/usr/bin/python3"),
            {QStringLiteral("-c"), QString::fromUtf8(kNestedSharedFixture), path});
        QVERIFY2(python.waitForFinished(300000) && python.exitCode() == 0,
            python.readAllStandardError().constData());
        const Checkpoint checkpoint = readCheckpoint(path.toStdString());
        QVERIFY(checkpoint.tensors.size() > checkpoint.storages.size()); // storages are shared
        QVERIFY(checkpoint.tree.size() > 40); // nested modules

        const MachineInventory machine = twoGpus();
        LedgerAssumptions assumptions;
        assumptions.allocatorRounding = true;
        PlacementPlan plan(checkpoint);
        MemoryLedger ledger(checkpoint, plan, machine, assumptions);
        const char* devices[] = {"cpu", "cuda:0", "cuda:1", "cuda:5", "mps", "meta"};
        QRandomGenerator random(2024);
        for (int step = 0; step < 400; ++step) {
            PlacementRule rule;
            rule.target = devices[random.bounded(6)];
            const std::string name
                = checkpoint.tensors[random.bounded(static_cast<int>(checkpoint.tensors.size()))].name.str();
            switch (random.bounded(4)) {
            case 0:
                rule.kind = PlacementRule::Kind::MoveTensor;
                rule.subject = name;
                break;
            case 1:
            case 2: {
                // A module at a random depth of this tensor's path.
                rule.kind = PlacementRule::Kind::MoveModule;
                std::vector<std::size_t> dots;
                for (std::size_t at = name.find('.'); at != std::string::npos; at = name.find('.', at + 1))
                    dots.push_back(at);
                rule.subject = dots.empty()
                    ? name
                    : name.substr(0, dots[random.bounded(static_cast<int>(dots.size()))]);
                break;
            }
            default:
                rule.kind = PlacementRule::Kind::MapTag;
                rule.subject = random.bounded(3) == 0 ? std::string("*") : devices[random.bounded(6)];
            }
            ledger.apply(plan.apply(rule));
            const QString where
                = QStringLiteral("step %1 (%2)").arg(step).arg(QString::fromStdString(rule.describe()));

            std::map<std::string, LineFigures> fromLedger;
            for (const DeviceLedgerLine& line : ledger.lines())
                fromLedger[line.tag] = {line.recordedBytes, line.plannedBytes, line.allocatedBytes,
                    line.storageCount, line.contextBytes};
            std::map<std::string, LineFigures> recount = recountLines(checkpoint, plan, machine, assumptions);
            for (auto it = recount.begin(); it != recount.end();)
                it = !machine.find(it->first) && std::get<0>(it->second) == 0 && std::get<3>(it->second) == 0
                    ? recount.erase(it)
                    : std::next(it);
            QVERIFY2(fromLedger == recount, qPrintable(where));

            for (std::uint32_t node = 0; node < checkpoint.tree.size(); ++node) {
                const std::vector<std::pair<std::string, std::uint64_t>> listed = ledger.moduleBytes(node);
                const std::map<std::string, std::uint64_t> moduleFromLedger(listed.begin(), listed.end());
                QCOMPARE(moduleFromLedger.size(), listed.size()); // each device once
                std::map<std::string, std::uint64_t> moduleRecount = recountNode(checkpoint, plan, node);
                for (auto it = moduleRecount.begin(); it != moduleRecount.end();)
                    it = it->second == 0 ? moduleRecount.erase(it) : std::next(it);
                QVERIFY2(moduleFromLedger == moduleRecount,
                    qPrintable(where + QStringLiteral(", node ")
                        + QString::fromStdString(checkpoint.treePath(node))));
            }
        }
        QCOMPARE(
            ledger.moduleBytes(static_cast<std::uint32_t>(checkpoint.tree.size())).size(), std::size_t(0));
    }

    // The plan keeps devices as indices into its distinct tags: each index stands for one device,
    // a unit's recorded tag is its storage's (or its own) device, moves and undo compare by index,
    // and name and prefix rules name exactly the tensors a scan of every name finds.
    void planTagsAndNameRulesAgreeWithTheCheckpoint_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::newRow("devices_mixed")
            << QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/devices_mixed.pt");
        QTest::newRow("devices_exotic")
            << QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/devices_exotic.pt");
        QTest::newRow("demo") << QStringLiteral(CKPT_SOURCE_DIR "/resources/demo/demo-checkpoint.pt");
    }

    void planTagsAndNameRulesAgreeWithTheCheckpoint()
    {
        QFETCH(QString, fixture);
        const Checkpoint checkpoint = readCheckpoint(fixture.toStdString());
        QVERIFY(!checkpoint.tensors.empty());
        PlacementPlan plan(checkpoint);
        QVERIFY(!plan.tag(PlacementPlan::kNoDeviceTag));
        std::set<std::optional<std::string>> distinct {std::nullopt};
        for (std::uint32_t u = 0; u < plan.units().size(); ++u) {
            const PlacementUnit& unit = plan.units()[u];
            const auto& device = unit.storage >= 0
                ? checkpoint.storages[static_cast<std::size_t>(unit.storage)].device
                : checkpoint.tensors[static_cast<std::size_t>(unit.tensor)].device;
            const std::optional<std::string> expected
                = device ? std::optional<std::string>(std::string(*device)) : std::nullopt;
            QCOMPARE(plan.recordedDevice(u), expected);
            QCOMPARE(plan.plannedDevice(u), expected);
            QCOMPARE(plan.plannedTag(u), plan.recordedTag(u));
            distinct.insert(expected);
        }
        QCOMPARE(plan.tagCount(), distinct.size()); // one tag a device, "no device" included
        for (std::uint32_t a = 0; a < plan.tagCount(); ++a)
            for (std::uint32_t b = a + 1; b < plan.tagCount(); ++b)
                QVERIFY(plan.tag(a) != plan.tag(b));

        // Every tree path as a module rule and every tensor name as a tensor rule, against a scan.
        std::vector<std::pair<PlacementRule::Kind, std::string>> subjects;
        for (std::uint32_t node = 1; node < checkpoint.tree.size(); ++node)
            subjects.emplace_back(PlacementRule::Kind::MoveModule, checkpoint.treePath(node));
        for (const TensorEntry& tensor : checkpoint.tensors)
            subjects.emplace_back(PlacementRule::Kind::MoveTensor, tensor.name);
        for (const auto& [kind, subject] : subjects) {
            std::vector<std::uint32_t> expected;
            for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t) {
                const std::string name(checkpoint.tensors[t].name);
                const bool below = kind == PlacementRule::Kind::MoveModule && name.size() > subject.size()
                    && name.starts_with(subject)
                    && (name[subject.size()] == '.' || name[subject.size()] == '[');
                if (name == subject || below)
                    expected.push_back(t);
            }
            PlacementPlan fresh(checkpoint);
            const PlacementChange change = fresh.apply({kind, subject, "cuda:7"});
            QCOMPARE(change.tensorsNamed, expected);
            for (std::uint32_t u : change.unitsChanged)
                QCOMPARE(fresh.plannedDevice(u), std::optional<std::string>("cuda:7"));
            // Undo: every unit back on its recorded device, by index too.
            std::vector<std::pair<std::uint32_t, std::optional<std::string>>> previous;
            for (std::size_t i = 0; i < change.unitsChanged.size(); ++i)
                previous.emplace_back(change.unitsChanged[i], change.previousDevices[i]);
            fresh.restore(previous);
            QVERIFY(!fresh.changesAnything());
            for (std::uint32_t u = 0; u < fresh.units().size(); ++u)
                QCOMPARE(fresh.plannedTag(u), fresh.recordedTag(u));
        }

        // A tag mapping: every device that is recorded somewhere, onto one new device.
        plan.apply({PlacementRule::Kind::MapTag, "*", "cuda:7"});
        const auto mapping = plan.asTagMapping();
        QVERIFY(mapping);
        for (const auto& device : distinct)
            if (device && *device != "meta" && *device != "cuda:7")
                QCOMPARE(mapping->at(*device), std::string("cuda:7"));
    }

    void sharedStorageCountsOnce()
    {
        const Checkpoint checkpoint
            = readCheckpoint(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/tied_weights.pt");
        const MachineInventory machine = twoGpus();
        PlacementPlan plan(checkpoint);
        MemoryLedger ledger(checkpoint, plan, machine);
        ledger.apply(plan.apply({PlacementRule::Kind::MapTag, "*", "cuda:0"}));
        std::uint64_t cuda0 = 0;
        for (const DeviceLedgerLine& line : ledger.lines())
            if (line.tag == "cuda:0")
                cuda0 = line.plannedBytes;
        QCOMPARE(cuda0, checkpoint.totalStorageBytes());
        std::uint64_t viewBytes = 0;
        for (const TensorEntry& tensor : checkpoint.tensors)
            viewBytes += tensor.nbytes();
        QVERIFY(viewBytes > cuda0); // the tied pair is viewed twice, stored once
    }

    void contextAndRounding()
    {
        const Checkpoint checkpoint = readCheckpoint(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/state_dict.pt");
        const MachineInventory machine = twoGpus();
        PlacementPlan plan(checkpoint);
        LedgerAssumptions assumptions;
        assumptions.allocatorRounding = true;
        MemoryLedger ledger(checkpoint, plan, machine, assumptions);
        ledger.apply(plan.apply({PlacementRule::Kind::MapTag, "*", "cuda:1"}));
        for (const DeviceLedgerLine& line : ledger.lines()) {
            if (line.tag == "cuda:1") {
                QCOMPARE(line.contextBytes, assumptions.cudaContextBytes);
                QCOMPARE(line.allocatedBytes % 512, std::uint64_t(0));
                QVERIFY(line.allocatedBytes >= line.plannedBytes);
                QCOMPARE(
                    line.allocatedBytes, line.storageCount * 512); // every storage here is below 512 bytes
            }
            if (line.tag == "cuda:0")
                QCOMPARE(line.contextBytes, std::uint64_t(0)); // an unused GPU gets no context
        }
        QVERIFY(ledger.cpuStagingBytes() > 0);
    }
};

QTEST_APPLESS_MAIN(TestMemoryLedger)
#include "tst_memoryledger.moc"
