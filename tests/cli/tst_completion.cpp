// SPDX-License-Identifier: MIT
// The bash completion installed with ckpt-inspect (data/completion/ckpt-inspect), sourced in a real
// bash: what COMPREPLY holds for a few command lines, and that its option lists are exactly the ones
// each command's --help shows, so completion and program cannot drift apart.
#include "fixturecomparison.h"

#include "core/plan/placementplan.h"

#include <QRegularExpression>

namespace {

const QString kCompletion = QStringLiteral(CKPT_SOURCE_DIR "/data/completion/ckpt-inspect");

// Runs bash with the completion sourced and `script` after it; stdout, one item a line.
QStringList bashLines(const QString& script, const QStringList& arguments = {})
{
    QProcess bash;
    bash.start(QStringLiteral("bash"),
        QStringList {QStringLiteral("--norc"), QStringLiteral("--noprofile"), QStringLiteral("-c"),
            QStringLiteral("source \"$0\" || exit 99\n") + script, kCompletion}
            + arguments);
    if (!bash.waitForFinished(30'000) || bash.exitCode() != 0)
        return {QStringLiteral("bash failed: ") + QString::fromUtf8(bash.readAllStandardError())};
    QStringList lines = QString::fromUtf8(bash.readAllStandardOutput()).split(u'\n');
    if (!lines.isEmpty() && lines.last().isEmpty())
        lines.removeLast();
    return lines;
}

// COMPREPLY for the command line typed so far, as bash would ask for it (the cursor at the end,
// bash's own word breaks).
QStringList complete(const QString& typed)
{
    return bashLines(QStringLiteral("COMP_LINE=$1; COMP_POINT=${#COMP_LINE}\n"
                                    "COMP_WORDBREAKS=$' \\t\\n\"\\'><=;|&(:'\n"
                                    "_ckpt_inspect\n"
                                    "for reply in \"${COMPREPLY[@]}\"; do printf '%s\\n' \"$reply\"; done"),
        {typed});
}

QStringList sorted(QStringList list)
{
    list.sort();
    return list;
}

} // namespace

class TestCompletion : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void completes_data()
    {
        QTest::addColumn<QString>("typed");
        QTest::addColumn<QStringList>("expected");
        QTest::newRow("commands") << QStringLiteral("ckpt-inspect ")
                                  << QStringList {QStringLiteral("info"), QStringLiteral("remap"),
                                         QStringLiteral("check"), QStringLiteral("devices"),
                                         QStringLiteral("plan"), QStringLiteral("targets"),
                                         QStringLiteral("extract"), QStringLiteral("convert"),
                                         QStringLiteral("diff"), QStringLiteral("help"),
                                         QStringLiteral("--help"), QStringLiteral("--version")};
        QTest::newRow("a command's start") << QStringLiteral("ckpt-inspect d")
                                           << QStringList {QStringLiteral("devices"), QStringLiteral("diff")};
        QTest::newRow("options of remap")
            << QStringLiteral("ckpt-inspect remap model.pt --m")
            << QStringList {QStringLiteral("--map"), QStringLiteral("--module")};
        QTest::newRow("options of diff")
            << QStringLiteral("ckpt-inspect diff a.pt b.pt --")
            << QStringList {QStringLiteral("--json"), QStringLiteral("--no-values"),
                   QStringLiteral("--threads"), QStringLiteral("--help")};
        QTest::newRow("--device") << QStringLiteral("ckpt-inspect convert m.safetensors -o m.pt --device c")
                                  << QStringList {QStringLiteral("cpu"), QStringLiteral("cuda"),
                                         QStringLiteral("cuda:0"), QStringLiteral("cuda:1"),
                                         QStringLiteral("cuda:2"), QStringLiteral("cuda:3"),
                                         QStringLiteral("cuda:4"), QStringLiteral("cuda:5"),
                                         QStringLiteral("cuda:6"), QStringLiteral("cuda:7")};
        // bash replaces only what follows the last ':' or '=', so the replies are the rest.
        QTest::newRow("--device=cuda:") << QStringLiteral("ckpt-inspect convert m.safetensors --device=cuda:")
                                        << QStringList {QStringLiteral("0"), QStringLiteral("1"),
                                               QStringLiteral("2"), QStringLiteral("3"), QStringLiteral("4"),
                                               QStringLiteral("5"), QStringLiteral("6"), QStringLiteral("7")};
        QTest::newRow("--map FROM=") << QStringLiteral("ckpt-inspect remap m.pt --map cu")
                                     << QStringList {QStringLiteral("cuda="), QStringLiteral("cuda:0="),
                                            QStringLiteral("cuda:1="), QStringLiteral("cuda:2="),
                                            QStringLiteral("cuda:3="), QStringLiteral("cuda:4="),
                                            QStringLiteral("cuda:5="), QStringLiteral("cuda:6="),
                                            QStringLiteral("cuda:7=")};
        QTest::newRow("--map FROM=TO") << QStringLiteral("ckpt-inspect remap m.pt --map cuda:1=m")
                                       << QStringList {QStringLiteral("meta"), QStringLiteral("mps")};
        QTest::newRow("--tensor NAME=DEV") << QStringLiteral("ckpt-inspect extract m.pt --tensor=enc.w=x")
                                           << QStringList {QStringLiteral("xpu"), QStringLiteral("xpu:0")};
        QTest::newRow("--strategy") << QStringLiteral("ckpt-inspect plan m.pt --strategy ")
                                    << QStringList {QStringLiteral("balanced"), QStringLiteral("sequential")};
        QTest::newRow("--export=") << QStringLiteral("ckpt-inspect plan m.pt --export=d")
                                   << QStringList {QStringLiteral("device-map")};
        QTest::newRow("targets") << QStringLiteral("ckpt-inspect targets ")
                                 << QStringList {QStringLiteral("list"), QStringLiteral("save"),
                                        QStringLiteral("remove")};
        QTest::newRow("help COMMAND") << QStringLiteral("ckpt-inspect help c")
                                      << QStringList {QStringLiteral("check"), QStringLiteral("convert")};
        QTest::newRow("FILE") << QStringLiteral(
            "ckpt-inspect info " CKPT_SOURCE_DIR "/tests/fixtures/torch-2/state_")
                              << QStringList {QStringLiteral(CKPT_SOURCE_DIR
                                                  "/tests/fixtures/torch-2/state_dict.expected.json"),
                                     QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/state_dict.pt")};
        QTest::newRow("a flag takes no value")
            << QStringLiteral("ckpt-inspect info m.pt --json=") << QStringList {};
    }
    void completes()
    {
        QFETCH(QString, typed);
        QFETCH(QStringList, expected);
        QCOMPARE(sorted(complete(typed)), sorted(expected));
    }

    // The option lists in the script are exactly the options each command's --help shows.
    void optionsMatchEveryCommandsHelp_data()
    {
        QTest::addColumn<QString>("command");
        for (const char* command :
            {"info", "remap", "check", "devices", "plan", "targets", "extract", "convert", "diff"})
            QTest::newRow(command) << QString::fromLatin1(command);
    }
    void optionsMatchEveryCommandsHelp()
    {
        QFETCH(QString, command);
        const CommandResult help = runInspect({command, QStringLiteral("--help")});
        QCOMPARE(help.exitCode, 0);
        QStringList fromHelp;
        // Option lines: "  -o,--output OUT   description", "  --json   ..."
        static const QRegularExpression optionLine(QStringLiteral(R"(^  (-[-\w,]+))"));
        for (const QString& line : QString::fromUtf8(help.out).split(u'\n'))
            if (const auto match = optionLine.match(line); match.hasMatch())
                for (const QString& name : match.captured(1).split(u','))
                    fromHelp << name;
        fromHelp.removeAll(QStringLiteral("-h")); // the short form is not offered
        QVERIFY(fromHelp.contains(QStringLiteral("--help")));
        const QStringList fromScript
            = bashLines(QStringLiteral("printf '%s\\n' $(_ckpt_inspect_options \"$1\")"), {command});
        QCOMPARE(sorted(fromScript), sorted(fromHelp));
    }

    // Every device name offered is one that ckpt-inspect accepts as a device.
    void offeredDevicesAreDevices()
    {
        const QStringList devices = bashLines(QStringLiteral("printf '%s\\n' $_ckpt_inspect_devices"));
        QVERIFY(devices.contains(QStringLiteral("cpu")) && devices.contains(QStringLiteral("cuda:0"))
            && devices.contains(QStringLiteral("meta")));
        for (const QString& device : devices)
            QVERIFY2(ckpt::isPlausibleDeviceTag(device.toStdString()), qPrintable(device));
    }
};

QTEST_GUILESS_MAIN(TestCompletion)
#include "tst_completion.moc"
