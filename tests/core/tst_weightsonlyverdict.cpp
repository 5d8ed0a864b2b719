// SPDX-License-Identifier: MIT
// The weights_only verdict against real torch: every fixture, every corpus file the reader takes
// for a torch zip, legacy file or TorchScript archive, and the hostile samples, loaded by
// torch.load(weights_only=True, map_location='cpu') of torch 1.13 and of the modern torch (corpus
// files only ever with weights_only=True: some are hostile). Loads <-> rated LoadsWithWeightsOnly;
// fails in the unpickler <-> rated otherwise with torch's exact message (first rejected GLOBAL or
// opcode, wrapped as torch.load wraps it).
#include "core/read/checkpointreader.h"
#include "core/triage/triage.h"
#include "torchprobe.h"

#include <QDir>
#include <QTest>

using namespace ckpt;

class TestWeightsOnlyVerdict : public QObject {
    Q_OBJECT

private:
    void compareWith(const QString& python, TorchGeneration generation);

private Q_SLOTS:
    void hostileFilesAreDangerous();
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

QTEST_GUILESS_MAIN(TestWeightsOnlyVerdict)
#include "tst_weightsonlyverdict.moc"
