// SPDX-License-Identifier: MIT
// `ckpt-inspect diff` judged by torch: two training steps written by torch differ in exactly the
// tensors torch.equal says differ, with torch's maximum absolute and relative differences
// (tests/compare/make_training_steps.py); a file and its remapped copy differ only in devices; a
// file and its safetensors conversion (and a folder against its sharded conversion) in no value;
// renames and dtype changes are named.
#include "fixturecomparison.h"

#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>

#include <cmath>

namespace {

const QString kSteps = QStringLiteral(CKPT_SOURCE_DIR "/tests/compare/make_training_steps.py");

JsonValue diffJson(const QString& a, const QString& b, int expectedExit, QString* problem)
{
    const CommandResult result = runInspect({QStringLiteral("diff"), a, b, QStringLiteral("--json")});
    if (result.exitCode != expectedExit)
        *problem = describe(result);
    return parse(result.out);
}

} // namespace

class TestDiff : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    bool m_valuesHelper = false;

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QProcess process;
        process.start(QStringLiteral(CKPT_LEGACY_PYTHON), {kSteps, m_dir.filePath(QStringLiteral("steps"))});
        QVERIFY(process.waitForFinished(300'000));
        QVERIFY2(process.exitCode() == 0, process.readAllStandardError().constData());
        m_valuesHelper = QFileInfo(QFileInfo(QStringLiteral(CKPT_INSPECT_BINARY))
                                       .dir()
                                       .filePath(QStringLiteral("ckpt-inspect-values")))
                             .isExecutable();
    }

    void trainingStepsDifferWhereTorchSays()
    {
        const QString steps = m_dir.filePath(QStringLiteral("steps"));
        QString problem;
        const JsonValue diff = diffJson(steps + u"/step0.pt"_qs, steps + u"/step1.pt"_qs, 1, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QFile truthFile(steps + u"/expected.json"_qs);
        QVERIFY(truthFile.open(QIODevice::ReadOnly));
        const JsonValue truth = parse(truthFile.readAll());
        std::map<std::string, const JsonValue*> changed;
        for (const JsonValue& change : diff.member("changed").items())
            changed[change.member("name").toString()] = &change;
        QCOMPARE(diff.member("added").size(), std::size_t(0));
        QCOMPARE(diff.member("removed").size(), std::size_t(0));
        std::size_t differing = 0;
        for (const auto& [name, want] : truth.member("tensors").members()) {
            const bool differs = want.member("differs").toBool();
            QVERIFY2(differs == (changed.count(name) > 0), name.c_str());
            if (!differs)
                continue;
            ++differing;
            const JsonValue& got = *changed.at(name);
            QVERIFY(got.member("value_changed").toBool());
            QVERIFY(!got.find("dtype") && !got.find("shape") && !got.find("device"));
            if (!want.find("max_abs"))
                continue;
            if (!m_valuesHelper)
                continue;
            QVERIFY2(got.find("max_abs"), qPrintable(show(got)));
            QCOMPARE(got.member("max_abs").toDouble(), want.member("max_abs").toDouble());
            QVERIFY(std::abs(got.member("max_rel").toDouble() - want.member("max_rel").toDouble())
                <= 1e-12 * std::max(1.0, want.member("max_rel").toDouble()));
            QCOMPARE(got.member("differing").toUInt64(), want.member("differing").toUInt64());
        }
        QVERIFY(differing > 0 && differing < truth.member("tensors").size()); // some did not change
        QCOMPARE(changed.size(), differing);
        if (!m_valuesHelper)
            QSKIP("ckpt-inspect-values (libtorch) is not built: maxima not checked");
    }

    // diff finds the helper by the rule the app's Compare With follows (core/tasks/valueshelper.h):
    // $CKPT_VALUES_HELPER first. A stand-in (tests/tools/fake-values-helper.py) measures every pair
    // as max_abs 0.5; when it fails, its exit status and its words are said, as the app says them
    // (tests/ui/tst_comparisondock.cpp).
    void valuesHelperNamedByTheVariable()
    {
        const QString steps = m_dir.filePath(QStringLiteral("steps"));
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("CKPT_VALUES_HELPER"),
            QStringLiteral(CKPT_SOURCE_DIR "/tests/tools/fake-values-helper.py"));
        const QStringList arguments = {QStringLiteral("diff"), steps + u"/step0.pt"_qs,
            steps + u"/step1.pt"_qs, QStringLiteral("--json")};
        const auto measured
            = runProgram(QStringLiteral(CKPT_INSPECT_BINARY), arguments, 120'000, environment);
        QCOMPARE(measured.exitCode, 1);
        const JsonValue diff = parse(measured.out);
        QVERIFY2(!diff.find("values_error"), qPrintable(describe(measured)));
        std::size_t count = 0;
        for (const JsonValue& change : diff.member("changed").items()) {
            if (!change.find("max_abs"))
                continue;
            ++count;
            QCOMPARE(change.member("max_abs").toDouble(), 0.5);
            QCOMPARE(change.member("max_rel").toDouble(), 0.25);
            QCOMPARE(change.member("differing").toUInt64(), std::optional<std::uint64_t>(1));
        }
        QVERIFY2(count > 0, qPrintable(describe(measured)));

        environment.insert(QStringLiteral("FAKE_VALUES_FAIL"), QStringLiteral("boom: no such tensor"));
        const auto failed = runProgram(QStringLiteral(CKPT_INSPECT_BINARY), arguments, 120'000, environment);
        QCOMPARE(failed.exitCode, 1);
        QCOMPARE(parse(failed.out).member("values_error").toString(),
            std::string("ckpt-inspect-values failed (exit status 3: boom: no such tensor)"));
    }

    // diff's progress bar (hashing, then the value differences) goes to standard error only on a
    // terminal or with CKPT_INSPECT_PROGRESS=1; the report is the same either way.
    void progressBarOnlyWhereAsked()
    {
        const QString steps = m_dir.filePath(QStringLiteral("steps"));
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.remove(QStringLiteral("CKPT_INSPECT_PROGRESS"));
        const QStringList arguments = {QStringLiteral("diff"), steps + u"/step0.pt"_qs,
            steps + u"/step1.pt"_qs, QStringLiteral("--no-values"), QStringLiteral("--json")};
        const auto quiet = runProgram(QStringLiteral(CKPT_INSPECT_BINARY), arguments, 120'000, environment);
        QCOMPARE(quiet.exitCode, 1);
        QVERIFY2(quiet.err.isEmpty(), qPrintable(quiet.describe()));
        environment.insert(QStringLiteral("CKPT_INSPECT_PROGRESS"), QStringLiteral("1"));
        const auto shown = runProgram(QStringLiteral(CKPT_INSPECT_BINARY), arguments, 120'000, environment);
        QCOMPARE(shown.exitCode, 1);
        QVERIFY2(shown.err.contains("\rcomparing [") && shown.err.contains("] 100%"),
            qPrintable(shown.describe()));
        QVERIFY2(shown.err.endsWith("\r\x1b[K"), qPrintable(shown.describe()));
        const auto withoutSeconds = [](QByteArray json) { // the hashing time differs from run to run
            const qsizetype at = json.indexOf("\"hash_seconds\"");
            return at < 0 ? json : json.left(at) + json.mid(json.indexOf('\n', at));
        };
        QCOMPARE(withoutSeconds(shown.out), withoutSeconds(quiet.out));
    }

    void renamesAndDtypeChangesAreNamed()
    {
        const QString steps = m_dir.filePath(QStringLiteral("steps"));
        QString problem;
        const JsonValue diff = diffJson(steps + u"/step0.pt"_qs, steps + u"/step0_edited.pt"_qs, 1, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QCOMPARE(diff.member("renamed").size(), std::size_t(1));
        QCOMPARE(diff.member("renamed").at(0).member("from").toString(), std::string("4.weight"));
        QCOMPARE(diff.member("renamed").at(0).member("to").toString(), std::string("4.renamed_weight"));
        QCOMPARE(diff.member("changed").size(), std::size_t(1));
        const JsonValue& cast = diff.member("changed").at(0);
        QCOMPARE(cast.member("name").toString(), std::string("3.weight"));
        QCOMPARE(cast.member("dtype").at(1).toString(), std::string("float16"));
        QCOMPARE(diff.member("added").size() + diff.member("removed").size(), std::size_t(0));
    }

    void remappedCopyDiffersOnlyInDevices()
    {
        const QString input = fixturesDir() + u"/torch-2/devices_mixed.pt"_qs;
        const QString copy = m_dir.filePath(QStringLiteral("mixed-cpu.pt"));
        const CommandResult remapped = runInspect({QStringLiteral("remap"), input, QStringLiteral("-o"), copy,
            QStringLiteral("--map"), QStringLiteral("*=cpu")});
        QVERIFY2(remapped.exitCode == 0, qPrintable(describe(remapped)));
        QString problem;
        const JsonValue diff = diffJson(input, copy, 1, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QVERIFY(diff.member("changed").size() > 0);
        for (const JsonValue& change : diff.member("changed").items()) {
            QVERIFY2(change.find("device"), qPrintable(show(change)));
            QVERIFY(!change.member("value_changed").toBool() && !change.find("dtype") && !change.find("shape")
                && !change.find("stride"));
            QCOMPARE(change.member("device").at(1).toString(), std::string("cpu"));
        }
        QCOMPARE(diff.member("added").size() + diff.member("removed").size() + diff.member("renamed").size(),
            std::size_t(0));
        // A file against itself: identical, exit 0.
        const JsonValue same = diffJson(input, input, 0, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QVERIFY(same.member("identical").toBool());
    }

    void safetensorsConversionHoldsTheSameValues()
    {
        for (const char* name : {"state_dict", "views_and_strides", "tied_weights"}) {
            const QString input = fixturesDir() + u"/torch-2/"_qs + QString::fromLatin1(name) + u".pt"_qs;
            const QString converted = m_dir.filePath(QString::fromLatin1(name) + u".safetensors"_qs);
            const CommandResult result
                = runInspect({QStringLiteral("convert"), input, QStringLiteral("-o"), converted});
            QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
            const CommandResult compared
                = runInspect({QStringLiteral("diff"), input, converted, QStringLiteral("--json")});
            QVERIFY2(compared.exitCode == 0 || compared.exitCode == 1, qPrintable(describe(compared)));
            const JsonValue diff = parse(compared.out);
            QCOMPARE(
                diff.member("added").size() + diff.member("removed").size() + diff.member("renamed").size(),
                std::size_t(0));
            for (const JsonValue& change : diff.member("changed").items()) {
                // A view becomes a contiguous copy: its stride may change, never its values.
                QVERIFY2(!change.member("value_changed").toBool() && !change.find("dtype")
                        && !change.find("shape"),
                    qPrintable(show(change)));
                QVERIFY(change.find("stride"));
            }
        }
        // Sharded: a folder against a folder.
        const QString folder = m_dir.filePath(QStringLiteral("step-folder"));
        const QString shards = m_dir.filePath(QStringLiteral("step-shards"));
        QVERIFY(QDir().mkpath(folder));
        QVERIFY(
            QFile::copy(m_dir.filePath(QStringLiteral("steps/step1.pt")), folder + u"/pytorch_model.bin"_qs));
        const CommandResult sharded = runInspect({QStringLiteral("convert"), folder, QStringLiteral("-o"),
            shards, QStringLiteral("--max-shard-size"), QStringLiteral("300B")});
        QVERIFY2(sharded.exitCode == 0, qPrintable(describe(sharded)));
        QString problem;
        const JsonValue diff = diffJson(folder, shards, 0, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QVERIFY(diff.member("unchanged").toUInt64().value_or(0) > 0);
    }

    // Folders open as `info` opens them (an index, shards, a DCP folder): the same model as .bin
    // shards on the CPU, on two GPUs, as safetensors shards and as a DCP save.
    void foldersCompareAsInfoReadsThem()
    {
        const QString bin = fixturesDir() + u"/sharded/bin_cpu"_qs;
        QString problem;
        const JsonValue devices = diffJson(bin, fixturesDir() + u"/sharded/bin_cuda"_qs, 1, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QVERIFY(devices.member("changed").size() > 10);
        for (const JsonValue& change : devices.member("changed").items())
            QVERIFY2(change.find("device") && !change.member("value_changed").toBool()
                    && !change.find("dtype") && !change.find("shape"),
                qPrintable(show(change)));
        QCOMPARE(devices.member("added").size() + devices.member("removed").size()
                + devices.member("renamed").size(),
            std::size_t(0));

        // safetensors records no device: nothing differs.
        const JsonValue safetensors = diffJson(bin, fixturesDir() + u"/sharded/safetensors"_qs, 0, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QVERIFY(safetensors.member("identical").toBool());

        // DCP saved {"model": model.state_dict(), ...}: every tensor under "model.", the same bytes,
        // read from each chunk's torch.save archive inside the .distcp file; the tied lm_head.weight,
        // which save_pretrained leaves out of the shards, is in the DCP state_dict.
        const JsonValue dcp = diffJson(bin, fixturesDir() + u"/sharded/dcp"_qs, 1, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QCOMPARE(dcp.member("changed").size() + dcp.member("removed").size(), std::size_t(0));
        QCOMPARE(dcp.member("added").size(), std::size_t(1));
        QCOMPARE(dcp.member("added").at(0).toString(), std::string("model.lm_head.weight"));
        QCOMPARE(dcp.member("renamed").size(), devices.member("changed").size());
        for (const JsonValue& renamed : dcp.member("renamed").items())
            QCOMPARE("model." + renamed.member("from").toString(), renamed.member("to").toString());
        QCOMPARE(dcp.member("unchanged").toUInt64(), std::optional<std::uint64_t>(0));
    }

    // Two training steps as folders of safetensors shards: the value differences come through the
    // helper, which opens the folders as diff did and takes the tensors by their numbers there.
    void trainingStepsAsShardedFolders()
    {
        const QString steps = m_dir.filePath(QStringLiteral("steps"));
        for (const char* step : {"step0", "step1"}) {
            const CommandResult converted
                = runInspect({QStringLiteral("convert"), steps + u'/' + QString::fromLatin1(step) + u".pt"_qs,
                    QStringLiteral("-o"), m_dir.filePath(QString::fromLatin1(step) + u"-shards"_qs),
                    QStringLiteral("--max-shard-size"), QStringLiteral("200B")});
            QVERIFY2(converted.exitCode == 0, qPrintable(describe(converted)));
        }
        QString problem;
        const JsonValue diff = diffJson(m_dir.filePath(QStringLiteral("step0-shards")),
            m_dir.filePath(QStringLiteral("step1-shards")), 1, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QFile truthFile(steps + u"/expected.json"_qs);
        QVERIFY(truthFile.open(QIODevice::ReadOnly));
        const JsonValue truth = parse(truthFile.readAll());
        std::map<std::string, const JsonValue*> changed;
        for (const JsonValue& change : diff.member("changed").items())
            changed[change.member("name").toString()] = &change;
        for (const auto& [name, want] : truth.member("tensors").members()) {
            QVERIFY2(want.member("differs").toBool() == (changed.count(name) > 0), name.c_str());
            if (!want.member("differs").toBool() || !want.find("max_abs") || !m_valuesHelper)
                continue;
            QVERIFY2(changed.at(name)->find("max_abs"), qPrintable(show(*changed.at(name))));
            QCOMPARE(changed.at(name)->member("max_abs").toDouble(), want.member("max_abs").toDouble());
            QCOMPARE(changed.at(name)->member("differing").toUInt64(), want.member("differing").toUInt64());
        }
    }

    void refusesWhatItCannotRead()
    {
        const CommandResult missing = runInspect({QStringLiteral("diff"),
            m_dir.filePath(QStringLiteral("nope.pt")), fixturesDir() + u"/torch-2/state_dict.pt"_qs});
        QCOMPARE(missing.exitCode, 2);
        QVERIFY(!missing.err.isEmpty());
        QCOMPARE(
            runInspect({QStringLiteral("diff"), fixturesDir() + u"/torch-2/state_dict.pt"_qs}).exitCode, 64);
    }
};

QTEST_GUILESS_MAIN(TestDiff)
#include "tst_diff.moc"
