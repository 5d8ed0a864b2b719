// SPDX-License-Identifier: MIT
// Automatic placement of a 40-block, 16 GiB model written by real torch (without its data, see
// tests/data/placement/make_forty_blocks.py) on a described 2 x 8 GiB + CPU machine: no GPU over
// budget, no block split, tied weights together, every storage placed exactly once.
#include "core/devices/machinespec.h"
#include "core/plan/autoplacement.h"
#include "core/plan/devicemap.h"
#include "core/plan/memoryledger.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <map>

using namespace ckpt;

class TestAutoPlacement : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::string m_model;

    static MachineInventory machine()
    {
        auto parsed = parseMachineSpec("cuda:0=8GiB,cuda:1=8GiB,cpu=64GiB", "2 x 8 GiB");
        return parsed.hasValue() ? *parsed : MachineInventory {};
    }

    void checkPlacement(PlacementStrategy strategy)
    {
        const Checkpoint checkpoint = readCheckpoint(m_model);
        QCOMPARE(checkpoint.format, CheckpointFormat::TorchZip);
        QVERIFY(checkpoint.tensors.size() > 360);
        const MachineInventory target = machine();
        QCOMPARE(target.devices.size(), std::size_t(3));

        AutoPlacementOptions options;
        options.strategy = strategy;
        const auto placement = placeAutomatically(checkpoint, target, options);
        QVERIFY2(placement.hasValue(), placement.hasValue() ? "" : placement.error().message.c_str());
        PlacementPlan plan(checkpoint);
        MemoryLedger ledger(checkpoint, plan, target, options.assumptions);
        for (const PlacementRule& rule : placement->rules)
            ledger.apply(plan.apply(rule));

        std::uint64_t total = 0;
        std::map<std::string, std::uint64_t> perDevice;
        for (const DeviceLedgerLine& line : ledger.lines()) {
            total += line.plannedBytes;
            perDevice[line.tag] = line.plannedBytes;
            if (line.tag.starts_with("cuda"))
                QVERIFY2(!line.overCapacity(),
                    qPrintable(QString::fromStdString(line.tag) + QStringLiteral(" is over budget")));
        }
        QCOMPARE(total, checkpoint.totalStorageBytes());
        QVERIFY(perDevice["cuda:0"] > 0);
        QVERIFY(perDevice["cuda:1"] > 0);
        QVERIFY(perDevice["cpu"] > 0); // 16 GiB does not fit in 2 x 6.5 GiB of budget

        // The device_map export of this placement (the one function the CLI and the app share):
        // GPUs as JSON integers, since torch.device("0") fails where torch.device(0) is cuda:0.
        const QJsonObject exported = QJsonDocument::fromJson(
            QByteArray::fromStdString(
                deviceMapJson({placement->deviceMap.begin(), placement->deviceMap.end()})))
                                         .object();
        QCOMPARE(std::size_t(exported.size()), placement->deviceMap.size());
        int ordinals = 0;
        for (auto entry = exported.begin(); entry != exported.end(); ++entry) {
            if (entry.value().isDouble())
                ++ordinals;
            else
                QCOMPARE(entry.value().toString(), QStringLiteral("cpu"));
        }
        QVERIFY(ordinals > 0);
        QVERIFY(placement->didNotFit.empty());

        // No block split: every tensor of model.layers.N on one device.
        std::map<std::string, std::string> blockDevice;
        for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t) {
            const std::string block = groupPrefix(checkpoint.tensors[t].name, -1);
            const std::string device = plan.plannedDeviceOfTensor(t).value_or("");
            auto [it, inserted] = blockDevice.emplace(block, device);
            QVERIFY2(it->second == device,
                qPrintable(QString::fromStdString(block) + QStringLiteral(" is split")));
        }
        int blocks = 0;
        for (const auto& [block, device] : blockDevice)
            blocks += block.starts_with("model.layers.") ? 1 : 0;
        QCOMPARE(blocks, 40);

        // Tied weights together.
        std::string embed, head;
        for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t) {
            if (checkpoint.tensors[t].name == "model.embed_tokens.weight")
                embed = plan.plannedDeviceOfTensor(t).value_or("");
            if (checkpoint.tensors[t].name == "lm_head.weight")
                head = plan.plannedDeviceOfTensor(t).value_or("");
        }
        QVERIFY(!embed.empty());
        QCOMPARE(head, embed);
        // Every decision is explained.
        for (const PlacementGroup& group : placement->groups)
            QVERIFY(!group.reason.empty());

        if (strategy == PlacementStrategy::Balanced) {
            // Balanced spreads the GPU share evenly: the two GPUs differ by at most one block.
            const std::uint64_t difference = perDevice["cuda:0"] > perDevice["cuda:1"]
                ? perDevice["cuda:0"] - perDevice["cuda:1"]
                : perDevice["cuda:1"] - perDevice["cuda:0"];
            QVERIFY(difference <= 600ull << 20);
        }
    }

private Q_SLOTS:
    void initTestCase()
    {
        const QString modern = QStringLiteral(CKPT_MODERN_PYTHON);
        if (modern.isEmpty())
            QSKIP("needs the modern torch (torch.serialization.skip_data): set CKPT_MODERN_PYTHON");
        QVERIFY(m_dir.isValid());
        m_model = QString(m_dir.path() + QStringLiteral("/forty-blocks.pt")).toStdString();
        QProcess python;
        python.start(modern,
            {QStringLiteral(CKPT_SOURCE_DIR "/tests/data/placement/make_forty_blocks.py"),
                QString::fromStdString(m_model)});
        QVERIFY(python.waitForFinished(300'000));
        QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());
    }

    void sequential() { checkPlacement(PlacementStrategy::Sequential); }
    void balanced() { checkPlacement(PlacementStrategy::Balanced); }

    void groupPrefixes()
    {
        QCOMPARE(groupPrefix("model.layers.3.self_attn.q_proj.weight", -1), std::string("model.layers.3"));
        QCOMPARE(groupPrefix("lm_head.weight", -1), std::string("lm_head.weight"));
        QCOMPARE(groupPrefix("encoder.block.weight", -1), std::string("encoder.block"));
        QCOMPARE(groupPrefix("a.b.c.d", 3), std::string("a.b.c"));
        QCOMPARE(groupPrefix("w[indices]", -1), std::string("w"));
    }
};

QTEST_APPLESS_MAIN(TestAutoPlacement)
#include "tst_autoplacement.moc"
