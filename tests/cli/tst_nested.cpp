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
        QCOMPARE(count, 24);
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
        QStringList inputs; // loaded in the same run: each copy's storages hold its input's bytes
        std::map<QString, QString> sourceOf; // copy -> input
        for (const QString& version : {QStringLiteral("torch-1.13"), QStringLiteral("torch-2")}) {
            for (const QString& name : {QStringLiteral("pickled_tensor"), QStringLiteral("pickled_dict"),
                     QStringLiteral("pickled_dict_protocol0"), QStringLiteral("pickled_dict_protocol1"),
                     QStringLiteral("pickled_dict_protocol2"), QStringLiteral("pickled_dict_zipblobs"),
                     QStringLiteral("pickled_dict_zipblobs_protocol0"),
                     QStringLiteral("pickled_dict_zipblobs_protocol1"),
                     QStringLiteral("pickled_dict_zipblobs_protocol2"), QStringLiteral("torch_save_bytes")}) {
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
                sourceOf[copy] = input;
                inputs << input;
            }
        }
        QStringList pythons {QStringLiteral(CKPT_LEGACY_PYTHON)};
        if (!QStringLiteral(CKPT_MODERN_PYTHON).isEmpty())
            pythons << QStringLiteral(CKPT_MODERN_PYTHON);
        for (const QString& python : pythons) {
            const CommandResult run = runProgram(python,
                QStringList {fixturesDir() + QStringLiteral("/nested/load_devices.py")} + copies + inputs,
                300'000);
            QVERIFY2(run.exitCode == 0, qPrintable(describe(run)));
            const JsonValue loaded = parse(run.out);
            QVERIFY2(loaded.isObject(), qPrintable(describe(run)));
            for (const QString& copy : copies) {
                const JsonValue& result = loaded.member(copy.toStdString());
                const JsonValue& original = loaded.member(sourceOf[copy].toStdString());
                QVERIFY2(result.member("error").isNull() && original.member("error").isNull(),
                    qPrintable(python + u": "_qs + copy + u": "_qs + QString::fromStdString(result.toJson())
                        + u"; its input: "_qs + QString::fromStdString(original.toJson())));
                const JsonValue& devices = result.member("devices");
                for (const auto& [name, device] : planned[copy]) {
                    QVERIFY2(devices.member(name).toString() == device,
                        qPrintable(python + u": "_qs + copy + u": "_qs + QString::fromStdString(name)
                            + u" on "_qs + QString::fromStdString(devices.member(name).toJson())
                            + u", planned "_qs + QString::fromStdString(device)));
                    // The storage's bytes, as torch loads them, are the input's.
                    const std::string hash = result.member("storage_sha256").member(name).toString();
                    QVERIFY2(
                        !hash.empty() && hash == original.member("storage_sha256").member(name).toString(),
                        qPrintable(python + u": "_qs + copy + u": the bytes of "_qs
                            + QString::fromStdString(name) + u" differ from the input's"_qs));
                }
            }
        }
    }

    // extract (a torch.save state_dict) and convert (safetensors) read the storages' bytes where
    // the nested files hold them: in the file (protocols 3 and later) or only in the bytes decoded
    // from the latin-1 text protocols 0-2 write, legacy streams and zip archives alike. What they
    // write loads in real torch with the fixture's values (safetensors where that python has it).
    void exportsLoadInTorch()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QStringList pairs; // fixture, output
        for (const QString& version : {QStringLiteral("torch-1.13"), QStringLiteral("torch-2")}) {
            for (const QString& name : {QStringLiteral("pickled_dict"),
                     QStringLiteral("pickled_dict_protocol0"), QStringLiteral("pickled_dict_protocol1"),
                     QStringLiteral("pickled_dict_protocol2"), QStringLiteral("pickled_dict_zipblobs"),
                     QStringLiteral("pickled_dict_zipblobs_protocol0"),
                     QStringLiteral("pickled_dict_zipblobs_protocol2")}) {
                const QString input = fixturesDir() + u"/nested/"_qs + version + u'/' + name + u".pkl"_qs;
                const QString stem = dir.path() + u'/' + version + u'-' + name;
                const CommandResult extracted
                    = runInspect({QStringLiteral("extract"), input, QStringLiteral("-o"), stem + u".pt"_qs});
                QVERIFY2(extracted.exitCode == 0, qPrintable(describe(extracted)));
                const CommandResult converted = runInspect(
                    {QStringLiteral("convert"), input, QStringLiteral("-o"), stem + u".safetensors"_qs});
                QVERIFY2(converted.exitCode == 0, qPrintable(describe(converted)));
                pairs << input << stem + u".pt"_qs << input << stem + u".safetensors"_qs;
            }
        }
        QStringList pythons {QStringLiteral(CKPT_LEGACY_PYTHON)};
        if (!QStringLiteral(CKPT_MODERN_PYTHON).isEmpty())
            pythons << QStringLiteral(CKPT_MODERN_PYTHON);
        int safetensorsChecked = 0;
        for (const QString& python : pythons) {
            const CommandResult run = runProgram(python,
                QStringList {fixturesDir() + QStringLiteral("/nested/check_exports.py")} + pairs, 300'000);
            QVERIFY2(run.exitCode == 0, qPrintable(describe(run)));
            const JsonValue checked = parse(run.out);
            QVERIFY2(checked.isObject(), qPrintable(describe(run)));
            for (qsizetype p = 1; p < pairs.size(); p += 2) {
                const JsonValue& result = checked.member(pairs[p].toStdString());
                const bool skipped
                    = pairs[p].endsWith(u".safetensors"_qs) && !result.member("skipped").isNull();
                QVERIFY2(skipped || result.member("checked").toJson() == "5",
                    qPrintable(
                        python + u": "_qs + pairs[p] + u": "_qs + QString::fromStdString(result.toJson())));
                safetensorsChecked += pairs[p].endsWith(u".safetensors"_qs) && !skipped;
            }
        }
        QVERIFY2(safetensorsChecked > 0, "no python here reads safetensors: convert's output is unchecked");
    }

    // check --values reads the storages of nested files held as text (protocols 0-2) from their
    // decoded bytes: every tensor gets the statistics it gets where the same dict was pickled
    // with its bytes verbatim (protocol 5).
    void valueScanReadsDecodedBlobs()
    {
        const QString values = QFileInfo(QStringLiteral(CKPT_INSPECT_BINARY)).absolutePath()
            + QStringLiteral("/ckpt-inspect-values");
        if (!QFileInfo(values).isExecutable())
            QSKIP("built without libtorch: no ckpt-inspect-values");
        const QString folder = fixturesDir() + QStringLiteral("/nested/torch-2/");
        auto statistics = [&](const QString& name) {
            const CommandResult result = runInspect({QStringLiteral("check"), QStringLiteral("--values"),
                QStringLiteral("--json"), folder + name});
            std::map<std::string, std::string> byName;
            const JsonValue report = parse(result.out);
            for (const JsonValue& tensor : report.member("values").items())
                byName[tensor.member("name").toString()] = tensor.member("error").isNull()
                    ? tensor.member("count").toJson() + " " + tensor.member("min").toJson() + " "
                        + tensor.member("max").toJson() + " " + tensor.member("mean").toJson()
                    : "error: " + tensor.member("error").toString();
            return byName;
        };
        const auto want = statistics(QStringLiteral("pickled_dict.pkl"));
        QCOMPARE(want.size(), std::size_t(5));
        for (const auto& [name, text] : want)
            QVERIFY2(!text.starts_with("error"), text.c_str());
        for (const QString& name :
            {QStringLiteral("pickled_dict_protocol0.pkl"), QStringLiteral("pickled_dict_protocol2.pkl"),
                QStringLiteral("pickled_dict_zipblobs_protocol1.pkl")}) {
            const auto got = statistics(name);
            for (const auto& [tensor, text] : want) {
                const auto found = got.find(tensor);
                QVERIFY2(found != got.end() && found->second == text,
                    qPrintable(name + u": "_qs + QString::fromStdString(tensor) + u": "_qs
                        + QString::fromStdString(found == got.end() ? "missing" : found->second)));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestNestedFixtures)
#include "tst_nested.moc"
