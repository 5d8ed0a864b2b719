// SPDX-License-Identifier: MIT
// Training-run folders through the command line (tests/fixtures/runfolder/, written by the real
// Trainer and by torch.save of OLMo's, Lightning's and DeepSpeed's dict shapes; expectations from
// torch.load and safe_open): `info --json` lists every file as torch loads it, `remap` writes a new
// folder whose rewritten files real torch loads on the planned devices and whose other files are
// byte-identical.
#include "fixturecomparison.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <map>
#include <set>

using namespace ckpt;

namespace {

QString runFolder(const QString& name)
{
    return fixturesDir() + QStringLiteral("/runfolder/") + name;
}

JsonValue readJsonFile(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return parse(file.readAll());
}

std::string shapeText(const JsonValue& shape)
{
    std::string text;
    for (const JsonValue& d : shape.items())
        text += std::to_string(d.toInt64().value_or(-1)) + ",";
    return text;
}

// Loads each file with real torch, recording every storage's tag; prints one JSON object:
// {file: [tags]} (sorted, each once), or {file: "error: ..."}.
const char* kLoadTags = R"PY(
import json, sys, torch
out = {}
for path in sys.argv[1:]:
    tags = set()
    def record(storage, location):
        tags.add(location)
        return storage
    try:
        torch.load(path, map_location=record, weights_only=False)
        out[path] = sorted(tags)
    except Exception as error:
        out[path] = "error: " + str(error).splitlines()[0]
print(json.dumps(out))
)PY";

} // namespace

class TestRunFolderCommands : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void infoListsEveryFile_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("folder");
        QTest::newRow("trainer") << QStringLiteral("trainer") << QStringLiteral("trainer/checkpoint-2");
        QTest::newRow("trainer sharded")
            << QStringLiteral("trainer_sharded") << QStringLiteral("trainer_sharded/checkpoint-2");
        QTest::newRow("olmo") << QStringLiteral("olmo") << QStringLiteral("olmo");
        QTest::newRow("lightning") << QStringLiteral("lightning") << QStringLiteral("lightning");
        QTest::newRow("deepspeed") << QStringLiteral("deepspeed") << QStringLiteral("deepspeed");
        QTest::newRow("trainer output")
            << QStringLiteral("trainer_output") << QStringLiteral("trainer_output");
        QTest::newRow("trainer output, deepspeed")
            << QStringLiteral("trainer_output_ds") << QStringLiteral("trainer_output_ds");
    }
    void infoListsEveryFile()
    {
        QFETCH(QString, fixture);
        QFETCH(QString, folder);
        const JsonValue truth = readJsonFile(runFolder(fixture + QStringLiteral(".expected.json")));
        QVERIFY(truth.isObject());
        const CommandResult result
            = runInspect({QStringLiteral("info"), QStringLiteral("--json"), runFolder(folder)});
        QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
        const JsonValue ours = parse(result.out);
        QCOMPARE(ours.member("layout").toString(), std::string("run-folder"));
        std::map<std::string, std::string> groupOf;
        for (const JsonValue& shard : ours.member("shards").items()) {
            QVERIFY(shard.member("problem").isNull());
            groupOf[shard.member("name").toString()] = shard.member("group").toString();
        }
        std::set<std::string> others;
        for (const JsonValue& other : ours.member("other_files").items())
            others.insert(other.member("name").toString());
        // Our tensors by (file, name).
        std::map<std::pair<std::string, std::string>, const JsonValue*> tensors;
        for (const JsonValue& tensor : ours.member("tensors").items())
            tensors[{tensor.member("shard").toString(), tensor.member("name").toString()}] = &tensor;
        const std::string opened = truth.member("opened").toString();
        std::size_t expectedTensors = 0;
        for (const JsonValue& file : truth.member("files").items()) {
            const std::string name = file.member("file").toString();
            if (!opened.empty() && name.find('/') != std::string::npos && !name.starts_with(opened + "/"))
                continue; // a step `latest` does not name
            if (file.member("kind").toString() == "other") {
                QVERIFY2(others.count(name), name.c_str());
                continue;
            }
            QVERIFY2(groupOf.count(name), name.c_str());
            for (const JsonValue& expected : file.member("tensors").items()) {
                ++expectedTensors;
                const std::string merged = groupOf[name] + "." + expected.member("name").toString();
                const auto found = tensors.find({name, merged});
                QVERIFY2(found != tensors.end(), (name + " " + merged).c_str());
                const JsonValue& tensor = *found->second;
                QCOMPARE(tensor.member("dtype").toString(), expected.member("dtype").toString());
                QCOMPARE(shapeText(tensor.member("shape")), shapeText(expected.member("shape")));
                QCOMPARE(show(tensor.member("device")), show(expected.member("device")));
            }
        }
        QCOMPARE(tensors.size(), expectedTensors);
        if (fixture.startsWith(QStringLiteral("trainer_output"))) {
            // A Trainer output_dir: the folder get_last_checkpoint returns, the step its `latest` names.
            QCOMPARE(ours.member("checkpoint").toString(), opened);
            const std::string step = truth.member("latest_step").toString();
            QCOMPARE(ours.member("latest").toString(), step.empty() ? std::string() : opened + "/" + step);
        } else
            QCOMPARE(ours.member("latest").toString(), opened);
    }

    // A truncated file inside the newest checkpoint's DeepSpeed step: exit 2, the others listed.
    void truncatedFileInNewestCheckpointIsNamed()
    {
        const CommandResult result = runInspect({QStringLiteral("info"), QStringLiteral("--json"),
            runFolder(QStringLiteral("trainer_output_broken"))});
        QVERIFY2(result.exitCode == 2, qPrintable(describe(result)));
        const JsonValue ours = parse(result.out);
        QCOMPARE(ours.member("layout").toString(), std::string("run-folder"));
        QCOMPARE(ours.member("checkpoint").toString(), std::string("checkpoint-2"));
        const std::string bad = "checkpoint-2/global_step2/zero_pp_rank_0_mp_rank_00_optim_states.pt";
        std::size_t modelTensors = 0;
        for (const JsonValue& tensor : ours.member("tensors").items())
            modelTensors
                += tensor.member("shard").toString() == "checkpoint-2/global_step2/mp_rank_00_model_states.pt"
                ? 1
                : 0;
        QCOMPARE(modelTensors, std::size_t(7)); // torch.load's count (trainer_output_broken.expected.json)
        bool named = false;
        for (const JsonValue& finding : ours.member("findings").items())
            named = named
                || (finding.member("code").toString() == "run-folder-file-unreadable"
                    && finding.member("message").toString().starts_with(bad));
        QVERIFY2(named, result.out.constData());
    }

    // A truncated file: exit 2, the others still listed, the bad one named.
    void truncatedFileIsNamed()
    {
        const CommandResult result = runInspect({QStringLiteral("info"), QStringLiteral("--json"),
            runFolder(QStringLiteral("broken_truncated"))});
        QVERIFY2(result.exitCode == 2, qPrintable(describe(result)));
        const JsonValue ours = parse(result.out);
        QCOMPARE(ours.member("layout").toString(), std::string("run-folder"));
        std::size_t modelTensors = 0;
        for (const JsonValue& tensor : ours.member("tensors").items())
            modelTensors += tensor.member("shard").toString() == "model.pt" ? 1 : 0;
        QCOMPARE(modelTensors, std::size_t(7)); // torch.load's count (broken_truncated.expected.json)
        bool named = false;
        for (const JsonValue& finding : ours.member("findings").items())
            named = named
                || (finding.member("code").toString() == "run-folder-file-unreadable"
                    && finding.member("message").toString().starts_with("optim.pt"));
        QVERIFY2(named, result.out.constData());
        bool problem = false;
        for (const JsonValue& shard : ours.member("shards").items())
            if (shard.member("name").toString() == "optim.pt")
                problem = !shard.member("problem").isNull();
        QVERIFY(problem);
    }

    // remap: a new folder; the rewritten files load in real torch on the planned devices, the rest
    // are byte-identical; DeepSpeed's step folder keeps its place; never into the input.
    void remapWritesAFolder()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        struct Case {
            QString folder;
            QStringList options;
            std::set<std::string> rewritten; // the files whose tags change; every other is copied
            std::string device; // every tag of a rewritten file
        };
        const std::vector<Case> cases {
            // training_args.bin is copied byte for byte: no override asked for.
            {QStringLiteral("trainer/checkpoint-2"), {QStringLiteral("--map"), QStringLiteral("cuda:0=cpu")},
                {"optimizer.pt"}, "cpu"},
            {QStringLiteral("trainer_output"), {QStringLiteral("--map"), QStringLiteral("cuda:0=cpu")},
                {"checkpoint-10/optimizer.pt"}, "cpu"},
            {QStringLiteral("trainer_output_ds"), {QStringLiteral("--map"), QStringLiteral("cuda:0=cpu")},
                {"checkpoint-2/global_step2/mp_rank_00_model_states.pt",
                    "checkpoint-2/global_step2/zero_pp_rank_0_mp_rank_00_optim_states.pt"},
                "cpu"},
            {QStringLiteral("olmo"), {QStringLiteral("--module"), QStringLiteral("optim.pt=cuda:1")},
                {"optim.pt"}, "cuda:1"},
            {QStringLiteral("lightning"), {QStringLiteral("--module"), QStringLiteral("last.ckpt=cpu")},
                {"last.ckpt"}, "cpu"},
            {QStringLiteral("deepspeed"), {QStringLiteral("--map"), QStringLiteral("cuda:0=cpu")},
                {"global_step2/mp_rank_00_model_states.pt",
                    "global_step2/zero_pp_rank_0_mp_rank_00_optim_states.pt"},
                "cpu"},
        };
        QStringList toLoad;
        std::map<std::string, std::string> plannedOf;
        int n = 0;
        for (const Case& c : cases) {
            const QString input = runFolder(c.folder);
            const QString output = dir.path() + QStringLiteral("/out") + QString::number(n++);
            const CommandResult result
                = runInspect(QStringList {QStringLiteral("remap"), input, QStringLiteral("-o"), output,
                                 QStringLiteral("--json")}
                    + c.options);
            QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
            const JsonValue outcome = parse(result.out);
            std::set<std::string> rewritten;
            for (const JsonValue& shard : outcome.member("shards").items()) {
                QVERIFY(shard.member("verified").toBool());
                rewritten.insert(
                    QDir(output)
                        .relativeFilePath(QString::fromStdString(shard.member("output").toString()))
                        .toStdString());
            }
            QCOMPARE(rewritten, c.rewritten);
            // Every other file of the input (but a step `latest` does not name) byte for byte.
            const JsonValue truth = readJsonFile(
                runFolder((c.folder.section(QLatin1Char('/'), 0, 0)) + QStringLiteral(".expected.json")));
            const std::string opened = truth.member("opened").toString();
            for (const JsonValue& file : truth.member("files").items()) {
                const std::string name = file.member("file").toString();
                const QString copy = output + QLatin1Char('/') + QString::fromStdString(name);
                if (!opened.empty() && name.find('/') != std::string::npos
                    && !name.starts_with(opened + "/")) {
                    QVERIFY2(!QFile::exists(copy), qPrintable(copy));
                    continue;
                }
                QVERIFY2(QFile::exists(copy), qPrintable(copy));
                if (c.rewritten.count(name)) {
                    toLoad << copy;
                    plannedOf[copy.toStdString()] = c.device;
                } else
                    QVERIFY2(
                        sha256Of(copy) == sha256Of(input + QLatin1Char('/') + QString::fromStdString(name)),
                        qPrintable(copy));
            }
            // Never into the input: refused, nothing written there.
            const CommandResult inside
                = runInspect(QStringList {QStringLiteral("remap"), input, QStringLiteral("-o"),
                                 input + QStringLiteral("/remapped")}
                    + c.options);
            QCOMPARE(inside.exitCode, 2);
            QVERIFY(!QFile::exists(input + QStringLiteral("/remapped")));
        }
        // Real torch loads every rewritten file and sees the planned device on every storage.
        QProcess python;
        python.start(QStringLiteral(CKPT_MODERN_PYTHON),
            QStringList {QStringLiteral("-c"), QString::fromLatin1(kLoadTags)} + toLoad);
        QVERIFY(python.waitForFinished(300'000));
        QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());
        const JsonValue loaded = parse(python.readAllStandardOutput());
        QCOMPARE(loaded.size(), std::size_t(toLoad.size()));
        for (const QString& path : toLoad) {
            const JsonValue& tags = loaded.member(path.toStdString());
            QVERIFY2(tags.isArray(), qPrintable(path + QStringLiteral(": ") + show(tags)));
            QCOMPARE(tags.size(), std::size_t(1));
            QCOMPARE(tags.at(0).toString(), plannedOf[path.toStdString()]);
        }
    }

    // A Trainer folder holds training_args.bin (a pickled TrainingArguments, "cannot verify"). A
    // save copies it byte for byte (nothing of it runs, none of its bytes change), so it asks for
    // no override and says the copy carries it; a file rated so that the plan rewrites (a whole
    // pickled model) still needs the override.
    void overrideOnlyForRewrittenDangerousFiles()
    {
        QTemporaryDir dir;
        const QString input = runFolder(QStringLiteral("trainer/checkpoint-2"));
        const CommandResult copied = runInspect({QStringLiteral("remap"), input, QStringLiteral("--map"),
            QStringLiteral("cuda:0=cpu"), QStringLiteral("-o"), dir.path() + QStringLiteral("/out")});
        QVERIFY2(copied.exitCode == 0, qPrintable(describe(copied)));
        QVERIFY2(copied.out.contains("training_args.bin"), copied.out.constData()); // the copy carries it
        QCOMPARE(sha256Of(dir.path() + QStringLiteral("/out/training_args.bin")),
            sha256Of(input + QStringLiteral("/training_args.bin")));

        const QString mixed = dir.path() + QStringLiteral("/mixed");
        QVERIFY(QDir().mkpath(mixed));
        for (const char* name : {"optimizer.pt", "training_args.bin"})
            QVERIFY(QFile::copy(input + QLatin1Char('/') + QLatin1String(name),
                mixed + QLatin1Char('/') + QLatin1String(name)));
        QVERIFY(QFile::copy(
            fixturesDir() + QStringLiteral("/torch-2/whole_module.pt"), mixed + QStringLiteral("/model.pt")));
        const CommandResult refused = runInspect(
            {QStringLiteral("remap"), mixed, QStringLiteral("--module"), QStringLiteral("model.pt=cuda:1"),
                QStringLiteral("-o"), dir.path() + QStringLiteral("/refused")});
        QCOMPARE(refused.exitCode, 4);
        QVERIFY2(refused.err.contains("model.pt"), refused.err.constData());
        QVERIFY(!QFile::exists(dir.path() + QStringLiteral("/refused")));
        const CommandResult optimizer = runInspect(
            {QStringLiteral("remap"), mixed, QStringLiteral("--module"), QStringLiteral("optimizer.pt=cpu"),
                QStringLiteral("-o"), dir.path() + QStringLiteral("/optimizer")});
        QVERIFY2(optimizer.exitCode == 0, qPrintable(describe(optimizer)));
        const CommandResult anyway = runInspect({QStringLiteral("remap"), mixed, QStringLiteral("--module"),
            QStringLiteral("model.pt=cuda:1"), QStringLiteral("--allow-dangerous"), QStringLiteral("-o"),
            dir.path() + QStringLiteral("/anyway")});
        QVERIFY2(anyway.exitCode == 0, qPrintable(describe(anyway)));
    }
};

QTEST_GUILESS_MAIN(TestRunFolderCommands)
#include "tst_runfolder.moc"
