// SPDX-License-Identifier: MIT
// The weights_only verdict against real torch: every fixture, every corpus file the reader takes
// for a torch zip, legacy file or TorchScript archive, and the hostile samples, loaded by
// torch.load(weights_only=True, map_location='cpu') of torch 1.13 and of the modern torch (corpus
// files only ever with weights_only=True: some are hostile). Loads <-> rated LoadsWithWeightsOnly;
// fails in the unpickler <-> rated otherwise with torch's exact message (first rejected GLOBAL or
// opcode, wrapped as torch.load wraps it).
#include "core/model/checkpointjson.h"
#include "core/pickle/picklemachine.h"
#include "core/read/checkpointreader.h"
#include "core/triage/triage.h"
#include "torchprobe.h"

#include <algorithm>
#include <thread>

#include <QDir>
#include <QDirIterator>
#include <QTest>

using namespace ckpt;

class TestWeightsOnlyVerdict : public QObject {
    Q_OBJECT

private:
    void compareWith(const QString& python, TorchGeneration generation);

private Q_SLOTS:
    void hostileFilesAreDangerous();
    void sharedVerdictsJudgeOnce();
    void aPickleOnlyTheReaderRanIsRated();
    void aGlobalTheVerdictLacksIsHandedToIt();
    void everySectionSaysWhatTheRatingSays();
    void judgedAheadTheGraphCanGo();
    void judgedWhileReadInEveryContainer();
    void agreesWithTorch113() { compareWith(QStringLiteral(CKPT_LEGACY_PYTHON), TorchGeneration::Torch113); }
    void agreesWithModernTorch()
    {
        compareWith(QStringLiteral(CKPT_MODERN_PYTHON), TorchGeneration::Torch26Plus);
    }
};

namespace {

QStringList inputFiles()
{
    QStringList files;
    for (const auto* directory :
        {"/tests/fixtures/torch-1.13", "/tests/fixtures/torch-2", "/tests/data/hostile"}) {
        const QDir dir(QStringLiteral(CKPT_SOURCE_DIR) + QLatin1String(directory));
        for (const auto& file : dir.entryList({QStringLiteral("*.pt")}, QDir::Files, QDir::Name))
            files << dir.filePath(file);
    }
    const QDir corpus(QStringLiteral(CKPT_SOURCE_DIR "/../shared/corpus/files"));
    for (const auto& file : corpus.entryList(QDir::Files, QDir::Name))
        files << corpus.filePath(file);
    return files;
}

bool judged(const Checkpoint& checkpoint)
{
    return checkpoint.format == CheckpointFormat::TorchZip
        || checkpoint.format == CheckpointFormat::TorchLegacy
        || checkpoint.format == CheckpointFormat::TorchScript;
}

// What a triage says of the pickles' safety and of torch.load, as one text to compare.
std::string text(const TriageReport& report)
{
    std::string all = report.safety.headline + "\n" + std::to_string(int(report.safety.rating)) + "\n"
        + std::to_string(int(report.weightsOnly.rating)) + " " + report.weightsOnly.torchMessage + "\n";
    for (const UnsafeCallable& callable : report.safety.unsafe)
        all += "unsafe " + callable.name + " " + callable.where + "\n";
    for (const std::string& line : report.safety.cannotVerify)
        all += "cannot " + line + "\n";
    for (const std::string& line : report.safety.pickles)
        all += "pickle " + line + "\n";
    for (const std::string& line : report.safety.notes)
        all += "note " + line + "\n";
    for (const Finding& finding : report.findings)
        all += std::to_string(int(finding.severity)) + " " + finding.message + "\n";
    for (const LoadSimulation& simulation : report.loadSimulations)
        all += "load " + std::to_string(simulation.loads) + " " + simulation.error + "\n";
    return all;
}
} // namespace

void TestWeightsOnlyVerdict::hostileFilesAreDangerous()
{
    struct Case {
        QString path;
        std::string global;
    };
    std::vector<Case> cases {{QStringLiteral(CKPT_SOURCE_DIR "/tests/data/hostile/builtins_eval.pt"), "eval"},
        {QStringLiteral(CKPT_SOURCE_DIR "/tests/data/hostile/os_system.pt"), "system"}};
    const QString corpus = QStringLiteral(CKPT_SOURCE_DIR "/../shared/corpus/files/");
    if (QFile::exists(corpus + QStringLiteral("mmaitre314__picklescan__tests__data__malicious1.zip")))
        cases.push_back({corpus + QStringLiteral("mmaitre314__picklescan__tests__data__malicious1.zip"),
            "builtins.eval"});
    for (const auto& c : cases) {
        const auto checkpoint = readCheckpoint(c.path.toStdString());
        for (auto generation : {TorchGeneration::Torch113, TorchGeneration::Torch26Plus}) {
            const auto verdict = judgeWeightsOnly(checkpoint, generation);
            QVERIFY2(verdict.rating == SafetyRating::Dangerous, qPrintable(c.path));
            bool named = false;
            for (const auto& global : verdict.globals)
                named |= global.verdict == GlobalVerdict::Blocked
                    && global.name.find(c.global) != std::string::npos;
            QVERIFY2(named, qPrintable(c.path));
            QVERIFY2(!verdict.dangerousCallChains.empty(), qPrintable(c.path));
            qInfo(
                "%s: %s", qPrintable(c.path.section(u'/', -1)), verdict.dangerousCallChains.front().c_str());
        }
    }
}

// The app's triage and load simulation bar ask on two threads at once: one judgement, the same
// answer for both, equal to judging alone; other imports or another generation are judged apart;
// another checkpoint is judged and not kept.
void TestWeightsOnlyVerdict::sharedVerdictsJudgeOnce()
{
    const auto checkpoint = readCheckpoint(CKPT_SOURCE_DIR "/tests/data/hostile/builtins_eval.pt");
    const auto other = readCheckpoint(CKPT_SOURCE_DIR "/tests/data/hostile/os_system.pt");
    SharedWeightsOnlyVerdicts shared;
    std::shared_ptr<const WeightsOnlyVerdict> first, second;
    {
        const std::jthread a([&] { first = shared.get(checkpoint, TorchGeneration::Torch26Plus); });
        const std::jthread b([&] { second = shared.get(checkpoint, TorchGeneration::Torch26Plus); });
    }
    QVERIFY(first && first == second);
    QCOMPARE(shared.judged(), std::size_t(1));
    const WeightsOnlyVerdict alone = judgeWeightsOnly(checkpoint, TorchGeneration::Torch26Plus);
    QVERIFY(first->rating == alone.rating && first->torchMessage == alone.torchMessage);
    QCOMPARE(first->globals.size(), alone.globals.size());

    auto imports = TorchImports::parse("all");
    QVERIFY(imports.hasValue());
    const auto withNumpy = shared.get(checkpoint, TorchGeneration::Torch26Plus, *imports);
    QVERIFY(withNumpy != first && withNumpy->imports == *imports);
    const auto old = shared.get(checkpoint, TorchGeneration::Torch113);
    QVERIFY(old != first && old->generation == TorchGeneration::Torch113);
    QCOMPARE(shared.get(checkpoint, TorchGeneration::Torch26Plus), first);
    QCOMPARE(shared.judged(), std::size_t(3));

    const auto ofOther = shared.get(other, TorchGeneration::Torch26Plus);
    QVERIFY(ofOther != first && ofOther->torchMessage != first->torchMessage);
    QCOMPARE(shared.get(checkpoint, TorchGeneration::Torch26Plus), first);
    QCOMPARE(shared.asked(), std::size_t(7));
}

namespace {

// Every global the weights-only walk will not vouch for is among the safety verdict's unsafe
// callables; a dangerous weights-only rating, or a finding calling the file dangerous, comes with a
// dangerous safety rating; and the exit code is 4 exactly when the rating is dangerous.
QStringList contradictions(const TriageReport& report)
{
    QStringList found;
    for (const GlobalClassification& global : report.weightsOnly.globals) {
        if (global.verdict != GlobalVerdict::Blocked && global.verdict != GlobalVerdict::Unknown)
            continue;
        const bool named = std::any_of(report.safety.unsafe.begin(), report.safety.unsafe.end(),
            [&](const UnsafeCallable& callable) { return callable.name == global.safetyName; });
        if (!named)
            found << QStringLiteral("weights-only %1 %2 is not among the unsafe callables")
                         .arg(QString::fromLatin1(globalVerdictName(global.verdict)),
                             QString::fromStdString(global.name));
    }
    if (report.weightsOnly.rating == SafetyRating::Dangerous && !report.safety.dangerous())
        found << QStringLiteral("weights-only rating dangerous, safety rating %1")
                     .arg(QString::fromLatin1(pickleSafetyName(report.safety.rating)));
    for (const Finding& finding : report.findings)
        if ((finding.code == FindingCode::WeightsOnlyDangerous || finding.code == FindingCode::UnsafePickle)
            && !report.safety.dangerous())
            found << QStringLiteral("finding %1 under a safety rating of %2")
                         .arg(QString::fromStdString(std::string(finding.codeId())),
                             QString::fromLatin1(pickleSafetyName(report.safety.rating)));
    if ((report.exitCode() == 4) != report.safety.dangerous())
        found << QStringLiteral("exit code %1 for a file rated %2")
                     .arg(report.exitCode())
                     .arg(QString::fromLatin1(pickleSafetyName(report.safety.rating)));
    return found;
}

// A torch-written checkpoint with one more pickle in its reader's view, one the file's bytes do not
// hold where the safety scan looks: the situation of a reader that takes other bytes than the scan.
Checkpoint withReaderOnlyPickle(const std::string& pickle)
{
    Checkpoint checkpoint = readCheckpoint(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/devices_cuda0.pt");
    PickleSection section;
    section.record = "archive/elsewhere.pkl";
    section.fileOffset = 0;
    section.firstNode = static_cast<NodeId>(checkpoint.graph.size());
    const ByteView bytes(reinterpret_cast<const std::uint8_t*>(pickle.data()), pickle.size());
    section.run = PickleMachine().run(bytes, checkpoint.graph);
    section.endNode = static_cast<NodeId>(checkpoint.graph.size());
    checkpoint.pickles.push_back(std::move(section));
    return checkpoint;
}

} // namespace

void TestWeightsOnlyVerdict::aPickleOnlyTheReaderRanIsRated()
{
    const Checkpoint benign = readCheckpoint(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/devices_cuda0.pt");
    QVERIFY(!ratePickleSafety(benign).dangerous());
    // os.system and a Python 2 spelling of eval, as a loader would run them.
    static constexpr char kPickle[]
        = "\x80\x02"
          "cos\nsystem\nX\x01\x00\x00\x00x\x85R0c__builtin__\neval\nX\x01\x00\x00\x00y\x85R.";
    const std::string pickle(kPickle, sizeof kPickle - 1);
    const Checkpoint checkpoint = withReaderOnlyPickle(pickle);
    QVERIFY(checkpoint.pickles.back().run.complete());
    const SafetyVerdict safety = ratePickleSafety(checkpoint);
    QVERIFY2(safety.dangerous(), safety.headline.c_str());
    for (const char* name : {"os.system", "builtins.eval"})
        QVERIFY2(std::any_of(safety.unsafe.begin(), safety.unsafe.end(),
                     [&](const UnsafeCallable& callable) { return callable.name == name; }),
            name);
    QVERIFY(std::any_of(safety.notes.begin(), safety.notes.end(),
        [](const std::string& note) { return note.find("archive/elsewhere.pkl") != std::string::npos; }));
    // The weights-only walk sees the same globals; triage says one thing everywhere.
    TriageOptions options;
    options.target = MachineInventory {};
    const TriageReport report = triage(checkpoint, options);
    QCOMPARE(report.weightsOnly.rating, SafetyRating::Dangerous);
    QVERIFY(report.safety.dangerous());
    QCOMPARE(report.exitCode(), 4);
    const QStringList found = contradictions(report);
    QVERIFY2(found.isEmpty(), qPrintable(found.join(QStringLiteral("; "))));
    // A reader run the scan rated itself adds nothing: no note on the fixture's own verdict.
    QVERIFY(ratePickleSafety(benign).notes.empty());
}

void TestWeightsOnlyVerdict::aGlobalTheVerdictLacksIsHandedToIt()
{
    const Checkpoint checkpoint = readCheckpoint(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/devices_cuda0.pt");
    SafetyVerdict verdict = ratePickleSafety(checkpoint);
    QCOMPARE(verdict.rating, PickleSafety::KnownInert);
    rateFurtherGlobal(verdict, "collections", "OrderedDict", "archive/data.pkl, byte 2");
    QCOMPARE(verdict.rating, PickleSafety::KnownInert); // vetted and on torch's list: nothing changes
    rateFurtherGlobal(verdict, "argparse", "Namespace", "archive/data.pkl, byte 2");
    QCOMPARE(verdict.rating, PickleSafety::NeedsAllowlist);
    QVERIFY(!verdict.addSafeGlobals2.empty());
    rateFurtherGlobal(verdict, "__builtin__", "eval", "archive/data.pkl, byte 9");
    QCOMPARE(verdict.rating, PickleSafety::DangerousOrUnknown);
    QCOMPARE(verdict.unsafe.size(), std::size_t(1));
    QCOMPARE(verdict.unsafe.front().name, std::string("builtins.eval"));
    QVERIFY(verdict.unsafe.front().knownDangerous);
    QVERIFY(
        verdict.addSafeGlobals2.empty() && verdict.addSafeGlobals113.empty()); // never for a dangerous file
    QVERIFY(verdict.headline.find("builtins.eval") != std::string::npos);
}

void TestWeightsOnlyVerdict::everySectionSaysWhatTheRatingSays()
{
    TriageOptions options;
    options.target = MachineInventory {};
    QStringList found;
    int files = 0;
    for (const QString& file : inputFiles()) {
        const Checkpoint checkpoint = readCheckpoint(file.toStdString());
        ++files;
        for (const QString& problem : contradictions(triage(checkpoint, options)))
            found << file.section(u'/', -1) + QStringLiteral(": ") + problem;
    }
    qInfo("%d files triaged", files);
    QVERIFY2(found.isEmpty(), qPrintable(found.mid(0, 20).join(u'\n')));
}

void TestWeightsOnlyVerdict::compareWith(const QString& python, TorchGeneration generation)
{
    if (python.isEmpty())
        QSKIP("no interpreter configured for this torch");
    std::vector<TorchProbeJob> jobs;
    std::vector<Checkpoint> checkpoints;
    for (const auto& file : inputFiles()) {
        auto checkpoint = readCheckpoint(file.toStdString());
        if (!judged(checkpoint))
            continue;
        checkpoints.push_back(std::move(checkpoint));
        // weights_only=True explicitly, trusted or not: nothing else runs.
        jobs.push_back({file, QStringLiteral("'cpu'"), true, false});
    }
    QString why;
    const auto results = runTorchProbe(python, jobs, why);
    if (!why.isEmpty())
        QFAIL(qPrintable(why));
    int compared = 0, skipped = 0;
    QStringList mismatches;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        const auto& truth = results[i];
        const auto verdict = judgeWeightsOnly(checkpoints[i], generation);
        const bool unpicklerAnswer = truth.ok || truth.error.contains(QLatin1String("WeightsUnpickler error"))
            || truth.error.startsWith(QLatin1String("Cannot use ``weights_only=True``"));
        if (!unpicklerAnswer) {
            // TorchScript under 1.13 (torch.jit.load answers), malformed zips, version mismatches.
            ++skipped;
            continue;
        }
        ++compared;
        const bool rated = verdict.rating == SafetyRating::LoadsWithWeightsOnly
            || (checkpoints[i].format == CheckpointFormat::TorchScript && verdict.torchMessage.empty());
        const QString message = QString::fromStdString(verdict.torchMessage);
        if (truth.ok != rated || (!truth.ok && message != truth.error))
            mismatches << QStringLiteral("%1:\n  torch: %2\n  verdict: %3 %4")
                              .arg(jobs[i].path.section(u'/', -1),
                                  truth.ok ? QStringLiteral("loads") : truth.error.left(400),
                                  QString::fromLatin1(safetyRatingName(verdict.rating)), message.left(400));
    }
    qInfo("%s: %d files compared, %d skipped", qPrintable(python), compared, skipped);
    if (!mismatches.isEmpty())
        QFAIL(qPrintable(QStringLiteral("%1 of %2 files disagree:\n").arg(mismatches.size()).arg(compared)
            + mismatches.mid(0, 15).join(u'\n')));
}

// `check` judges all that triage() reads of the pickle graph first and releases the graph before
// the rest of the triage: the report is the one triage() makes with the graph there, on every
// fixture and hostile file; and a verdict handed a released graph refuses it rather than judging
// an empty one.
void TestWeightsOnlyVerdict::judgedAheadTheGraphCanGo()
{
    int released = 0;
    int judgedBeforeRecords = 0;
    for (const QString& path : inputFiles()) {
        if (path.contains(QLatin1String("/shared/corpus/")))
            continue; // the fixtures and hostile files suffice here; outputs-snapshot.py covers the corpus
        const Checkpoint whole = readCheckpoint(path.toStdString());
        const TriageReport expected = triage(whole, {});
        Checkpoint checkpoint = readCheckpoint(path.toStdString());
        TriageOptions options;
        judgePickleGraphAhead(checkpoint, options);
        const bool hadNodes = checkpoint.graph.size() > 0;
        checkpoint.graph.release();
        QVERIFY(checkpoint.graph.released() && checkpoint.graph.size() == 0);
        QCOMPARE(text(triage(checkpoint, options)), text(expected));
        // Judged while it is read (as `check` does): a plain state_dict before its records are
        // built, whose graph the builder then gives back as it consumes it. The same records, the
        // same triage; a graph given back in part is refused as a released one.
        TriageOptions whileRead;
        ReadOptions readOptions;
        int judgements = 0;
        std::size_t tensorsWhenJudged = 0;
        readOptions.judgeGraph = [&](const Checkpoint& beingRead) {
            ++judgements;
            tensorsWhenJudged = beingRead.tensors.size();
            judgePickleGraphAhead(beingRead, whileRead);
        };
        Checkpoint read = readCheckpoint(path.toStdString(), readOptions);
        QCOMPARE(judgements, 1);
        if (tensorsWhenJudged == 0 && !read.tensors.empty())
            ++judgedBeforeRecords;
        QCOMPARE(checkpointToText(read), checkpointToText(whole));
        read.graph.release();
        QCOMPARE(text(triage(read, whileRead)), text(expected));
        if (hadNodes) {
            ++released;
            QVERIFY_THROWS_EXCEPTION(
                std::logic_error, (void)judgeWeightsOnly(checkpoint, TorchGeneration::Torch26Plus));
            QVERIFY_THROWS_EXCEPTION(std::logic_error, (void)ratePickleSafety(checkpoint));
            QVERIFY_THROWS_EXCEPTION(std::logic_error, (void)checkKnownGlobalMoves(checkpoint));
        }
    }
    QVERIFY(released > 10);
    QVERIFY(judgedBeforeRecords > 10); // the fixtures' plain state_dicts (tst_compactmodel: given back)
}

// `check` and `info` judge the graph while a file is read (ReadOptions::judgeGraph): once, for the
// file the user named, never for a file read inside it. A torch.export archive judged by its sample
// inputs' plain state_dict was rated known inert beside its compiled code; so every fixture of
// every kind (archives, bundles, nested files, folders through one of their files) is read both
// ways here, and the triage must be the one made with the file read whole.
void TestWeightsOnlyVerdict::judgedWhileReadInEveryContainer()
{
    const QString root = QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures");
    int files = 0;
    QDirIterator it(root, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        const QString relative = path.mid(root.size() + 1);
        if (relative.startsWith(QLatin1String("torch-1.13/"))
            || relative.startsWith(QLatin1String("torch-2/")))
            continue; // judgedAheadTheGraphCanGo reads these
        if (path.endsWith(QLatin1String(".json")) || path.endsWith(QLatin1String(".py"))
            || path.endsWith(QLatin1String(".md")) || path.endsWith(QLatin1String(".txt")))
            continue;
        const TriageReport expected = triage(readCheckpoint(path.toStdString()), {});
        TriageOptions whileRead;
        ReadOptions readOptions;
        int judgements = 0;
        readOptions.judgeGraph = [&](const Checkpoint& beingRead) {
            ++judgements;
            judgePickleGraphAhead(beingRead, whileRead);
        };
        Checkpoint read = readCheckpoint(path.toStdString(), readOptions);
        QCOMPARE(judgements, 1);
        read.graph.release();
        QVERIFY2(text(triage(read, whileRead)) == text(expected), qPrintable(relative));
        ++files;
    }
    QVERIFY(files > 150);
}

QTEST_GUILESS_MAIN(TestWeightsOnlyVerdict)
#include "tst_weightsonlyverdict.moc"
