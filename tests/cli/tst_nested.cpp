// SPDX-License-Identifier: MIT
// Issue 26: tensors saved inside bytes (pickle.dump of tensors, torch.save of storages pickled as
// torch.storage._load_from_bytes) and whole pickled quantized models, as `ckpt-inspect info --json`
// shows them, against what torch 1.13 and 2.14 computed for the same files
// (tests/fixtures/nested/README.md).
#include "fixturecomparison.h"

#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <map>

using namespace ckpt;

class TestNestedFixtures : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void matchesTorch_data()
    {
        QTest::addColumn<QString>("checkpoint");
        QTest::addColumn<QString>("expected");
        int count = 0;
        for (const QString& version : {QStringLiteral("torch-1.13"), QStringLiteral("torch-2")}) {
            const QDir dir(fixturesDir() + u"/nested/"_qs + version);
            for (const QString& expected :
                dir.entryList({QStringLiteral("*.expected.json")}, QDir::Files, QDir::Name)) {
                const QString base = expected.chopped(int(sizeof(".expected.json") - 1));
                for (const QString& candidate : dir.entryList({base + QStringLiteral(".*")}, QDir::Files))
                    if (!candidate.endsWith(QStringLiteral(".json"))) {
                        QTest::newRow(qPrintable(version + u'/' + candidate))
                            << dir.filePath(candidate) << dir.filePath(expected);
                        ++count;
                    }
            }
        }
        QCOMPARE(count, 12);
    }

    void matchesTorch()
    {
        QFETCH(QString, checkpoint);
        QFETCH(QString, expected);
        compareWithTorch(checkpoint, expected);
    }

    // The storages inside bytes keep their recorded devices in the totals, and the text says
    // where their bytes are.
    void textShowsNestedStorages()
    {
        const CommandResult result = runInspect(
            {QStringLiteral("info"), fixturesDir() + QStringLiteral("/nested/torch-2/pickled_dict.pkl")});
        QCOMPARE(result.exitCode, 0);
        const QString text = QString::fromUtf8(result.out);
        QVERIFY2(text.contains(QStringLiteral("@cuda:0")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("@cuda:1")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("float16")), qPrintable(text));
        QVERIFY2(!text.contains(QStringLiteral("unknown")), qPrintable(text));
    }

    // remap rewrites the torch.save file inside each moved storage's bytes; real torch (1.13 and
    // 2.14) loads every copy with its storages recorded on the planned devices.
    void remappedCopiesLoadInTorch()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::map<std::string, std::string> rules {
            {"cuda:0", "cuda:1"}, {"cuda:1", "cpu"}, {"cuda", "cuda:0"}};
        std::map<QString, std::map<std::string, std::string>> planned; // copy -> name -> device
        QStringList copies;
        for (const QString& version : {QStringLiteral("torch-1.13"), QStringLiteral("torch-2")}) {
            for (const QString& name : {QStringLiteral("pickled_tensor"), QStringLiteral("pickled_dict"),
                     QStringLiteral("pickled_dict_protocol2"), QStringLiteral("torch_save_bytes")}) {
                const QString folder = fixturesDir() + u"/nested/"_qs + version + u'/';
                const QString input
                    = folder + name + (name == u"torch_save_bytes"_qs ? u".pt"_qs : u".pkl"_qs);
                const QString copy = dir.path() + u'/' + version + u'-' + QFileInfo(input).fileName();
                const CommandResult result = runInspect({QStringLiteral("remap"), input, QStringLiteral("-o"),
                    copy, QStringLiteral("--map"), QStringLiteral("cuda:0=cuda:1"), QStringLiteral("--map"),
                    QStringLiteral("cuda:1=cpu"), QStringLiteral("--map"), QStringLiteral("cuda=cuda:0")});
                QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
                QFile expectedFile(folder + name + u".expected.json"_qs);
                QVERIFY(expectedFile.open(QIODevice::ReadOnly));
                const JsonValue expectation = parse(expectedFile.readAll());
                for (const JsonValue& tensor : expectation.member("tensors").items()) {
                    const std::string recorded = tensor.member("device").toString();
                    const auto rule = rules.find(recorded);
                    planned[copy][tensor.member("name").toString()]
                        = rule == rules.end() ? recorded : rule->second;
                }
                copies << copy;
            }
        }
        QStringList pythons {QStringLiteral(CKPT_LEGACY_PYTHON)};
        if (!QStringLiteral(CKPT_MODERN_PYTHON).isEmpty())
            pythons << QStringLiteral(CKPT_MODERN_PYTHON);
        for (const QString& python : pythons) {
            const CommandResult run = runProgram(python,
                QStringList {fixturesDir() + QStringLiteral("/nested/load_devices.py")} + copies, 300'000);
            QVERIFY2(run.exitCode == 0, qPrintable(describe(run)));
            const JsonValue loaded = parse(run.out);
            QVERIFY2(loaded.isObject(), qPrintable(describe(run)));
            for (const QString& copy : copies) {
                const JsonValue& devices = loaded.member(copy.toStdString());
                QVERIFY2(devices.member("error").isNull(),
                    qPrintable(
                        python + u": "_qs + copy + u": "_qs + QString::fromStdString(devices.toJson())));
                for (const auto& [name, device] : planned[copy])
                    QVERIFY2(devices.member(name).toString() == device,
                        qPrintable(python + u": "_qs + copy + u": "_qs + QString::fromStdString(name)
                            + u" on "_qs + QString::fromStdString(devices.member(name).toJson())
                            + u", planned "_qs + QString::fromStdString(device)));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestNestedFixtures)
#include "tst_nested.moc"
