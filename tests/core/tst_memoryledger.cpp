// SPDX-License-Identifier: MIT
// The memory ledger against a brute-force recount after random sequences of moves on torch-written
// fixtures: bytes per device and per module, each storage counted once however many tensors view it.
#include "core/devices/machineinventory.h"
#include "core/plan/memoryledger.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"

#include <QRandomGenerator>
#include <QTest>

#include <map>
#include <set>

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
