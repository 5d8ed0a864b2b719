// SPDX-License-Identifier: MIT
// core/report: the renderers both faces print through. Text made from a hostile file's names
// must not act on a terminal, the JSON must parse back to what was rendered, and the helper's
// value-difference answer must land on the changes it was asked about.
#include "core/base/escaping.h"
#include "core/base/textformat.h"
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
#include <cstdint>
#include <cstdio>
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
    // formatBytes writes with to_chars instead of snprintf (a line per tensor of `info` calls it):
    // every unit's boundaries and the values where a printf rounding goes up or to even must read
    // as the snprintf it replaced wrote them.
    void sizesReadAsPrintfWroteThem()
    {
        const auto printfBytes = [](std::uint64_t bytes) -> std::string {
            static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
            if (bytes < 1024)
                return std::to_string(bytes) + " B";
            double value = static_cast<double>(bytes);
            int unit = 0;
            while (value >= 1024.0 && unit < 4) {
                value /= 1024.0;
                ++unit;
            }
            char buffer[64];
            std::snprintf(buffer, sizeof buffer,
                value < 10        ? "%.2f %s"
                    : value < 100 ? "%.1f %s"
                                  : "%.0f %s",
                value, units[unit]);
            return buffer;
        };
        std::vector<std::uint64_t> sizes = {0, 1, 1023, 1024, 1025, 10239, 10240, 102399, 102400, 1048575,
            1048576, std::uint64_t {1} << 40, std::uint64_t {1} << 50, ~std::uint64_t {0}};
        for (std::uint64_t unit = 1; unit <= (std::uint64_t {1} << 40); unit <<= 10)
            for (std::uint64_t step = 1; step < 200'000; step = step * 3 + 1)
                for (const std::uint64_t near : {step * unit / 1000, step * unit / 1000 + 1,
                         step * unit / 200 - 1, step * unit / 200, step * unit / 200 + 1})
                    sizes.push_back(near);
        for (std::uint64_t i = 0, x = 88172645463325252ull; i < 100'000; ++i) { // xorshift
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            sizes.push_back(x >> (x % 60));
        }
        for (const std::uint64_t bytes : sizes) {
            std::string appended = "at ";
            appendBytes(appended, bytes);
            if (formatBytes(bytes) != printfBytes(bytes) || appended != "at " + printfBytes(bytes))
                QFAIL(("at " + std::to_string(bytes) + " bytes: " + formatBytes(bytes) + " / " + appended
                    + ", printf wrote " + printfBytes(bytes))
                          .c_str());
        }
    }

    // appendPrintableText skips printable ASCII sixteen bytes at a time: every byte value at every
    // position of two blocks and their tail must come out as it does on its own (a string too short
    // for the block scan), between the plain bytes around it.
    void printableTextEscapesEveryByteAtEveryPosition()
    {
        for (int byte = 0; byte < 256; ++byte) {
            const std::string alone(1, static_cast<char>(byte));
            std::string escaped;
            appendPrintableText(escaped, alone);
            for (std::size_t at = 0; at < 40; ++at) {
                std::string text(40, 'a');
                text[at] = static_cast<char>(byte);
                std::string out = "> ";
                appendPrintableText(out, text);
                const std::string expected
                    = "> " + std::string(at, 'a') + escaped + std::string(39 - at, 'a');
                if (out != expected)
                    QFAIL(
                        ("byte " + std::to_string(byte) + " at " + std::to_string(at) + ": " + out).c_str());
            }
        }
        std::string utf8 = "> ";
        appendPrintableText(utf8, "0123456789abcdef caf\xc3\xa9 \x1b[2J 0123456789abcdef\x7f");
        QCOMPARE(utf8, std::string("> 0123456789abcdef caf\xc3\xa9 \\x1b[2J 0123456789abcdef\\x7f"));
    }

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
