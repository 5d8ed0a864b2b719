// SPDX-License-Identifier: MIT
// The tolerant zip reader against zips written by torch and by Python's zipfile: what it lists must
// agree with what zipfile reports (tests/data/zip/*.json, written by make_zip_samples.py), every
// truncation must leave the records before the cut readable, and hostile input must not crash it.
//
// Why one file of about 890 lines: one suite for one reader; the sweeps (every truncation, every
// corpus zip, hostile records) share the samples and the comparison with zipfile's view.

#include "core/base/textformat.h"
#include "core/format/inflate.h"
#include "core/format/ziparchive.h"
#include "core/format/zipwriter.h"
#include "core/io/mappedfile.h"
#include "tests/common/testfiles.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <map>
#include <optional>

using namespace ckpt::testing;

using namespace ckpt;

namespace {

const QString kZipSamples = QStringLiteral(CKPT_SOURCE_DIR "/tests/data/zip");
// The real-world corpus lives beside the repository, never inside it; CKPT_CORPUS_DIR overrides.
const QString kCorpus = corpusDir();
const QString kCorpusFiles = corpusFilesDir();
const QString kMaliciousZip = QStringLiteral("mmaitre314__picklescan__tests__data__malicious1.zip");
const QString kMaliciousCentralZip
    = QStringLiteral("mmaitre314__picklescan__tests__data__malicious1_central_directory.zip");

constexpr std::uint64_t kMaxRecord = 64ull << 20;

// One record as Python's zipfile described it.
struct ExpectedEntry {
    std::string name;
    std::uint16_t method = 0;
    std::uint16_t flags = 0;
    std::uint32_t crc32 = 0;
    std::uint64_t compressedSize = 0;
    std::uint64_t uncompressedSize = 0;
    std::uint64_t localHeaderOffset = 0;
    std::uint64_t dataOffset = 0;
    std::uint64_t recordEnd = 0; // where the next record (or the central directory) starts
};

struct Sample {
    QString file;
    QByteArray bytes;
    bool torchWritten = false;
    std::uint64_t archiveStart = 0;
    std::vector<ExpectedEntry> entries;
    QStringList duplicateNames;
};

Sample loadSample(const QString& jsonPath)
{
    const QJsonObject json = QJsonDocument::fromJson(readAll(jsonPath)).object();
    Sample sample;
    sample.file = json.value(QLatin1String("file")).toString();
    sample.bytes = readAll(kZipSamples + QLatin1Char('/') + sample.file);
    sample.torchWritten = json.value(QLatin1String("torch_written")).toBool();
    sample.archiveStart = static_cast<std::uint64_t>(json.value(QLatin1String("archive_start")).toInteger());
    for (const auto& value : json.value(QLatin1String("duplicate_names")).toArray())
        sample.duplicateNames << value.toString();
    for (const auto& value : json.value(QLatin1String("entries")).toArray()) {
        const QJsonObject e = value.toObject();
        const auto number = [&](const char* key) {
            return static_cast<std::uint64_t>(e.value(QLatin1String(key)).toInteger());
        };
        ExpectedEntry entry;
        entry.name = e.value(QLatin1String("name")).toString().toStdString();
        entry.method = static_cast<std::uint16_t>(number("method"));
        entry.flags = static_cast<std::uint16_t>(number("flags"));
        entry.crc32 = static_cast<std::uint32_t>(number("crc32"));
        entry.compressedSize = number("compressed_size");
        entry.uncompressedSize = number("uncompressed_size");
        entry.localHeaderOffset = number("local_header_offset");
        entry.dataOffset = number("data_offset");
        entry.recordEnd = number("record_end");
        sample.entries.push_back(entry);
    }
    return sample;
}

QStringList sampleJsonFiles()
{
    return QDir(kZipSamples).entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
}

ByteBuffer bufferOf(const QByteArray& bytes)
{
    return ByteBuffer(reinterpret_cast<const std::uint8_t*>(bytes.constData()),
        reinterpret_cast<const std::uint8_t*>(bytes.constData()) + bytes.size());
}

ZipArchive openBytes(const QByteArray& bytes, const std::string& name = "in memory")
{
    return ZipArchive::open(MappedFile::fromBuffer(bufferOf(bytes), name));
}

const Finding* findingWithCode(const ZipArchive& archive, FindingCode code)
{
    for (const auto& finding : archive.findings()) {
        if (finding.code == code)
            return &finding;
    }
    return nullptr;
}

QString describeFindings(const ZipArchive& archive)
{
    QString text;
    for (const auto& finding : archive.findings())
        text += QStringLiteral("\n  [%1] %2: %3")
                    .arg(QLatin1String(severityName(finding.severity)),
                        QString::fromStdString(std::string(finding.codeId())),
                        QString::fromStdString(finding.message));
    return text;
}

QString withThousands(std::uint64_t value)
{
    QString digits = QString::number(value);
    for (qsizetype i = digits.size() - 3; i > 0; i -= 3)
        digits.insert(i, QLatin1Char(','));
    return digits;
}

QByteArray toQByteArray(const ByteBuffer& buffer)
{
    return QByteArray(reinterpret_cast<const char*>(buffer.data()), static_cast<qsizetype>(buffer.size()));
}

void putLittleEndian(QByteArray& bytes, qsizetype at, std::uint64_t value, int width)
{
    for (int i = 0; i < width; ++i)
        bytes[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

// The records that a file cut at `cut` must still yield complete: those that end at or before it.
std::vector<const ExpectedEntry*> completeBefore(const std::vector<ExpectedEntry>& entries, std::uint64_t cut)
{
    std::vector<const ExpectedEntry*> complete;
    for (const auto& entry : entries) {
        if (entry.recordEnd <= cut)
            complete.push_back(&entry);
    }
    return complete;
}

// Opens `bytes` cut at `cut` and checks what the recovery found against the truth. Returns an
// empty string when everything holds, else what went wrong (QVERIFY cannot be used in helpers
// that loop thousands of times without drowning the log).
QString checkTruncation(const QByteArray& whole, std::uint64_t cut, const std::vector<ExpectedEntry>& truth)
{
    const ZipArchive archive = openBytes(whole.first(static_cast<qsizetype>(cut)));
    const auto where = QStringLiteral("cut at %1: ").arg(cut);
    if (archive.centralDirectoryFound())
        return where + QStringLiteral("a central directory was found in a truncated file");

    const auto expected = completeBefore(truth, cut);
    std::size_t complete = 0;
    std::size_t incomplete = 0;
    for (std::size_t i = 0; i < archive.entries().size(); ++i) {
        const ZipEntry& entry = archive.entries()[i];
        if (entry.fromCentralDirectory)
            return where + QStringLiteral("entry claims to come from a central directory");
        if (!entry.payloadComplete) {
            ++incomplete;
            if (i + 1 != archive.entries().size())
                return where + QStringLiteral("an incomplete record is not the last one");
            if (!archive.storedPayload(entry) && archive.readPayload(entry, kMaxRecord).hasValue())
                return where + QStringLiteral("an incomplete record could be read");
            continue;
        }
        if (complete >= expected.size())
            return where
                + QStringLiteral("record %1 recovered as complete, but it is cut")
                      .arg(QString::fromStdString(std::string(entry.name())));
        const ExpectedEntry& want = *expected[complete++];
        if (entry.name() != want.name || entry.crc32 != want.crc32
            || entry.compressedSize != want.compressedSize || entry.uncompressedSize != want.uncompressedSize
            || entry.dataOffset != want.dataOffset || entry.localHeaderOffset != want.localHeaderOffset
            || entry.method != want.method)
            return where
                + QStringLiteral("record %1 differs from zipfile's %2")
                      .arg(QString::fromStdString(std::string(entry.name())),
                          QString::fromStdString(want.name));
        const auto payload = archive.readPayload(entry, kMaxRecord);
        if (!payload)
            return where + QString::fromStdString(payload.error().message);
        if (crc32Of(*payload) != want.crc32)
            return where
                + QStringLiteral("record %1 has the wrong bytes")
                      .arg(QString::fromStdString(std::string(entry.name())));
    }
    if (complete != expected.size())
        return where
            + QStringLiteral("%1 complete records recovered, %2 expected%3")
                  .arg(complete)
                  .arg(expected.size())
                  .arg(describeFindings(archive));
    if (incomplete > 1)
        return where + QStringLiteral("more than one incomplete record");

    // The finding says where the file ends, and names the record that is cut once its name is in.
    const Finding* truncated = findingWithCode(archive, FindingCode::ZipTruncated);
    const Finding* notZip = findingWithCode(archive, FindingCode::ZipNotFound);
    if (!truncated && !notZip)
        return where + QStringLiteral("no zip-truncated finding") + describeFindings(archive);
    if (truncated) {
        const QString message = QString::fromStdString(truncated->message);
        if (!message.contains(QStringLiteral("ends at byte ") + withThousands(cut)))
            return where + QStringLiteral("the finding does not say where the file ends: ") + message;
        for (const auto& entry : truth) {
            const bool cutInside
                = entry.localHeaderOffset + 30 + entry.name.size() <= cut && cut < entry.recordEnd;
            if (cutInside && truncated->record != entry.name)
                return where
                    + QStringLiteral("the finding does not name the cut record %1: ")
                          .arg(QString::fromStdString(entry.name))
                    + message;
        }
    }
    return {};
}

// The records of a complete corpus zip, with where each ends (the next local header, or for the last
// record its payload plus, when it has one, torch's 16-byte data descriptor).
std::vector<ExpectedEntry> truthFrom(const ZipArchive& archive)
{
    std::vector<ExpectedEntry> truth;
    for (const auto& entry : archive.entries()) {
        ExpectedEntry expected;
        expected.name = entry.name();
        expected.method = entry.method;
        expected.flags = entry.flags;
        expected.crc32 = entry.crc32;
        expected.compressedSize = entry.compressedSize;
        expected.uncompressedSize = entry.uncompressedSize;
        expected.localHeaderOffset = entry.localHeaderOffset;
        expected.dataOffset = entry.dataOffset;
        truth.push_back(expected);
    }
    std::sort(truth.begin(), truth.end(),
        [](const auto& a, const auto& b) { return a.localHeaderOffset < b.localHeaderOffset; });
    for (std::size_t i = 0; i < truth.size(); ++i) {
        truth[i].recordEnd = i + 1 < truth.size()
            ? truth[i + 1].localHeaderOffset
            : truth[i].dataOffset + truth[i].compressedSize + ((truth[i].flags & 8) ? 16 : 0);
    }
    return truth;
}

} // namespace

class TestZipArchive : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QVERIFY2(!sampleJsonFiles().isEmpty(), "tests/data/zip/*.json are missing"); }

    void samples_data()
    {
        QTest::addColumn<QString>("json");
        for (const QString& json : sampleJsonFiles())
            QTest::newRow(qPrintable(json.chopped(5))) << kZipSamples + QLatin1Char('/') + json;
    }

    // Names, methods, flags, CRCs, sizes and offsets agree with Python's zipfile.
    void matchesZipfile_data() { samples_data(); }
    void matchesZipfile()
    {
        QFETCH(QString, json);
        const Sample sample = loadSample(json);
        QVERIFY2(!sample.bytes.isEmpty(), qPrintable(sample.file));
        auto file = MappedFile::open(QString(kZipSamples + QLatin1Char('/') + sample.file).toStdString());
        QVERIFY(file.hasValue());
        const ZipArchive archive = ZipArchive::open(*file);

        QVERIFY(archive.centralDirectoryFound());
        QCOMPARE(archive.entries().size(), sample.entries.size());
        QCOMPARE(archive.archiveStart(), sample.archiveStart);
        for (std::size_t i = 0; i < sample.entries.size(); ++i) {
            const ZipEntry& got = archive.entries()[i];
            const ExpectedEntry& want = sample.entries[i];
            QCOMPARE(std::string(got.name()), want.name);
            QCOMPARE(got.method, want.method);
            QCOMPARE(got.flags, want.flags);
            QCOMPARE(got.crc32, want.crc32);
            QCOMPARE(got.compressedSize, want.compressedSize);
            QCOMPARE(got.uncompressedSize, want.uncompressedSize);
            QCOMPARE(got.localHeaderOffset, want.localHeaderOffset);
            QCOMPARE(got.dataOffset, want.dataOffset);
            QCOMPARE(std::uint64_t {got.localExtraLength},
                want.dataOffset - want.localHeaderOffset - 30 - want.name.size());
            QVERIFY(got.fromCentralDirectory);
            QVERIFY(got.payloadComplete);
            const ZipEntry* found = archive.find(want.name);
            QVERIFY(found);
            QCOMPARE(std::string(found->name()), want.name);
        }
        QVERIFY(!archive.find("no/such/record"));

        for (const auto& finding : archive.findings())
            QVERIFY2(finding.severity != Severity::Error, finding.message.c_str());
        QCOMPARE(
            findingWithCode(archive, FindingCode::ZipAfterOtherData) != nullptr, sample.archiveStart > 0);
        QCOMPARE(findingWithCode(archive, FindingCode::DuplicateRecordName) != nullptr,
            !sample.duplicateNames.isEmpty());
        for (const QString& name : sample.duplicateNames) {
            // The first record of that name is the one find() returns.
            const auto first = std::find_if(sample.entries.begin(), sample.entries.end(),
                [&](const auto& e) { return e.name == name.toStdString(); });
            QCOMPARE(archive.find(name.toStdString())->localHeaderOffset, first->localHeaderOffset);
        }
    }

    // Every payload, stored or deflated, has the bytes whose CRC zipfile computed.
    void payloadsMatchTheirCrc_data() { samples_data(); }
    void payloadsMatchTheirCrc()
    {
        QFETCH(QString, json);
        const Sample sample = loadSample(json);
        const ZipArchive archive = openBytes(sample.bytes);
        QCOMPARE(archive.entries().size(), sample.entries.size());
        for (const auto& entry : archive.entries()) {
            const auto payload = archive.readPayload(entry, kMaxRecord);
            QVERIFY2(payload.hasValue(), payload.hasValue() ? "" : payload.error().message.c_str());
            QCOMPARE(payload->size(), entry.uncompressedSize);
            QCOMPARE(crc32Of(*payload), entry.crc32);
            QVERIFY(!archive.verifyCrc(entry, kMaxRecord));
            const auto stored = archive.storedPayload(entry);
            QCOMPARE(stored.has_value(), entry.method == 0);
            if (stored)
                QVERIFY(std::equal(stored->begin(), stored->end(), payload->begin(), payload->end()));
        }
    }

    // torch pads every local header so each payload starts on a multiple of 64 from the archive's
    // start, writes 0x0808 flags (0x0800 and no descriptor for empty records) and an FB extra field.
    void torchRecordsAreAligned_data()
    {
        QTest::addColumn<QString>("json");
        for (const QString& json : sampleJsonFiles()) {
            if (loadSample(kZipSamples + QLatin1Char('/') + json).torchWritten)
                QTest::newRow(qPrintable(json.chopped(5))) << kZipSamples + QLatin1Char('/') + json;
        }
    }
    void torchRecordsAreAligned()
    {
        QFETCH(QString, json);
        const Sample sample = loadSample(json);
        const ZipArchive archive = openBytes(sample.bytes);
        QVERIFY(archive.hasEntries());
        bool sawEmpty = false;
        for (const auto& entry : archive.entries()) {
            QVERIFY2(
                (entry.dataOffset - archive.archiveStart()) % 64 == 0, std::string(entry.name()).c_str());
            QCOMPARE(entry.flags, std::uint16_t(entry.compressedSize == 0 ? 0x0800 : 0x0808));
            sawEmpty = sawEmpty || entry.compressedSize == 0;
            const auto extraId = readLittleEndian<std::uint16_t>(
                archive.file()->bytes(), entry.localHeaderOffset + 30 + entry.name().size());
            QCOMPARE(extraId.value_or(0), std::uint16_t {0x4246}); // "FB"
        }
        if (sample.file.contains(QLatin1String("empty")))
            QVERIFY(sawEmpty);
    }

    // TorchScript code records are deflated; they and zipfile's deflated records inflate to the text
    // that was written.
    void deflatedRecordsInflate()
    {
        const Sample script = loadSample(kZipSamples + QStringLiteral("/torchscript_module.pt.json"));
        const ZipArchive archive = openBytes(script.bytes);
        int deflated = 0;
        for (const auto& entry : archive.entries()) {
            if (entry.method != 8)
                continue;
            ++deflated;
            QVERIFY(entry.uncompressedSize > entry.compressedSize);
            QVERIFY(entry.compressedSize > 0);
        }
        QVERIFY2(deflated >= 2, "torch.jit.save should deflate the code and debug_pkl records");
        const ZipEntry* code = archive.find("torchscript_module/code/__torch__.py");
        QVERIFY(code);
        QCOMPARE(code->method, std::uint16_t {8});
        const auto text = archive.readPayload(*code, kMaxRecord);
        QVERIFY(text.hasValue());
        QVERIFY(toQByteArray(*text).contains("def forward"));
        QVERIFY(!archive.storedPayload(*code));

        for (const QString& name :
            {QStringLiteral("zipfile_force_zip64.zip.json"), QStringLiteral("zipfile_streamed.zip.json"),
                QStringLiteral("zipfile_zip64_everywhere.zip.json"),
                QStringLiteral("zipfile_appended.zip.json")}) {
            const ZipArchive zip = openBytes(loadSample(kZipSamples + QLatin1Char('/') + name).bytes);
            const ZipEntry* textEntry = zip.find("deflated/text.txt");
            QVERIFY2(textEntry, qPrintable(name));
            QCOMPARE(textEntry->method, std::uint16_t {8});
            const auto inflated = zip.readPayload(*textEntry, kMaxRecord);
            QVERIFY(inflated.hasValue());
            const QByteArray content = toQByteArray(*inflated);
            QCOMPARE(content.count('\n'), 40);
            QVERIFY(content.startsWith("line 000: the quick brown fox"));
            QVERIFY(content.endsWith("line 039: the quick brown fox jumps over the lazy dog\n"));
            const ZipEntry* empty = zip.find("deflated/empty.bin");
            QVERIFY(empty);
            QCOMPARE(zip.readPayload(*empty, kMaxRecord)->size(), std::size_t {0});
        }
    }

    // A cut at every offset: nothing crashes, the records that end before the cut come back complete
    // and correct, at most the one being cut comes back incomplete, and a finding says where the
    // file ends.
    void truncationAtEveryOffset_data() { samples_data(); }
    void truncationAtEveryOffset()
    {
        QFETCH(QString, json);
        const Sample sample = loadSample(json);
        QVERIFY(!sample.bytes.isEmpty());
        for (std::uint64_t cut = 0; cut < static_cast<std::uint64_t>(sample.bytes.size()); ++cut) {
            const QString problem = checkTruncation(sample.bytes, cut, sample.entries);
            QVERIFY2(problem.isEmpty(), qPrintable(problem));
        }
    }

    // The recovered entries say where the file was cut, in the words the brief promises.
    void truncationMessage()
    {
        const Sample sample = loadSample(kZipSamples + QStringLiteral("/torch_state_dict.pt.json"));
        const ExpectedEntry& third = sample.entries.at(2);
        const std::uint64_t cut = third.dataOffset + 3;
        const ZipArchive archive = openBytes(sample.bytes.first(static_cast<qsizetype>(cut)));
        const Finding* finding = findingWithCode(archive, FindingCode::ZipTruncated);
        QVERIFY(finding);
        QCOMPARE(finding->severity, Severity::Error);
        QCOMPARE(finding->record, third.name);
        QCOMPARE(finding->offset, std::optional<std::uint64_t>(third.localHeaderOffset));
        const QString message = QString::fromStdString(finding->message);
        QVERIFY2(message.contains(QStringLiteral("the file ends at byte ") + withThousands(cut)),
            qPrintable(message));
        QVERIFY2(message.contains(QString::fromStdString(third.name)), qPrintable(message));
        QVERIFY2(message.contains(QLatin1String("truncated")), qPrintable(message));
        QVERIFY2(
            message.contains(QLatin1String("The 2 records before it are complete")), qPrintable(message));
        QVERIFY(findingWithCode(archive, FindingCode::ZipEndRecordMissing));
        QCOMPARE(archive.entries().size(), std::size_t {3});
        QVERIFY(!archive.entries().back().payloadComplete);
        QCOMPARE(std::string(archive.entries().back().name()), third.name);
    }

    // With the end record destroyed (its signature overwritten), or the central directory's recorded
    // offset pointing nowhere, the local headers still give every record.
    void recoveryWithoutCentralDirectory_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<bool>("damageOffset");
        for (const QString& json : sampleJsonFiles()) {
            QTest::addRow("%s, end record gone", qPrintable(json.chopped(5)))
                << kZipSamples + QLatin1Char('/') + json << false;
            QTest::addRow("%s, offset damaged", qPrintable(json.chopped(5)))
                << kZipSamples + QLatin1Char('/') + json << true;
        }
    }
    void recoveryWithoutCentralDirectory()
    {
        QFETCH(QString, json);
        QFETCH(bool, damageOffset);
        const Sample sample = loadSample(json);
        QByteArray bytes = sample.bytes;
        const qsizetype end = bytes.lastIndexOf(QByteArray("PK\x05\x06", 4));
        QVERIFY(end > 0);
        if (damageOffset) {
            putLittleEndian(bytes, end + 16, 0x7ffffff0, 4);
            const qsizetype zip64End = bytes.lastIndexOf(QByteArray("PK\x06\x06", 4));
            if (zip64End > 0)
                putLittleEndian(bytes, zip64End + 48, 0x7ffffffffff0ull, 8);
            // The size too, or the reader finds the directory right before the end records.
            putLittleEndian(bytes, end + 12, 3, 4);
            if (zip64End > 0)
                putLittleEndian(bytes, zip64End + 40, 3, 8);
        } else {
            bytes[end + 1] = 'X';
        }
        const ZipArchive archive = openBytes(bytes);
        QVERIFY(findingWithCode(
            archive, damageOffset ? FindingCode::CentralDirectoryMissing : FindingCode::ZipEndRecordMissing));
        QCOMPARE(archive.entries().size(), sample.entries.size());
        for (std::size_t i = 0; i < sample.entries.size(); ++i) {
            const ZipEntry& got = archive.entries()[i];
            const ExpectedEntry* want = nullptr;
            for (const auto& candidate : sample.entries) {
                if (candidate.localHeaderOffset == got.localHeaderOffset)
                    want = &candidate;
            }
            QVERIFY(want);
            QCOMPARE(std::string(got.name()), want->name);
            QCOMPARE(got.crc32, want->crc32);
            QCOMPARE(got.compressedSize, want->compressedSize);
            QCOMPARE(got.uncompressedSize, want->uncompressedSize);
            QCOMPARE(got.dataOffset, want->dataOffset);
            QVERIFY(!got.fromCentralDirectory);
            QVERIFY(got.payloadComplete);
            QVERIFY(!archive.verifyCrc(got, kMaxRecord));
        }
        if (damageOffset)
            QVERIFY(!findingWithCode(archive, FindingCode::ZipTruncated));
    }

    void crc32KnownValue()
    {
        const QByteArray check("123456789");
        QCOMPARE(crc32Of(ByteView(reinterpret_cast<const std::uint8_t*>(check.constData()), 9)), 0xcbf43926u);
        QCOMPARE(crc32Of({}), 0u);
    }

    // inflateRaw on a real deflated record, and on damaged copies of it.
    void inflateLimitsAndErrors()
    {
        const Sample script = loadSample(kZipSamples + QStringLiteral("/torchscript_module.pt.json"));
        const ZipArchive archive = openBytes(script.bytes);
        const ZipEntry* code = archive.find("torchscript_module/code/__torch__.py");
        QVERIFY(code);
        const ByteView compressed = archive.file()->bytes().subspan(code->dataOffset, code->compressedSize);

        QVERIFY(inflateRaw(compressed, code->uncompressedSize).hasValue());

        auto tooSmall = inflateRaw(compressed, code->uncompressedSize - 1);
        QVERIFY(!tooSmall.hasValue());
        QVERIFY2(tooSmall.error().message.find("more than") != std::string::npos,
            tooSmall.error().message.c_str());

        auto tooLarge = inflateRaw(compressed, code->uncompressedSize + 1);
        QVERIFY(!tooLarge.hasValue());
        QVERIFY2(tooLarge.error().message.find("ends after") != std::string::npos,
            tooLarge.error().message.c_str());

        auto cut = inflateRaw(compressed.first(compressed.size() / 2), code->uncompressedSize);
        QVERIFY(!cut.hasValue());
        QVERIFY2(cut.error().message.find("cut off") != std::string::npos, cut.error().message.c_str());

        // A size no deflate stream of this length can reach is refused before anything is allocated.
        auto absurd = inflateRaw(compressed, std::uint64_t {1} << 50);
        QVERIFY(!absurd.hasValue());
        QVERIFY2(absurd.error().message.find("recorded size is wrong") != std::string::npos,
            absurd.error().message.c_str());

        QVERIFY(!inflateRaw({}, 10).hasValue());
        QVERIFY(!inflateRaw({}, 0).hasValue());

        // Damage anywhere must give an error or, by chance, different bytes, never a crash.
        QRandomGenerator random(7);
        ByteBuffer damaged(compressed.begin(), compressed.end());
        for (int round = 0; round < 500; ++round) {
            ByteBuffer copy = damaged;
            copy[random.bounded(static_cast<quint32>(copy.size()))]
                ^= static_cast<std::uint8_t>(1 + random.bounded(255));
            const auto result = inflateRaw(copy, code->uncompressedSize);
            if (result)
                QCOMPARE(result->size(), code->uncompressedSize);
        }
    }

    // readPayload refuses records over the caller's limit, and lying sizes.
    void payloadLimits()
    {
        const Sample script = loadSample(kZipSamples + QStringLiteral("/torchscript_module.pt.json"));
        const ZipArchive archive = openBytes(script.bytes);
        const ZipEntry* code = archive.find("torchscript_module/code/__torch__.py");
        QVERIFY(code);
        auto limited = archive.readPayload(*code, code->uncompressedSize - 1);
        QVERIFY(!limited.hasValue());
        QCOMPARE(limited.error().record, std::string(code->name()));
        QVERIFY(limited.error().message.find(code->name()) != std::string::npos);

        ZipEntry lying = *code;
        lying.uncompressedSize = 0x7fffffff;
        auto refused = archive.readPayload(lying, std::uint64_t {1} << 40);
        QVERIFY(!refused.hasValue());
        QVERIFY(archive.verifyCrc(lying, std::uint64_t {1} << 40).has_value());
    }

    // One damaged byte in a stored tensor: verifyCrc says so (torch itself would load it silently).
    void verifyCrcDetectsDamage()
    {
        const Sample sample = loadSample(kZipSamples + QStringLiteral("/torch_state_dict.pt.json"));
        QByteArray bytes = sample.bytes;
        const ExpectedEntry& tensor = sample.entries.at(1);
        QVERIFY(tensor.compressedSize > 0);
        bytes[static_cast<qsizetype>(tensor.dataOffset)] ^= 0x40;
        const ZipArchive archive = openBytes(bytes);
        const ZipEntry* entry = archive.find(std::string(tensor.name));
        QVERIFY(entry);
        const auto finding = archive.verifyCrc(*entry, kMaxRecord);
        QVERIFY(finding.has_value());
        QVERIFY(finding->code == FindingCode::CrcMismatch);
        QCOMPARE(finding->record, tensor.name);
    }

    // A central directory entry whose size points past the end of the file.
    void recordPastTheEnd()
    {
        const Sample sample = loadSample(kZipSamples + QStringLiteral("/torch_buffer.pt.json"));
        QByteArray bytes = sample.bytes;
        const qsizetype central = bytes.indexOf(QByteArray("PK\x01\x02", 4));
        QVERIFY(central > 0);
        putLittleEndian(bytes, central + 20, 1'000'000, 4); // compressed size of the first record
        const ZipArchive archive = openBytes(bytes);
        const Finding* finding = findingWithCode(archive, FindingCode::RecordTruncated);
        QVERIFY(finding);
        const QString message = QString::fromStdString(finding->message);
        const std::uint64_t end = sample.entries[0].dataOffset + 1'000'000;
        QVERIFY2(message.contains(QStringLiteral("ends at byte ") + withThousands(end)), qPrintable(message));
        QVERIFY2(
            message.contains(QStringLiteral("the file is only ")
                + withThousands(static_cast<std::uint64_t>(bytes.size())) + QStringLiteral(" bytes long")),
            qPrintable(message));
        QVERIFY(!archive.entries().front().payloadComplete);
        QVERIFY(!archive.readPayload(archive.entries().front(), kMaxRecord).hasValue());
        QVERIFY(!archive.storedPayload(archive.entries().front()));
    }

    // Counts and sizes from a hostile end record: absurd values are refused, what is there is read.
    void absurdCounts()
    {
        const Sample sample = loadSample(kZipSamples + QStringLiteral("/torch_state_dict.pt.json"));
        QByteArray bytes = sample.bytes;
        const qsizetype zip64End = bytes.lastIndexOf(QByteArray("PK\x06\x06", 4));
        const qsizetype end = bytes.lastIndexOf(QByteArray("PK\x05\x06", 4));
        QVERIFY(zip64End > 0 && end > zip64End);
        putLittleEndian(bytes, zip64End + 24, 0x4000000000000000ull, 8);
        putLittleEndian(bytes, zip64End + 32, 0x4000000000000000ull, 8);
        putLittleEndian(bytes, end + 8, 0xffff, 2);
        putLittleEndian(bytes, end + 10, 0xffff, 2);
        const ZipArchive archive = openBytes(bytes);
        QVERIFY2(findingWithCode(archive, FindingCode::ZipEntryCountImplausible),
            qPrintable(describeFindings(archive)));
        QVERIFY(!findingWithCode(archive, FindingCode::CentralDirectoryTruncated));
        QVERIFY(archive.centralDirectoryFound());
        QCOMPARE(archive.entries().size(), sample.entries.size());
        for (const auto& entry : archive.entries()) {
            QVERIFY(entry.payloadComplete);
            QVERIFY(entry.fromCentralDirectory);
        }
    }

    // A central directory damaged after its first entry: that entry comes from it, the others from
    // their local headers, each exactly once.
    void partialCentralDirectory()
    {
        const Sample sample = loadSample(kZipSamples + QStringLiteral("/torch_state_dict.pt.json"));
        QByteArray bytes = sample.bytes;
        const qsizetype first = bytes.indexOf(QByteArray("PK\x01\x02", 4));
        const qsizetype second = bytes.indexOf(QByteArray("PK\x01\x02", 4), first + 4);
        QVERIFY(first > 0 && second > first);
        bytes[second + 2] = 'x';
        const ZipArchive archive = openBytes(bytes);
        QVERIFY(archive.centralDirectoryFound());
        QVERIFY(findingWithCode(archive, FindingCode::CentralDirectoryTruncated));
        QCOMPARE(archive.entries().size(), sample.entries.size());
        for (std::size_t i = 0; i < sample.entries.size(); ++i) {
            const ZipEntry& entry = archive.entries()[i];
            QCOMPARE(std::string(entry.name()), sample.entries[i].name);
            QCOMPARE(entry.dataOffset, sample.entries[i].dataOffset);
            QCOMPARE(entry.crc32, sample.entries[i].crc32);
            QCOMPARE(entry.fromCentralDirectory, i == 0);
            QVERIFY(!archive.verifyCrc(entry, kMaxRecord));
        }
    }

    // A central size of 0xFFFFFFFF with no ZIP64 extra field to resolve it.
    void zip64MarkerWithoutExtra()
    {
        const Sample sample = loadSample(kZipSamples + QStringLiteral("/torch_buffer.pt.json"));
        QByteArray bytes = sample.bytes;
        const qsizetype central = bytes.indexOf(QByteArray("PK\x01\x02", 4));
        putLittleEndian(bytes, central + 20, 0xffffffff, 4);
        putLittleEndian(bytes, central + 24, 0xffffffff, 4);
        const ZipArchive archive = openBytes(bytes);
        QVERIFY(findingWithCode(archive, FindingCode::Zip64ExtraMissing));
        QVERIFY(!archive.entries().front().payloadComplete);
        QCOMPARE(archive.entries().size(), sample.entries.size());
    }

    // A million-tensor checkpoint holds a million records: each entry is a view of its name plus
    // packed fields, 56 bytes where a copied name and padding made 80 (and a heap block per name
    // longer than 15 bytes). The names lie end to end in one block of the archive's own, not in the
    // file: the reader gives the directory's pages back once it is parsed, and a look-up that read
    // the name there made them resident again (issue 28).
    void entriesAreCompactViewsIntoOneBlockOfNames()
    {
        QCOMPARE(sizeof(ZipEntry), std::size_t {56});
        const auto namesInOneBlockOutsideTheFile = [](const ZipArchive& archive) {
            const ByteView bytes = archive.file()->bytes();
            const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data());
            const char* next = nullptr;
            for (const ZipEntry& entry : archive.entries()) {
                const auto name = reinterpret_cast<std::uintptr_t>(entry.name().data());
                if (name + entry.name().size() > begin && name < begin + bytes.size())
                    return false;
                if (next && entry.name().data() != next)
                    return false;
                next = entry.name().data() + entry.name().size();
            }
            return true;
        };
        const Sample sample = loadSample(kZipSamples + QStringLiteral("/torch_state_dict.pt.json"));
        std::optional<ZipArchive> listed = openBytes(sample.bytes);
        QVERIFY(listed->centralDirectoryFound());
        QCOMPARE(listed->entries().size(), sample.entries.size());
        QVERIFY(namesInOneBlockOutsideTheFile(*listed));
        for (std::size_t i = 0; i < sample.entries.size(); ++i)
            QCOMPARE(std::string(listed->entries()[i].name()), sample.entries[i].name);
        // Recovered from the local headers: the same.
        const ExpectedEntry& last = sample.entries.back();
        const ZipArchive recovered = openBytes(sample.bytes.first(static_cast<qsizetype>(last.recordEnd)));
        QVERIFY(!recovered.centralDirectoryFound());
        QCOMPARE(recovered.entries().size(), sample.entries.size());
        QVERIFY(namesInOneBlockOutsideTheFile(recovered));
        for (std::size_t i = 0; i < sample.entries.size(); ++i) {
            const ZipEntry& entry = recovered.entries()[i];
            QVERIFY(!entry.fromCentralDirectory);
            QCOMPARE(std::string(entry.name()), sample.entries[i].name);
        }
        // A moved archive keeps its views (the block moves with it), and a copy shares the block
        // with the original, so it reads its names after the original is gone (ASan would see it).
        const ZipArchive copy = *listed;
        listed.reset();
        QCOMPARE(std::string(copy.entries().back().name()), sample.entries.back().name);
        ZipArchive moved = openBytes(sample.bytes);
        const ZipArchive target = std::move(moved);
        QCOMPARE(std::string(target.entries().front().name()), sample.entries.front().name);
        QVERIFY(target.find(sample.entries.back().name));
        QVERIFY(copy.find(sample.entries.back().name));
    }

    // Names that several records carry: one finding per name, in name order, each with how many
    // carry it and the first two local headers; look-ups find the first. The archive is written by
    // this project's zip writer (which, like zipfile, writes whatever names it is given): a
    // malformed input on purpose.
    void duplicateNamesAreCountedInNameOrder()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("duplicates.zip"));
        QFile out(path);
        QVERIFY(out.open(QIODevice::WriteOnly));
        TorchZipWriter writer(out.handle());
        const std::vector<std::string> names = {"x/b", "x/a", "x/b", "x/a", "x/a", "x/c"};
        for (std::size_t i = 0; i < names.size(); ++i) {
            const std::string payload = std::to_string(i);
            QVERIFY(!writer.addRecord(
                names[i], ByteView(reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size())));
        }
        QVERIFY(!writer.finish());
        out.close();
        auto file = MappedFile::open(path.toStdString());
        QVERIFY(file);
        const ZipArchive archive = ZipArchive::open(*file);
        QCOMPARE(archive.entries().size(), names.size());
        std::vector<const Finding*> duplicates;
        for (const Finding& finding : archive.findings())
            if (finding.code == FindingCode::DuplicateRecordName)
                duplicates.push_back(&finding);
        QCOMPARE(duplicates.size(), std::size_t {2});
        const auto& entries = archive.entries();
        QCOMPARE(duplicates[0]->record, std::string("x/a"));
        QCOMPARE(duplicates[0]->offset, std::optional<std::uint64_t>(entries[3].localHeaderOffset));
        QCOMPARE(duplicates[0]->message,
            "the name x/a appears 3 times (local headers at bytes "
                + formatThousands(entries[1].localHeaderOffset) + " and "
                + formatThousands(entries[3].localHeaderOffset)
                + "); this tool uses the first, other zip readers may use the last: the file is ambiguous "
                  "and "
                  "may be crafted");
        QCOMPARE(duplicates[1]->record, std::string("x/b"));
        QCOMPARE(duplicates[1]->offset, std::optional<std::uint64_t>(entries[2].localHeaderOffset));
        QVERIFY2(duplicates[1]->message.find("appears 2 times (local headers at bytes "
                     + formatThousands(entries[0].localHeaderOffset) + " and "
                     + formatThousands(entries[2].localHeaderOffset) + ")")
                != std::string::npos,
            duplicates[1]->message.c_str());
        QCOMPARE(archive.find("x/a"), &entries[1]);
        QCOMPARE(archive.find("x/b"), &entries[0]);
        QCOMPARE(archive.find("x/c"), &entries[5]);
    }

    void nullFile()
    {
        const ZipArchive archive = ZipArchive::open(nullptr);
        QVERIFY(!archive.hasEntries());
        QVERIFY(!archive.findings().empty());
    }

    void notAZip_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addRow("empty") << QByteArray();
        QTest::addRow("text") << QByteArray("model weights will be uploaded here later\n");
        QTest::addRow("legacy torch")
            << readAll(QStringLiteral(CKPT_SOURCE_DIR "/tests/data/sniff/legacy_protocol2.pt"));
        QTest::addRow("tar") << readAll(
            QStringLiteral(CKPT_SOURCE_DIR "/tests/data/sniff/torch_tar_layout.tar"));
    }
    void notAZip()
    {
        QFETCH(QByteArray, bytes);
        const ZipArchive archive = openBytes(bytes);
        QVERIFY(!archive.hasEntries());
        QVERIFY(!archive.centralDirectoryFound());
        QVERIFY(findingWithCode(archive, FindingCode::ZipNotFound));
    }

    void randomBytesNeverCrash()
    {
        QRandomGenerator random(1234);
        const QByteArray signatures[]
            = {QByteArray("PK\x03\x04", 4), QByteArray("PK\x01\x02", 4), QByteArray("PK\x05\x06", 4),
                QByteArray("PK\x06\x06", 4), QByteArray("PK\x06\x07", 4), QByteArray("PK\x07\x08", 4)};
        for (int round = 0; round < 3000; ++round) {
            QByteArray bytes(static_cast<qsizetype>(random.bounded(0, 600)), '\0');
            for (auto& byte : bytes)
                byte = static_cast<char>(random.bounded(256));
            // Sprinkle zip signatures, so the parser gets past its first checks.
            const int sprinkles = random.bounded(0, 12);
            for (int i = 0; i < sprinkles && bytes.size() > 4; ++i) {
                const auto at = random.bounded(static_cast<int>(bytes.size() - 3));
                bytes.replace(at, 4, signatures[random.bounded(6)]);
            }
            const ZipArchive archive = openBytes(bytes);
            for (const auto& entry : archive.entries()) {
                (void)archive.readPayload(entry, 1 << 20);
                (void)archive.verifyCrc(entry, 1 << 20);
                (void)archive.storedPayload(entry);
            }
        }
    }

    // Real files with a few bytes changed: nothing crashes, nothing reads outside the file.
    void mutatedSamplesNeverCrash_data() { samples_data(); }
    void mutatedSamplesNeverCrash()
    {
        QFETCH(QString, json);
        const Sample sample = loadSample(json);
        QRandomGenerator random(static_cast<quint32>(qHash(sample.file)));
        for (int round = 0; round < 400; ++round) {
            QByteArray bytes = sample.bytes;
            const int changes = random.bounded(1, 9);
            for (int i = 0; i < changes; ++i) {
                const auto at = random.bounded(static_cast<int>(bytes.size()));
                bytes[at] = static_cast<char>(round % 3 == 0 ? 0xff : random.bounded(256));
            }
            const ZipArchive archive = openBytes(bytes);
            for (const auto& entry : archive.entries()) {
                const auto payload = archive.readPayload(entry, 1 << 20);
                if (payload && entry.method == 0)
                    QCOMPARE(payload->size(), entry.compressedSize);
                (void)archive.verifyCrc(entry, 1 << 20);
            }
        }
    }

    // ---- The real-world corpus ---------------------------------------------------------------

    void corpusZips_data()
    {
        QTest::addColumn<QString>("path");
        if (!QDir(kCorpusFiles).exists())
            QSKIP("the shared corpus (../shared/corpus/files) is not available here");
        for (const QString& name : QDir(kCorpusFiles).entryList(QDir::Files, QDir::Name)) {
            if (readAll(kCorpusFiles + QLatin1Char('/') + name).startsWith("PK\x03\x04"))
                QTest::newRow(qPrintable(name)) << kCorpusFiles + QLatin1Char('/') + name;
        }
    }

    // Every zip of the corpus opens through its central directory with every payload intact.
    void corpusZips()
    {
        QFETCH(QString, path);
        auto file = MappedFile::open(path.toStdString());
        QVERIFY(file.hasValue());
        const ZipArchive archive = ZipArchive::open(*file);
        QVERIFY(archive.centralDirectoryFound());
        QVERIFY(archive.hasEntries());
        const bool hostile = path.contains(QLatin1String("malicious"));
        for (const auto& entry : archive.entries()) {
            QVERIFY(entry.payloadComplete);
            const auto problem = archive.verifyCrc(entry, kMaxRecord);
            QVERIFY2(!problem, problem ? problem->message.c_str() : "");
            if (!hostile)
                QVERIFY2(entry.dataOffset % 64 == 0, std::string(entry.name()).c_str());
        }
        if (!hostile) {
            for (const auto& finding : archive.findings())
                QVERIFY2(finding.severity != Severity::Error, finding.message.c_str());
        }
    }

    // The two hostile zips of picklescan's tests: one names its pickle data.pkl with no archive
    // prefix, the other names it differently in its local header. Neither is ever unpickled here.
    void maliciousZips()
    {
        if (!QDir(kCorpusFiles).exists())
            QSKIP("the shared corpus (../shared/corpus/files) is not available here");
        {
            auto file
                = MappedFile::open(QString(kCorpusFiles + QLatin1Char('/') + kMaliciousZip).toStdString());
            QVERIFY(file.hasValue());
            const ZipArchive archive = ZipArchive::open(*file);
            QCOMPARE(archive.entries().size(), std::size_t {1});
            QVERIFY(archive.find("data.pkl"));
            QVERIFY(!findingWithCode(archive, FindingCode::LocalNameMismatch));
        }
        auto file
            = MappedFile::open(QString(kCorpusFiles + QLatin1Char('/') + kMaliciousCentralZip).toStdString());
        QVERIFY(file.hasValue());
        const ZipArchive archive = ZipArchive::open(*file);
        QCOMPARE(archive.entries().size(), std::size_t {1});
        const ZipEntry* entry = archive.find("data.pkl");
        QVERIFY(entry);
        const Finding* mismatch = findingWithCode(archive, FindingCode::LocalNameMismatch);
        QVERIFY(mismatch);
        QCOMPARE(mismatch->severity, Severity::Error);
        QCOMPARE(mismatch->record, std::string("data.pkl"));
        QCOMPARE(mismatch->offset, std::optional<std::uint64_t>(0));
        const QString message = QString::fromStdString(mismatch->message);
        QVERIFY2(message.contains(QLatin1String("\"datap.kl\""))
                && message.contains(QLatin1String("\"data.pkl\"")),
            qPrintable(message));
        // Its bytes can still be looked at (as bytes) by whoever wants to show them.
        QVERIFY(archive.storedPayload(*entry).has_value());
    }

    // Corpus zips cut at many offsets (every offset for small files, and around every record
    // boundary plus a spread of others for large ones).
    void corpusTruncation_data() { corpusZips_data(); }
    void corpusTruncation()
    {
        QFETCH(QString, path);
        const QByteArray whole = readAll(path);
        const ZipArchive complete = openBytes(whole);
        if (findingWithCode(complete, FindingCode::LocalNameMismatch)) {
            // Its local headers name the records differently from its central directory, so a recovery
            // from local headers cannot agree with the central directory: only check that no cut crashes.
            for (qsizetype cut = 0; cut < whole.size(); ++cut) {
                const ZipArchive archive = openBytes(whole.first(cut));
                QVERIFY(!archive.centralDirectoryFound());
            }
            return;
        }
        const auto truth = truthFrom(complete);
        QVERIFY(!truth.empty());
        std::vector<std::uint64_t> cuts;
        const auto size = static_cast<std::uint64_t>(whole.size());
        if (size <= 8192) {
            for (std::uint64_t cut = 0; cut < size; ++cut)
                cuts.push_back(cut);
        } else {
            for (const auto& entry : truth) {
                for (const std::uint64_t at : {entry.localHeaderOffset, entry.dataOffset, entry.recordEnd}) {
                    for (std::uint64_t delta = 0; delta < 40; ++delta) {
                        if (at + delta < size)
                            cuts.push_back(at + delta);
                        if (at >= delta)
                            cuts.push_back(at - delta);
                    }
                }
            }
            QRandomGenerator random(static_cast<quint32>(size));
            for (int i = 0; i < 200; ++i)
                cuts.push_back(static_cast<std::uint64_t>(random.bounded(static_cast<int>(size))));
            std::sort(cuts.begin(), cuts.end());
            cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
            if (cuts.size() > 3000) {
                std::vector<std::uint64_t> thinned;
                for (std::size_t i = 0; i < cuts.size(); i += cuts.size() / 3000 + 1)
                    thinned.push_back(cuts[i]);
                cuts.swap(thinned);
            }
        }
        for (const std::uint64_t cut : cuts) {
            const QString problem = checkTruncation(whole, cut, truth);
            QVERIFY2(problem.isEmpty(), qPrintable(problem));
        }
    }
};

QTEST_GUILESS_MAIN(TestZipArchive)
#include "tst_ziparchive.moc"
