// SPDX-License-Identifier: MIT
// core/tasks/valueshelper.h, the one owner of the ckpt-inspect-values protocol, and the two tasks
// over it: the helper is found by one rule ($CKPT_VALUES_HELPER, else beside the program), its
// answer (one element a line) is read a line at a time, an answer that breaks the protocol or ends
// early is said, a helper that fails is said with its exit status and words, and an output past
// the limit stops the program (core/io/process's maxOutputBytes). The stand-in helper is
// tests/tools/fake-values-helper.py; the faces' tests run the same through the CLI and the app.
#include "core/io/process.h"
#include "core/tasks/comparison.h"
#include "core/tasks/valuescan.h"
#include "core/tasks/valueshelper.h"

#include <QScopeGuard>
#include <QTest>

#include <cstdlib>

using namespace ckpt;

namespace {

const std::string kFakeHelper = CKPT_SOURCE_DIR "/tests/tools/fake-values-helper.py";

} // namespace

class TestValuesHelper : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void readsOneElementALine()
    {
        const std::string answer
            = "{\"file\":\"a \\\"b\\\":[.pt\",\"tensors\":[\n"
              "{\"index\":0,\"name\":\"w\",\"domain\":\"values\",\"count\":4,\"nan\":1,"
              "\"posinf\":0,\"neginf\":2,\"finite\":1,\"min\":1.5,\"max\":1.5,"
              "\"histogram\":{\"low\":0.5,\"high\":2.5,\"counts\":[0,1]}},\n"
              "{\"index\":3,\"name\":\"n\",\"error\":\"no bytes\"}\n"
              "],\"crcs\":[\n"
              "{\"record\":\"archive/data/0\",\"offset\":64,\"length\":16,\"crc\":305419896}\n"
              "]}\n";
        const auto read = readValuesHelperAnswer(answer);
        QVERIFY2(read, read ? "" : read.error().message.c_str());
        QCOMPARE(read->tensors.size(), std::size_t(2));
        QCOMPARE(read->tensors[0].name, std::string("w"));
        QCOMPARE(read->tensors[0].nonFiniteCount(), std::uint64_t(3));
        QCOMPARE(read->tensors[0].histogramCounts, (std::vector<std::uint64_t> {0, 1}));
        QCOMPARE(read->tensors[1].index, 3u);
        QCOMPARE(read->tensors[1].error, std::string("no bytes"));
        QCOMPARE(read->recordCrcs.size(), std::size_t(1));
        QCOMPARE(read->recordCrcs[0].crc, 305419896u);
        // The whole is one JSON document too.
        QVERIFY(parseJson(answer));

        // `keep` drops what the caller does not hold.
        const auto kept
            = readValuesHelperAnswer(answer, [](const TensorValueStatistics& t) { return !t.computed(); });
        QVERIFY(kept);
        QCOMPARE(kept->tensors.size(), std::size_t(1));
        QCOMPARE(kept->tensors[0].name, std::string("n"));
    }

    void answersOutsideTheProtocolAreSaid()
    {
        const auto oneLine = readValuesHelperAnswer("{\"tensors\":[{\"index\":0}]}\n");
        QVERIFY(!oneLine);
        QVERIFY2(oneLine.error().message.find("one element a line") != std::string::npos,
            oneLine.error().message.c_str());
        const auto cut = readValuesHelperAnswer("{\"tensors\":[\n{\"index\":0},\n");
        QVERIFY(!cut);
        QVERIFY2(cut.error().message.find("ended early") != std::string::npos, cut.error().message.c_str());
        const auto broken = readValuesHelperAnswer("{\"tensors\":[\n{\"index\":\n]}\n");
        QVERIFY(!broken);
        QVERIFY2(broken.error().message.find("line 2") != std::string::npos, broken.error().message.c_str());
        QVERIFY(!readValuesHelperAnswer(""));
    }

    void oneRuleFindsTheHelper()
    {
        const QByteArray saved = qgetenv(kValuesHelperVariable);
        const auto restore = qScopeGuard([&] { qputenv(kValuesHelperVariable, saved); });
        qputenv(kValuesHelperVariable, QByteArray::fromStdString(kFakeHelper));
        QCOMPARE(findValuesHelper().program, kFakeHelper);
        qputenv(kValuesHelperVariable, "/nonexistent/ckpt-inspect-values");
        const ValuesHelper missing = findValuesHelper();
        QVERIFY(!missing);
        QCOMPARE(missing.problem,
            std::string(
                "ckpt-inspect-values (CKPT_VALUES_HELPER names /nonexistent/ckpt-inspect-values, which "
                "is not an executable file)"));
        // Not set: beside this program (a test binary, with no helper beside it).
        qunsetenv(kValuesHelperVariable);
        const ValuesHelper beside = findValuesHelper();
        QCOMPARE(bool(beside), bool(programBesideThisOne(kValuesHelperName)));
        if (!beside)
            QVERIFY(beside.problem.find("missing beside this program") != std::string::npos);
    }

    void scanSaysNonFiniteTensorsAsFindingsAndAList()
    {
        ValueScanRequest request;
        request.path = "any.pt";
        request.helper = ValuesHelper {kFakeHelper, {}};
        std::uint64_t lastTotal = 0;
        request.progress = [&](std::uint64_t, std::uint64_t total) {
            lastTotal = total;
            return true;
        };
        const ValueScanOutcome outcome = scanValues(request);
        QVERIFY2(outcome.scanned(), outcome.problem.c_str());
        QCOMPARE(lastTotal, std::uint64_t(100)); // its progress lines were read
        QCOMPARE(outcome.tensorsScanned, std::size_t(1));
        QCOMPARE(outcome.nonFinite, std::vector<std::size_t> {0});
        QCOMPARE(outcome.findings.size(), std::size_t(1));
        QVERIFY(outcome.findings[0].code == FindingCode::ValuesNonfinite);
        QCOMPARE(outcome.findings[0].message,
            std::string("tensor 'bad' holds 2 NaN, 1 +Inf and 0 -Inf of its 10 values"));
        QCOMPARE(outcome.findings[0].tensors, std::vector<std::uint32_t> {0});

        // Cancelled: nothing else.
        request.progress = [](std::uint64_t, std::uint64_t) { return false; };
        const ValueScanOutcome cancelled = scanValues(request);
        QVERIFY(cancelled.cancelled && cancelled.tensors.empty() && cancelled.findings.empty());

        // A helper that fails is said with its exit status and its words.
        qputenv("FAKE_VALUES_FAIL", "boom: no such file");
        const auto restore = qScopeGuard([] { qunsetenv("FAKE_VALUES_FAIL"); });
        request.progress = {};
        QCOMPARE(scanValues(request).problem,
            std::string("ckpt-inspect-values failed (exit status 3: boom: no such file)"));
        request.helper = ValuesHelper {{}, "ckpt-inspect-values, built only where libtorch is installed"};
        QCOMPARE(scanValues(request).problem,
            std::string("value statistics need ckpt-inspect-values, built only where libtorch is installed"));
    }

    void comparisonSaysWhichSideCannotBeRead()
    {
        ComparisonRequest request;
        request.pathA = CKPT_SOURCE_DIR "/tests/fixtures/torch-2/state_dict.pt";
        request.pathB = "/nonexistent/b.pt";
        const ComparisonOutcome unreadable = compareCheckpoints(request);
        QCOMPARE(unreadable.unreadablePath, request.pathB);
        QVERIFY(!unreadable.error.empty());
        QCOMPARE(unreadable.exitCode(), 2);
        request.pathB = request.pathA;
        request.helper = ValuesHelper {kFakeHelper, {}};
        const ComparisonOutcome same = compareCheckpoints(request);
        QVERIFY(same.compared() && same.valuesProblem.empty());
        QCOMPARE(same.exitCode(), 0);
    }

    // The one limit is enforced where the output is read: the program is stopped past it.
    void outputPastTheLimitStopsTheProgram()
    {
        ProcessRequest request;
        request.program = "/usr/bin/yes";
        request.maxOutputBytes = std::size_t(1) << 20;
        const auto run = runProcess(request);
        QVERIFY(run);
        QVERIFY(run->outputTooLarge);
        QVERIFY(!run->succeeded());
        QVERIFY(run->output.size() > (std::size_t(1) << 20));
        QVERIFY(run->output.size() < (std::size_t(2) << 20));
    }
};

QTEST_GUILESS_MAIN(TestValuesHelper)
#include "tst_valueshelper.moc"
