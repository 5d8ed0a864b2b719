// SPDX-License-Identifier: MIT
// core/report: the renderers both faces print through. Text made from a hostile file's names
// must not act on a terminal, the JSON must parse back to what was rendered, and the helper's
// value-difference answer must land on the changes it was asked about.
#include "core/compare/checkpointdiff.h"
#include "core/compare/valuedelta.h"
#include "core/devices/machineinventory.h"
#include "core/json/json.h"
#include "core/report/diffreport.h"
#include "core/report/machinereport.h"
#include "core/report/safetyreport.h"
#include "core/safety/pickleverdict.h"

#include <QTest>

#include <algorithm>
#include <sstream>

using namespace ckpt;

namespace {

// No byte below 0x20 but the line breaks the renderer writes itself, no DEL, no ESC anywhere.
bool actsOnTerminal(const std::string& text)
{
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if ((byte < 0x20 && byte != '\n') || byte == 0x7F)
            return true;
    }
    return false;
}

} // namespace

class TestReport : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void safetyTextShowsHostileNamesInert()
    {
        SafetyVerdict safety;
        safety.rating = PickleSafety::DangerousOrUnknown;
        safety.headline = "runs \x1b[2Jcode";
        UnsafeCallable callable;
        callable.name = "os.system\nmodule\tmodel";
        callable.knownDangerous = true;
        callable.reason = "runs a shell command";
        callable.where = "archive/data.pkl";
        callable.call = "os.system('\x1b[30Arm -rf /')";
        safety.unsafe.push_back(callable);
        const std::string text = safetyText(safety);
        QVERIFY2(!actsOnTerminal(text), text.c_str());
        QVERIFY(text.find("os.system\\nmodule\\tmodel") != std::string::npos);
        QVERIFY(text.find("\\x1b[2J") != std::string::npos);
        // One line per entry: the name's newline did not start a line of its own.
        QCOMPARE(std::count(text.begin(), text.end(), '\n'), 3);
    }

    void safetyJsonParsesBackToTheVerdict()
    {
        SafetyVerdict safety;
        safety.rating = PickleSafety::DangerousOrUnknown;
        safety.headline = "head\nline";
        safety.unsafe.push_back({"builtins.eval", "evaluates", true, "data.pkl", ""});
        safety.notes.push_back("a note");
        JsonWriter writer(JsonStyle::Compact);
        writeSafetyJson(writer, safety);
        const auto parsed = parseJson(writer.takeText());
        QVERIFY(parsed);
        QCOMPARE(parsed->member("rating").toString(), std::string(pickleSafetyName(safety.rating)));
        QCOMPARE(parsed->member("headline").toString(), safety.headline);
        QCOMPARE(parsed->member("unsafe").items().size(), std::size_t(1));
        QCOMPARE(parsed->member("unsafe").items()[0].member("name").toString(), std::string("builtins.eval"));
        QVERIFY(parsed->member("unsafe").items()[0].member("call").isNull());
        QVERIFY(parsed->member("add_safe_globals_torch2").isNull());
        QCOMPARE(parsed->member("notes").items()[0].toString(), std::string("a note"));
    }

    void machineRendersEveryDevice()
    {
        MachineInventory machine;
        machine.name = "rig\x1b]0;title\x07";
        machine.described = true;
        DeviceInfo gpu;
        gpu.tag = "cuda:0";
        gpu.name = "GPU\x1b[8m";
        gpu.totalBytes = 24ull << 30;
        gpu.computeCapability = std::pair {9, 0};
        machine.devices.push_back(gpu);
        machine.devices.push_back({"cpu", "CPU", 64ull << 30, std::nullopt, std::nullopt, "", "", false});

        std::ostringstream text;
        writeMachineText(text, machine);
        QVERIFY2(!actsOnTerminal(text.str()), text.str().c_str());
        QVERIFY(text.str().find("(described)") != std::string::npos);
        QVERIFY(text.str().find("compute capability 9.0") != std::string::npos);

        JsonWriter writer(JsonStyle::Compact);
        writeMachineJson(writer, machine);
        const auto parsed = parseJson(writer.takeText());
        QVERIFY(parsed);
        QCOMPARE(parsed->member("name").toString(), machine.name);
        const auto& devices = parsed->member("devices").items();
        QCOMPARE(devices.size(), std::size_t(2));
        QCOMPARE(devices[0].member("compute_capability").toString(), std::string("9.0"));
        QCOMPARE(devices[0].member("total_bytes").toUInt64(), std::optional<std::uint64_t>(24ull << 30));
        QVERIFY(devices[1].member("compute_capability").isNull());
        QVERIFY(devices[1].member("free_bytes").isNull());
    }

    void diffCountsAreTheLineBothFacesShow()
    {
        CheckpointDiff diff;
        diff.removed = {"a"};
        diff.added = {"b", "c"};
        diff.unchanged = 5;
        QCOMPARE(diffCountsText(diff), std::string("1 removed, 2 added, 0 renamed, 0 changed, 5 unchanged"));
        diff.bytesHashed = 2048;
        diff.hashSeconds = 0.25;
        diff.threads = 4;
        QCOMPARE(diffHashingText(diff), std::string("2.00 KiB hashed in 0.25 s on 4 threads"));
    }

    void valueDeltasLandOnTheChangesAskedAbout()
    {
        const auto answer = parseJson(
            R"({"pairs": [{"count": 8, "differing": 3, "max_abs": 0.5, "max_rel": 0.25}, {"error": "not float"}]})");
        QVERIFY(answer);
        const ValueDeltas deltas = readValueDeltas(*answer, {1, 3}, 4);
        QCOMPARE(deltas.measured.size(), std::size_t(4));
        QCOMPARE(deltas.errors.size(), std::size_t(4));
        QVERIFY(!deltas.measured[0] && !deltas.measured[2] && !deltas.measured[3]);
        QVERIFY(deltas.measured[1]);
        QCOMPARE(deltas.measured[1]->count, std::uint64_t(8));
        QCOMPARE(deltas.measured[1]->differing, std::uint64_t(3));
        QCOMPARE(deltas.measured[1]->maxAbsolute, 0.5);
        QCOMPARE(deltas.measured[1]->maxRelative, 0.25);
        QVERIFY(!deltas.errors[1]);
        QCOMPARE(*deltas.errors[3], std::string("not float"));
        // An answer shorter than the question leaves the rest unmeasured, never out of range.
        const ValueDeltas partial = readValueDeltas(*answer, {0, 1, 2}, 3);
        QVERIFY(partial.measured[0] && partial.errors[1] && !partial.measured[2] && !partial.errors[2]);
    }
};

QTEST_GUILESS_MAIN(TestReport)
#include "tst_report.moc"
