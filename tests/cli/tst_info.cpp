// SPDX-License-Identifier: MIT
// `ckpt-inspect info --json` on every fixture written by real torch (tests/fixtures/torch-*/)
// must agree, field by field, with what torch itself computed when it loaded the same file
// (NAME.expected.json, see tests/fixtures/README.md). The real binary runs, as a user would run it.
#include "fixturecomparison.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTest>

#include <map>
#include <set>

using namespace ckpt;

class TestInfoCommand : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void matchesTorch_data()
    {
        QTest::addColumn<QString>("checkpoint");
        QTest::addColumn<QString>("expected");
        int count = 0;
        for (const QString& version : {QStringLiteral("torch-1.13"), QStringLiteral("torch-2")}) {
            const QDir dir(fixturesDir() + u'/' + version);
            const QStringList expectations
                = dir.entryList({QStringLiteral("*.expected.json")}, QDir::Files, QDir::Name);
            QVERIFY2(expectations.size() >= 25, qPrintable(u"too few fixtures in "_qs + dir.path()));
            for (const QString& expected : expectations) {
                const QString base = expected.chopped(int(sizeof(".expected.json") - 1));
                const QStringList candidates = dir.entryList({base + QStringLiteral(".*")}, QDir::Files);
                QString checkpoint;
                for (const QString& candidate : candidates)
                    if (!candidate.endsWith(QStringLiteral(".json")))
                        checkpoint = dir.filePath(candidate);
                QVERIFY2(!checkpoint.isEmpty(), qPrintable(u"no checkpoint beside "_qs + expected));
                QTest::newRow(qPrintable(version + u'/' + base)) << checkpoint << dir.filePath(expected);
                ++count;
            }
        }
        QVERIFY(count >= 50);
    }

    void matchesTorch()
    {
        QFETCH(QString, checkpoint);
        QFETCH(QString, expected);
        compareWithTorch(checkpoint, expected);
    }

    void textOutputShowsDevicesAndTotals()
    {
        const CommandResult result = runInspect(
            {QStringLiteral("info"), fixturesDir() + QStringLiteral("/torch-2/devices_mixed.pt")});
        QCOMPARE(result.exitCode, 0);
        const QString text = QString::fromUtf8(result.out);
        QVERIFY2(text.contains(QStringLiteral("@cuda:1")), qPrintable(text));
        QVERIFY(text.contains(QStringLiteral("@cpu")));
        QVERIFY(text.contains(QStringLiteral("Bytes by recorded device")));
    }

    void hostilePicklesAreShownNeverRun_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("global");
        QTest::newRow("zip, os.system") << QStringLiteral(CKPT_SOURCE_DIR "/tests/data/hostile/os_system.pt")
                                        << QStringLiteral("posix.system");
        QTest::newRow("legacy, builtins.eval")
            << QStringLiteral(CKPT_SOURCE_DIR "/tests/data/hostile/builtins_eval.pt")
            << QStringLiteral("__builtin__.eval"); // protocol 2 writes Python 2 names
    }
    void hostilePicklesAreShownNeverRun()
    {
        // tests/data/hostile/make_hostile.py wrote these with torch.save: a real unpickler would run
        // `touch MARKER`. The reader must name the call and leave no marker.
        QFETCH(QString, file);
        QFETCH(QString, global);
        const QString marker = QStringLiteral("/tmp/ckpt-inspector-hostile-marker");
        QFile::remove(marker);
        const CommandResult text = runInspect({QStringLiteral("info"), file});
        const CommandResult json = runInspect({QStringLiteral("info"), QStringLiteral("--json"), file});
        QVERIFY(!QFile::exists(marker));
        QVERIFY2(QString::fromUtf8(text.out).contains(global), qPrintable(QString::fromUtf8(text.out)));
        const JsonValue report = parse(json.out);
        bool listed = false;
        for (const JsonValue& name : report.member("globals").items())
            listed = listed || QString::fromStdString(name.toString()) == global;
        QVERIFY(listed);
        // The tensors beside the trap are still shown.
        QVERIFY(report.member("tensors").size() >= 1);
    }

    void usageErrors()
    {
        QCOMPARE(runInspect({}).exitCode, 64);
        QCOMPARE(runInspect({QStringLiteral("info")}).exitCode, 64);
        QCOMPARE(runInspect({QStringLiteral("frobnicate")}).exitCode, 64);
        QCOMPARE(runInspect({QStringLiteral("help")}).exitCode, 0);
        const CommandResult missing
            = runInspect({QStringLiteral("info"), QStringLiteral("/nonexistent/file.pt")});
        QCOMPARE(missing.exitCode, 3);
        QVERIFY(QString::fromUtf8(missing.out).contains(QStringLiteral("/nonexistent/file.pt")));
    }
};

QTEST_GUILESS_MAIN(TestInfoCommand)
#include "tst_info.moc"
