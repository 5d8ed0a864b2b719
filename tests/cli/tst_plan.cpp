// SPDX-License-Identifier: MIT
// `ckpt-inspect plan`, `devices` and `targets` as a user runs them. The copy that `plan --save`
// writes is loaded by real torch, whose map_location callable must see exactly the planned tags.
#include "fixturecomparison.h"

#include <QProcessEnvironment>
#include <QTemporaryDir>

namespace {

QString demo()
{
    return QStringLiteral(CKPT_SOURCE_DIR "/resources/demo/demo-checkpoint.pt");
}

CommandResult runWithEnvironment(const QStringList& arguments, const QProcessEnvironment& environment)
{
    return runProgram(QStringLiteral(CKPT_INSPECT_BINARY), arguments, 120'000, environment);
}

// ckpt-inspect with tests/tools/fakecuda standing in for the NVIDIA driver: `gpus` as
// FAKE_CUDA_GPUS gives them ("TOTAL:CONTEXT[:OTHERS]" in MiB, comma-separated).
CommandResult runWithFakeDriver(
    const QStringList& arguments, const QString& gpus, const QList<std::pair<QString, QString>>& more = {})
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("LD_LIBRARY_PATH"), QStringLiteral(CKPT_FAKE_CUDA_DIR));
    environment.insert(QStringLiteral("FAKE_CUDA_GPUS"), gpus);
    environment.remove(QStringLiteral("CUDA_VISIBLE_DEVICES"));
    for (const auto& [name, value] : more)
        environment.insert(name, value);
    return runWithEnvironment(arguments, environment);
}

} // namespace

class TestPlanCommand : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // --trial-load on two fake GPUs: the contexts measured (300 and 310 MiB) replace the assumed
    // 1.5 GiB in the ledger and say so; every storage placed, copied and read back equal.
    void trialLoadOnFakeGpus()
    {
        const CommandResult result = runWithFakeDriver(
            {QStringLiteral("plan"), demo(), QStringLiteral("--trial-load"), QStringLiteral("--json")},
            QStringLiteral("2000:300,2000:310:100"));
        QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
        const JsonValue report = parse(result.out);
        int gpus = 0;
        for (const JsonValue& line : report.member("ledger").items()) {
            const std::string tag = line.member("device").toString();
            if (!tag.starts_with("cuda"))
                continue;
            ++gpus;
            QVERIFY(line.member("cuda_context_measured").toBool());
            QCOMPARE(line.member("cuda_context_bytes").toUInt64(),
                std::optional<std::uint64_t>((tag == "cuda:0" ? 300ull : 310ull) << 20));
        }
        QCOMPARE(gpus, 2);
        const JsonValue& trial = report.member("trial");
        QVERIFY(trial.member("ran").toBool());
        QVERIFY(trial.member("fits").toBool());
        QVERIFY(trial.member("load").member("matched").toBool());
        std::uint64_t compared = 0, planned = 0;
        for (const JsonValue& device : trial.member("devices").items()) {
            QCOMPARE(device.member("reserved_bytes").toUInt64(), std::optional<std::uint64_t>(2ull << 20));
            compared += device.member("load").member("bytes_compared").toUInt64().value_or(0);
            planned += device.member("planned_bytes").toUInt64().value_or(0);
        }
        QCOMPARE(compared, planned);
        QVERIFY(planned > 1'500'000);

        const CommandResult text
            = runWithFakeDriver({QStringLiteral("plan"), demo(), QStringLiteral("--measure")},
                QStringLiteral("2000:300,2000:310"));
        QVERIFY2(text.exitCode == 0, qPrintable(text.describe()));
        QVERIFY(
            text.out.contains("CUDA context measured on this machine (*): cuda:0 300 MiB cuda:1 310 MiB"));
        QVERIFY(text.out.contains(
            "cuda:0: CUDA context 300 MiB, 1.66 GiB free of 1.95 GiB with the context made"));
        QVERIFY(!text.out.contains("Trial placement"));
    }

    // 1 MiB left on each GPU once its context is made: the planner's byte count fits, the
    // allocator's first 2 MiB segment does not.
    void trialDoesNotFit()
    {
        const CommandResult result = runWithFakeDriver(
            {QStringLiteral("plan"), demo(), QStringLiteral("--trial")}, QStringLiteral("301:300,301:300"));
        QCOMPARE(result.exitCode, 1);
        QVERIFY2(result.out.contains("DOES NOT FIT: at model.embed.weight (storage 0), with 0 B reserved: "
                                     "cuMemAlloc(2.00 MiB) on cuda:0 failed with code 2 (out of memory)"),
            qPrintable(result.describe()));
        QVERIFY(result.out.contains("The plan does NOT fit on this machine's GPUs."));
    }

    void trialLoadReadsBackDifferent()
    {
        const CommandResult result
            = runWithFakeDriver({QStringLiteral("plan"), demo(), QStringLiteral("--trial-load")},
                QStringLiteral("2000:300,2000:300"),
                {{QStringLiteral("FAKE_CUDA_CORRUPT"), QStringLiteral("1")}});
        QCOMPARE(result.exitCode, 1);
        QVERIFY2(result.out.contains("67 READ BACK DIFFERENT"), qPrintable(result.describe()));
        QVERIFY(
            result.out.contains("model.embed.weight (storage 0): the bytes read back differ from byte 0 on"));
        QVERIFY(result.out.contains("The plan fits, but the trial load FAILED."));
    }

    void trialAllocationFailsMidway()
    {
        const CommandResult result = runWithFakeDriver(
            {QStringLiteral("plan"), demo(), QStringLiteral("--trial")}, QStringLiteral("2000:300,2000:300"),
            {{QStringLiteral("FAKE_CUDA_FAIL_ALLOCATION"), QStringLiteral("2")}});
        QCOMPARE(result.exitCode, 1);
        QVERIFY2(result.out.contains(
                     "cuda:0: 67 storages, 1.01 MiB planned, 2.00 MiB reserved in 1 segment: fits"),
            qPrintable(result.describe()));
        QVERIFY(result.out.contains("FAILED: at optimizer.state.12.step (storage 67)"));
        QVERIFY(result.out.contains("code 999"));
        QVERIFY(result.out.contains("The trial placement FAILED"));
    }

    // No GPU: the plan is still printed, the trial says why it did not run, exit 2; and the trial
    // is for this machine alone.
    void trialWithoutGpu()
    {
        const CommandResult result
            = runWithFakeDriver({QStringLiteral("plan"), demo(), QStringLiteral("--trial")}, QString());
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.out.contains("Memory per device"), qPrintable(result.describe()));
        QVERIFY(result.out.contains("Trial on this machine's GPUs: not run: CUDA sees no GPU"));
        QVERIFY(result.err.contains("the trial could not run"));
        QVERIFY(result.out.contains("1.50 GiB per GPU in use, an assumption"));

        const CommandResult described = runInspect({QStringLiteral("plan"), demo(), QStringLiteral("--trial"),
            QStringLiteral("--target"), QStringLiteral("cuda:0=4GiB,cpu=8GiB")});
        QCOMPARE(described.exitCode, 64);
        QVERIFY(described.err.contains("leave out --target"));
    }

    void planJsonAddsUp()
    {
        const CommandResult result = runInspect({QStringLiteral("plan"), demo(), QStringLiteral("--target"),
            QStringLiteral("2xcuda=4GiB,cpu=8GiB"), QStringLiteral("--strategy"),
            QStringLiteral("sequential"), QStringLiteral("--json")});
        QVERIFY2(result.exitCode == 0, result.err.constData());
        const JsonValue plan = parse(result.out);
        const JsonValue info
            = parse(runInspect({QStringLiteral("info"), QStringLiteral("--json"), demo()}).out);
        std::uint64_t planned = 0, total = 0;
        for (const JsonValue& line : plan.member("ledger").items()) {
            planned += line.member("planned_bytes").toUInt64().value_or(0);
            QVERIFY(!line.member("over_capacity").toBool());
        }
        for (const JsonValue& storage : info.member("storages").items())
            total += storage.member("nbytes").toUInt64().value_or(0);
        QCOMPARE(planned, total);
        QVERIFY(plan.member("groups").size() >= 4);
        for (const JsonValue& group : plan.member("groups").items())
            QVERIFY(!group.member("reason").toString().empty());
    }

    void savedCopyLandsWherePlanned()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath(QStringLiteral("planned.pt"));
        const CommandResult result = runInspect({QStringLiteral("plan"), demo(), QStringLiteral("--target"),
            QStringLiteral("cuda:0=2GiB,cuda:1=2GiB,cpu=8GiB"), QStringLiteral("--context"),
            QStringLiteral("1GiB"), QStringLiteral("--json"), QStringLiteral("--save"), out});
        QVERIFY2(result.exitCode == 0, result.err.constData());
        std::map<std::string, std::uint64_t> plannedStorages;
        const JsonValue report = parse(result.out);
        for (const JsonValue& line : report.member("ledger").items())
            if (line.member("storages").toUInt64().value_or(0) > 0)
                plannedStorages[line.member("device").toString()] = *line.member("storages").toUInt64();
        QVERIFY(plannedStorages.size() >= 2);
        // torch itself reports the tags it finds, storage by storage.
        QProcess python;
        python.start(QStringLiteral(CKPT_LEGACY_PYTHON),
            {QStringLiteral("-c"),
                QStringLiteral("import collections, json, sys, torch\n"
                               "seen = collections.Counter()\n"
                               "def record(storage, location):\n"
                               "    seen[location] += 1\n"
                               "    return storage\n"
                               "torch.load(sys.argv[1], map_location=record)  # our own demo file: trusted\n"
                               "print(json.dumps(seen))\n"),
                out});
        QVERIFY(python.waitForFinished(120'000));
        QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());
        std::map<std::string, std::uint64_t> torchTags;
        const JsonValue counts = parse(python.readAllStandardOutput());
        for (const JsonMember& member : counts.members())
            torchTags[member.key] = member.value.toUInt64().value_or(0);
        QVERIFY(torchTags == plannedStorages);
    }

    void exports()
    {
        const CommandResult deviceMap = runInspect({QStringLiteral("plan"), demo(),
            QStringLiteral("--target"), QStringLiteral("2xcuda=4GiB,cpu=8GiB"), QStringLiteral("--context"),
            QStringLiteral("1GiB"), QStringLiteral("--export"), QStringLiteral("device-map")});
        QCOMPARE(deviceMap.exitCode, 0);
        const JsonValue map = parse(deviceMap.out);
        QVERIFY(map.isObject());
        QVERIFY(map.find("model.layers.0") != nullptr);
        QVERIFY(map.member("model.layers.0").isInteger()); // a GPU ordinal, as Hugging Face expects

        const CommandResult snippet = runInspect({QStringLiteral("plan"), demo(), QStringLiteral("--target"),
            QStringLiteral("2xcuda=4GiB,cpu=8GiB"), QStringLiteral("--context"), QStringLiteral("1GiB"),
            QStringLiteral("--export"), QStringLiteral("map-location")});
        QCOMPARE(snippet.exitCode, 0);
        QProcess python;
        python.start(QStringLiteral(CKPT_LEGACY_PYTHON),
            {QStringLiteral("-c"), QStringLiteral("import ast, sys; ast.parse(sys.stdin.read())")});
        python.write(snippet.out);
        python.closeWriteChannel();
        QVERIFY(python.waitForFinished(60'000));
        QCOMPARE(python.exitCode(), 0);
    }

    void devicesOnThisMachine()
    {
        const CommandResult result = runInspect({QStringLiteral("devices"), QStringLiteral("--json")});
        QCOMPARE(result.exitCode, 0);
        const JsonValue devices = parse(result.out);
        bool cpu = false;
        for (const JsonValue& device : devices.member("devices").items())
            cpu = cpu || device.member("tag").toString() == "cpu";
        QVERIFY(cpu);
        QVERIFY(runInspect({QStringLiteral("devices")}).out.contains("cpu"));
    }

    void savedTargets()
    {
        QTemporaryDir config;
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("XDG_CONFIG_HOME"), config.path());
        QCOMPARE(
            runWithEnvironment({QStringLiteral("targets"), QStringLiteral("save"), QStringLiteral("lab box"),
                                   QStringLiteral("cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB")},
                environment)
                .exitCode,
            0);
        QVERIFY(runWithEnvironment({QStringLiteral("targets"), QStringLiteral("list")}, environment)
                    .out.contains("lab box"));
        const CommandResult plan = runWithEnvironment(
            {QStringLiteral("plan"), demo(), QStringLiteral("--target"), QStringLiteral("lab box")},
            environment);
        QCOMPARE(plan.exitCode, 0);
        QVERIFY(plan.out.contains("lab box"));
        QCOMPARE(
            runWithEnvironment(
                {QStringLiteral("targets"), QStringLiteral("remove"), QStringLiteral("lab box")}, environment)
                .exitCode,
            0);
        QVERIFY(!runWithEnvironment({QStringLiteral("targets")}, environment).out.contains("lab box"));
        QCOMPARE(runWithEnvironment(
                     {QStringLiteral("plan"), demo(), QStringLiteral("--target"), QStringLiteral("lab box")},
                     environment)
                     .exitCode,
            64);
    }
};

QTEST_GUILESS_MAIN(TestPlanCommand)
#include "tst_plan.moc"
