// SPDX-License-Identifier: MIT
// TorchZipWriter against zips written by real torch: every torch.save / torch.jit.save fixture
// (torch 1.13 and 2.14) rebuilt record by record must come out byte-identical, which proves the
// framing (local headers, FB padding, data descriptors, ZIP64 rules, central directory, end
// records). Archives it writes must pass Python's zipfile (CRCs included) and load in real torch,
// including torch 2.14's computed-offset path; I/O errors, cancels and ZIP64 sizes are covered too.
//
// Why one file of about 960 lines: one suite for one writer; byte-identical rebuilds, zipfile and torch
// checks and the fault cases (ENOSPC, cancel, ZIP64) share the rebuild helpers at the top.

#include "core/format/inflate.h"
#include "core/format/ziparchive.h"
#include "core/format/zipwriter.h"
#include "core/io/mappedfile.h"
#include "tests/common/childprocess.h"
#include "tests/common/testfiles.h"

#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <functional>
#include <map>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace ckpt::testing;

using namespace ckpt;

namespace {

const QString kFixtures = QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures");

class FileDescriptor {
public:
    explicit FileDescriptor(int fd = -1)
        : m_fd(fd)
    { }
    ~FileDescriptor()
    {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    int get() const { return m_fd; }

private:
    int m_fd;
};

int openOutput(const QString& path)
{
    return ::open(QFile::encodeName(path).constData(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

int openInput(const QString& path)
{
    return ::open(QFile::encodeName(path).constData(), O_RDONLY | O_CLOEXEC);
}

QString describe(const Status& status)
{
    if (!status)
        return QStringLiteral("ok");
    return QString::fromStdString(status->message);
}

ByteView bytesOf(const QByteArray& data)
{
    return {reinterpret_cast<const std::uint8_t*>(data.constData()), static_cast<std::size_t>(data.size())};
}

ByteView bytesOf(std::string_view text)
{
    return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

std::uint64_t read64(const QByteArray& bytes, qsizetype at)
{
    std::uint64_t value = 0;
    for (int i = 0; i < 8; ++i)
        value |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(bytes[at + i])) << (8 * i);
    return value;
}

std::uint32_t read32(const QByteArray& bytes, qsizetype at)
{
    return static_cast<std::uint32_t>(read64(bytes.mid(at, 4) + QByteArray(4, '\0'), 0));
}

std::uint16_t read16(const QByteArray& bytes, qsizetype at)
{
    return static_cast<std::uint16_t>(read32(bytes.mid(at, 2) + QByteArray(2, '\0'), 0));
}

QByteArray preadBytes(int fd, std::uint64_t offset, std::size_t size)
{
    QByteArray out(static_cast<qsizetype>(size), '\0');
    const ssize_t n = ::pread(fd, out.data(), size, static_cast<off_t>(offset));
    out.resize(n < 0 ? 0 : n);
    return out;
}

// zlib's crc32_combine, for the CRC of gigabytes of zeros without reading them: appending n zero
// bytes is a linear operator on the CRC register, applied by repeated squaring.
std::uint32_t gf2Times(const std::uint32_t* matrix, std::uint32_t vector)
{
    std::uint32_t sum = 0;
    for (; vector; vector >>= 1, ++matrix) {
        if (vector & 1)
            sum ^= *matrix;
    }
    return sum;
}

void gf2Square(std::uint32_t* square, const std::uint32_t* matrix)
{
    for (int n = 0; n < 32; ++n)
        square[n] = gf2Times(matrix, matrix[n]);
}

std::uint32_t crc32Combine(std::uint32_t crc1, std::uint32_t crc2, std::uint64_t length2)
{
    if (length2 == 0)
        return crc1;
    std::uint32_t even[32];
    std::uint32_t odd[32];
    odd[0] = 0xedb88320u;
    std::uint32_t row = 1;
    for (int n = 1; n < 32; ++n, row <<= 1)
        odd[n] = row;
    gf2Square(even, odd);
    gf2Square(odd, even);
    do {
        gf2Square(even, odd);
        if (length2 & 1)
            crc1 = gf2Times(even, crc1);
        length2 >>= 1;
        if (!length2)
            break;
        gf2Square(odd, even);
        if (length2 & 1)
            crc1 = gf2Times(odd, crc1);
        length2 >>= 1;
    } while (length2);
    return crc1 ^ crc2;
}

std::uint32_t crcOfZeros(std::uint64_t size)
{
    const std::uint64_t block = 1 << 20;
    const std::vector<std::uint8_t> zeros(block, 0);
    const std::uint32_t blockCrc = crc32Of(zeros);
    std::uint32_t crc = crc32Of({});
    std::uint64_t done = 0;
    for (; done + block <= size; done += block)
        crc = crc32Combine(crc, blockCrc, block);
    return crc32Combine(
        crc, crc32Of(ByteView(zeros).first(static_cast<std::size_t>(size - done))), size - done);
}

struct PythonResult {
    bool ran = false;
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

PythonResult runPython(const QString& python, const char* script, const QStringList& arguments,
    const QStringList& environment = {}, int timeoutMs = 300000)
{
    QProcess process;
    if (!environment.isEmpty()) {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const QString& pair : environment)
            env.insert(pair.section(QLatin1Char('='), 0, 0), pair.section(QLatin1Char('='), 1));
        process.setProcessEnvironment(env);
    }
    process.start(python, QStringList {QStringLiteral("-c"), QString::fromUtf8(script)} + arguments);
    PythonResult result;
    if (!process.waitForStarted() || !process.waitForFinished(timeoutMs)) {
        result.err = process.errorString().toUtf8();
        return result;
    }
    result.ran = process.exitStatus() == QProcess::NormalExit;
    result.exitCode = process.exitCode();
    result.out = process.readAllStandardOutput();
    result.err = process.readAllStandardError();
    return result;
}

// Python's zipfile: testzip() reads every member and checks its CRC; then a listing with a digest
// of every member smaller than 64 MiB.
const char* const kZipfileCheck = R"PY(
import hashlib, json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    bad = z.testzip()
    entries = []
    for i in z.infolist():
        digest = hashlib.sha256(z.read(i)).hexdigest() if i.file_size < (64 << 20) else ""
        entries.append({"name": i.filename, "size": i.file_size, "compressed": i.compress_size,
                        "crc": i.CRC, "offset": i.header_offset, "method": i.compress_type,
                        "sha256": digest})
print(json.dumps({"bad": bad, "entries": entries}))
)PY";

// Loads both files with weights_only=True and compares every tensor.
const char* const kTorchCompare = R"PY(
import sys, torch
original, rebuilt, mode = sys.argv[1], sys.argv[2], sys.argv[3]
kwargs = {}
if mode == "mmap":
    from torch.utils.serialization import config
    config.load.calculate_storage_offsets = True
    kwargs["mmap"] = True
a = torch.load(original, weights_only=True)
b = torch.load(rebuilt, weights_only=True, **kwargs)
assert list(a.keys()) == list(b.keys()), (list(a.keys()), list(b.keys()))
for key in a:
    assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, key
    assert torch.equal(a[key], b[key]), key
print("equal", len(a), torch.__version__)
)PY";

QStringList zipFixtures()
{
    QStringList files;
    for (const QString& folder : {QStringLiteral("torch-1.13"), QStringLiteral("torch-2")}) {
        const QDir dir(kFixtures + QLatin1Char('/') + folder);
        for (const QString& name : dir.entryList({QStringLiteral("*.pt")}, QDir::Files, QDir::Name)) {
            const QString path = dir.filePath(name);
            if (readAll(path).startsWith("PK\x03\x04"))
                files << folder + QLatin1Char('/') + name;
        }
    }
    return files;
}

std::uint32_t storageAlignmentOf(const ZipArchive& archive)
{
    for (const ZipEntry& entry : archive.entries()) {
        if (entry.name().ends_with("/.storage_alignment")) {
            if (auto payload = archive.storedPayload(entry))
                return static_cast<std::uint32_t>(std::stoul(std::string(asText(*payload))));
        }
    }
    return 64;
}

enum class CopyMode { KnownCrc, ComputedCrc, Memory };

// Rebuilds `archive` into `outputPath` record by record; `rename` maps input names to output
// names and `replace` substitutes the bytes of some records.
Status rebuild(const ZipArchive& archive, int inputFd, int outputFd, std::uint32_t alignment, CopyMode mode,
    const std::function<std::string(const std::string&)>& rename = {},
    const std::map<std::string, std::string>& replace = {}, std::vector<WrittenRecord>* written = nullptr)
{
    TorchZipWriter writer(outputFd, alignment);
    for (const ZipEntry& entry : archive.entries()) {
        const std::string name = rename ? rename(std::string(entry.name())) : std::string(entry.name());
        Status status;
        if (auto it = replace.find(std::string(entry.name())); it != replace.end()) {
            status = writer.addRecord(name, bytesOf(it->second));
        } else if (entry.method == 8) {
            status = writer.addCompressedRecordFromFile(
                name, inputFd, entry.dataOffset, entry.compressedSize, entry.uncompressedSize, entry.crc32);
        } else if (mode == CopyMode::Memory) {
            const auto payload = archive.storedPayload(entry);
            if (!payload)
                return makeError("no stored payload for " + std::string(entry.name()));
            status = writer.addRecord(name, *payload);
        } else {
            status = writer.addRecordFromFile(name, inputFd, entry.dataOffset, entry.uncompressedSize,
                mode == CopyMode::KnownCrc ? std::optional<std::uint32_t>(entry.crc32) : std::nullopt);
        }
        if (status)
            return status;
    }
    if (auto status = writer.finish())
        return status;
    if (written)
        *written = writer.records();
    return std::nullopt;
}

QString firstDifference(const QByteArray& expected, const QByteArray& actual)
{
    const qsizetype common = std::min(expected.size(), actual.size());
    for (qsizetype i = 0; i < common; ++i) {
        if (expected[i] != actual[i])
            return QStringLiteral("first difference at offset %1 (expected %2, got %3); sizes %4 and %5")
                .arg(i)
                .arg(QString::fromLatin1(expected.mid(std::max<qsizetype>(0, i - 8), 24).toHex(' ')),
                    QString::fromLatin1(actual.mid(std::max<qsizetype>(0, i - 8), 24).toHex(' ')))
                .arg(expected.size())
                .arg(actual.size());
    }
    return QStringLiteral("sizes differ: expected %1, got %2").arg(expected.size()).arg(actual.size());
}

} // namespace

class TestZipWriter : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        // A write past RLIMIT_FSIZE must fail with EFBIG, not kill the test (the CLI does the same).
        std::signal(SIGXFSZ, SIG_IGN);
    }

    void fixturesCoverEveryFramingCase()
    {
        // The byte-identical rebuild below proves the framing only for what the fixtures contain.
        int archives = 0;
        bool deflated = false, empty = false, customAlignmentRecord = false, torch2 = false;
        for (const QString& fixture : zipFixtures()) {
            auto file = MappedFile::open(QString(kFixtures + QLatin1Char('/') + fixture).toStdString());
            QVERIFY(file);
            const ZipArchive archive = ZipArchive::open(*file);
            ++archives;
            torch2 = torch2 || fixture.startsWith(QLatin1String("torch-2/"));
            for (const ZipEntry& entry : archive.entries()) {
                deflated = deflated || entry.method == 8;
                empty = empty || entry.uncompressedSize == 0;
                customAlignmentRecord
                    = customAlignmentRecord || entry.name().ends_with("/.storage_alignment");
            }
        }
        QVERIFY2(archives >= 40, qPrintable(QString::number(archives)));
        QVERIFY(deflated);
        QVERIFY(empty);
        QVERIFY(customAlignmentRecord);
        QVERIFY(torch2);
    }

    void rebuildIsByteIdentical_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<int>("mode");
        for (const QString& fixture : zipFixtures()) {
            QTest::newRow(qPrintable(fixture + QLatin1String(" copy+crc")))
                << fixture << int(CopyMode::KnownCrc);
            QTest::newRow(qPrintable(fixture + QLatin1String(" copy")))
                << fixture << int(CopyMode::ComputedCrc);
            QTest::newRow(qPrintable(fixture + QLatin1String(" memory"))) << fixture << int(CopyMode::Memory);
        }
    }

    void rebuildIsByteIdentical()
    {
        QFETCH(QString, fixture);
        QFETCH(int, mode);
        const QString input = kFixtures + QLatin1Char('/') + fixture;
        auto file = MappedFile::open(input.toStdString());
        QVERIFY(file);
        const ZipArchive archive = ZipArchive::open(*file);
        QVERIFY(archive.centralDirectoryFound());
        QVERIFY(archive.findings().empty());

        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString output = dir.filePath(QStringLiteral("rebuilt.pt"));
        FileDescriptor in(openInput(input));
        FileDescriptor out(openOutput(output));
        QVERIFY(in.get() >= 0 && out.get() >= 0);
        std::vector<WrittenRecord> written;
        const Status status = rebuild(archive, in.get(), out.get(), storageAlignmentOf(archive),
            static_cast<CopyMode>(mode), {}, {}, &written);
        QVERIFY2(!status, qPrintable(describe(status)));

        // Where each record landed, before the whole-file comparison, so a mismatch names a record.
        QCOMPARE(written.size(), archive.entries().size());
        for (std::size_t i = 0; i < written.size(); ++i) {
            const ZipEntry& entry = archive.entries()[i];
            QCOMPARE(written[i].name, std::string(entry.name()));
            QCOMPARE(written[i].localHeaderOffset, entry.localHeaderOffset);
            QCOMPARE(written[i].dataOffset, entry.dataOffset);
            QCOMPARE(written[i].crc32, entry.crc32);
        }
        const QByteArray expected = readAll(input);
        const QByteArray actual = readAll(output);
        QVERIFY2(expected == actual, qPrintable(firstDifference(expected, actual)));
    }

    void recordsFromMemory_data()
    {
        QTest::addColumn<quint32>("alignment");
        QTest::newRow("64") << 64u;
        QTest::newRow("4096") << 4096u;
        QTest::newRow("1") << 1u;
        QTest::newRow("100 (not a power of two)") << 100u;
        QTest::newRow("65504 (largest)") << 65504u;
    }

    void recordsFromMemory()
    {
        QFETCH(quint32, alignment);
        // A deflated record to copy, from a TorchScript archive.
        const QString scripted = kFixtures + QStringLiteral("/torch-2/torchscript_scripted.pt");
        auto scriptedFile = MappedFile::open(scripted.toStdString());
        QVERIFY(scriptedFile);
        const ZipArchive scriptedArchive = ZipArchive::open(*scriptedFile);
        const ZipEntry* code = nullptr;
        for (const ZipEntry& entry : scriptedArchive.entries()) {
            if (entry.method == 8 && !code)
                code = &entry;
        }
        QVERIFY(code);
        const auto codeText = scriptedArchive.readPayload(*code, 1 << 20);
        QVERIFY(codeText);

        QByteArray large(3 << 20, '\0');
        for (qsizetype i = 0; i < large.size(); ++i)
            large[i] = static_cast<char>((i * 7919) >> 3);
        const std::vector<std::pair<std::string, QByteArray>> records = {
            {"m/data.pkl", QByteArray("\x80\x02}q\x00.", 6)},
            {"m/empty", QByteArray()},
            {"m/one", QByteArray("x")},
            {"m/data/0", large},
            {"m/version", QByteArray("3\n")},
        };

        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString output = dir.filePath(QStringLiteral("memory.zip"));
        FileDescriptor out(openOutput(output));
        FileDescriptor scriptedFd(openInput(scripted));
        std::vector<std::uint64_t> progress;
        TorchZipWriter writer(
            out.get(), alignment,
            [&](std::uint64_t done, std::uint64_t total) {
                progress.push_back(done);
                return total == 12345;
            },
            12345);
        for (const auto& [name, data] : records)
            QVERIFY2(!writer.addRecord(name, bytesOf(data)), name.c_str());
        const Status copied = writer.addCompressedRecordFromFile("m/code/module.py", scriptedFd.get(),
            code->dataOffset, code->compressedSize, code->uncompressedSize, code->crc32);
        QVERIFY2(!copied, qPrintable(describe(copied)));
        QVERIFY(!writer.finish());
        QVERIFY(!progress.empty());
        QVERIFY(std::is_sorted(progress.begin(), progress.end()));
        QCOMPARE(progress.back(), writer.bytesWritten());
        QCOMPARE(static_cast<std::uint64_t>(QFileInfo(output).size()), writer.bytesWritten());

        for (std::size_t i = 0; i < records.size(); ++i) {
            const WrittenRecord& record = writer.records()[i];
            QCOMPARE(record.crc32, crc32Of(bytesOf(records[i].second)));
            QCOMPARE(record.dataOffset % alignment, std::uint64_t(0));
        }
        QCOMPARE(writer.records().back().dataOffset % alignment, std::uint64_t(0));

        // The project's own reader agrees, CRCs included.
        auto file = MappedFile::open(output.toStdString());
        QVERIFY(file);
        const ZipArchive archive = ZipArchive::open(*file);
        QVERIFY(archive.centralDirectoryFound());
        QVERIFY(archive.findings().empty());
        QCOMPARE(archive.entries().size(), records.size() + 1);
        for (std::size_t i = 0; i < archive.entries().size(); ++i) {
            const ZipEntry& entry = archive.entries()[i];
            QCOMPARE(entry.dataOffset, writer.records()[i].dataOffset);
            QVERIFY(!archive.verifyCrc(entry, 64 << 20));
            // Zero-length records carry no data descriptor, as miniz writes them.
            QCOMPARE(int(entry.flags), entry.uncompressedSize == 0 ? 0x0800 : 0x0808);
        }
        const auto inflated = archive.readPayload(archive.entries().back(), 1 << 20);
        QVERIFY(inflated);
        QVERIFY(*inflated == *codeText);

        // And so does Python's zipfile.
        const PythonResult python = runPython(QStringLiteral(CKPT_LEGACY_PYTHON), kZipfileCheck, {output});
        QVERIFY2(python.ran && python.exitCode == 0, python.err.constData());
        const QJsonObject result = QJsonDocument::fromJson(python.out).object();
        QVERIFY2(result.value(QLatin1String("bad")).isNull(), python.out.constData());
        const QJsonArray entries = result.value(QLatin1String("entries")).toArray();
        QCOMPARE(entries.size(), qsizetype(records.size() + 1));
        for (std::size_t i = 0; i < records.size(); ++i) {
            const QJsonObject entry = entries[qsizetype(i)].toObject();
            QCOMPARE(entry.value(QLatin1String("name")).toString().toStdString(), records[i].first);
            QCOMPARE(entry.value(QLatin1String("size")).toInteger(), qint64(records[i].second.size()));
            QCOMPARE(entry.value(QLatin1String("sha256")).toString(),
                QString::fromLatin1(
                    QCryptographicHash::hash(records[i].second, QCryptographicHash::Sha256).toHex()));
        }
        const QJsonObject codeEntry = entries.last().toObject();
        QCOMPARE(codeEntry.value(QLatin1String("method")).toInt(), 8);
        QCOMPARE(codeEntry.value(QLatin1String("sha256")).toString(),
            QString::fromLatin1(QCryptographicHash::hash(
                QByteArray(reinterpret_cast<const char*>(codeText->data()), qsizetype(codeText->size())),
                QCryptographicHash::Sha256)
                                    .toHex()));
    }

    void torchLoadsRebuiltCheckpoint_data()
    {
        QTest::addColumn<QString>("python");
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("mode");
        const QString legacy = QStringLiteral(CKPT_LEGACY_PYTHON);
        const QString modern = QStringLiteral(CKPT_MODERN_PYTHON);
        QTest::newRow("torch 1.13, 1.13 file")
            << legacy << QStringLiteral("torch-1.13/state_dict.pt") << QStringLiteral("plain");
        QTest::newRow("modern torch, 1.13 file")
            << modern << QStringLiteral("torch-1.13/state_dict.pt") << QStringLiteral("plain");
        QTest::newRow("modern torch, 2.14 file, offsets asserted")
            << modern << QStringLiteral("torch-2/state_dict.pt") << QStringLiteral("plain");
        QTest::newRow("modern torch, 2.14 file, mmap + computed offsets")
            << modern << QStringLiteral("torch-2/state_dict.pt") << QStringLiteral("mmap");
        QTest::newRow("torch 1.13, 1.13 dtypes")
            << legacy << QStringLiteral("torch-1.13/dtypes.pt") << QStringLiteral("plain");
        QTest::newRow("modern torch, 2.14 dtypes, mmap + computed offsets")
            << modern << QStringLiteral("torch-2/dtypes.pt") << QStringLiteral("mmap");
        QTest::newRow("modern torch, 2.14 many tensors, mmap + computed offsets")
            << modern << QStringLiteral("torch-2/many_tensors.pt") << QStringLiteral("mmap");
    }

    void torchLoadsRebuiltCheckpoint()
    {
        QFETCH(QString, python);
        QFETCH(QString, fixture);
        QFETCH(QString, mode);
        if (python.isEmpty())
            QSKIP("no modern torch configured: set CKPT_MODERN_PYTHON (packaging/modern-torch.sh prepares "
                  "one)");

        // Not a byte-identical copy: another archive prefix and a 4096-byte alignment, with the
        // .storage_alignment record saying so, so torch 2.14's computed offsets must still agree
        // with the real ones (TORCH_SERIALIZATION_DEBUG=1 asserts that on every storage).
        const QString input = kFixtures + QLatin1Char('/') + fixture;
        auto file = MappedFile::open(input.toStdString());
        QVERIFY(file);
        const ZipArchive archive = ZipArchive::open(*file);
        QVERIFY(!archive.entries().empty());
        const std::string prefix = std::string(
            archive.entries().front().name().substr(0, archive.entries().front().name().find('/')));
        std::map<std::string, std::string> replace;
        for (const ZipEntry& entry : archive.entries()) {
            if (entry.name().ends_with("/.storage_alignment"))
                replace[std::string(entry.name())] = "4096";
        }
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString output = dir.filePath(QStringLiteral("rebuilt.pt"));
        FileDescriptor in(openInput(input));
        FileDescriptor out(openOutput(output));
        const Status status = rebuild(
            archive, in.get(), out.get(), 4096, CopyMode::KnownCrc,
            [&](const std::string& name) { return "rebuilt" + name.substr(prefix.size()); }, replace);
        QVERIFY2(!status, qPrintable(describe(status)));

        const PythonResult result = runPython(
            python, kTorchCompare, {input, output, mode}, {QStringLiteral("TORCH_SERIALIZATION_DEBUG=1")});
        QVERIFY2(result.ran && result.exitCode == 0, QByteArray(result.out + result.err).constData());
        QVERIFY2(result.out.startsWith("equal"), result.out.constData());
        qInfo("%s", result.out.trimmed().constData());
    }

    void torchNoticesStaleStorageAlignment()
    {
        // The control for the test above: the same 4096-byte rebuild with .storage_alignment left at
        // 64 must trip torch's offset assert, or that test would prove nothing.
        const QString python = QStringLiteral(CKPT_MODERN_PYTHON);
        if (python.isEmpty())
            QSKIP("no modern torch configured: set CKPT_MODERN_PYTHON (packaging/modern-torch.sh prepares "
                  "one)");
        const QString input = kFixtures + QStringLiteral("/torch-2/state_dict.pt");
        auto file = MappedFile::open(input.toStdString());
        QVERIFY(file);
        const ZipArchive archive = ZipArchive::open(*file);
        QTemporaryDir dir;
        const QString output = dir.filePath(QStringLiteral("stale.pt"));
        FileDescriptor in(openInput(input));
        FileDescriptor out(openOutput(output));
        QVERIFY(!rebuild(archive, in.get(), out.get(), 4096, CopyMode::KnownCrc));
        const PythonResult result = runPython(python, kTorchCompare, {input, output, QStringLiteral("plain")},
            {QStringLiteral("TORCH_SERIALIZATION_DEBUG=1")});
        QVERIFY(result.ran);
        QVERIFY(result.exitCode != 0);
        QVERIFY2(result.err.contains("Incorrect offset for data/"), result.err.constData());
    }

    void copyAcrossFileSystems()
    {
        // copy_file_range refuses (EXDEV) between different file system types; the writer then
        // copies through a buffer, with the same result.
        const QString input = kFixtures + QStringLiteral("/torch-1.13/state_dict.pt");
        QTemporaryDir dir(QStringLiteral("/dev/shm/tst_zipwriter-XXXXXX"));
        struct stat inputInfo {
        }, outputInfo {};
        if (!dir.isValid() || ::stat(QFile::encodeName(input).constData(), &inputInfo) != 0
            || ::stat(QFile::encodeName(dir.path()).constData(), &outputInfo) != 0
            || inputInfo.st_dev == outputInfo.st_dev)
            QSKIP("no second file system (/dev/shm) to copy to");
        auto file = MappedFile::open(input.toStdString());
        QVERIFY(file);
        const ZipArchive archive = ZipArchive::open(*file);
        const QString output = dir.filePath(QStringLiteral("rebuilt.pt"));
        FileDescriptor in(openInput(input));
        FileDescriptor out(openOutput(output));
        const Status status = rebuild(archive, in.get(), out.get(), 64, CopyMode::KnownCrc);
        QVERIFY2(!status, qPrintable(describe(status)));
        QVERIFY(readAll(input) == readAll(output));
    }

    void writeErrorsNameTheCause()
    {
        // /dev/full fails every write with ENOSPC.
        FileDescriptor full(::open("/dev/full", O_WRONLY | O_CLOEXEC));
        if (full.get() < 0)
            QSKIP("no /dev/full here");
        TorchZipWriter writer(full.get());
        const Status status = writer.addRecord("a/data.pkl", bytesOf(std::string_view("abc")));
        QVERIFY(status);
        qInfo("%s", status->message.c_str());
        QVERIFY2(
            status->message.find("No space left on device") != std::string::npos, status->message.c_str());
        QCOMPARE(status->record, std::string("a/data.pkl"));
        // A half-written archive takes nothing more.
        QVERIFY(writer.addRecord("a/version", bytesOf(std::string_view("3\n"))));
        QVERIFY(writer.finish());
    }

    void inputShorterThanRecord()
    {
        QTemporaryDir dir;
        QFile input(dir.filePath(QStringLiteral("short.bin")));
        QVERIFY(input.open(QIODevice::WriteOnly));
        input.write(QByteArray(1000, 'a'));
        input.close();
        FileDescriptor in(openInput(input.fileName()));
        for (const bool knownCrc : {true, false}) {
            FileDescriptor out(openOutput(dir.filePath(QStringLiteral("out.zip"))));
            TorchZipWriter writer(out.get());
            const Status status = writer.addRecordFromFile(
                "a/data/0", in.get(), 500, 1000, knownCrc ? std::optional<std::uint32_t>(1) : std::nullopt);
            QVERIFY(status);
            QVERIFY2(status->message.find("input ends 500 bytes before the end") != std::string::npos,
                status->message.c_str());
        }
    }

    void misuseIsRefused()
    {
        QTemporaryDir dir;
        FileDescriptor out(openOutput(dir.filePath(QStringLiteral("out.zip"))));
        TorchZipWriter badAlignment(out.get(), 0);
        QVERIFY(badAlignment.addRecord("a/b", bytesOf(std::string_view("x"))));
        TorchZipWriter tooLarge(out.get(), 65505);
        QVERIFY(tooLarge.addRecord("a/b", bytesOf(std::string_view("x"))));
        TorchZipWriter writer(out.get());
        QVERIFY(writer.addRecord("", bytesOf(std::string_view("x"))));
        QVERIFY(writer.addRecord(std::string(70000, 'n'), bytesOf(std::string_view("x"))));
        QVERIFY(!writer.finish());
        QVERIFY(writer.addRecord("a/late", bytesOf(std::string_view("x"))));
        QVERIFY(writer.finish());

        // An archive with no records is still a valid, ZIP64-framed zip.
        FileDescriptor emptyOut(openOutput(dir.filePath(QStringLiteral("empty.zip"))));
        TorchZipWriter empty(emptyOut.get());
        QVERIFY(!empty.finish());
        QCOMPARE(empty.bytesWritten(), std::uint64_t(56 + 20 + 22));
        const PythonResult python = runPython(
            QStringLiteral(CKPT_LEGACY_PYTHON), kZipfileCheck, {dir.filePath(QStringLiteral("empty.zip"))});
        QVERIFY2(python.ran && python.exitCode == 0, python.err.constData());
    }

    void fileSizeLimitGivesFileTooLarge_data()
    {
        QTest::addColumn<bool>("fromFile");
        QTest::newRow("from memory (pwrite)") << false;
        QTest::newRow("from a file (copy_file_range)") << true;
    }

    void fileSizeLimitGivesFileTooLarge()
    {
        QFETCH(bool, fromFile);
        QTemporaryDir dir;
        const QString inputPath = dir.filePath(QStringLiteral("input.bin"));
        QFile input(inputPath);
        QVERIFY(input.open(QIODevice::WriteOnly));
        const QByteArray payload(4 << 20, 'q');
        input.write(payload);
        input.close();
        const std::string outputPath = dir.filePath(QStringLiteral("limited.zip")).toStdString();

        const QString message = runInChild([&]() -> std::string {
            std::signal(SIGXFSZ, SIG_IGN);
            const rlimit limit {1 << 20, RLIM_INFINITY};
            if (::setrlimit(RLIMIT_FSIZE, &limit) != 0)
                return "setrlimit failed";
            FileDescriptor in(::open((inputPath.toStdString()).c_str(), O_RDONLY));
            FileDescriptor out(::open(outputPath.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644));
            TorchZipWriter writer(out.get());
            const Status status = fromFile
                ? writer.addRecordFromFile("a/data/0", in.get(), 0, payload.size(), 7)
                : writer.addRecord("a/data/0", bytesOf(payload));
            return status ? status->message : std::string("no error");
        });
        qInfo("%s", qPrintable(message));
        QVERIFY2(message.contains(QLatin1String("File too large")), qPrintable(message));
        QVERIFY2(message.contains(QLatin1String("a/data/0")) || message.contains(QLatin1String("offset")),
            qPrintable(message));
    }

    void cancelHalfway()
    {
        QTemporaryDir dir;
        const QString inputPath = dir.filePath(QStringLiteral("sparse.bin"));
        const std::uint64_t size = 300ull << 20; // five 64 MiB slices
        {
            FileDescriptor in(openOutput(inputPath));
            QCOMPARE(::ftruncate(in.get(), static_cast<off_t>(size)), 0);
        }
        FileDescriptor in(openInput(inputPath));
        for (const bool knownCrc : {true, false}) {
            FileDescriptor out(openOutput(dir.filePath(QStringLiteral("cancelled.zip"))));
            std::vector<std::uint64_t> seen;
            TorchZipWriter writer(
                out.get(), 64,
                [&](std::uint64_t done, std::uint64_t total) {
                    seen.push_back(done);
                    return total == size && seen.size() < 2;
                },
                size);
            const Status status = writer.addRecordFromFile("c/data/0", in.get(), 0, size,
                knownCrc ? std::optional<std::uint32_t>(crcOfZeros(size)) : std::nullopt);
            QVERIFY(status);
            QCOMPARE(status->message, std::string("cancelled"));
            QCOMPARE(status->record, std::string("c/data/0"));
            // Cancelled after the second slice: the rest was never copied.
            QCOMPARE(seen.size(), std::size_t(2));
            QVERIFY(seen[0] < seen[1]);
            QCOMPARE(seen[1], std::uint64_t(64 + (128ull << 20)));
            QVERIFY(writer.bytesWritten() < size);
            QVERIFY(writer.addRecord("c/version", bytesOf(std::string_view("3\n"))));
            QVERIFY(writer.finish());
        }
    }

    void crcOfSparseInputIsComputed()
    {
        // Sanity check of the helper that the ZIP64 test relies on.
        const std::vector<std::uint8_t> zeros((5 << 20) + 17, 0);
        QCOMPARE(crcOfZeros(zeros.size()), crc32Of(zeros));
        QCOMPARE(crcOfZeros(0), crc32Of({}));
    }

    void zip64RecordAndOffsets()
    {
        // One record over 4 GiB from a sparse input, then records whose local headers lie beyond
        // 4 GiB: ZIP64 extras in local and central headers, 24-byte data descriptors, a central
        // directory beyond 4 GiB. Holes read as zeros, but ext4 has no extent sharing, so the
        // output really takes the space.
        const std::uint64_t bigSize = 4400000000ull;
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        struct statvfs fs { };
        QCOMPARE(::statvfs(QFile::encodeName(dir.path()).constData(), &fs), 0);
        const std::uint64_t available = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
        if (available < (9ull << 30))
            QSKIP(qPrintable(
                QStringLiteral("needs 9 GiB free in %1, has %2 MiB").arg(dir.path()).arg(available >> 20)));

        const QString inputPath = dir.filePath(QStringLiteral("sparse.bin"));
        {
            FileDescriptor in(openOutput(inputPath));
            QCOMPARE(::ftruncate(in.get(), static_cast<off_t>(bigSize)), 0);
        }
        FileDescriptor in(openInput(inputPath));

        // Measure 256 MiB first; skip when the whole copy would take over a minute here.
        {
            QElapsedTimer pilotTimer;
            pilotTimer.start();
            FileDescriptor pilotOut(openOutput(dir.filePath(QStringLiteral("pilot.zip"))));
            TorchZipWriter pilot(pilotOut.get());
            QVERIFY(
                !pilot.addRecordFromFile("p/data/0", in.get(), 0, 256ull << 20, crcOfZeros(256ull << 20)));
            QVERIFY(!pilot.finish());
            QCOMPARE(::fsync(pilotOut.get()), 0);
            const double estimate
                = double(pilotTimer.elapsed()) * double(bigSize) / double(256ull << 20) / 1000.0;
            QFile::remove(dir.filePath(QStringLiteral("pilot.zip")));
            qInfo("pilot: 256 MiB in %lld ms, whole record estimated at %.1f s", pilotTimer.elapsed(),
                estimate);
            if (estimate > 60)
                QSKIP(qPrintable(QStringLiteral("copying 4.1 GiB would take about %1 s here").arg(estimate)));
        }

        const QString output = dir.filePath(QStringLiteral("zip64.pt"));
        FileDescriptor out(openOutput(output));
        QElapsedTimer timer;
        timer.start();
        std::uint64_t lastProgress = 0;
        int progressCalls = 0;
        TorchZipWriter writer(out.get(), 64, [&](std::uint64_t done, std::uint64_t) {
            lastProgress = done;
            ++progressCalls;
            return true;
        });
        const QByteArray pickle("\x80\x02K\x01.", 5);
        QVERIFY(!writer.addRecord("big/data.pkl", bytesOf(pickle)));
        const Status bigStatus
            = writer.addRecordFromFile("big/data/0", in.get(), 0, bigSize, crcOfZeros(bigSize));
        QVERIFY2(!bigStatus, qPrintable(describe(bigStatus)));
        const qint64 copyMs = timer.elapsed();
        QVERIFY(!writer.addRecord("big/data/1", bytesOf(std::string_view("twelve bytes"))));
        QVERIFY(!writer.addRecord("big/empty", {}));
        QVERIFY(!writer.addRecordFromFile("big/version", in.get(), 0, 0, std::nullopt));
        QVERIFY(!writer.finish());
        QCOMPARE(lastProgress, writer.bytesWritten());
        QVERIFY(progressCalls > 60); // one per 64 MiB slice at least
        qInfo("4.1 GiB record copied in %lld ms (%.0f MiB/s), archive of %llu bytes", copyMs,
            double(bigSize) / 1048576.0 / (double(copyMs) / 1000.0),
            static_cast<unsigned long long>(writer.bytesWritten()));

        const auto& records = writer.records();
        QCOMPARE(records.size(), std::size_t(5));
        const WrittenRecord& big = records[1];
        const WrittenRecord& small = records[2];
        QVERIFY(small.localHeaderOffset >= 0xFFFFFFFFull);

        // Local header of the big record: ZIP64 extra with the size and a compressed size of 0.
        const QByteArray bigHeader = preadBytes(out.get(), big.localHeaderOffset, 30 + 10 + 24 + 64);
        QCOMPARE(read16(bigHeader, 28), std::uint16_t(big.dataOffset - big.localHeaderOffset - 30 - 10));
        QCOMPARE(read16(bigHeader, 40), std::uint16_t(1));
        QCOMPARE(read16(bigHeader, 42), std::uint16_t(16));
        QCOMPARE(read64(bigHeader, 44), bigSize);
        QCOMPARE(read64(bigHeader, 52), std::uint64_t(0));
        QCOMPARE(bigHeader.mid(60, 2), QByteArray("FB"));
        QCOMPARE(big.dataOffset % 64, std::uint64_t(0));
        // 24-byte descriptor after it; the next header follows at once.
        const QByteArray bigDescriptor = preadBytes(out.get(), big.dataOffset + bigSize, 24);
        QCOMPARE(read32(bigDescriptor, 0), 0x08074b50u);
        QCOMPARE(read32(bigDescriptor, 4), big.crc32);
        QCOMPARE(read64(bigDescriptor, 8), bigSize);
        QCOMPARE(read64(bigDescriptor, 16), bigSize);
        QCOMPARE(small.localHeaderOffset, big.dataOffset + bigSize + 24);

        // A small record beyond 4 GiB: an 8-byte ZIP64 extra holding its own offset, and also a
        // 24-byte descriptor (torch 2.14's _get_offset relies on that).
        const QByteArray smallHeader = preadBytes(out.get(), small.localHeaderOffset, 30 + 10 + 12);
        QCOMPARE(read16(smallHeader, 40), std::uint16_t(1));
        QCOMPARE(read16(smallHeader, 42), std::uint16_t(8));
        QCOMPARE(read64(smallHeader, 44), small.localHeaderOffset);
        QCOMPARE(records[3].localHeaderOffset, small.dataOffset + 12 + 24);
        // A zero-length record has the offset extra but no descriptor at all.
        const QByteArray emptyHeader = preadBytes(out.get(), records[3].localHeaderOffset, 30 + 9 + 12);
        QCOMPARE(read16(emptyHeader, 6), std::uint16_t(0x0800));
        QCOMPARE(read16(emptyHeader, 39), std::uint16_t(1));
        QCOMPARE(read64(emptyHeader, 43), records[3].localHeaderOffset);
        QCOMPARE(records[4].localHeaderOffset, records[3].dataOffset);

        // The end records point beyond 4 GiB: the classic one says 0xFFFFFFFF.
        const QByteArray tail = preadBytes(out.get(), writer.bytesWritten() - 22, 22);
        QCOMPARE(read32(tail, 0), 0x06054b50u);
        QCOMPARE(read32(tail, 16), 0xFFFFFFFFu);

        // The project's reader and Python's zipfile (which checks every CRC) agree.
        auto file = MappedFile::open(output.toStdString());
        QVERIFY(file);
        const ZipArchive archive = ZipArchive::open(*file);
        QVERIFY(archive.centralDirectoryFound());
        QVERIFY(archive.findings().empty());
        QCOMPARE(archive.entries().size(), std::size_t(5));
        for (std::size_t i = 0; i < 5; ++i) {
            QCOMPARE(archive.entries()[i].dataOffset, records[i].dataOffset);
            QCOMPARE(archive.entries()[i].uncompressedSize, records[i].uncompressedSize);
            QCOMPARE(archive.entries()[i].crc32, records[i].crc32);
        }

        QElapsedTimer pythonTimer;
        pythonTimer.start();
        const PythonResult python = runPython(QStringLiteral(CKPT_LEGACY_PYTHON), kZipfileCheck, {output});
        QVERIFY2(python.ran && python.exitCode == 0, python.err.constData());
        const QJsonObject result = QJsonDocument::fromJson(python.out).object();
        QVERIFY2(result.value(QLatin1String("bad")).isNull(), python.out.constData());
        const QJsonArray entries = result.value(QLatin1String("entries")).toArray();
        QCOMPARE(entries.size(), qsizetype(5));
        for (qsizetype i = 0; i < 5; ++i) {
            const QJsonObject entry = entries[i].toObject();
            QCOMPARE(static_cast<std::uint64_t>(entry.value(QLatin1String("size")).toInteger()),
                records[std::size_t(i)].uncompressedSize);
            QCOMPARE(static_cast<std::uint64_t>(entry.value(QLatin1String("offset")).toInteger()),
                records[std::size_t(i)].localHeaderOffset);
            QCOMPARE(static_cast<std::uint32_t>(entry.value(QLatin1String("crc")).toInteger()),
                records[std::size_t(i)].crc32);
        }
        qInfo("Python zipfile checked every CRC in %lld ms", pythonTimer.elapsed());
    }

    void zip64AgainstRealTorch_data()
    {
        QTest::addColumn<QString>("python");
        QTest::newRow("torch 1.13") << QStringLiteral(CKPT_LEGACY_PYTHON);
        QTest::newRow("modern torch") << QStringLiteral(CKPT_MODERN_PYTHON);
    }

    void zip64AgainstRealTorch()
    {
        QFETCH(QString, python);
        // The same ZIP64 rules checked against torch itself: torch.save a 4.3 GB tensor followed by
        // a small one (whose header then lies beyond 4 GiB), rebuild, compare every byte. It needs
        // about 5 GB of memory, 9 GB of disk and a minute, so it runs only on request.
        if (qEnvironmentVariable("CKPT_ZIP64_TORCH") != QLatin1String("1"))
            QSKIP("set CKPT_ZIP64_TORCH=1 to compare a 4.3 GB torch.save archive (5 GB memory, 9 GB disk)");
        if (python.isEmpty())
            QSKIP("no modern torch configured: set CKPT_MODERN_PYTHON (packaging/modern-torch.sh prepares "
                  "one)");
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString input = dir.filePath(QStringLiteral("huge.pt"));
        const PythonResult saved = runPython(python,
            "import sys, torch\n"
            "torch.save({'big': torch.zeros(4300000000, dtype=torch.uint8), 'small': torch.arange(3)}, "
            "sys.argv[1])\n",
            {input}, {}, 600000);
        QVERIFY2(saved.ran && saved.exitCode == 0, saved.err.constData());
        auto file = MappedFile::open(input.toStdString());
        QVERIFY(file);
        const ZipArchive archive = ZipArchive::open(*file);
        QVERIFY(archive.centralDirectoryFound());
        const QString output = dir.filePath(QStringLiteral("rebuilt.pt"));
        FileDescriptor in(openInput(input));
        FileDescriptor out(openOutput(output));
        QElapsedTimer timer;
        timer.start();
        const Status status = rebuild(archive, in.get(), out.get(), 64, CopyMode::KnownCrc);
        QVERIFY2(!status, qPrintable(describe(status)));
        qInfo("rebuilt %llu bytes in %lld ms", static_cast<unsigned long long>((*file)->size()),
            timer.elapsed());
        QCOMPARE(static_cast<std::uint64_t>(QFileInfo(output).size()), (*file)->size());
        const std::size_t chunk = 64 << 20;
        for (std::uint64_t at = 0; at < (*file)->size(); at += chunk) {
            const QByteArray rebuilt = preadBytes(out.get(), at, chunk);
            const auto original
                = (*file)->bytes().subspan(at, std::min<std::uint64_t>(chunk, (*file)->size() - at));
            QVERIFY2(std::equal(original.begin(), original.end(),
                         reinterpret_cast<const std::uint8_t*>(rebuilt.constData()))
                    && std::size_t(rebuilt.size()) == original.size(),
                qPrintable(QStringLiteral("difference in the 64 MiB block at %1").arg(at)));
        }
    }
};

QTEST_GUILESS_MAIN(TestZipWriter)
#include "tst_zipwriter.moc"
