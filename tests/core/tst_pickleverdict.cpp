// SPDX-License-Identifier: MIT
// The safety verdict (core/safety/pickleverdict): regressions of issue 9 on bytes built opcode by
// opcode (never unpickled), no false alarms on the fixtures torch's own weights_only=True accepts
// (real torch 1.13 and the modern torch, file by file), and the corpus rated against what its
// MANIFEST says torch did (corpus files are never unpickled here).
#include "core/io/mappedfile.h"
#include "core/model/shardset.h"
#include "core/read/checkpointreader.h"
#include "core/safety/pickleverdict.h"
#include "tests/common/testfiles.h"
#include "torchprobe.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTemporaryFile>
#include <QTest>

#include <cstdio>
#include <string>

#include <zlib.h>

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
    // A bundle (a tar.gz, .nemo or zip of checkpoint files) is rated member by member as well as
    // whole (core/safety/shardsafety.cpp): where its stream is damaged, the members read before the
    // damage make it "cannot verify" while the byte scanner, stopped by the damage, finds no
    // pickle. That is a different judgement, not a shortcut, so it is not compared here.
    if (checkpoint.shardSet && checkpoint.shardSet->layout == ShardLayout::Bundle)
        return;
    record("checkpoint", ratePickleSafety(checkpoint, &reused));
    comparison.reusedFiles += reused > 0;
    if (expectReuse && reused == 0
        && (checkpoint.format == CheckpointFormat::TorchZip
            || checkpoint.format == CheckpointFormat::TorchLegacy))
        comparison.notReused << path;
}

// ---- issue 24, containers: bytes other readers hand to an unpickler (tests/tools/container_differential.py)
// ----

std::string le16(unsigned value)
{
    return {static_cast<char>(value & 0xff), static_cast<char>((value >> 8) & 0xff)};
}

std::string le32(std::uint32_t value)
{
    return le16(value & 0xffff) + le16(value >> 16);
}

std::string le64(std::uint64_t value)
{
    return le32(static_cast<std::uint32_t>(value)) + le32(static_cast<std::uint32_t>(value >> 32));
}

// A stored zip member as [name, data, general-purpose flags].
struct StoredMember {
    std::string name, data;
    unsigned flags = 0;
};

std::string storedZip(const std::vector<StoredMember>& members)
{
    std::string out, central;
    for (const StoredMember& member : members) {
        const auto crc = static_cast<std::uint32_t>(crc32(
            0, reinterpret_cast<const Bytef*>(member.data.data()), static_cast<uInt>(member.data.size())));
        const std::string sizes = le32(crc) + le32(static_cast<std::uint32_t>(member.data.size()))
            + le32(static_cast<std::uint32_t>(member.data.size()))
            + le16(static_cast<unsigned>(member.name.size()));
        central += raw("PK\x01\x02") + le16(20) + le16(20) + le16(member.flags) + le16(0) + le32(0) + sizes
            + le16(0) + le16(0) + le16(0) + le16(0) + le32(0) + le32(static_cast<std::uint32_t>(out.size()))
            + member.name;
        out += raw("PK\x03\x04") + le16(20) + le16(member.flags) + le16(0) + le32(0) + sizes + le16(0)
            + member.name + member.data;
    }
    const auto count = static_cast<unsigned>(members.size());
    return out + central + raw("PK\x05\x06") + le16(0) + le16(0) + le16(count) + le16(count)
        + le32(static_cast<std::uint32_t>(central.size())) + le32(static_cast<std::uint32_t>(out.size()))
        + le16(0);
}

// A tar member with an old (v7) header: no "ustar" magic, only the checksum, as Python's tarfile
// (and so torch.load, which tries tarfile first) accepts.
std::string v7TarMember(const std::string& name, const std::string& data)
{
    std::string header(512, '\0');
    header.replace(0, name.size(), name);
    header.replace(100, 7, "0000644");
    header.replace(108, 7, "0000000");
    header.replace(116, 7, "0000000");
    char size[13];
    std::snprintf(size, sizeof size, "%011o", static_cast<unsigned>(data.size()));
    header.replace(124, 12, std::string(size, 11) + '\0');
    header.replace(136, 12, std::string("00000000000") + '\0');
    header[156] = '0';
    header.replace(148, 8, "        ");
    unsigned sum = 0;
    for (char c : header)
        sum += static_cast<unsigned char>(c);
    char checksum[8];
    std::snprintf(checksum, sizeof checksum, "%06o", sum);
    header.replace(148, 8, std::string(checksum, 6) + '\0' + ' ');
    std::string padded = data;
    padded.resize((data.size() + 511) / 512 * 512, '\0');
    return header + padded;
}

std::string npy(const std::string& descr, const std::string& data, int version = 1)
{
    std::string header = "{'descr': " + descr + ", 'fortran_order': False, 'shape': (1,), }";
    const std::size_t prefix = version == 1 ? 10 : 12;
    header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    return raw("\x93NUMPY") + static_cast<char>(version) + '\0'
        + (version == 1 ? le16(static_cast<unsigned>(header.size()))
                        : le32(static_cast<std::uint32_t>(header.size())))
        + header + data;
}

const std::string kSystemCall = raw("\x80\x02"
                                    "cos\nsystem\nX\x01\x00\x00\x00x\x85R.");

bool cannotVerifySays(const SafetyVerdict& verdict, const std::string& text)
{
    for (const std::string& entry : verdict.cannotVerify)
        if (entry.find(text) != std::string::npos)
            return true;
    return false;
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

    // A torch file whose 32-bit end record names the directory from its second entry while the
    // ZIP64 record names it from the first: two readers' views that find the same entries at the
    // same offsets. Each entry is rated once (issue 28 made the check an index sort, not a set):
    // rated twice, every name after the first was reported as two members of that name.
    void zipViewsThatShareEntriesRateEachOnce()
    {
        QFile fixture(QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/torch-1.13/devices_cuda0.pt"));
        QVERIFY(fixture.open(QIODevice::ReadOnly));
        std::string bytes = fixture.readAll().toStdString();
        const std::size_t end = bytes.rfind(raw("PK\x05\x06"));
        QVERIFY(end != std::string::npos && end + 22 <= bytes.size());
        auto le = [&](std::size_t at, int size) {
            std::uint32_t value = 0;
            for (int i = 0; i < size; ++i)
                value |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at + i])) << (8 * i);
            return value;
        };
        const std::uint32_t first = le(end + 16, 4);
        QCOMPARE(bytes.substr(first, 4), raw("PK\x01\x02"));
        const std::uint32_t second = first + 46 + le(first + 28, 2) + le(first + 30, 2) + le(first + 32, 2);
        QCOMPARE(bytes.substr(second, 4), raw("PK\x01\x02"));
        for (int i = 0; i < 4; ++i)
            bytes[end + 16 + i] = static_cast<char>((second >> (8 * i)) & 0xFF);

        const SafetyVerdict untouched
            = rate(fixture.seek(0) ? fixture.readAll().toStdString() : std::string());
        const SafetyVerdict verdict = rate(bytes);
        QCOMPARE(verdict.rating, untouched.rating);
        for (const std::string& note : verdict.notes)
            QVERIFY2(note.find("two members are named") == std::string::npos, note.c_str());
        QCOMPARE(verdict.notes.size(), untouched.notes.size());
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

    // ---- issue 24, containers (tests/tools/container_differential.py finds these; each case here
    // is one of its disagreements, fixed) ----

    void ratedPicklesExposeTheirBytes()
    {
        // check --json's pickle_bytes: the differential holds each real reader's bytes against them.
        const std::string zip = storedZip({{"archive/data.pkl", kSystemCall}, {"archive/version", "3\n"}});
        const SafetyVerdict verdict = rate(zip);
        QCOMPARE(verdict.pickleBytes.size(), std::size_t(1));
        QCOMPARE(verdict.pickleBytes[0].length, kSystemCall.size());
        QCOMPARE(verdict.pickleBytes[0].crc32,
            static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(kSystemCall.data()),
                static_cast<uInt>(kSystemCall.size()))));
        QVERIFY(verdict.pickleBytes[0].complete);
    }

    void npyObjectDtypeInEverySpelling()
    {
        // numpy.lib.format.descr_to_dtype: each of these is an object array numpy.load(allow_pickle=True)
        // unpickles; the verdict once looked for 'O' and '|O' only.
        for (const char* descr :
            {"'O'", "'|O'", "'|O8'", "'object'", "\"O\"", "'\\x4f'", "u'O'", "'\\117'", "[('a', 'O')]",
                "[('a', '<f4'), ('b', '|O')]", "[('a', 'O', (2,))]", "('O', (2,))", "[(('t', 'a'), 'O')]",
                "'O8'", "'=O'", "[('a', [('b', 'O')])]", "'f4,O'", "'(2,)O'", "'O' ''"}) {
            for (int version : {1, 2, 3}) {
                const SafetyVerdict verdict = rate(npy(descr, kSystemCall, version));
                QVERIFY2(verdict.dangerous() && names(verdict, "os.system"),
                    qPrintable(QStringLiteral("%1 (version %2): %3")
                                   .arg(QLatin1String(descr))
                                   .arg(version)
                                   .arg(QString::fromStdString(verdict.headline))));
            }
        }
        // Plain numbers, and a field merely named with an O, hold no objects: nothing is unpickled.
        for (const char* descr : {"'<f4'", "'|u1'", "[('Obs', '<f8')]", "'<U3'"})
            QCOMPARE(rate(npy(descr, "\x01\x02\x03\x04")).rating, PickleSafety::NoPickle);
        // A header the scanner cannot parse (a \N{...} name) is "cannot verify", never "no pickle".
        const SafetyVerdict unreadable = rate(npy("'\\N{LATIN CAPITAL LETTER O}'", "\x01\x02\x03\x04"));
        QVERIFY(unreadable.dangerous());
        QVERIFY(cannotVerifySays(unreadable, "does not parse"));
        // A version numpy does not read is nothing numpy would unpickle.
        QCOMPARE(rate(npy("'O'", kSystemCall, 4)).rating, PickleSafety::NoPickle);
    }

    void npzMemberOfAnyName()
    {
        // numpy.load of an .npz opens every member that starts with the .npy magic, whatever its name.
        const SafetyVerdict verdict = rate(storedZip({{"weights", npy("'|O'", kSystemCall)}}));
        QVERIFY(verdict.dangerous() && names(verdict, "os.system"));
    }

    void encryptedMemberCannotBeVerified()
    {
        // Ciphertext where data.pkl should be: Python's zipfile decrypts it given the password and
        // unpickles what it cannot be read here. Never "no pickle".
        const std::string cipher = raw("\x13\x9a\x07\xfe\x55\x01\xd3\x88\x42\x10\xee\x7a\x31\x00\x9c");
        const SafetyVerdict verdict
            = rate(storedZip({{"archive/data.pkl", cipher, 0x1}, {"archive/version", "3\n"}}));
        QVERIFY(verdict.dangerous());
        QVERIFY2(cannotVerifySays(verdict, "encrypted"), verdict.headline.c_str());
        // Flag set, bytes plain (torch's miniz refuses it, zipfile wants a password): both said.
        const SafetyVerdict plain = rate(storedZip({{"archive/data.pkl", kSystemCall, 0x1}}));
        QVERIFY(names(plain, "os.system") && cannotVerifySays(plain, "encrypted"));
    }

    void legacyTarWithAnOldHeader()
    {
        // No "ustar" magic: Python's tarfile still reads it (by its checksum), so torch.load does.
        const std::string tar = v7TarMember("pickle", kSystemCall) + std::string(1024, '\0');
        const SafetyVerdict verdict = rate(tar);
        QVERIFY2(verdict.dangerous() && names(verdict, "os.system"), verdict.headline.c_str());
    }

    void legacyTarPicklesBehindStorageBytes()
    {
        // 'storages': count, then (key, location, FloatStorage) + i64 count + bytes, then storage_views.
        // A storage_views pickle broken after its call is still rated where torch reads it.
        const std::string args = raw("\x80\x02(X\x01\x00\x00\x00"
                                     "0X\x03\x00\x00\x00"
                                     "cpuctorch\nFloatStorage\nt.");
        const std::string brokenCall = raw("\x80\x02"
                                           "cos\nsystem\nX\x01\x00\x00\x00x\x85R\xff");
        const std::string storages
            = raw("\x80\x02K\x01.") + args + le64(2) + std::string(8, '\x80') + brokenCall;
        const std::string tar = v7TarMember("storages", storages) + std::string(1024, '\0');
        const SafetyVerdict verdict = rate(tar);
        QVERIFY2(verdict.dangerous() && names(verdict, "os.system"), verdict.headline.c_str());
        // The same member with a benign storage_views is known inert.
        const std::string benign
            = raw("\x80\x02K\x01.") + args + le64(2) + std::string(8, '\x80') + raw("\x80\x02]q\x00.");
        QCOMPARE(
            rate(v7TarMember("storages", benign) + std::string(1024, '\0')).rating, PickleSafety::KnownInert);
    }

    void safetensorsThatIsAlsoAPickle()
    {
        // BINBYTES whose length bytes also make a valid header length (byte 0 'B', u32 n = 40, three
        // zero bytes), so the header is 0x42 + 256 * 40 bytes; the pickle resumes inside the JSON,
        // hops over it with SHORT_BINSTRINGs and calls os.system from the tensor data.
        const std::uint64_t headerLength = 0x42 + 256 * 40;
        const std::string tail = "\"},\"t\":{\"dtype\":\"U8\",\"shape\":["
            + std::to_string(kSystemCall.size()) + "],\"data_offsets\":[0,"
            + std::to_string(kSystemCall.size()) + "]}}";
        std::string header = "{\"__metadata__\":{\"a\":\"" + std::string(15, 'x'); // the pickle resumes here
        std::uint64_t left = headerLength - header.size();
        while (left > 130) {
            const unsigned step = left - 0x72 >= 40 ? 0x70 : 0x40;
            header += 'U' + std::string(1, static_cast<char>(step)) + std::string(step, 'y');
            left -= 2 + step;
        }
        header += 'U' + std::string(1, static_cast<char>(left - 2)) + std::string(left - 2 - tail.size(), 'y')
            + tail;
        QCOMPARE(header.size(), headerLength);
        std::string file = le64(headerLength) + header + kSystemCall;
        file.replace(0, 5, "B" + le32(40));
        const SafetyVerdict verdict = rate(file);
        QVERIFY2(verdict.dangerous() && names(verdict, "os.system"), verdict.headline.c_str());
        // A plain safetensors file still has no pickle.
        const std::string plainHeader = "{\"t\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}";
        QCOMPARE(rate(le64(plainHeader.size()) + plainHeader + "ab").rating, PickleSafety::NoPickle);
    }

    void globalOfARealModuleWithAJunkAttributeWhereLoadersRead()
    {
        // CPython's find_class imports the module before it fails on the attribute: in a pickle
        // torch.load reads (here the second of a legacy stream) that import is code of its own.
        const std::string magic = raw("\x80\x02\x8a\x0al\xfc\x9c"
                                      "F\xf9 j\xa8P\x19.");
        const SafetyVerdict verdict = rate(magic
            + raw("\x80\x02"
                  "cantigravity\nx\x01y\nX\xff\xff\xff\x7f"));
        QVERIFY(verdict.dangerous());
        bool named = false;
        for (const UnsafeCallable& unsafe : verdict.unsafe)
            named |= unsafe.name.starts_with("antigravity.");
        QVERIFY2(named, verdict.headline.c_str());
        // The same in a zip member of any name that opens as a pickle (PROTO): torch.load's
        // pickle_file may point at it.
        const SafetyVerdict member = rate(storedZip({{"archive/data.pkl", raw("\x80\x02}.")},
            {"archive/extra/x",
                raw("\x80\x02"
                    "cantigravity\nx\x01y\nX\xff\xff\xff\x7f")}}));
        QVERIFY2(member.dangerous(), member.headline.c_str());
    }

    void extensionCodeWhereLoadersRead()
    {
        // An EXT opcode in the second pickle of a legacy stream, which then breaks: CPython looks the
        // code up in copyreg's registry before it fails. Never "no pickle".
        const std::string magic = raw("\x80\x02\x8a\x0al\xfc\x9c"
                                      "F\xf9 j\xa8P\x19.");
        const SafetyVerdict verdict = rate(magic + raw("\x80\x02\x82\x07X\xff\xff\xff\x7f"));
        QVERIFY(verdict.dangerous());
        QVERIFY2(names(verdict, "copyreg extension code 7"), verdict.headline.c_str());
    }

    void tarWhoseFirstNameIsAPickle()
    {
        // pickle.load (numpy.load with allow_pickle) reads a tar from byte 0: its first member's name.
        const std::string tar = v7TarMember("cos\nsystem\n(S'x'\ntR.", "") + std::string(1024, '\0');
        const SafetyVerdict verdict = rate(tar);
        QVERIFY2(verdict.dangerous() && names(verdict, "os.system"), verdict.headline.c_str());
    }

    void zipMemberAsEachReaderCutsIt()
    {
        // A deflated data.pkl whose stream breaks after the call: torch's miniz (CRC checks off) hands
        // on what inflated, so that is rated, and the fault is "cannot verify".
        z_stream stream {};
        QCOMPARE(deflateInit2(&stream, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
        std::string deflated(256, '\0');
        stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(kSystemCall.data()));
        stream.avail_in = static_cast<uInt>(kSystemCall.size());
        stream.next_out = reinterpret_cast<Bytef*>(deflated.data());
        stream.avail_out = static_cast<uInt>(deflated.size());
        QCOMPARE(deflate(&stream, Z_SYNC_FLUSH), Z_OK); // the call's bytes, then a broken block
        deflated.resize(deflated.size() - stream.avail_out);
        deflateEnd(&stream);
        deflated += raw("\xff\xff\xff\xff");
        std::string zip = storedZip({{"archive/data.pkl", deflated}});
        zip[8] = 8; // local header: deflated
        zip[static_cast<std::size_t>(zip.find("PK\x01\x02")) + 10] = 8; // central entry: deflated
        const SafetyVerdict broken = rate(zip);
        QVERIFY2(names(broken, "os.system"), broken.headline.c_str());
        QVERIFY(cannotVerifySays(broken, "cannot be unpacked to their end"));

        // A stored data.pkl whose recorded uncompressed size is smaller: Python's zipfile hands on
        // only that many bytes (a pickle cut short), which is rated too.
        std::string cut = storedZip({{"archive/data.pkl", kSystemCall}});
        const std::size_t central = cut.find("PK\x01\x02");
        cut.replace(central + 24, 4, le32(10));
        const SafetyVerdict shortened = rate(cut);
        bool ratedCut = false;
        for (const std::string& pickle : shortened.pickles)
            ratedCut |= pickle.find("its first 10 bytes, as Python's zipfile reads it") != std::string::npos;
        QVERIFY(ratedCut);
        QVERIFY(shortened.dangerous() && names(shortened, "os.system"));
    }

    void zipMemberNamesAsLoadersMatchThem()
    {
        // A broken pickle (nothing named before it fails) in a member torch's miniz finds as
        // data.pkl (case-insensitive) or zipfile names data.pkl (cut at the NUL): it must be one.
        const std::string broken = raw("\x80\x02\xff");
        for (const char* name : {"archive/DATA.PKL", "archive/data.PKL"}) {
            const SafetyVerdict verdict = rate(storedZip({{name, broken}, {"archive/version", "3\n"}}));
            QVERIFY2(verdict.dangerous(), name);
        }
        const SafetyVerdict nul
            = rate(storedZip({{raw("archive/data.pkl\0.txt"), broken}, {"archive/version", "3\n"}}));
        QVERIFY(nul.dangerous());
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
