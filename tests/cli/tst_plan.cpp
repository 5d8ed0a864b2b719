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

} // namespace

class TestPlanCommand : public QObject {
    Q_OBJECT

private Q_SLOTS:
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
