// SPDX-License-Identifier: MIT
// The format sniffer: every file written by a real tool, and every file of the real-world corpus, is
// classified as what it is; nothing a user can open makes it crash.

#include "core/format/formatsniffer.h"
#include "core/io/mappedfile.h"
#include "tests/common/testfiles.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QSet>
#include <QTest>

using namespace ckpt::testing;

using namespace ckpt;

namespace {

const QString kSniffSamples = QStringLiteral(CKPT_SOURCE_DIR "/tests/data/sniff");
const QString kZipSamples = QStringLiteral(CKPT_SOURCE_DIR "/tests/data/zip");
// The real-world corpus lives beside the repository, never inside it; CKPT_CORPUS_DIR overrides.
const QString kCorpus = corpusDir();

ByteView viewOf(const QByteArray& bytes)
{
    return {reinterpret_cast<const std::uint8_t*>(bytes.constData()), static_cast<std::size_t>(bytes.size())};
}

QString kindName(ContainerKind kind)
{
    return QString::fromLatin1(containerKindName(kind));
}

// Every kind, so the stable names can be checked for uniqueness.
constexpr ContainerKind kAllKinds[] = {
    ContainerKind::TorchZip,
    ContainerKind::ZipWithPrefix,
    ContainerKind::TorchLegacy,
    ContainerKind::TorchTar,
    ContainerKind::Safetensors,
    ContainerKind::MobileFlatbuffer,
    ContainerKind::PreviewPytorch1,
    ContainerKind::PlainPickle,
    ContainerKind::Empty,
    ContainerKind::GitLfsPointer,
    ContainerKind::HtmlPage,
    ContainerKind::JsonText,
    ContainerKind::PlainText,
    ContainerKind::Png,
    ContainerKind::Jpeg,
    ContainerKind::Hdf5,
    ContainerKind::Gzip,
    ContainerKind::Unknown,
    ContainerKind::Tar,
};

struct CorpusFile {
    QString name;
    QString container;
    QString notes;
};

QList<CorpusFile> corpusManifest()
{
    QList<CorpusFile> files;
    QFile manifest(kCorpus + QStringLiteral("/MANIFEST.tsv"));
    if (!manifest.open(QIODevice::ReadOnly))
        return files;
    const QList<QByteArray> lines = manifest.readAll().split('\n');
    for (qsizetype i = 1; i < lines.size(); ++i) {
        const QList<QByteArray> columns = lines[i].split('\t');
        if (columns.size() < 11)
            continue;
        files.append(
            {QString::fromUtf8(columns[0]), QString::fromUtf8(columns[6]), QString::fromUtf8(columns[10])});
    }
    return files;
}

// What a file of the corpus is, from its MANIFEST row: the container column, and for the
// `other` files their notes. Several answers are acceptable where the file itself is ambiguous.
QStringList expectedKinds(const CorpusFile& file)
{
    if (file.container == QLatin1String("zip") || file.container == QLatin1String("torchscript"))
        return {QStringLiteral("torch-zip")};
    if (file.container == QLatin1String("legacy-pickle"))
        return {QStringLiteral("torch-legacy")};
    if (file.container == QLatin1String("tar"))
        return {QStringLiteral("torch-tar")};
    if (file.container == QLatin1String("safetensors"))
        return {QStringLiteral("safetensors")};
    const QString notes = file.notes;
    if (notes.contains(QLatin1String("Git LFS")))
        return {QStringLiteral("git-lfs-pointer")};
    if (notes.contains(QLatin1String("HDF5")))
        return {QStringLiteral("hdf5")};
    if (notes.contains(QLatin1String("PNG")))
        return {QStringLiteral("png")};
    if (notes.contains(QLatin1String("0-byte")))
        return {QStringLiteral("empty")};
    if (notes.contains(QLatin1String("3-byte")))
        return {QStringLiteral("plain-text"), QStringLiteral("unknown")};
    if (notes.contains(QLatin1String("pickle")))
        return {QStringLiteral("plain-pickle")};
    return {};
}

} // namespace

class TestFormatSniffer : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void kindNamesAreStableAndUnique()
    {
        QSet<QString> names;
        for (const auto kind : kAllKinds) {
            const QString name = kindName(kind);
            QVERIFY(!name.isEmpty());
            QVERIFY2(!names.contains(name), qPrintable(name));
            QVERIFY2(name == name.toLower() && !name.contains(QLatin1Char(' ')), qPrintable(name));
            names.insert(name);
        }
        QCOMPARE(kindName(ContainerKind::GitLfsPointer), QStringLiteral("git-lfs-pointer"));
        QCOMPARE(kindName(ContainerKind::TorchZip), QStringLiteral("torch-zip"));
    }

    // Files written by torch, pickle, gzip, tarfile and json (tests/data/sniff/samples.json).
    void toolWrittenSamples_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("kind");
        const auto document
            = QJsonDocument::fromJson(readAll(kSniffSamples + QStringLiteral("/samples.json")));
        QVERIFY2(
            document.isArray() && !document.array().isEmpty(), "tests/data/sniff/samples.json is missing");
        for (const auto& value : document.array()) {
            const QJsonObject sample = value.toObject();
            const QString file = sample.value(QLatin1String("file")).toString();
            QTest::newRow(qPrintable(file))
                << kSniffSamples + QLatin1Char('/') + file << sample.value(QLatin1String("kind")).toString();
        }
    }

    void toolWrittenSamples()
    {
        QFETCH(QString, file);
        QFETCH(QString, kind);
        auto mapped = MappedFile::open(file.toStdString());
        QVERIFY2(mapped.hasValue(), qPrintable(file));
        const ContainerGuess guess = sniffContainer((*mapped)->bytes());
        QVERIFY2(kindName(guess.kind) == kind,
            qPrintable(kindName(guess.kind) + QStringLiteral(" (") + QString::fromStdString(guess.description)
                + QStringLiteral(") instead of ") + kind));
        QVERIFY(!guess.description.empty());
    }

    // The zip samples: torch-written files start with PK\3\4; data before a zip makes it a prefixed one.
    void zipSamples_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("kind");
        const auto files = QDir(kZipSamples).entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
        QVERIFY(!files.isEmpty());
        for (const QString& json : files) {
            const QJsonObject expectation
                = QJsonDocument::fromJson(readAll(kZipSamples + QLatin1Char('/') + json)).object();
            const QString file = expectation.value(QLatin1String("file")).toString();
            const bool prefixed = expectation.value(QLatin1String("archive_start")).toInt() > 0;
            QTest::newRow(qPrintable(file)) << kZipSamples + QLatin1Char('/')
                    + file << (prefixed ? QStringLiteral("zip-with-prefix") : QStringLiteral("torch-zip"));
        }
    }

    void zipSamples()
    {
        QFETCH(QString, file);
        QFETCH(QString, kind);
        const QByteArray bytes = readAll(file);
        QVERIFY(!bytes.isEmpty());
        const ContainerGuess guess = sniffContainer(viewOf(bytes));
        QCOMPARE(kindName(guess.kind), kind);
        if (guess.kind == ContainerKind::ZipWithPrefix) {
            const QString description = QString::fromStdString(guess.description);
            QVERIFY2(description.contains(QLatin1String("starts at byte")), qPrintable(description));
        }
    }

    // A file cut short of its end records is still a zip; with data before it, a prefixed zip
    // found by its first local header.
    void truncatedZipsKeepTheirKind()
    {
        const QByteArray whole = readAll(kZipSamples + QStringLiteral("/torch_state_dict.pt"));
        QVERIFY(!whole.isEmpty());
        for (qsizetype cut = 4; cut < whole.size(); cut += 37)
            QCOMPARE(sniffContainer(viewOf(whole.first(cut))).kind, ContainerKind::TorchZip);
        const QByteArray prefixed = readAll(kZipSamples + QStringLiteral("/torch_after_prefix.bin"));
        QVERIFY(!prefixed.isEmpty());
        const QByteArray cut = prefixed.first(prefixed.size() - 100);
        const ContainerGuess guess = sniffContainer(viewOf(cut));
        QCOMPARE(guess.kind, ContainerKind::ZipWithPrefix);
        QVERIFY(guess.description.find("64") != std::string::npos);
    }

    void emptyInput()
    {
        const ContainerGuess guess = sniffContainer({});
        QCOMPARE(guess.kind, ContainerKind::Empty);
        QVERIFY(guess.description.find("0 bytes") != std::string::npos);
    }

    // The real-world corpus, classified as its manifest says.
    void corpus_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QStringList>("kinds");
        if (!QDir(kCorpus + QStringLiteral("/files")).exists())
            QSKIP("the shared corpus (../shared/corpus/files) is not available here");
        const auto files = corpusManifest();
        QVERIFY(!files.isEmpty());
        for (const auto& file : files) {
            const QStringList kinds = expectedKinds(file);
            QVERIFY2(!kinds.isEmpty(), qPrintable(QStringLiteral("no expectation for ") + file.name));
            QTest::newRow(qPrintable(file.name)) << kCorpus + QStringLiteral("/files/") + file.name << kinds;
        }
    }

    void corpus()
    {
        QFETCH(QString, file);
        QFETCH(QStringList, kinds);
        auto mapped = MappedFile::open(file.toStdString());
        QVERIFY2(mapped.hasValue(), mapped.hasValue() ? "" : mapped.error().message.c_str());
        const ContainerGuess guess = sniffContainer((*mapped)->bytes());
        QVERIFY2(kinds.contains(kindName(guess.kind)),
            qPrintable(kindName(guess.kind) + QStringLiteral(": ") + QString::fromStdString(guess.description)
                + QStringLiteral(", expected one of ") + kinds.join(QLatin1Char(','))));
        QVERIFY(!guess.description.empty());
        if (guess.kind == ContainerKind::GitLfsPointer) {
            const QString description = QString::fromStdString(guess.description);
            QVERIFY2(description.contains(QLatin1String("git lfs pull")), qPrintable(description));
            // The pointer's size line names the real file's size.
            QVERIFY2(description.contains(QLatin1String("115,281,321")), qPrintable(description));
        }
    }

    // Every prefix of every sample (and of the small corpus files): classifying a cut file
    // never crashes, and always says something.
    void everyPrefixIsSafe()
    {
        QStringList paths;
        for (const QString& name : QDir(kSniffSamples).entryList(QDir::Files))
            paths << kSniffSamples + QLatin1Char('/') + name;
        for (const QString& name : QDir(kZipSamples).entryList(QDir::Files))
            paths << kZipSamples + QLatin1Char('/') + name;
        const QDir corpus(kCorpus + QStringLiteral("/files"));
        for (const QString& name : corpus.entryList(QDir::Files)) {
            if (QFileInfo(corpus.filePath(name)).size() <= 16384)
                paths << corpus.filePath(name);
        }
        for (const QString& path : paths) {
            const QByteArray bytes = readAll(path);
            for (qsizetype cut = 0; cut <= bytes.size(); ++cut) {
                const ContainerGuess guess = sniffContainer(viewOf(bytes.first(cut)));
                QVERIFY(!guess.description.empty());
                if (cut == 0)
                    QCOMPARE(guess.kind, ContainerKind::Empty);
            }
        }
    }

    void randomBytesNeverCrash()
    {
        QRandomGenerator random(20240102);
        for (int round = 0; round < 3000; ++round) {
            QByteArray bytes(static_cast<qsizetype>(random.bounded(0, 700)), '\0');
            for (auto& byte : bytes)
                byte = static_cast<char>(random.bounded(256));
            // Sometimes start like a real format, to reach deeper checks.
            switch (round % 6) {
            case 1:
                if (bytes.size() >= 2)
                    bytes[0] = '\x80', bytes[1] = static_cast<char>(random.bounded(6));
                break;
            case 2:
                if (bytes.size() > 9)
                    bytes[8] = '{';
                break;
            case 3:
                bytes.prepend("(dp0\nS'");
                break;
            default:
                break;
            }
            const ContainerGuess guess = sniffContainer(viewOf(bytes));
            QVERIFY(!guess.description.empty());
        }
    }

    // A safetensors length that points past the end, or overflows when 8 is added, is not a
    // safetensors file. Taken from a real file, with its header length replaced.
    void safetensorsHeaderLengthIsChecked()
    {
        const QString path = kCorpus
            + QStringLiteral("/files/deepjavalibrary__djl__api__src__test__resources__list.safetensors");
        QByteArray bytes = readAll(path);
        if (bytes.isEmpty())
            QSKIP("the shared corpus is not available here");
        QCOMPARE(sniffContainer(viewOf(bytes)).kind, ContainerKind::Safetensors);
        for (const quint64 length :
            {quint64(0xffffffffffffffffull), quint64(0xfffffffffffffff9ull), quint64(1) << 40}) {
            for (int i = 0; i < 8; ++i)
                bytes[i] = static_cast<char>((length >> (8 * i)) & 0xff);
            QVERIFY(sniffContainer(viewOf(bytes)).kind != ContainerKind::Safetensors);
        }
    }

    // pickle.dump of tensors (tests/fixtures/nested): at protocol 0 the nested torch.save files are
    // raw-unicode-escape text holding control and latin-1 bytes; pickled as zip archives, the last
    // one's end record lies near the end of the file. Both are pickles from byte 0, as pickle.load
    // reads them, not unknown data nor a zip after a prefix.
    void picklesHoldingTorchSaveFiles()
    {
        for (const char* name :
            {"torch-2/pickled_dict_protocol0.pkl", "torch-1.13/pickled_dict_protocol1.pkl",
                "torch-2/pickled_dict_zipblobs.pkl", "torch-1.13/pickled_dict_zipblobs_protocol0.pkl",
                "torch-2/pickled_dict_zipblobs_protocol1.pkl",
                "torch-1.13/pickled_dict_zipblobs_protocol2.pkl"}) {
            const QByteArray bytes = readAll(
                ckpt::testing::sourcePath(u"tests/fixtures/nested/"_qs + QString::fromLatin1(name)));
            QVERIFY2(!bytes.isEmpty(), name);
            const ContainerGuess guess = sniffContainer(viewOf(bytes));
            QVERIFY2(guess.kind == ContainerKind::PlainPickle,
                (std::string(name) + ": " + guess.description).c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestFormatSniffer)
#include "tst_formatsniffer.moc"
