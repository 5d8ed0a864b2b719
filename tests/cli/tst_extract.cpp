// SPDX-License-Identifier: MIT
// `ckpt-inspect extract` judged by real torch: checkpoints that torch.load(weights_only=True)
// refuses (a whole pickled model whose class is not importable, a Lightning file with an argparse
// Namespace, NumPy objects) are written by torch 1.13 and by the modern torch at test time
// (tests/extract/make_rescue_fixtures.py); each extract must load with weights_only=True in both
// torches with the names model.state_dict() gives, the same bytes and the same storage sharing
// (tests/extract/check_extract.py). Hostile files: only tensors are copied, nothing runs.
#include "fixturecomparison.h"

#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>

namespace {

const QString kGenerator = QStringLiteral(CKPT_SOURCE_DIR "/tests/extract/make_rescue_fixtures.py");
const QString kChecker = QStringLiteral(CKPT_SOURCE_DIR "/tests/extract/check_extract.py");
const QString kMarker = QStringLiteral("/tmp/ckpt-inspector-hostile-marker");

struct Python {
    QString label;
    QString program;
    QStringList prefix; // arguments before the script
};

CommandResult runPython(const Python& python, const QStringList& arguments)
{
    return runProgram(python.program, python.prefix + arguments);
}

} // namespace

class TestExtract : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::vector<Python> m_pythons; // each available torch, with the folder of its fixtures

    QString fixtures(const Python& python) const { return m_dir.filePath(python.label); }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        std::vector<Python> candidates {
            {QStringLiteral("torch-1.13"), QStringLiteral(CKPT_LEGACY_PYTHON), {}}};
        const QString modern = QStringLiteral(CKPT_MODERN_PYTHON);
        if (!modern.isEmpty())
            candidates.push_back({QStringLiteral("torch-2"), modern, {}});
        for (const Python& python : candidates) {
            const CommandResult made = runPython(python, {kGenerator, fixtures(python)});
            if (made.exitCode != 0) {
                qWarning(
                    "%s cannot write fixtures: %s", qPrintable(python.label), qPrintable(describe(made)));
                continue;
            }
            m_pythons.push_back(python);
        }
        QVERIFY2(!m_pythons.empty(), "no torch could write the fixtures");
        if (m_pythons.size() < 2)
            qWarning("only %s is available: the other torch is not checked", qPrintable(m_pythons[0].label));
    }

    void loadsWithWeightsOnlyInEveryTorch_data()
    {
        QTest::addColumn<int>("writer");
        QTest::addColumn<QString>("fixture");
        for (int w = 0; w < static_cast<int>(m_pythons.size()); ++w)
            for (const char* fixture : {"whole_module.pt", "lightning.ckpt", "numpy_objects.pt"})
                QTest::addRow("%s/%s", qPrintable(m_pythons[static_cast<std::size_t>(w)].label), fixture)
                    << w << QString::fromLatin1(fixture);
    }

    void loadsWithWeightsOnlyInEveryTorch()
    {
        QFETCH(int, writer);
        QFETCH(QString, fixture);
        const QString input = fixtures(m_pythons[static_cast<std::size_t>(writer)]) + u'/' + fixture;
        const QString output = m_dir.filePath(QStringLiteral("out-%1-%2.pt").arg(writer).arg(fixture));
        const CommandResult extracted
            = runInspect({QStringLiteral("extract"), input, QStringLiteral("-o"), output});
        QVERIFY2(extracted.exitCode == 0, qPrintable(describe(extracted)));
        QVERIFY2(extracted.out.contains("verified"), extracted.out.constData());
        for (const Python& judge : m_pythons) {
            const CommandResult checked = runPython(judge, {kChecker, output, input + u".expected.json"_qs});
            QVERIFY2(checked.exitCode == 0, qPrintable(judge.label + u": "_qs + describe(checked)));
            QVERIFY(checked.out.startsWith("ok "));
        }
    }

    void devicesFollowThePlan()
    {
        const QString input = fixtures(m_pythons[0]) + u"/lightning.ckpt"_qs;
        const QString output = m_dir.filePath(QStringLiteral("mapped.pt"));
        const CommandResult extracted = runInspect({QStringLiteral("extract"), input, QStringLiteral("-o"),
            output, QStringLiteral("--map"), QStringLiteral("*=cuda:1")});
        QVERIFY2(extracted.exitCode == 0, qPrintable(describe(extracted)));
        for (const Python& judge : m_pythons) {
            const CommandResult checked = runPython(judge,
                {kChecker, output, input + u".expected.json"_qs, QStringLiteral("--device"),
                    QStringLiteral("cuda:1")});
            QVERIFY2(checked.exitCode == 0, qPrintable(judge.label + u": "_qs + describe(checked)));
        }
        // Without a rule the recorded device is kept; the checker proves the tags torch reads.
        const QString kept = m_dir.filePath(QStringLiteral("kept.pt"));
        QCOMPARE(runInspect({QStringLiteral("extract"), output, QStringLiteral("-o"), kept}).exitCode, 0);
        const CommandResult checked = runPython(m_pythons[0],
            {kChecker, kept, input + u".expected.json"_qs, QStringLiteral("--device"),
                QStringLiteral("cuda:1")});
        QVERIFY2(checked.exitCode == 0, qPrintable(describe(checked)));
    }

    void selectAndRootChooseTensors()
    {
        const QString dir = fixtures(m_pythons.back());
        const CommandResult selected = runInspect({QStringLiteral("extract"), dir + u"/whole_module.pt"_qs,
            QStringLiteral("-o"), m_dir.filePath(QStringLiteral("selected.pt")), QStringLiteral("--select"),
            QStringLiteral("blocks.0"), QStringLiteral("--json")});
        QVERIFY2(selected.exitCode == 0, qPrintable(describe(selected)));
        QFile truthFile(dir + u"/whole_module.pt.expected.json"_qs);
        QVERIFY(truthFile.open(QIODevice::ReadOnly));
        std::vector<std::string> want;
        const JsonValue truth = parse(truthFile.readAll());
        for (const JsonValue& tensor : truth.member("tensors").items())
            if (tensor.member("name").toString().starts_with("blocks.0."))
                want.push_back(tensor.member("name").toString());
        std::vector<std::string> got;
        const JsonValue selectedReport = parse(selected.out);
        for (const JsonValue& tensor : selectedReport.member("tensors").items())
            got.push_back(tensor.member("name").toString());
        QVERIFY(!want.empty());
        QVERIFY(got == want);

        // The optimizer's tensors as their own dict.
        const CommandResult optimizer = runInspect({QStringLiteral("extract"), dir + u"/lightning.ckpt"_qs,
            QStringLiteral("-o"), m_dir.filePath(QStringLiteral("optimizer.pt")), QStringLiteral("--root"),
            QStringLiteral("optimizer_states.0"), QStringLiteral("--json")});
        QVERIFY2(optimizer.exitCode == 0, qPrintable(describe(optimizer)));
        QFile lightningTruth(dir + u"/lightning.ckpt.expected.json"_qs);
        QVERIFY(lightningTruth.open(QIODevice::ReadOnly));
        std::set<std::string> wantOptimizer, gotOptimizer;
        const JsonValue optimizerTruth = parse(lightningTruth.readAll());
        const JsonValue optimizerReport = parse(optimizer.out);
        for (const JsonValue& name : optimizerTruth.member("optimizer_names").items())
            wantOptimizer.insert(name.toString());
        for (const JsonValue& tensor : optimizerReport.member("tensors").items())
            gotOptimizer.insert(tensor.member("name").toString());
        QVERIFY(!wantOptimizer.empty());
        QVERIFY(gotOptimizer == wantOptimizer);

        const CommandResult nothing = runInspect({QStringLiteral("extract"), dir + u"/whole_module.pt"_qs,
            QStringLiteral("-o"), m_dir.filePath(QStringLiteral("none.pt")), QStringLiteral("--select"),
            QStringLiteral("no.such.prefix")});
        QCOMPARE(nothing.exitCode, 2);
        QVERIFY(nothing.err.contains("no tensor to write"));
        QVERIFY(!QFileInfo::exists(m_dir.filePath(QStringLiteral("none.pt"))));
    }

    void saysWhatWasDropped()
    {
        const QString dir = fixtures(m_pythons.back());
        const CommandResult result = runInspect({QStringLiteral("extract"), dir + u"/lightning.ckpt"_qs,
            QStringLiteral("-o"), m_dir.filePath(QStringLiteral("dropped.pt")), QStringLiteral("--json")});
        QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
        const JsonValue report = parse(result.out);
        QCOMPARE(report.member("root").toString(), std::string("state_dict"));
        bool namespaceDropped = false;
        for (const JsonValue& item : report.member("dropped_objects").items())
            namespaceDropped = namespaceDropped
                || (item.member("path").toString() == "hyper_parameters"
                    && item.member("what").toString() == "argparse.Namespace");
        QVERIFY2(namespaceDropped, result.out.constData());
        bool optimizerListed = false;
        for (const JsonValue& item : report.member("dropped_tensors").items())
            optimizerListed
                = optimizerListed || item.member("path").toString().starts_with("optimizer_states.0.state.");
        QVERIFY(optimizerListed);
        bool globalListed = false;
        for (const JsonValue& name : report.member("globals_not_carried").items())
            globalListed = globalListed || name.toString() == "argparse.Namespace";
        QVERIFY(globalListed);

        const CommandResult module = runInspect({QStringLiteral("extract"), dir + u"/whole_module.pt"_qs,
            QStringLiteral("-o"), m_dir.filePath(QStringLiteral("module.pt")), QStringLiteral("--json")});
        QVERIFY2(module.exitCode == 0, qPrintable(describe(module)));
        std::set<std::string> droppedPaths;
        const JsonValue moduleReport = parse(module.out);
        for (const JsonValue& item : moduleReport.member("dropped_tensors").items())
            droppedPaths.insert(item.member("path").toString());
        // The non-persistent buffer and the plain tensor attribute (rescue_models.Block).
        QVERIFY(droppedPaths.count("blocks.0.cache") && droppedPaths.count("blocks.0.scratch"));
    }

    void hostileFilesGiveOnlyTheirTensors()
    {
        QFile::remove(kMarker);
        for (const QString& name : {u"os_system.pt"_qs, u"builtins_eval.pt"_qs}) {
            // Named so that the archive name (taken from the file name) cannot contain the words looked for.
            const QString output = m_dir.filePath(u"hostile-"_qs + QString::number(name.size()) + u".pt"_qs);
            const CommandResult result = runInspect(
                {QStringLiteral("extract"), QStringLiteral(CKPT_SOURCE_DIR "/tests/data/hostile/") + name,
                    QStringLiteral("-o"), output, QStringLiteral("--json")});
            QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
            const JsonValue report = parse(result.out);
            QCOMPARE(report.member("tensors").items().size(), std::size_t(1));
            bool callableNamed = false;
            for (const JsonValue& global : report.member("globals_not_carried").items())
                callableNamed = callableNamed || global.toString() == "posix.system"
                    || global.toString() == "__builtin__.eval" || global.toString() == "builtins.eval";
            QVERIFY2(callableNamed, result.out.constData());
            // The output holds no trace of the payload: only torch's own globals.
            QFile written(output);
            QVERIFY(written.open(QIODevice::ReadOnly));
            const QByteArray bytes = written.readAll();
            QVERIFY(!bytes.contains("system") && !bytes.contains("eval") && !bytes.contains("touch"));
        }
        QVERIFY(!QFileInfo::exists(kMarker));
    }

    // Every corpus file (real checkpoints from public repositories, hostile ones among them): extract
    // and convert either write a file torch (and safetensors) load, or refuse with a message; nothing runs.
    void corpusFilesGiveLoadableFilesOrAMessage()
    {
        const QDir corpus(ckpt::testing::corpusFilesDir());
        if (!corpus.exists())
            QSKIP("no corpus next to the repository");
        QFile::remove(kMarker);
        const QString out = m_dir.filePath(QStringLiteral("corpus"));
        QVERIFY(QDir().mkpath(out));
        int written = 0;
        for (const QString& name : corpus.entryList(QDir::Files, QDir::Name)) {
            for (const QString& command : {u"extract"_qs, u"convert"_qs}) {
                const QString output = out + u'/' + QString::number(written)
                    + (command == u"extract"_qs ? u".pt"_qs : u".safetensors"_qs);
                const CommandResult result
                    = runInspect({command, corpus.filePath(name), QStringLiteral("-o"), output});
                QVERIFY2(result.exitCode == 0 || result.exitCode == 2,
                    qPrintable(command + u" "_qs + name + u": "_qs + describe(result)));
                if (result.exitCode == 2)
                    QVERIFY2(!result.err.isEmpty() && !QFileInfo::exists(output), qPrintable(name));
                else
                    ++written;
            }
        }
        QVERIFY(written > 20);
        for (const Python& judge : m_pythons) {
            const CommandResult loaded
                = runPython(judge, {QStringLiteral(CKPT_SOURCE_DIR "/tests/extract/load_outputs.py"), out});
            QVERIFY2(loaded.exitCode == 0, qPrintable(judge.label + u": "_qs + describe(loaded)));
        }
        QVERIFY(!QFileInfo::exists(kMarker));
    }

    void refusesWhatIsNotACheckpoint()
    {
        const QString text = m_dir.filePath(QStringLiteral("notes.txt"));
        QFile file(text);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("just some notes\n");
        file.close();
        const CommandResult result = runInspect(
            {QStringLiteral("extract"), text, QStringLiteral("-o"), m_dir.filePath(QStringLiteral("x.pt"))});
        QCOMPARE(result.exitCode, 2);
        QVERIFY(!result.err.isEmpty());
        QVERIFY(!QFileInfo::exists(m_dir.filePath(QStringLiteral("x.pt"))));
    }
};

QTEST_GUILESS_MAIN(TestExtract)
#include "tst_extract.moc"
