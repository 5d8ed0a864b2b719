// SPDX-License-Identifier: MIT
// The command line itself (issue 12): every command answers --help, takes --opt=value as well as
// --opt value, refuses numbers and sizes that are not what they say (exit 64, naming the option),
// keeps the command-line order of --map/--tensor/--module (later rules win), and --version prints
// the version CMakeLists.txt declares.
#include "fixturecomparison.h"

#include <QRegularExpression>
#include <QTemporaryDir>

namespace {

const QStringList kCommands {QStringLiteral("info"), QStringLiteral("remap"), QStringLiteral("check"),
    QStringLiteral("devices"), QStringLiteral("plan"), QStringLiteral("targets"), QStringLiteral("extract"),
    QStringLiteral("convert"), QStringLiteral("diff")};

QString stateDict()
{
    return fixturesDir() + QStringLiteral("/torch-2/state_dict.pt");
}

// The recorded device of every tensor of FILE, as `info --json` reads it back.
std::map<std::string, std::string> devicesOf(const QString& file)
{
    std::map<std::string, std::string> devices;
    const JsonValue info = parse(runInspect({QStringLiteral("info"), QStringLiteral("--json"), file}).out);
    for (const JsonValue& tensor : info.member("tensors").items())
        devices[tensor.member("name").toString()] = tensor.member("device").toString();
    return devices;
}

} // namespace

class TestCommandLine : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void everyCommandAnswersHelp_data()
    {
        QTest::addColumn<QString>("command");
        for (const QString& command : kCommands)
            QTest::newRow(qPrintable(command)) << command;
    }
    void everyCommandAnswersHelp()
    {
        QFETCH(QString, command);
        for (const QString& flag : {QStringLiteral("--help"), QStringLiteral("-h")}) {
            const CommandResult help = runInspect({command, flag});
            QVERIFY2(help.exitCode == 0, qPrintable(describe(help)));
            QVERIFY2(help.out.contains(QByteArray("Usage: ckpt-inspect " + command.toUtf8())),
                help.out.constData());
            QVERIFY2(help.out.contains("--help"), help.out.constData());
        }
        // `help COMMAND` says the same.
        const CommandResult viaHelp = runInspect({QStringLiteral("help"), command});
        QCOMPARE(viaHelp.exitCode, 0);
        QCOMPARE(viaHelp.out, runInspect({command, QStringLiteral("--help")}).out);
    }

    void programHelpAndUsage()
    {
        for (const QString& flag : {QStringLiteral("--help"), QStringLiteral("-h"), QStringLiteral("help")}) {
            const CommandResult help = runInspect({flag});
            QCOMPARE(help.exitCode, 0);
            for (const QString& command : kCommands)
                QVERIFY2(help.out.contains(QByteArray("\n  " + command.toUtf8() + " ")), qPrintable(command));
        }
        QCOMPARE(runInspect({}).exitCode, 64);
        QCOMPARE(runInspect({QStringLiteral("frobnicate")}).exitCode, 64);
        QCOMPARE(runInspect({QStringLiteral("help"), QStringLiteral("frobnicate")}).exitCode, 64);
        QCOMPARE(runInspect({QStringLiteral("--frobnicate")}).exitCode, 64);
    }

    void versionIsTheProjectVersion()
    {
        QFile cmake(QStringLiteral(CKPT_SOURCE_DIR "/CMakeLists.txt"));
        QVERIFY(cmake.open(QIODevice::ReadOnly));
        const auto match = QRegularExpression(QStringLiteral(R"(project\(\w+\s+VERSION\s+([0-9.]+))"))
                               .match(QString::fromUtf8(cmake.readAll()));
        QVERIFY(match.hasMatch());
        const CommandResult version = runInspect({QStringLiteral("--version")});
        QCOMPARE(version.exitCode, 0);
        QCOMPARE(QString::fromUtf8(version.out), QStringLiteral("ckpt-inspect ") + match.captured(1) + u'\n');
    }

    void unknownOptionsAreUsageErrors_data()
    {
        QTest::addColumn<QStringList>("arguments");
        const QString file = stateDict();
        const QString out = QStringLiteral("/nonexistent-dir/out.pt");
        QTest::newRow("info") << QStringList {QStringLiteral("info"), file, QStringLiteral("--frobnicate")};
        QTest::newRow("remap") << QStringList {
            QStringLiteral("remap"), file, QStringLiteral("-o"), out, QStringLiteral("--frobnicate")};
        QTest::newRow("check") << QStringList {QStringLiteral("check"), file, QStringLiteral("--frobnicate")};
        QTest::newRow("devices") << QStringList {QStringLiteral("devices"), QStringLiteral("--frobnicate")};
        QTest::newRow("plan") << QStringList {QStringLiteral("plan"), file, QStringLiteral("--frobnicate")};
        QTest::newRow("targets") << QStringList {QStringLiteral("targets"), QStringLiteral("--frobnicate")};
        QTest::newRow("extract") << QStringList {
            QStringLiteral("extract"), file, QStringLiteral("-o"), out, QStringLiteral("--frobnicate")};
        QTest::newRow("convert") << QStringList {QStringLiteral("convert"), file, QStringLiteral("-o"),
            QStringLiteral("/nonexistent-dir/out.safetensors"), QStringLiteral("--frobnicate")};
        QTest::newRow("diff") << QStringList {
            QStringLiteral("diff"), file, file, QStringLiteral("--frobnicate")};
        QTest::newRow("two files to info") << QStringList {QStringLiteral("info"), file, file};
        QTest::newRow("a value missing")
            << QStringList {QStringLiteral("check"), file, QStringLiteral("--target")};
    }
    void unknownOptionsAreUsageErrors()
    {
        QFETCH(QStringList, arguments);
        const CommandResult result = runInspect(arguments);
        QVERIFY2(result.exitCode == 64, qPrintable(describe(result)));
        QVERIFY2(result.out.isEmpty(), result.out.constData());
        QVERIFY2(result.err.startsWith(QByteArray("ckpt-inspect " + arguments.first().toUtf8() + ": ")),
            result.err.constData());
    }

    // Every value that is not what its option says is refused, naming the option; nothing is
    // written and nothing falls back to a default.
    void invalidNumbersAndSizesAreRefused_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("option");
        const QString file = stateDict();
        auto convert = [&](const QString& option, const QString& value) {
            return QStringList {QStringLiteral("convert"), file, QStringLiteral("-o"),
                QStringLiteral("@OUT@"), option, value};
        };
        auto plan = [&](const QString& option, const QString& value) {
            return QStringList {QStringLiteral("plan"), file, QStringLiteral("--target"),
                QStringLiteral("cpu=8GiB"), QStringLiteral("--save"), QStringLiteral("@OUT@"), option, value};
        };
        auto diff = [&](const QString& value) {
            return QStringList {QStringLiteral("diff"), file, file, QStringLiteral("--no-values"),
                QStringLiteral("--threads"), value};
        };
        const QString shard = QStringLiteral("--max-shard-size");
        QTest::newRow("--max-shard-size 12XB") << convert(shard, QStringLiteral("12XB")) << shard;
        QTest::newRow("--max-shard-size 0") << convert(shard, QStringLiteral("0")) << shard;
        QTest::newRow("--max-shard-size -5GB") << convert(shard, QStringLiteral("-5GB")) << shard;
        QTest::newRow("--max-shard-size=lots")
            << convert(shard + QStringLiteral("=lots"), {}).mid(0, 5) << shard;
        QTest::newRow("--device cuda:x")
            << convert(QStringLiteral("--device"), QStringLiteral("cuda:x")) << QStringLiteral("--device");
        QTest::newRow("--threads abc") << diff(QStringLiteral("abc")) << QStringLiteral("--threads");
        QTest::newRow("--threads -3") << diff(QStringLiteral("-3")) << QStringLiteral("--threads");
        QTest::newRow("--threads 2.5") << diff(QStringLiteral("2.5")) << QStringLiteral("--threads");
        QTest::newRow("--threads 4x") << diff(QStringLiteral("4x")) << QStringLiteral("--threads");
        const QString depth = QStringLiteral("--no-split-depth");
        QTest::newRow("--no-split-depth abc") << plan(depth, QStringLiteral("abc")) << depth;
        QTest::newRow("--no-split-depth -3") << plan(depth, QStringLiteral("-3")) << depth;
        QTest::newRow("--headroom 1.5.5GiB")
            << plan(QStringLiteral("--headroom"), QStringLiteral("1.5.5GiB")) << QStringLiteral("--headroom");
        QTest::newRow("--context lots")
            << plan(QStringLiteral("--context"), QStringLiteral("lots")) << QStringLiteral("--context");
        QTest::newRow("--strategy fastest")
            << plan(QStringLiteral("--strategy"), QStringLiteral("fastest")) << QStringLiteral("--strategy");
        QTest::newRow("--export yaml")
            << plan(QStringLiteral("--export"), QStringLiteral("yaml")) << QStringLiteral("--export");
        QTest::newRow("--map without =") << QStringList {QStringLiteral("remap"), file, QStringLiteral("-o"),
            QStringLiteral("@OUT@"), QStringLiteral("--map=cuda:1")}
                                         << QStringLiteral("--map");
        QTest::newRow("--rename-global without =") << QStringList {QStringLiteral("remap"), file,
            QStringLiteral("-o"), QStringLiteral("@OUT@"), QStringLiteral("--rename-global"),
            QStringLiteral("numpy.core")} << QStringLiteral("--rename-global");
    }
    void invalidNumbersAndSizesAreRefused()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, option);
        QTemporaryDir work;
        QVERIFY(work.isValid());
        const QString output = work.filePath(QStringLiteral("out"));
        arguments.replaceInStrings(QStringLiteral("@OUT@"), output);
        const CommandResult result = runInspect(arguments);
        QVERIFY2(result.exitCode == 64, qPrintable(describe(result)));
        QVERIFY2(result.err.contains(option.toUtf8()), qPrintable(describe(result)));
        QVERIFY2(QDir(work.path()).isEmpty(), "something was written");
    }

    // --opt=value and --opt value are the same command line.
    void equalsFormMatchesSpaceForm_data()
    {
        QTest::addColumn<QStringList>("spaced");
        QTest::addColumn<QStringList>("joined");
        const QString file = stateDict();
        QTest::newRow("plan --target --export --no-split-depth")
            << QStringList {QStringLiteral("plan"), file, QStringLiteral("--target"),
                   QStringLiteral("cuda:0=1KiB,cpu=8GiB"), QStringLiteral("--export"),
                   QStringLiteral("device-map"), QStringLiteral("--no-split-depth"), QStringLiteral("1")}
            << QStringList {QStringLiteral("plan"), file, QStringLiteral("--target=cuda:0=1KiB,cpu=8GiB"),
                   QStringLiteral("--export=device-map"), QStringLiteral("--no-split-depth=1")};
        QTest::newRow("remap --tensor --module --map")
            << QStringList {QStringLiteral("remap"), file, QStringLiteral("--print-map-location"),
                   QStringLiteral("--map"), QStringLiteral("cpu=cuda:1"), QStringLiteral("--module"),
                   QStringLiteral("encoder=cuda:0"), QStringLiteral("--tensor"),
                   QStringLiteral("encoder.0.weight=cpu")}
            << QStringList {QStringLiteral("remap"), file, QStringLiteral("--print-map-location"),
                   QStringLiteral("--map=cpu=cuda:1"), QStringLiteral("--module=encoder=cuda:0"),
                   QStringLiteral("--tensor=encoder.0.weight=cpu")};
        QTest::newRow("check --target --map-location")
            << QStringList {QStringLiteral("check"), file, QStringLiteral("--json"),
                   QStringLiteral("--target"), QStringLiteral("cuda:0=24GiB,cpu=64GiB"),
                   QStringLiteral("--map-location"), QStringLiteral("cpu")}
            << QStringList {QStringLiteral("check"), file, QStringLiteral("--json"),
                   QStringLiteral("--target=cuda:0=24GiB,cpu=64GiB"), QStringLiteral("--map-location=cpu")};
    }
    void equalsFormMatchesSpaceForm()
    {
        QFETCH(QStringList, spaced);
        QFETCH(QStringList, joined);
        const CommandResult a = runInspect(spaced);
        const CommandResult b = runInspect(joined);
        QVERIFY2(a.exitCode == 0 || a.exitCode == 1, qPrintable(describe(a)));
        QCOMPARE(b.exitCode, a.exitCode);
        QVERIFY(!a.out.isEmpty());
        QCOMPARE(b.out, a.out);
    }

    // CLI11 keeps each option's values apart; the rules must still apply in the order given,
    // interleaved across --map, --tensor and --module, so the same rules in another order give
    // another plan. Judged on the written copies as info reads them back.
    void laterRulesWinInCommandLineOrder_data()
    {
        QTest::addColumn<QStringList>("rules");
        QTest::addColumn<QStringList>("expected"); // name=device for every tensor that is not cpu-default
        QTest::newRow("map, module, tensor, module, tensor")
            << QStringList {QStringLiteral("--map"), QStringLiteral("cpu=cuda:1"), QStringLiteral("--module"),
                   QStringLiteral("encoder=cuda:0"), QStringLiteral("--tensor"),
                   QStringLiteral("encoder.0.weight=cpu"), QStringLiteral("--module=norm=cuda:0"),
                   QStringLiteral("--tensor"), QStringLiteral("head.bias=cpu")}
            << QStringList {QStringLiteral("encoder.0.weight=cpu"), QStringLiteral("encoder.0.bias=cuda:0"),
                   QStringLiteral("encoder.2.weight=cuda:0"), QStringLiteral("encoder.2.bias=cuda:0"),
                   QStringLiteral("norm.weight=cuda:0"), QStringLiteral("norm.running_mean=cuda:0"),
                   QStringLiteral("head.weight=cuda:1"), QStringLiteral("head.bias=cpu")};
        // --map FROM=TO re-records every storage saved on FROM, so given last it overrides the moves.
        QTest::newRow("the same rules: tensor, tensor, module, module, map")
            << QStringList {QStringLiteral("--tensor"), QStringLiteral("encoder.0.weight=cpu"),
                   QStringLiteral("--tensor=head.bias=cpu"), QStringLiteral("--module"),
                   QStringLiteral("encoder=cuda:0"), QStringLiteral("--module"),
                   QStringLiteral("norm=cuda:0"), QStringLiteral("--map"), QStringLiteral("cpu=cuda:1")}
            << QStringList {QStringLiteral("encoder.0.weight=cuda:1"),
                   QStringLiteral("encoder.0.bias=cuda:1"), QStringLiteral("encoder.2.weight=cuda:1"),
                   QStringLiteral("encoder.2.bias=cuda:1"), QStringLiteral("norm.weight=cuda:1"),
                   QStringLiteral("norm.running_mean=cuda:1"), QStringLiteral("head.weight=cuda:1"),
                   QStringLiteral("head.bias=cuda:1")};
        QTest::newRow("tensor, module, tensor")
            << QStringList {QStringLiteral("--tensor"), QStringLiteral("encoder.2.bias=cuda:3"),
                   QStringLiteral("--module"), QStringLiteral("encoder=cuda:2"), QStringLiteral("--tensor"),
                   QStringLiteral("encoder.0.bias=cuda:3")}
            << QStringList {QStringLiteral("encoder.0.weight=cuda:2"),
                   QStringLiteral("encoder.0.bias=cuda:3"), QStringLiteral("encoder.2.weight=cuda:2"),
                   QStringLiteral("encoder.2.bias=cuda:2"), QStringLiteral("norm.weight=cpu"),
                   QStringLiteral("head.bias=cpu")};
    }
    void laterRulesWinInCommandLineOrder()
    {
        QFETCH(QStringList, rules);
        QFETCH(QStringList, expected);
        QTemporaryDir work;
        QVERIFY(work.isValid());
        for (const QString& command : {QStringLiteral("remap"), QStringLiteral("extract")}) {
            const QString output = work.filePath(command + QStringLiteral(".pt"));
            const CommandResult result
                = runInspect(QStringList {command, stateDict(), QStringLiteral("-o"), output} + rules);
            QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
            const std::map<std::string, std::string> devices = devicesOf(output);
            QVERIFY(!devices.empty());
            for (const QString& pair : expected) {
                const QStringList parts = pair.split(u'=');
                const auto found = devices.find(parts[0].toStdString());
                QVERIFY2(found != devices.end(), qPrintable(pair));
                QVERIFY2(found->second == parts[1].toStdString(),
                    qPrintable(
                        command + u": " + pair + u" but got " + QString::fromStdString(found->second)));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestCommandLine)
#include "tst_commandline.moc"
