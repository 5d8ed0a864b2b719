// SPDX-License-Identifier: MIT
// The safety verdict (core/triage/pickleverdict): regressions of issue 9 on bytes built opcode by
// opcode (never unpickled), no false alarms on the fixtures torch's own weights_only=True accepts
// (real torch 1.13 and the modern torch, file by file), and the corpus rated against what its
// MANIFEST says torch did (corpus files are never unpickled here).
#include "core/io/mappedfile.h"
#include "core/read/checkpointreader.h"
#include "core/triage/pickleverdict.h"
#include "tests/common/testfiles.h"
#include "torchprobe.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTemporaryFile>
#include <QTest>

#include <string>

using namespace ckpt::testing;

using namespace ckpt;

namespace {

// A string literal with its embedded NUL bytes.
template<std::size_t N> std::string raw(const char (&text)[N])
{
    return std::string(text, N - 1);
}

SafetyVerdict rate(const std::string& bytes)
{
    return ratePickleSafety(ByteView(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

bool names(const SafetyVerdict& verdict, const std::string& callable)
{
    for (const UnsafeCallable& unsafe : verdict.unsafe)
        if (unsafe.name == callable)
            return true;
    return false;
}

SafetyVerdict rateFile(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(path));
    const QByteArray bytes = file.readAll();
    return rate(std::string(bytes.constData(), static_cast<std::size_t>(bytes.size())));
}

QStringList fixtureFiles()
{
    QStringList files;
    for (const char* directory : {"/tests/fixtures/torch-1.13", "/tests/fixtures/torch-2"}) {
        const QDir dir(QStringLiteral(CKPT_SOURCE_DIR) + QLatin1String(directory));
        for (const QString& name : dir.entryList({QStringLiteral("*.pt")}, QDir::Files, QDir::Name))
            files << dir.filePath(name);
    }
    return files;
}

// Where two verdicts differ, field by field; empty when they are the same.
QStringList differences(const SafetyVerdict& a, const SafetyVerdict& b)
{
    QStringList out;
    auto text = [](const std::string& value) { return QString::fromStdString(value).left(160); };
    auto same = [&](const char* field, const std::string& x, const std::string& y) {
        if (x != y)
            out << QStringLiteral("%1: '%2' vs '%3'").arg(QLatin1String(field), text(x), text(y));
    };
    auto sameList
        = [&](const char* field, const std::vector<std::string>& x, const std::vector<std::string>& y) {
              if (x.size() != y.size())
                  out << QStringLiteral("%1: %2 vs %3 entries")
                             .arg(QLatin1String(field))
                             .arg(x.size())
                             .arg(y.size());
              for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i)
                  same(field, x[i], y[i]);
          };
    same("rating", pickleSafetyName(a.rating), pickleSafetyName(b.rating));
    same("headline", a.headline, b.headline);
    if (a.unsafe.size() != b.unsafe.size())
        out << QStringLiteral("unsafe: %1 vs %2 entries").arg(a.unsafe.size()).arg(b.unsafe.size());
    for (std::size_t i = 0; i < std::min(a.unsafe.size(), b.unsafe.size()); ++i) {
        same("unsafe.name", a.unsafe[i].name, b.unsafe[i].name);
        same("unsafe.reason", a.unsafe[i].reason, b.unsafe[i].reason);
        same("unsafe.knownDangerous", a.unsafe[i].knownDangerous ? "yes" : "no",
            b.unsafe[i].knownDangerous ? "yes" : "no");
        same("unsafe.where", a.unsafe[i].where, b.unsafe[i].where);
        same("unsafe.call", a.unsafe[i].call, b.unsafe[i].call);
    }
    sameList("cannotVerify", a.cannotVerify, b.cannotVerify);
    if (a.allowlist.size() != b.allowlist.size())
        out << QStringLiteral("allowlist: %1 vs %2 entries").arg(a.allowlist.size()).arg(b.allowlist.size());
    for (std::size_t i = 0; i < std::min(a.allowlist.size(), b.allowlist.size()); ++i) {
        const AllowlistCandidate &x = a.allowlist[i], &y = b.allowlist[i];
        same("allowlist.name", x.name, y.name);
        same("allowlist.reason", x.reason, y.reason);
        if (x.torch113Default != y.torch113Default || x.torch2Default != y.torch2Default
            || x.offerAllowlist != y.offerAllowlist)
            out << QStringLiteral("allowlist flags of %1").arg(text(x.name));
    }
    sameList("pickles", a.pickles, b.pickles);
    sameList("notes", a.notes, b.notes);
    same("addSafeGlobals113", a.addSafeGlobals113, b.addSafeGlobals113);
    same("addSafeGlobals2", a.addSafeGlobals2, b.addSafeGlobals2);
    return out;
}

struct ShortcutComparison {
    int files = 0;
    int reusedFiles = 0;
    QStringList mismatches;
    QStringList notReused; // torch-written files whose reader run the verdict did not reuse
};

// Rates `path` three ways, the reference (no shortcut), the bytes alone (stackless passes skipped
// where not needed) and the opened checkpoint (the reader's runs reused as well): all must agree.
void compareWithReference(const QString& path, ShortcutComparison& comparison, bool expectReuse)
{
    auto mapped = MappedFile::open(path.toStdString());
    if (!mapped)
        return;
    ++comparison.files;
    const ByteView bytes = (*mapped)->bytes();
    const SafetyVerdict reference = ratePickleSafetyReference(bytes);
    auto record = [&](const char* how, const SafetyVerdict& verdict) {
        const QStringList found = differences(reference, verdict);
        if (!found.isEmpty())
            comparison.mismatches << path + QStringLiteral(" (") + QLatin1String(how) + QStringLiteral("): ")
                    + found.mid(0, 4).join(QStringLiteral("; "));
    };
    record("bytes", ratePickleSafety(bytes));
    const Checkpoint checkpoint = readCheckpoint(*mapped);
    std::size_t reused = 0;
    record("checkpoint", ratePickleSafety(checkpoint, &reused));
    comparison.reusedFiles += reused > 0;
    if (expectReuse && reused == 0
        && (checkpoint.format == CheckpointFormat::TorchZip
            || checkpoint.format == CheckpointFormat::TorchLegacy))
        comparison.notReused << path;
}

} // namespace

class TestPickleVerdict : public QObject {
    Q_OBJECT

private:
    void torchAcceptsMeansLoadable(const QString& python, bool modern);

private Q_SLOTS:
    void unknownGlobalIsNeverOfferedForAllowlisting()
    {
        // STACK_GLOBAL 'torch' 'os.system' was once "needs allowlist: from torch.os import system".
        const std::string pickle = raw("\x80\x04\x8c\x05torch\x8c\x09os.system\x93\x8c\x01x\x85R.");
        const SafetyVerdict verdict = rate(pickle);
        QCOMPARE(verdict.rating, PickleSafety::DangerousOrUnknown);
        QVERIFY(names(verdict, "torch.os.system"));
        QVERIFY(verdict.addSafeGlobals2.empty() && verdict.addSafeGlobals113.empty());
        // A third-party class: cannot verify, and no add_safe_globals for it.
        const SafetyVerdict thirdParty = rate("\x80\x02"
                                              "cmymodels.net\nNet\n)\x81.");
        QCOMPARE(thirdParty.rating, PickleSafety::DangerousOrUnknown);
        QVERIFY(names(thirdParty, "mymodels.net.Net"));
        QVERIFY(thirdParty.addSafeGlobals2.empty());
        QVERIFY(thirdParty.headline.find("CANNOT VERIFY") != std::string::npos);
    }

    void vettedClassNeedsAllowlisting()
    {
        const SafetyVerdict verdict = rate("\x80\x02"
                                           "cargparse\nNamespace\n)R}b.");
        QCOMPARE(verdict.rating, PickleSafety::NeedsAllowlist);
        QVERIFY(verdict.addSafeGlobals2.find("from argparse import Namespace") != std::string::npos);
        QVERIFY(verdict.unsafe.empty());
    }

    void plainPicklesAreRatedLikeCheckpoints()
    {
        for (const auto& [module, name] :
            {std::pair {"os", "system"}, {"subprocess", "Popen"}, {"runpy", "_run_code"}}) {
            const std::string pickle
                = std::string("\x80\x02") + "c" + module + "\n" + name + raw("\nX\x01\x00\x00\x00x\x85R.");
            const SafetyVerdict verdict = rate(pickle);
            QCOMPARE(verdict.rating, PickleSafety::DangerousOrUnknown);
            QVERIFY2(names(verdict, std::string(module) + "." + name), verdict.headline.c_str());
            QVERIFY(verdict.headline.find(std::string(module) + "." + name) != std::string::npos);
        }
        QCOMPARE(rate(raw("\x80\x02}q\x00.")).rating, PickleSafety::KnownInert);
        QCOMPARE(rate("").rating, PickleSafety::NoPickle);
    }

    void picklesNotReadToTheEndCannotBeVerified()
    {
        // 100,001 MARKs before os.system: the machine's MARK limit stops it; the verdict says so and
        // still names the call it did not reach.
        std::string marks = "\x80\x02" + std::string(100001, '(') + "cos\nsystem\n(S'x'\ntR.";
        SafetyVerdict verdict = rate(marks);
        QCOMPARE(verdict.rating, PickleSafety::DangerousOrUnknown);
        QVERIFY(names(verdict, "os.system"));
        QVERIFY(!verdict.cannotVerify.empty());
        QVERIFY2(verdict.cannotVerify.front().find("MARKs deeper than 100,000") != std::string::npos,
            verdict.cannotVerify.front().c_str());
        // An integer wider than the limit (1 MiB; CPython reads any width), with nothing dangerous
        // at all: still "cannot verify".
        std::string wide
            = "\x80\x02\x8b" + std::string("\x01\x00\x10\x00", 4) + std::string((1 << 20) + 1, '\x01') + ".";
        verdict = rate(wide);
        QCOMPARE(verdict.rating, PickleSafety::DangerousOrUnknown);
        QVERIFY(verdict.unsafe.empty());
        QVERIFY2(verdict.headline.find("limit") != std::string::npos, verdict.headline.c_str());
        // A broken stream after a dangerous call is dangerous, not "unreadable, so fine".
        verdict = rate(raw("\x80\x02"
                           "cposix\nsystem\nX\x01\x00\x00\x00x\x85R\xfe\xfe"));
        QCOMPARE(verdict.rating, PickleSafety::DangerousOrUnknown);
        QVERIFY(names(verdict, "posix.system"));
    }

    void zipOffsetsThatWrapAroundDoNotCrash()
    {
        // Found by mutating hostile files: a central directory that claims to start 100 bytes
        // later than it does, naming a member at byte 96, put the member at byte -4 (read from a
        // mapped file, as the tool reads it, so that byte -4 is outside the mapping).
        auto le16 = [](std::string& out, unsigned value) {
            out += static_cast<char>(value & 0xFF);
            out += static_cast<char>((value >> 8) & 0xFF);
        };
        auto le32 = [&](std::string& out, unsigned value) {
            le16(out, value & 0xFFFF);
            le16(out, value >> 16);
        };
        std::string zip = "PK\x01\x02";
        zip += std::string(24, '\0'); // versions, flags, method, time, CRC, sizes
        le16(zip, 8); // name length
        zip += std::string(12, '\0'); // extra, comment, disk, attributes
        le32(zip, 96); // local header offset
        zip += "data.pkl";
        const auto directorySize = static_cast<unsigned>(zip.size());
        zip += "PK\x05\x06";
        zip += std::string(4, '\0');
        le16(zip, 1);
        le16(zip, 1);
        le32(zip, directorySize);
        le32(zip, 100); // where the directory claims to be
        le16(zip, 0);
        QTemporaryFile file;
        QVERIFY(file.open());
        file.write(zip.data(), static_cast<qint64>(zip.size()));
        file.close();
        auto mapped = MappedFile::open(file.fileName().toStdString());
        QVERIFY(mapped.hasValue());
        const SafetyVerdict verdict = ratePickleSafety((*mapped)->bytes());
        QCOMPARE(verdict.rating, PickleSafety::DangerousOrUnknown);
        QVERIFY(!verdict.cannotVerify.empty());
        QVERIFY2(verdict.cannotVerify.front().find("no local header") != std::string::npos,
            verdict.cannotVerify.front().c_str());
    }

    void fixturesTorch113AcceptsAreLoadable()
    {
        torchAcceptsMeansLoadable(QStringLiteral(CKPT_LEGACY_PYTHON), false);
    }
    void fixturesModernTorchAcceptsAreKnownInert()
    {
        torchAcceptsMeansLoadable(QStringLiteral(CKPT_MODERN_PYTHON), true);
    }

    // The shortcuts (stackless passes only where needed, the reader's runs reused) must never change
    // a verdict: every torch-written fixture, every hostile file and every corpus file is rated
    // with and without them, and the verdicts compared field by field. The torch-written zip and
    // legacy fixtures must actually take the reuse path, or this would compare nothing new.
    void shortcutsGiveTheReferenceVerdict()
    {
        ShortcutComparison comparison;
        QDirIterator fixtures(
            QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures"), QDir::Files, QDirIterator::Subdirectories);
        while (fixtures.hasNext()) {
            const QString path = fixtures.next();
            const bool torchWritten
                = path.contains(QStringLiteral("/torch-1.13/")) || path.contains(QStringLiteral("/torch-2/"));
            compareWithReference(path, comparison, torchWritten && path.endsWith(QStringLiteral(".pt")));
        }
        const int fixtureFilesCompared = comparison.files;
        const int fixturesReused = comparison.reusedFiles;

        // The hostile set, built from bytes by its generator (never unpickled).
        if (!QStringLiteral(CKPT_LEGACY_PYTHON).isEmpty()) {
            QTemporaryDir hostile;
            QVERIFY(hostile.isValid());
            QProcess generator;
            generator.start(QStringLiteral(CKPT_LEGACY_PYTHON),
                {QStringLiteral(CKPT_SOURCE_DIR "/tests/hostile/make_hostile.py"), hostile.path()});
            QVERIFY(generator.waitForFinished(300000));
            QVERIFY2(generator.exitCode() == 0, generator.readAllStandardError().constData());
            const int before = comparison.files;
            const QDir dir(hostile.path());
            for (const QString& name : dir.entryList(QDir::Files, QDir::Name))
                if (name != QStringLiteral("manifest.tsv"))
                    compareWithReference(dir.filePath(name), comparison, false);
            QVERIFY2(comparison.files - before > 100, "the hostile generator wrote too few files");
        }
        const QDir corpus(corpusFilesDir());
        for (const QString& name : corpus.entryList(QDir::Files, QDir::Name))
            compareWithReference(corpus.filePath(name), comparison, false);

        qInfo("shortcuts: %d files rated three ways; the reader's runs reused in %d (%d of %d fixtures)",
            comparison.files, comparison.reusedFiles, fixturesReused, fixtureFilesCompared);
        if (!comparison.mismatches.isEmpty())
            QFAIL(qPrintable(comparison.mismatches.join(u'\n')));
        if (!comparison.notReused.isEmpty())
            QFAIL(qPrintable(
                QStringLiteral("the reader's run was not reused for:\n") + comparison.notReused.join(u'\n')));
        QVERIFY(fixturesReused > 20);
    }

    // A reader run is reused only when it is the run the scanner would make: under other bounds, or
    // cut short, it is made again (and the verdict is the scanner's own).
    void readerRunsUnderOtherLimitsAreNotReused()
    {
        const QString path = fixturePath("torch-1.13/state_dict.pt");
        QVERIFY(QFile::exists(path));
        auto mapped = MappedFile::open(path.toStdString());
        QVERIFY(mapped.hasValue());
        const SafetyVerdict reference = ratePickleSafetyReference((*mapped)->bytes());
        std::size_t reused = 0;
        ratePickleSafety(readCheckpoint(*mapped), &reused);
        QCOMPARE(reused, std::size_t {1});

        ReadOptions otherBounds;
        otherBounds.pickleLimits.maxStackDepth = 1000; // still completes, but is not the scanner's run
        const Checkpoint bounded = readCheckpoint(*mapped, otherBounds);
        QVERIFY(bounded.pickles.at(0).run.complete());
        QStringList found = differences(reference, ratePickleSafety(bounded, &reused));
        QCOMPARE(reused, std::size_t {0});
        QVERIFY2(found.isEmpty(), qPrintable(found.join(u'\n')));

        ReadOptions cutShort;
        cutShort.pickleLimits.maxOpcodes = 3; // the reader stops early; the verdict does not
        const Checkpoint partial = readCheckpoint(*mapped, cutShort);
        QVERIFY(!partial.pickles.at(0).run.complete());
        found = differences(reference, ratePickleSafety(partial, &reused));
        QCOMPARE(reused, std::size_t {0});
        QVERIFY2(found.isEmpty(), qPrintable(found.join(u'\n')));
        QCOMPARE(reference.rating, PickleSafety::KnownInert);
    }

    void corpusAgreesWithManifest()
    {
        const QString root = corpusDir() + QLatin1Char('/');
        QFile manifest(root + QStringLiteral("MANIFEST.tsv"));
        if (!manifest.open(QIODevice::ReadOnly))
            QSKIP("the corpus is not on this machine");
        int loadable = 0, inert = 0, refused = 0, dangerous = 0;
        QStringList falseAlarms;
        manifest.readLine(); // header
        while (!manifest.atEnd()) {
            const QStringList columns = QString::fromUtf8(manifest.readLine()).trimmed().split(u'\t');
            if (columns.size() < 11)
                continue;
            const QString& notes = columns[10];
            const SafetyVerdict verdict = rateFile(root + QStringLiteral("files/") + columns[0]);
            if (verdict.dangerous())
                ++dangerous;
            if (notes.contains(QStringLiteral("weights_only=True load (torch 1.13): ok"))) {
                ++loadable;
                // torch 1.13's weights-only unpickler accepts it: the verdict must not cry wolf.
                if (verdict.rating == PickleSafety::KnownInert)
                    ++inert;
                else if (verdict.rating != PickleSafety::NeedsAllowlist)
                    falseAlarms << columns[0] + QStringLiteral(": ")
                            + QString::fromStdString(verdict.headline).left(200);
            } else if (notes.contains(
                           QStringLiteral("weights_only=True load (torch 1.13): error: UnpicklingError"))
                && notes.contains(QStringLiteral("Unsupported class"))) {
                ++refused;
            }
        }
        qInfo("corpus: %d files torch 1.13 loads with weights_only=True, %d of them rated known inert "
              "(the rest needs-allowlisting); %d refused by torch for a class; %d rated dangerous in all",
            loadable, inert, refused, dangerous);
        QVERIFY(loadable > 0);
        if (!falseAlarms.isEmpty())
            QFAIL(qPrintable(falseAlarms.join(u'\n')));
    }
};

void TestPickleVerdict::torchAcceptsMeansLoadable(const QString& python, bool modern)
{
    if (python.isEmpty())
        QSKIP("no interpreter configured for this torch");
    const QStringList files = fixtureFiles();
    std::vector<TorchProbeJob> jobs;
    for (const QString& file : files)
        jobs.push_back({file, QStringLiteral("'cpu'"), true, true});
    QString why;
    const auto results = runTorchProbe(python, jobs, why);
    if (!why.isEmpty())
        QFAIL(qPrintable(why));
    int accepted = 0, inert = 0;
    QStringList falseAlarms;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        if (!results[i].ok)
            continue;
        ++accepted;
        const SafetyVerdict verdict = rateFile(files[static_cast<qsizetype>(i)]);
        inert += verdict.rating == PickleSafety::KnownInert;
        // The rating is against torch 2.x's default list: what modern torch loads is known inert;
        // what torch 1.13 loads is at worst "needs allowlisting" (2.x dropped a few 1.13 names).
        const bool fine = modern
            ? verdict.rating == PickleSafety::KnownInert
            : verdict.rating == PickleSafety::KnownInert || verdict.rating == PickleSafety::NeedsAllowlist;
        if (!fine)
            falseAlarms << files[static_cast<qsizetype>(i)].section(u'/', -2) + QStringLiteral(": ")
                    + QString::fromLatin1(pickleSafetyName(verdict.rating)) + QStringLiteral(": ")
                    + QString::fromStdString(verdict.headline).left(200);
    }
    qInfo("%s: torch accepts %d of %d fixtures with weights_only=True; %d of them rated known inert",
        qPrintable(python), accepted, int(files.size()), inert);
    QVERIFY(accepted > 10);
    if (!falseAlarms.isEmpty())
        QFAIL(qPrintable(falseAlarms.join(u'\n')));
}

QTEST_GUILESS_MAIN(TestPickleVerdict)
#include "tst_pickleverdict.moc"
