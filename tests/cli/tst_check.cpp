// SPDX-License-Identifier: MIT
// `ckpt-inspect check`: exit codes (0 clean, 1 warnings, 2 errors, 3 could not read, 4 dangerous), torch's
// own message and a fix for a file this CPU machine cannot load, the hostile pickle rated dangerous, and a
// verdict plus a valid JSON document for every corpus file. The real binary runs.
#include "core/json/json.h"
#include "core/triage/triage.h"
#include "fixturecomparison.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <csignal>

using namespace ckpt;

namespace {

JsonValue checkJson(const QString& file, int& exitCode)
{
    const CommandResult result = runInspect({QStringLiteral("check"), QStringLiteral("--json"), file});
    exitCode = result.exitCode;
    auto json = parseJson(std::string_view(result.out.constData(), std::size_t(result.out.size())));
    if (!json)
        return JsonValue();
    return *json;
}

} // namespace

class TestCheckCommand : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void cleanStateDictExitsZero()
    {
        int exitCode = -1;
        const JsonValue json = checkJson(fixturesDir() + QStringLiteral("/torch-2/state_dict.pt"), exitCode);
        QVERIFY(json.isObject());
        QCOMPARE(exitCode, 0);
        QCOMPARE(json.member("exit_code").toInt64().value_or(-1), 0);
        QCOMPARE(QString::fromStdString(json.member("format").toString()), QStringLiteral("torch-zip"));
        for (const JsonValue& finding : json.member("findings").items())
            QCOMPARE(QString::fromStdString(finding.member("severity").toString()), QStringLiteral("info"));
        QCOMPARE(json.member("load_simulation").size(), std::size_t(2));
    }

    void cudaFileFailsOnThisCpuMachine()
    {
        int exitCode = -1;
        // A described CPU-only target, so the result does not depend on the machine the test runs on.
        const CommandResult result
            = runInspect({QStringLiteral("check"), QStringLiteral("--json"), QStringLiteral("--target"),
                QStringLiteral("cpu=16GiB"), fixturesDir() + QStringLiteral("/torch-2/devices_cuda1.pt")});
        exitCode = result.exitCode;
        auto json = parseJson(std::string_view(result.out.constData(), std::size_t(result.out.size())));
        QVERIFY2(json, result.out.constData());
        QCOMPARE(exitCode, 2);
        bool found = false;
        for (const JsonValue& finding : json->member("findings").items()) {
            if (finding.member("code").toString() != "load-fails")
                continue;
            found = true;
            const std::string& message = finding.member("message").toString();
            QVERIFY2(message.find("Attempting to deserialize object on a CUDA device but "
                                  "torch.cuda.is_available() is False")
                    != std::string::npos,
                message.c_str());
            const std::string& fix = finding.member("fix").toString();
            QVERIFY2(fix.find("map_location") != std::string::npos && fix.find("remap") != std::string::npos,
                fix.c_str());
            QCOMPARE(finding.member("tensors").size(), std::size_t(11));
        }
        QVERIFY(found);

        const CommandResult text = runInspect({QStringLiteral("check"), QStringLiteral("--target"),
            QStringLiteral("cpu=16GiB"), fixturesDir() + QStringLiteral("/torch-2/devices_cuda1.pt")});
        QCOMPARE(text.exitCode, 2);
        QVERIFY(text.out.contains("Errors ("));
        QVERIFY(text.out.contains("fix: "));
        QVERIFY(text.out.contains("Load simulation"));

        // Mapped to the CPU it loads.
        const CommandResult mapped = runInspect({QStringLiteral("check"), QStringLiteral("--json"),
            QStringLiteral("--target"), QStringLiteral("cpu=16GiB"), QStringLiteral("--map-location"),
            QStringLiteral("cpu"), fixturesDir() + QStringLiteral("/torch-2/devices_cuda1.pt")});
        QCOMPARE(mapped.exitCode, 0);
    }

    void hostilePickleIsDangerous()
    {
        int exitCode = -1;
        const JsonValue json
            = checkJson(QStringLiteral(CKPT_SOURCE_DIR "/tests/data/hostile/os_system.pt"), exitCode);
        QVERIFY(json.isObject());
        // Dangerous wins over every other status (issue 9): a script can gate on it.
        QCOMPARE(exitCode, 4);
        QCOMPARE(json.member("safety").member("rating").toString(), std::string("dangerous"));
        const JsonValue& verdict = json.member("weights_only");
        QCOMPARE(QString::fromStdString(verdict.member("rating").toString()),
            QString::fromLatin1(safetyRatingName(SafetyRating::Dangerous)));
        bool named = false;
        for (const JsonValue& global : verdict.member("globals").items())
            named |= global.member("name").toString() == "posix.system";
        QVERIFY(named);
        QVERIFY(!QFile::exists(QStringLiteral("/tmp/ckpt-inspector-hostile-marker")));
    }

    void unreadableFilesExitThree_data()
    {
        QTest::addColumn<QString>("file");
        const QString corpus = ckpt::testing::corpusFilesDir() + QLatin1Char('/');
        QTest::newRow("git lfs pointer")
            << corpus + QStringLiteral("lukesin__nas-for-kws__checkpoint.pth.tar");
        QTest::newRow("empty") << corpus
                + QStringLiteral("pytorch__serve__frontend__archive__src__test__resources__models__noop_no_"
                                 "archive__noop__model.pt");
    }
    void unreadableFilesExitThree()
    {
        QFETCH(QString, file);
        if (!QFile::exists(file))
            QSKIP("the corpus is not on this machine");
        int exitCode = -1;
        const JsonValue json = checkJson(file, exitCode);
        QVERIFY(json.isObject());
        QCOMPARE(exitCode, 3);
        QCOMPARE(json.member("exit_code").toInt64().value_or(-1), 3);
        QVERIFY(json.member("findings").size() >= 1);
        QVERIFY(!json.member("findings").at(0).member("fix").toString().empty());
    }

    void everyCorpusFileGetsAVerdict()
    {
        const QDir dir(ckpt::testing::corpusFilesDir());
        if (!dir.exists())
            QSKIP("the corpus is not on this machine");
        const QStringList files = dir.entryList(QDir::Files, QDir::Name);
        QVERIFY(!files.isEmpty());
        for (const QString& name : files) {
            int exitCode = -1;
            const JsonValue json = checkJson(dir.filePath(name), exitCode);
            QVERIFY2(json.isObject(), qPrintable(name));
            QVERIFY2(
                exitCode >= 0 && exitCode <= 4, qPrintable(name + u": exit "_qs + QString::number(exitCode)));
            QVERIFY2(json.member("safety").member("rating").isString(), qPrintable(name));
            QCOMPARE(exitCode == 4, json.member("safety").member("rating").toString() == "dangerous");
            QCOMPARE(json.member("exit_code").toInt64().value_or(-1), std::int64_t(exitCode));
            QVERIFY2(json.member("weights_only").member("rating").isString(), qPrintable(name));
            QVERIFY(json.member("findings").isArray());
            // The text form too, without a crash.
            const CommandResult text = runInspect({QStringLiteral("check"), dir.filePath(name)});
            QCOMPARE(text.exitCode, exitCode);
        }
    }

    void valuesFindNonFiniteTensors()
    {
        // check --values runs ckpt-inspect-values (libtorch) beside the binary; NaN and infinities
        // become findings naming the tensors. The file is written by torch here.
        const QString values = QFileInfo(QStringLiteral(CKPT_INSPECT_BINARY)).absolutePath()
            + QStringLiteral("/ckpt-inspect-values");
        if (!QFileInfo(values).isExecutable())
            QSKIP("built without libtorch: no ckpt-inspect-values");
        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("diverged.pt"));
        QProcess python;
        python.start(QStringLiteral(CKPT_LEGACY_PYTHON),
            {QStringLiteral("-c"),
                QStringLiteral("import sys, torch\n"
                               "torch.save({'ok': torch.ones(3), 'bad': torch.tensor([1.0, float('nan'), "
                               "float('inf')])}, sys.argv[1])\n"),
                file});
        QVERIFY(python.waitForFinished(120'000));
        QCOMPARE(python.exitCode(), 0);
        const CommandResult result = runInspect(
            {QStringLiteral("check"), QStringLiteral("--values"), QStringLiteral("--json"), file});
        QCOMPARE(result.exitCode, 1);
        const JsonValue report = parse(result.out);
        bool found = false;
        for (const JsonValue& finding : report.member("findings").items())
            if (finding.member("code").toString() == "values-nonfinite")
                found = found || finding.member("message").toString().find("'bad'") != std::string::npos;
        QVERIFY2(found, result.out.constData());
        for (const JsonValue& tensor : report.member("values").items()) {
            if (tensor.member("name").toString() == "bad") {
                QCOMPARE(tensor.member("nan").toUInt64().value_or(0), std::uint64_t(1));
                QCOMPARE(tensor.member("posinf").toUInt64().value_or(0), std::uint64_t(1));
            }
            if (tensor.member("name").toString() == "ok")
                QCOMPARE(tensor.member("mean").toDouble(), 1.0);
        }
        // The list the app's Values Scan shows (tests/ui/tst_valuescan.cpp): the same tensors.
        const auto& listed = report.member("values_nonfinite").items();
        QCOMPARE(listed.size(), std::size_t(1));
        QCOMPARE(listed[0].member("name").toString(), std::string("bad"));
        QCOMPARE(listed[0].member("nan").toUInt64(), std::optional<std::uint64_t>(1));
        QCOMPARE(listed[0].member("posinf").toUInt64(), std::optional<std::uint64_t>(1));
        QCOMPARE(listed[0].member("neginf").toUInt64(), std::optional<std::uint64_t>(0));
        const CommandResult text = runInspect({QStringLiteral("check"), QStringLiteral("--values"), file});
        QVERIFY2(text.out.contains(
                     "\nHolding NaN or infinity (most first):\n  bad: 1 NaN, 1 +Inf, 0 -Inf of 3 values\n"),
            qPrintable(describe(text)));
    }

    // One rule finds the helper in both faces (core/tasks/valueshelper.h): $CKPT_VALUES_HELPER
    // first, else ckpt-inspect-values beside the program. A stand-in named by the variable
    // (tests/tools/fake-values-helper.py) answers with more than 64 MiB of statistics, about 83,000
    // tensors the size of a large model's: the app once refused that much and the CLI took it; both
    // read up to the one limit now (tests/ui/tst_valuescan.cpp runs the same through the app). Its
    // tensor holding NaN and +Inf is a finding and a row of "values_nonfinite", in the app's words.
    void valuesHelperNamedByTheVariable()
    {
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("CKPT_VALUES_HELPER"),
            QStringLiteral(CKPT_SOURCE_DIR "/tests/tools/fake-values-helper.py"));
        environment.insert(QStringLiteral("FAKE_VALUES_BYTES"), QStringLiteral("70000000")); // > 64 MiB
        const QString file = fixturesDir() + QStringLiteral("/torch-2/state_dict.pt");
        const auto result = runProgram(QStringLiteral(CKPT_INSPECT_BINARY),
            {QStringLiteral("check"), QStringLiteral("--values"), QStringLiteral("--json"), file}, 300'000,
            environment);
        QCOMPARE(result.exitCode, 1);
        JsonParseLimits limits; // the report lists every tensor's statistics: well past 64 MiB
        limits.maxBytes = std::size_t(1) << 30;
        const auto parsed
            = parseJson(std::string_view(result.out.constData(), std::size_t(result.out.size())), limits);
        QVERIFY2(parsed, parsed ? "" : parsed.error().message.c_str());
        const JsonValue& report = *parsed;
        QVERIFY2(!report.find("values_error"), report.member("values_error").toString().c_str());
        QVERIFY(report.member("values").items().size() > 80'000);
        std::vector<const JsonValue*> nonFinite;
        for (const JsonValue& finding : report.member("findings").items())
            if (finding.member("code").toString() == "values-nonfinite")
                nonFinite.push_back(&finding);
        QCOMPARE(nonFinite.size(), std::size_t(1));
        QCOMPARE(nonFinite[0]->member("message").toString(),
            std::string("tensor 'bad' holds 2 NaN, 1 +Inf and 0 -Inf of its 10 values"));
        QCOMPARE(nonFinite[0]->member("tensors").size(), std::size_t(1));
        const auto& listed = report.member("values_nonfinite").items();
        QCOMPARE(listed.size(), std::size_t(1));
        QCOMPARE(listed[0].member("name").toString(), std::string("bad"));
        QCOMPARE(listed[0].member("nan").toUInt64(), std::optional<std::uint64_t>(2));
        QCOMPARE(listed[0].member("posinf").toUInt64(), std::optional<std::uint64_t>(1));
        QCOMPARE(listed[0].member("count").toUInt64(), std::optional<std::uint64_t>(10));

        // A variable that names no program is said, never passed over for another helper.
        environment.insert(
            QStringLiteral("CKPT_VALUES_HELPER"), QStringLiteral("/nonexistent/ckpt-inspect-values"));
        const auto missing = runProgram(QStringLiteral(CKPT_INSPECT_BINARY),
            {QStringLiteral("check"), QStringLiteral("--values"), QStringLiteral("--json"), file}, 120'000,
            environment);
        QCOMPARE(missing.exitCode, 0);
        QCOMPARE(parse(missing.out).member("values_error").toString(),
            std::string("value statistics need ckpt-inspect-values (CKPT_VALUES_HELPER names "
                        "/nonexistent/ckpt-inspect-values, which is not an executable file)"));
    }

    // check --values draws a progress bar on standard error only when it is a terminal (or
    // CKPT_INSPECT_PROGRESS=1 says to): the report is the same either way, and a pipe gets no bar.
    void valuesProgressBarOnlyWhereAsked()
    {
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("CKPT_VALUES_HELPER"),
            QStringLiteral(CKPT_SOURCE_DIR "/tests/tools/fake-values-helper.py"));
        environment.remove(QStringLiteral("CKPT_INSPECT_PROGRESS"));
        const QStringList arguments = {QStringLiteral("check"), QStringLiteral("--values"),
            fixturesDir() + u"/torch-2/state_dict.pt"_qs};
        const auto quiet = runProgram(QStringLiteral(CKPT_INSPECT_BINARY), arguments, 120'000, environment);
        QCOMPARE(quiet.exitCode, 1);
        QVERIFY2(!quiet.err.contains("scanning values"), qPrintable(quiet.describe()));
        environment.insert(QStringLiteral("CKPT_INSPECT_PROGRESS"), QStringLiteral("1"));
        const auto shown = runProgram(QStringLiteral(CKPT_INSPECT_BINARY), arguments, 120'000, environment);
        QCOMPARE(shown.exitCode, 1);
        QVERIFY2(shown.err.contains("\rscanning values [") && shown.err.contains("] 100%"),
            qPrintable(shown.describe()));
        QVERIFY2(shown.err.endsWith("\r\x1b[K"), qPrintable(shown.describe())); // erased before the report
        QCOMPARE(shown.out, quiet.out);
    }

    // Ctrl-C during check --values stops the helper and says so: exit 130, no report.
    void valuesScanCancelledByInterrupt()
    {
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("CKPT_VALUES_HELPER"),
            QStringLiteral(CKPT_SOURCE_DIR "/tests/tools/fake-values-helper.py"));
        environment.insert(QStringLiteral("FAKE_VALUES_SLEEP"), QStringLiteral("60"));
        environment.insert(QStringLiteral("CKPT_INSPECT_PROGRESS"), QStringLiteral("1"));
        QProcess process;
        process.setProcessEnvironment(environment);
        QElapsedTimer timer;
        timer.start();
        process.start(QStringLiteral(CKPT_INSPECT_BINARY),
            {QStringLiteral("check"), QStringLiteral("--values"),
                fixturesDir() + u"/torch-2/state_dict.pt"_qs});
        QVERIFY(process.waitForStarted());
        process.setReadChannel(QProcess::StandardError); // what waitForReadyRead waits for
        QByteArray err;
        while (!err.contains("scanning values [") && timer.elapsed() < 60'000
            && process.waitForReadyRead(60'000))
            err += process.readAllStandardError();
        QVERIFY2(err.contains("scanning values ["), err.constData());
        ::kill(static_cast<pid_t>(process.processId()), SIGINT);
        QVERIFY(process.waitForFinished(30'000));
        err += process.readAllStandardError();
        QCOMPARE(process.exitStatus(), QProcess::NormalExit);
        QCOMPARE(process.exitCode(), 130);
        QVERIFY2(err.contains("ckpt-inspect check: cancelled"), err.constData());
        QVERIFY(process.readAllStandardOutput().isEmpty());
        QVERIFY2(timer.elapsed() < 50'000, "the helper was not stopped"); // it sleeps 60 s
    }

    // The value helper loads libtorch only for a tensor the native kernels lack: a file of
    // contiguous float tensors is scanned without it (glibc's LD_DEBUG lists every object loaded,
    // dlopen'ed ones too), and an int64 tensor still gets its statistics through it.
    void valuesLoadLibtorchOnlyWhenATensorNeedsIt()
    {
        const QString values = QFileInfo(QStringLiteral(CKPT_INSPECT_BINARY)).absolutePath()
            + QStringLiteral("/ckpt-inspect-values");
        if (!QFileInfo(values).isExecutable())
            QSKIP("built without libtorch: no ckpt-inspect-values");
        QTemporaryDir dir;
        const QString floats = dir.filePath(QStringLiteral("floats.pt"));
        const QString mixed = dir.filePath(QStringLiteral("mixed.pt"));
        const auto written = runProgram(QStringLiteral(CKPT_LEGACY_PYTHON),
            {QStringLiteral("-c"),
                QStringLiteral(
                    "import sys, torch\n"
                    "torch.manual_seed(0)\n"
                    "torch.save({'w': torch.randn(64, 64), 'h': torch.randn(10).half(),\n"
                    "            'b': torch.randn(7).bfloat16(), 'd': torch.randn(5).double()}, "
                    "sys.argv[1])\n"
                    "torch.save({'w': torch.randn(8), 'n': torch.tensor([1, 2, 6])}, sys.argv[2])\n"),
                floats, mixed});
        QVERIFY2(written.exitCode == 0, qPrintable(written.describe()));
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("LD_DEBUG"), QStringLiteral("files"));

        const auto native = runProgram(values, {floats}, 120'000, environment);
        QVERIFY2(native.exitCode == 0, qPrintable(native.describe()));
        QVERIFY2(native.err.contains("ckpt-inspect-values"), "LD_DEBUG lists nothing: cannot tell");
        QVERIFY2(!native.err.contains("libtorch") && !native.err.contains("libckpt_torchkernels"),
            qPrintable(native.describe()));
        const JsonValue nativeJson = parse(native.out);
        QCOMPARE(nativeJson.member("tensors").items().size(), std::size_t(4));
        for (const JsonValue& tensor : nativeJson.member("tensors").items())
            QVERIFY2(!tensor.find("error") && tensor.member("count").toUInt64().value_or(0) > 0,
                qPrintable(native.describe()));

        const auto throughTorch = runProgram(values, {mixed}, 120'000, environment);
        QVERIFY2(throughTorch.exitCode == 0, qPrintable(throughTorch.describe()));
        QVERIFY2(throughTorch.err.contains("libckpt_torchkernels") && throughTorch.err.contains("libtorch"),
            qPrintable(throughTorch.describe()));
        bool sawInteger = false;
        const JsonValue mixedJson = parse(throughTorch.out);
        for (const JsonValue& tensor : mixedJson.member("tensors").items()) {
            QVERIFY2(!tensor.find("error"), qPrintable(throughTorch.describe()));
            if (tensor.member("name").toString() == "n") {
                sawInteger = true;
                QCOMPARE(tensor.member("mean").toDouble(), 3.0);
                QCOMPARE(tensor.member("max").toDouble(), 6.0);
            }
        }
        QVERIFY(sawInteger);
    }

    // check --values takes the CRCs of the storage records the value helper read whole, computed
    // in the same pass as the values, instead of reading those records again: the integrity
    // findings must be the same as without --values, on a clean file and on one with a bit
    // flipped in a float storage (damaged here on purpose, after torch wrote it).
    void valuesReuseTheHelpersRecordCrcs()
    {
        const QString values = QFileInfo(QStringLiteral(CKPT_INSPECT_BINARY)).absolutePath()
            + QStringLiteral("/ckpt-inspect-values");
        if (!QFileInfo(values).isExecutable())
            QSKIP("built without libtorch: no ckpt-inspect-values");
        QTemporaryDir dir;
        const QString clean = dir.filePath(QStringLiteral("clean.pt"));
        const QString damaged = dir.filePath(QStringLiteral("damaged.pt"));
        // Prints {record: recorded CRC} of the clean file's data records, and the damaged record.
        const auto written = runProgram(QStringLiteral(CKPT_LEGACY_PYTHON),
            {QStringLiteral("-c"),
                QStringLiteral("import json, shutil, struct, sys, torch, zipfile\n"
                               "torch.manual_seed(0)\n"
                               "t = torch.randn(300, 300)\n"
                               "torch.save({'w': t, 'view': t[1:3], 'n': torch.arange(10), 'h': "
                               "torch.randn(99).half()}, sys.argv[1])\n"
                               "shutil.copy(sys.argv[1], sys.argv[2])\n"
                               "z = zipfile.ZipFile(sys.argv[1])\n"
                               "crcs = {i.filename: i.CRC for i in z.infolist() if '/data/' in i.filename}\n"
                               "big = max((i for i in z.infolist() if '/data/' in i.filename), key=lambda i: "
                               "i.file_size)\n"
                               "with open(sys.argv[2], 'r+b') as f:\n"
                               "    f.seek(big.header_offset + 26)\n"
                               "    n, e = struct.unpack('<HH', f.read(4))\n"
                               "    at = big.header_offset + 30 + n + e + 1000\n"
                               "    f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 1]))\n"
                               "print(json.dumps({'crcs': crcs, 'damaged': big.filename}))\n"),
                clean, damaged});
        QVERIFY2(written.exitCode == 0, qPrintable(written.describe()));
        const JsonValue recorded = parse(written.out);
        const std::string damagedRecord = recorded.member("damaged").toString();

        // The helper's CRCs are the recorded ones of the clean file, for the float storages it
        // read whole (the int64 one goes through libtorch and is left to check's own read).
        const auto helper = runProgram(values, {QStringLiteral("--crc"), clean});
        QVERIFY2(helper.exitCode == 0, qPrintable(helper.describe()));
        const JsonValue helperJson = parse(helper.out);
        QCOMPARE(helperJson.member("crcs").items().size(), std::size_t(2));
        for (const JsonValue& record : helperJson.member("crcs").items()) {
            const std::string name = record.member("record").toString();
            QVERIFY2(record.member("crc").toUInt64() == recorded.member("crcs").member(name).toUInt64(),
                name.c_str());
        }
        QVERIFY(!parse(runProgram(values, {clean}).out).find("crcs")); // only when asked

        auto findingsOf = [](const JsonValue& report) {
            std::vector<std::string> findings;
            for (const JsonValue& finding : report.member("findings").items())
                findings.push_back(finding.member("severity").toString() + " "
                    + finding.member("code").toString() + " " + finding.member("record").toString() + " "
                    + finding.member("message").toString());
            return findings;
        };
        for (const QString& file : {clean, damaged}) {
            const CommandResult plain = runInspect({QStringLiteral("check"), QStringLiteral("--json"), file});
            const CommandResult withValues = runInspect(
                {QStringLiteral("check"), QStringLiteral("--values"), QStringLiteral("--json"), file});
            QCOMPARE(withValues.exitCode, plain.exitCode);
            const auto want = findingsOf(parse(plain.out));
            const auto got = findingsOf(parse(withValues.out));
            QVERIFY2(got == want, qPrintable(describe(withValues)));
            const bool mismatch = std::any_of(got.begin(), got.end(), [&](const std::string& finding) {
                return finding.find("crc-mismatch " + damagedRecord) != std::string::npos;
            });
            QCOMPARE(mismatch, file == damaged);
        }
    }

    // Files from the wild (issue 10), each fixture written by real torch or, for the Python 2
    // stream, built as cPickle wrote it and loaded back by real torch (tests/fixtures/README.md).
    void emptyTracedInputsRecordIsNotTruncation()
    {
        int exitCode = -1;
        const JsonValue json
            = checkJson(fixturesDir() + QStringLiteral("/torch-2/torchscript_traced.pt"), exitCode);
        QVERIFY(json.isObject());
        for (const JsonValue& finding : json.member("findings").items())
            QVERIFY2(finding.member("code").toString() != "truncated-salvage",
                finding.member("message").toString().c_str());
        QVERIFY(exitCode != 2);
    }

    void quantizedTorchScriptRecordsAreAllUsed()
    {
        for (const auto* file : {"torch-1.13/torchscript_quantized_static.pt",
                 "torch-2/torchscript_quantized_dynamic.pt", "torch-2/torchscript_quantized_lite.ptl"}) {
            int exitCode = -1;
            const JsonValue json = checkJson(fixturesDir() + u'/' + QLatin1String(file), exitCode);
            QVERIFY2(json.isObject(), file);
            for (const JsonValue& finding : json.member("findings").items())
                QVERIFY2(finding.member("code").toString() != "record-unreferenced",
                    finding.member("message").toString().c_str());
        }
    }

    void pythonTwoLegacyStreamLoadsOnAGpuTarget()
    {
        // 5 tensors recorded on cuda:0, weights-only loadable: on a one-GPU target both torches load.
        const CommandResult result = runInspect({QStringLiteral("check"), QStringLiteral("--json"),
            QStringLiteral("--target"), QStringLiteral("cuda:0=24GiB,cpu=64GiB"),
            fixturesDir() + QStringLiteral("/torch-1.13/py2_legacy_state_dict.pt")});
        auto json = parseJson(std::string_view(result.out.constData(), std::size_t(result.out.size())));
        QVERIFY2(json, result.out.constData());
        for (const JsonValue& finding : json->member("findings").items())
            QVERIFY2(finding.member("severity").toString() == "info",
                finding.member("message").toString().c_str());
        for (const JsonValue& simulation : json->member("load_simulation").items()) {
            QVERIFY(simulation.member("loads").toBool());
            QCOMPARE(simulation.member("storages").size(), std::size_t(5));
        }
    }

    void wholeModelFromAUserPackageNeedsItImportable()
    {
        const QString file = fixturesDir() + QStringLiteral("/torch-2/user_package_module.pt");
        auto run = [&](const QStringList& extra) {
            const CommandResult result
                = runInspect(QStringList {QStringLiteral("check"), QStringLiteral("--json"),
                                 QStringLiteral("--target"), QStringLiteral("cpu=16GiB")}
                    + extra + QStringList {file});
            auto json = parseJson(std::string_view(result.out.constData(), std::size_t(result.out.size())));
            return json ? *json : JsonValue();
        };
        const JsonValue missing = run({});
        const JsonValue& torch113 = missing.member("load_simulation").items().front();
        QCOMPARE(QString::fromStdString(torch113.member("torch").toString()), QStringLiteral("torch 1.13"));
        QVERIFY(!torch113.member("loads").toBool());
        QCOMPARE(QString::fromStdString(torch113.member("error_type").toString()),
            QStringLiteral("ModuleNotFoundError"));
        QCOMPARE(QString::fromStdString(torch113.member("error").toString()),
            QStringLiteral("No module named 'models'"));
        bool listed = false;
        for (const JsonValue& finding : missing.member("findings").items())
            if (finding.member("code").toString() == "imports-required") {
                listed = finding.member("message").toString().find("models.yolo") != std::string::npos
                    && finding.member("fix").toString().find("--importable models") != std::string::npos;
            }
        QVERIFY(listed);

        const JsonValue importable = run({QStringLiteral("--importable"), QStringLiteral("models")});
        QVERIFY(importable.member("load_simulation").items().front().member("loads").toBool());
    }

    void gpuTargetGetsAGpuMapLocation()
    {
        const CommandResult result = runInspect(
            {QStringLiteral("check"), QStringLiteral("--target"), QStringLiteral("cuda:0=24GiB,cpu=64GiB"),
                fixturesDir() + QStringLiteral("/torch-2/devices_cuda1.pt")});
        const QString text = QString::fromUtf8(result.out);
        QVERIFY2(text.contains(QStringLiteral("the target has 1 GPU; map `cuda:1` to `cuda:0`")),
            qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("map_location={'cuda:1': 'cuda:0'}")), qPrintable(text));
        QVERIFY2(!text.contains(QStringLiteral("no CUDA device")), qPrintable(text));
    }

    void messagesCopiedFromTorchCarryNoTerminalEscapes()
    {
        // torch 2.x's weights-only refusal of a whole model bolds a phrase with ESC [1m ... ESC [0m.
        for (const QStringList& extra : {QStringList {QStringLiteral("--json")}, QStringList {}}) {
            const CommandResult result = runInspect(QStringList {QStringLiteral("check")} + extra
                + QStringList {fixturesDir() + QStringLiteral("/torch-2/user_package_module.pt")});
            QVERIFY(result.out.contains("do those steps only if you trust the source"));
            QVERIFY2(!result.out.contains('\x1b') && !result.out.contains("\\u001b"), result.out.constData());
        }
    }
};

QTEST_GUILESS_MAIN(TestCheckCommand)
#include "tst_check.moc"
