// SPDX-License-Identifier: MIT
// The safetensors reader against files written by the real safetensors library (the shared corpus:
// Debian 12 has no python3-safetensors to write fresh ones), compared with what an independent
// json+struct reader says about them (tests/data/safetensors/*.expected.json, written by
// make_expected.py), and against damaged copies of those files made here in memory: cut short at
// every point, header length and header text corrupted. Nothing may crash, every problem becomes
// a finding, and whatever is intact is still listed.
//
// Why one file of about 760 lines: one suite for one reader; most of the length is data tables
// (damaged headers, dtype cases) with the finding each must produce.

#include "core/io/mappedfile.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/model/checkpointjson.h"
#include "core/model/modulepathcache.h"
#include "core/read/safetensorsreader.h"
#include "tests/common/testfiles.h"
#include "tests/common/treedump.h"

#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QSet>
#include <QTest>

#include <functional>
#include <memory>

using namespace ckpt::testing;

using namespace ckpt;

namespace {

const QString kExpectedDir = QStringLiteral(CKPT_SOURCE_DIR "/tests/data/safetensors");
// The real-world corpus lives beside the repository, never inside it; CKPT_CORPUS_DIR overrides.
const QString kCorpus = corpusDir();
const QString kCorpusFiles = corpusFilesDir();
const QString kTiny = QStringLiteral("deepjavalibrary__djl__api__src__test__resources__list.safetensors");
const QString kMnist
    = QStringLiteral("tracel-ai__burn__examples__import-model-weights__weights__mnist.safetensors");

std::string toStd(const QByteArray& bytes)
{
    return std::string(bytes.constData(), static_cast<std::size_t>(bytes.size()));
}

std::unique_ptr<Checkpoint> readBytes(const QByteArray& bytes, const QString& name = QStringLiteral("sample"))
{
    auto checkpoint = std::make_unique<Checkpoint>();
    checkpoint->path = name.toStdString();
    checkpoint->fileSize = static_cast<std::uint64_t>(bytes.size());
    checkpoint->file = MappedFile::fromBuffer(ByteBuffer(bytes.begin(), bytes.end()), checkpoint->path);
    readSafetensors(*checkpoint);
    return checkpoint;
}

// Everything a reader's result shows (info --json and the text tree), read with the header scan
// and with the JSON parser alone: the two must agree on every header.
QString scanAndParseDiffer(const QByteArray& bytes)
{
    std::string shown[2];
    const SafetensorsHeaderReading readings[2]
        = {SafetensorsHeaderReading::Scan, SafetensorsHeaderReading::Parse};
    for (int i = 0; i < 2; ++i) {
        Checkpoint checkpoint;
        checkpoint.path = "sample";
        checkpoint.fileSize = static_cast<std::uint64_t>(bytes.size());
        checkpoint.file = MappedFile::fromBuffer(ByteBuffer(bytes.begin(), bytes.end()), checkpoint.path);
        readSafetensors(checkpoint, readings[i]);
        shown[i] = checkpointToJson(checkpoint, false) + "\n" + checkpointToText(checkpoint);
    }
    if (shown[0] == shown[1])
        return {};
    return QStringLiteral("scanned:\n%1\nparsed:\n%2")
        .arg(QString::fromStdString(shown[0]), QString::fromStdString(shown[1]));
}

QStringList codesOf(const Checkpoint& checkpoint)
{
    QSet<QString> codes;
    for (const Finding& finding : checkpoint.findings)
        codes.insert(QString::fromStdString(std::string(finding.codeId())));
    QStringList sorted(codes.begin(), codes.end());
    sorted.sort();
    return sorted;
}

QString findingsText(const Checkpoint& checkpoint)
{
    QString text;
    for (const Finding& finding : checkpoint.findings)
        text += QStringLiteral("\n  [%1] %2: %3")
                    .arg(QString::fromLatin1(severityName(finding.severity)),
                        QString::fromStdString(std::string(finding.codeId())),
                        QString::fromStdString(finding.message));
    return text;
}

std::uint64_t headerLengthOf(const QByteArray& file)
{
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | static_cast<std::uint8_t>(file[i]);
    return n;
}

QByteArray withHeaderLength(QByteArray file, std::uint64_t n)
{
    for (int i = 0; i < 8; ++i)
        file[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
    return file;
}

QByteArray headerOf(const QByteArray& file)
{
    return file.mid(8, static_cast<qsizetype>(headerLengthOf(file)));
}

// The same tensor bytes behind another header, with the length field to match.
QByteArray withHeader(const QByteArray& file, const QByteArray& header)
{
    const QByteArray data = file.mid(8 + static_cast<qsizetype>(headerLengthOf(file)));
    return withHeaderLength(QByteArray(8, '\0'), static_cast<std::uint64_t>(header.size())) + header + data;
}

QByteArray replacedInHeader(const QByteArray& file, const QByteArray& from, const QByteArray& to)
{
    QByteArray header = headerOf(file);
    const qsizetype at = header.indexOf(from);
    if (at < 0)
        qFatal("test data: '%s' is not in the header", from.constData());
    header.replace(at, from.size(), to);
    // Re-padded to a multiple of 8 so that only the intended rule is broken.
    while (header.endsWith(' '))
        header.chop(1);
    header.append((8 - header.size() % 8) % 8, ' ');
    return withHeader(file, header);
}

// Edits the header as a JSON document (key order kept) and writes it back padded with spaces to a
// multiple of 8, as the safetensors writer does.
QByteArray editedHeader(const QByteArray& file, const std::function<void(JsonValue&)>& edit)
{
    auto header = parseJson(toStd(headerOf(file)));
    if (!header)
        qFatal("test data: header does not parse: %s", header.error().message.c_str());
    edit(*header);
    std::string text = header->toJson();
    text.append((8 - text.size() % 8) % 8, ' ');
    return withHeader(file, QByteArray(text.data(), static_cast<qsizetype>(text.size())));
}

// What must hold for any input, however damaged: indices in range and pointing back at each
// other, every tensor in the tree at the path of its name, bytes only where the file has them.
QString inconsistency(const Checkpoint& checkpoint)
{
    if (checkpoint.format != CheckpointFormat::Safetensors)
        return QStringLiteral("format is not safetensors");
    if (checkpoint.tree.empty() || checkpoint.tree[0].kind != TreeNodeKind::Root)
        return QStringLiteral("no root node");
    if (checkpoint.storages.size() != checkpoint.tensors.size())
        return QStringLiteral("not one storage per tensor");
    const std::uint64_t fileSize = checkpoint.file->size();
    for (std::size_t i = 0; i < checkpoint.tensors.size(); ++i) {
        const TensorEntry& tensor = checkpoint.tensors[i];
        const QString name = QString::fromStdString(tensor.name.str());
        if (tensor.storage != static_cast<std::int32_t>(i))
            return QStringLiteral("tensor %1: storage index %2").arg(name).arg(tensor.storage);
        const StorageRecord& storage = checkpoint.storages[i];
        if (storage.tensors != std::vector<std::uint32_t> {static_cast<std::uint32_t>(i)})
            return QStringLiteral("storage of %1 does not list exactly its tensor").arg(name);
        const std::optional<std::uint32_t> indexed = checkpoint.storageIndex(storage.key);
        if (indexed != i)
            return QStringLiteral("storage key of %1 is not indexed").arg(name);
        if (storage.device || tensor.device)
            return QStringLiteral("%1 has a device; safetensors records none").arg(name);
        if (storage.availableBytes && !storage.dataOffset)
            return QStringLiteral("%1 has available bytes but no offset").arg(name);
        if (storage.dataOffset && storage.availableBytes && *storage.availableBytes > 0
            && (*storage.dataOffset > fileSize || *storage.availableBytes > fileSize - *storage.dataOffset))
            return QStringLiteral("%1 claims bytes past the end of the file").arg(name);
        if (!tensor.stride || tensor.stride->size() != tensor.shape.size() || tensor.storageOffset != 0)
            return QStringLiteral("%1 has no C-order view").arg(name);
        if (tensor.treeNode == 0 || tensor.treeNode >= checkpoint.tree.size())
            return QStringLiteral("%1 has no tree node").arg(name);
        const TreeNode& node = checkpoint.tree[tensor.treeNode];
        if (node.kind != TreeNodeKind::Tensor || node.tensor != static_cast<std::int32_t>(i))
            return QStringLiteral("tree node of %1 does not point back").arg(name);
        if (checkpoint.treePath(tensor.treeNode) != tensor.name)
            return QStringLiteral("%1 sits at tree path %2")
                .arg(name, QString::fromStdString(checkpoint.treePath(tensor.treeNode)));
    }
    // Every node but the root is listed exactly once, by its own parent.
    std::vector<bool> listed(checkpoint.tree.size(), false);
    for (std::size_t i = 0; i < checkpoint.tree.size(); ++i) {
        for (const std::uint32_t child : checkpoint.tree[i].children) {
            if (child == 0 || child >= checkpoint.tree.size() || listed[child]
                || checkpoint.tree[child].parent != i)
                return QStringLiteral("node %1 is listed wrongly as a child of %2").arg(child).arg(i);
            listed[child] = true;
        }
    }
    if (std::count(listed.begin(), listed.end(), false) != 1)
        return QStringLiteral("some nodes are not in the tree");
    return {};
}

struct CorpusSample {
    QString name;
    QByteArray bytes;
    QJsonObject expected;
};

QList<CorpusSample> corpusSamples()
{
    QList<CorpusSample> samples;
    const QStringList expectations
        = QDir(kExpectedDir)
              .entryList({QStringLiteral("*.safetensors.expected.json")}, QDir::Files, QDir::Name);
    for (const QString& expectation : expectations) {
        CorpusSample sample;
        sample.name = expectation.chopped(int(sizeof(".expected.json")) - 1);
        sample.bytes = readAll(kCorpusFiles + QLatin1Char('/') + sample.name);
        sample.expected
            = QJsonDocument::fromJson(readAll(kExpectedDir + QLatin1Char('/') + expectation)).object();
        samples.append(sample);
    }
    return samples;
}

} // namespace

class TestSafetensors : public QObject {
    Q_OBJECT

    // Headers plain and odd: what writers produce, what the JSON parser alone accepts, and damage.
    static QList<QByteArray> headerSamples()
    {
        // Long headers are split into adjacent literals on purpose.
        // NOLINTBEGIN(bugprone-suspicious-missing-comma)
        return {
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}   ",
            " { \"a\" : { \"shape\" : [ 2 ] , \"data_offsets\" : [ 0 , 8 ] , \"dtype\" : \"F32\" } }\n\t\r ",
            "{ \"a\" : { \"shape\" : [ 2 ] , \"data_offsets\" : [ 0 , 8 ] , \"dtype\" : \"F32\" } }\n\t\r ",
            "{\"a\":{\"data_offsets\":[0,8],\"dtype\":\"F32\",\"shape\":[2]},\"b.c.d\":{\"dtype\":\"BF16\","
            "\"shape\":[],\"data_offsets\":[8,10]}}",
            "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"it's "
            "\\\"quoted\\\"\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
            "{\"__metadata__\":{\"format\":\"pt\",\"x\":\"y\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_"
            "offsets\":[0,8]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"__metadata__\":{}}",
            "{\"__metadata__\":{\"format\":\"pt\"}}",
            "{\"__metadata__\":\"pt\"}",
            "{\"__metadata__\":{\"n\":1}}",
            "{\"__metadata__\":{\"a\":\"b\"},\"__metadata__\":{\"a\":\"b\"}}",
            "{}",
            "{ }",
            "",
            "[]",
            "{\"a\\u00e9\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
            "{\"\xc3\xa9\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
            "{\"\xc3\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
            "{\"a\tb\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"extra\":1}}",
            "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,8]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8.0]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,-8]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[00,8]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,1e1]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,18446744073709551615]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,18446744073709551616]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[18446744073709551615,"
            "18446744073709551615]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,9]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[9223372036854775807,4],\"data_offsets\":[0,8]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[9223372036854775808],\"data_offsets\":[0,8]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,],\"data_offsets\":[0,8]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}",
            "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}",
            "{\"a\":{\"dtype\":5,\"shape\":[2],\"data_offsets\":[0,8]}}",
            "{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}",
            "{\"a\":[1,2]}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}x",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"a\":{\"dtype\":\"F32\","
            "\"shape\":[2],\"data_offsets\":[8,16]}}",
            "{\"a\":{\"dtype\":\"Q8\",\"shape\":[2],\"data_offsets\":[0,8]}}",
            "{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]},\"b\":{\"dtype\":\"F6_E2M3\","
            "\"shape\":[3],\"data_offsets\":[2,4]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\","
            "\"shape\":[2],\"data_offsets\":[4,12]}}",
            "{\"a..b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},\".c\":{\"dtype\":\"U8\","
            "\"shape\":[1],\"data_offsets\":[1,2]},\"d.\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":["
            "2,3]},\"e.f.g\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[3,4]},\"e.f.h\":{\"dtype\":"
            "\"U8\",\"shape\":[1],\"data_offsets\":[4,5]},\"e.i\":{\"dtype\":\"U8\",\"shape\":[1],\"data_"
            "offsets\":[5,64]}}",
        };
        // NOLINTEND(bugprone-suspicious-missing-comma)
    }

private:
    QList<CorpusSample> m_samples;

    const CorpusSample& sample(const QString& name) const
    {
        for (const CorpusSample& candidate : m_samples)
            if (candidate.name == name)
                return candidate;
        qFatal("no sample %s", qPrintable(name));
    }

private Q_SLOTS:
    void initTestCase()
    {
        if (!QFileInfo(kCorpusFiles).isDir())
            QSKIP("the shared corpus (../shared/corpus/files) is not available here");
        m_samples = corpusSamples();
        QCOMPARE(m_samples.size(), 3);
        for (const CorpusSample& sample : std::as_const(m_samples)) {
            QVERIFY2(!sample.bytes.isEmpty(),
                qPrintable(sample.name + QStringLiteral(" is missing from the corpus")));
            // The expectations describe these exact bytes.
            QCOMPARE(QString::fromLatin1(
                         QCryptographicHash::hash(sample.bytes, QCryptographicHash::Sha256).toHex()),
                sample.expected.value(QStringLiteral("sha256")).toString());
        }
    }

    // Files written by the real safetensors library read exactly as the independent reader says.
    void corpusMatchesIndependentReader_data()
    {
        QTest::addColumn<QString>("name");
        for (const CorpusSample& sample : std::as_const(m_samples))
            QTest::newRow(qPrintable(sample.name.left(40))) << sample.name;
    }
    void corpusMatchesIndependentReader()
    {
        QFETCH(QString, name);
        const CorpusSample& expectedSample = sample(name);
        const QJsonObject& expected = expectedSample.expected;

        // Through the real memory map, as the application opens files.
        auto mapped = MappedFile::open(QString(kCorpusFiles + QLatin1Char('/') + name).toStdString());
        QVERIFY2(mapped, mapped ? "" : mapped.error().message.c_str());
        Checkpoint checkpoint;
        checkpoint.file = *mapped;
        checkpoint.fileSize = (*mapped)->size();
        readSafetensors(checkpoint);

        QVERIFY2(checkpoint.findings.empty(), qPrintable(findingsText(checkpoint)));
        QCOMPARE(checkpoint.format, CheckpointFormat::Safetensors);
        QVERIFY2(inconsistency(checkpoint).isEmpty(), qPrintable(inconsistency(checkpoint)));
        const QJsonArray tensors = expected.value(QStringLiteral("tensors")).toArray();
        QCOMPARE(checkpoint.tensors.size(), std::size_t(tensors.size()));
        for (qsizetype i = 0; i < tensors.size(); ++i) {
            const QJsonObject want = tensors[i].toObject();
            const TensorEntry& tensor = checkpoint.tensors[std::size_t(i)];
            const StorageRecord& storage = checkpoint.storages[std::size_t(tensor.storage)];
            const std::string tensorName = want.value(QStringLiteral("name")).toString().toStdString();
            QCOMPARE(tensor.name, tensorName);
            QCOMPARE(
                QString::fromStdString(tensor.dtype), want.value(QStringLiteral("torch_dtype")).toString());
            std::vector<std::int64_t> shape;
            for (const QJsonValue dim : want.value(QStringLiteral("shape")).toArray())
                shape.push_back(dim.toInteger());
            std::vector<std::int64_t> stride;
            for (const QJsonValue dim : want.value(QStringLiteral("stride")).toArray())
                stride.push_back(dim.toInteger());
            QCOMPARE(tensor.shape, shape);
            QCOMPARE(tensor.stride, std::optional<std::vector<std::int64_t>>(stride));
            QCOMPARE(tensor.storageOffset, std::optional<std::int64_t>(0));
            QCOMPARE(tensor.layout, TensorLayout::Strided);
            QCOMPARE(tensor.rebuildFunction, std::string("safetensors"));
            QVERIFY(!tensor.device);

            QCOMPARE(storage.key, tensorName);
            QCOMPARE(storage.storageClass, std::string("safetensors"));
            QCOMPARE(storage.dtype, tensor.dtype);
            QCOMPARE(storage.numel, std::uint64_t(want.value(QStringLiteral("numel")).toInteger()));
            QCOMPARE(storage.nbytes, std::uint64_t(want.value(QStringLiteral("nbytes")).toInteger()));
            QCOMPARE(storage.record(), "tensor data of " + tensorName);
            QCOMPARE(storage.dataOffset,
                std::optional<std::uint64_t>(want.value(QStringLiteral("file_offset")).toInteger()));
            QCOMPARE(storage.availableBytes, std::optional<std::uint64_t>(storage.nbytes));
            QVERIFY(storage.bytesComplete());
            QCOMPARE(tensor.nbytes(), storage.nbytes);
        }
        // No metadata in these files, so the tree holds modules and tensors only.
        QVERIFY(expected.value(QStringLiteral("metadata")).isNull());
        for (const TreeNode& node : checkpoint.tree)
            QVERIFY(node.kind == TreeNodeKind::Root || node.kind == TreeNodeKind::Module
                || node.kind == TreeNodeKind::Tensor);
    }

    // The tree is the one Checkpoint::modulePathFor builds, also for names with odd dots.
    void treeMatchesModulePathFor()
    {
        const QByteArray& mnist = sample(kMnist).bytes;
        const QStringList names = {QStringLiteral("a.b.c"), QStringLiteral("a.b.d"), QStringLiteral("a"),
            QStringLiteral("a..b"), QStringLiteral(".hidden"), QStringLiteral("trailing."),
            QStringLiteral("x.y."), QStringLiteral(""), QStringLiteral("a.b"), QStringLiteral("z.0.weight"),
            QStringLiteral("z.1.weight"), QStringLiteral("z.0.bias"), QStringLiteral("..."),
            QStringLiteral("a.b.c.d"), QStringLiteral("q.r"), QStringLiteral("encoder.layers.0.attn.q"),
            QStringLiteral("encoder.layers.0.attn.k"), QStringLiteral("encoder.layers.1.attn.q"),
            QStringLiteral("a.z"), QStringLiteral("\xc3\xa9.t")};
        const QByteArray renamed = editedHeader(mnist, [&](JsonValue& header) {
            int i = 0;
            for (JsonMember& member : *header.object())
                member.key = names.value(i++).toStdString();
        });
        auto checkpoint = readBytes(renamed);
        QVERIFY2(checkpoint->findings.empty(), qPrintable(findingsText(*checkpoint)));
        QVERIFY2(inconsistency(*checkpoint).isEmpty(), qPrintable(inconsistency(*checkpoint)));

        Checkpoint reference;
        reference.ensureRoot();
        for (const QString& name : names) {
            std::string leaf;
            const std::uint32_t parent = reference.modulePathFor(0, name.toStdString(), leaf);
            reference.addTreeNode(parent, TreeNodeKind::Tensor, leaf);
        }
        QString got;
        QString want;
        dumpTree(*checkpoint, 0, 0, got);
        dumpTree(reference, 0, 0, want);
        QCOMPARE(got, want);
    }

    // Cut short anywhere: before the header is whole nothing can be listed; after it every tensor
    // is listed and exactly those whose bytes lie before the cut have them.
    void everyTruncation()
    {
        for (const CorpusSample& corpus : std::as_const(m_samples)) {
            const QByteArray& full = corpus.bytes;
            const auto size = static_cast<std::uint64_t>(full.size());
            const std::uint64_t dataStart = corpus.expected.value(QStringLiteral("data_start")).toInteger();
            const QJsonArray tensors = corpus.expected.value(QStringLiteral("tensors")).toArray();
            QSet<std::uint64_t> cuts;
            if (size <= 4096) {
                for (std::uint64_t cut = 0; cut <= size; ++cut)
                    cuts.insert(cut);
            } else {
                for (std::uint64_t cut = 0; cut <= 16; ++cut)
                    cuts.insert(cut);
                for (std::uint64_t cut = dataStart - 3; cut <= dataStart + 3; ++cut)
                    cuts.insert(cut);
                for (const QJsonValue tensor : tensors) {
                    const std::uint64_t begin = tensor[QStringLiteral("file_offset")].toInteger();
                    const std::uint64_t end = begin + tensor[QStringLiteral("nbytes")].toInteger();
                    for (const std::uint64_t cut : {begin - 1, begin, begin + 1, end - 1, end, end + 1})
                        cuts.insert(std::min(cut, size));
                }
                QRandomGenerator random(42);
                for (int i = 0; i < 64; ++i)
                    cuts.insert(random.bounded(static_cast<quint32>(size)));
                cuts.insert(size - 1);
                cuts.insert(size);
            }
            for (const std::uint64_t cut : std::as_const(cuts)) {
                const QString where = QStringLiteral("%1 cut at %2").arg(corpus.name).arg(cut);
                auto checkpoint = readBytes(full.left(static_cast<qsizetype>(cut)));
                QVERIFY2(inconsistency(*checkpoint).isEmpty(),
                    qPrintable(where + QLatin1Char(' ') + inconsistency(*checkpoint)));
                const QStringList codes = codesOf(*checkpoint);
                if (cut < 8) {
                    QCOMPARE(codes, QStringList {QStringLiteral("header-too-small")});
                    QVERIFY(checkpoint->tensors.empty());
                } else if (cut < dataStart) {
                    QCOMPARE(codes, QStringList {QStringLiteral("header-truncated")});
                    QVERIFY(checkpoint->tensors.empty());
                    QCOMPARE(checkpoint->findings[0].offset, std::optional<std::uint64_t>(cut));
                } else {
                    QCOMPARE(
                        codes, cut < size ? QStringList {QStringLiteral("file-truncated")} : QStringList {});
                    QVERIFY2(checkpoint->hasErrors() == (cut < size), qPrintable(where));
                    QCOMPARE(checkpoint->tensors.size(), std::size_t(tensors.size()));
                    for (qsizetype i = 0; i < tensors.size(); ++i) {
                        const std::uint64_t begin = tensors[i][QStringLiteral("file_offset")].toInteger();
                        const std::uint64_t nbytes = tensors[i][QStringLiteral("nbytes")].toInteger();
                        const StorageRecord& storage = checkpoint->storages[std::size_t(i)];
                        QCOMPARE(storage.key, tensors[i][QStringLiteral("name")].toString().toStdString());
                        QCOMPARE(storage.nbytes, nbytes);
                        QCOMPARE(storage.dataOffset, std::optional<std::uint64_t>(begin));
                        const std::uint64_t present = cut > begin ? std::min(cut - begin, nbytes) : 0;
                        QCOMPARE(storage.availableBytes, std::optional<std::uint64_t>(present));
                        QVERIFY2(storage.bytesComplete() == (begin + nbytes <= cut), qPrintable(where));
                    }
                }
            }
        }
    }

    void damagedHeaderLength()
    {
        for (const CorpusSample& corpus : std::as_const(m_samples)) {
            const std::uint64_t n = headerLengthOf(corpus.bytes);
            const auto size = static_cast<std::uint64_t>(corpus.bytes.size());
            for (const std::uint64_t length :
                {std::uint64_t {0}, std::uint64_t {1}, n - 1, n + 1, n + 8, n * 2, size - 8, size - 7, size,
                    std::uint64_t {100'000'000}, std::uint64_t {100'000'001}, std::uint64_t {1} << 32,
                    std::uint64_t {1} << 63, ~std::uint64_t {0}}) {
                const QString where = QStringLiteral("%1 with header length %2").arg(corpus.name).arg(length);
                auto checkpoint = readBytes(withHeaderLength(corpus.bytes, length));
                QVERIFY2(inconsistency(*checkpoint).isEmpty(),
                    qPrintable(where + QLatin1Char(' ') + inconsistency(*checkpoint)));
                QVERIFY2(checkpoint->hasErrors(), qPrintable(where + findingsText(*checkpoint)));
                if (length > 100'000'000)
                    QCOMPARE(codesOf(*checkpoint), QStringList {QStringLiteral("header-too-large")});
                else if (length > size - 8)
                    QCOMPARE(codesOf(*checkpoint), QStringList {QStringLiteral("header-truncated")});
            }
        }
    }

    // One rule broken at a time, in a copy of a real file: the right findings, and what is intact
    // still listed.
    void brokenRules()
    {
        const QByteArray& tiny = sample(kTiny).bytes; // attention I8 [2,3] [0,6]; embedding I8 [2,2] [6,10]
        struct Case {
            const char* name;
            QByteArray file;
            QStringList codes;
            std::function<void(const Checkpoint&)> check;
        };
        auto storageOf = [](const Checkpoint& checkpoint, const char* key) -> const StorageRecord& {
            return checkpoint.storages.at(checkpoint.storageIndex(key).value());
        };
        const QList<Case> cases = {
            {"overlap", replacedInHeader(tiny, "[6,10]", "[4, 8]"),
                {QStringLiteral("data-overlap"), QStringLiteral("trailing-bytes")},
                [&](const Checkpoint& c) {
                    QCOMPARE(storageOf(c, "embedding").dataOffset, std::optional<std::uint64_t>(136 + 4));
                    QVERIFY(storageOf(c, "embedding").bytesComplete());
                    QCOMPARE(c.findings[0].offset, std::optional<std::uint64_t>(140));
                }},
            {"gap", replacedInHeader(tiny, "[6,10]", "[7,11]"),
                {QStringLiteral("data-gap"), QStringLiteral("file-truncated")},
                [&](const Checkpoint& c) {
                    QVERIFY(storageOf(c, "attention").bytesComplete());
                    QCOMPARE(storageOf(c, "embedding").availableBytes, std::optional<std::uint64_t>(3));
                    QVERIFY(!storageOf(c, "embedding").bytesComplete());
                }},
            {"size mismatch", replacedInHeader(tiny, "[2,2]", "[2,3]"),
                {QStringLiteral("tensor-size-mismatch")},
                [&](const Checkpoint& c) {
                    QCOMPARE(c.tensors[1].shape, (std::vector<std::int64_t> {2, 3}));
                    QCOMPARE(storageOf(c, "embedding").nbytes, std::uint64_t {6});
                    QCOMPARE(storageOf(c, "embedding").availableBytes, std::optional<std::uint64_t>(4));
                    QVERIFY(!storageOf(c, "embedding").bytesComplete());
                }},
            {"unknown dtype", replacedInHeader(tiny, "\"I8\"", "\"Q8\""), {QStringLiteral("unknown-dtype")},
                [&](const Checkpoint& c) {
                    QCOMPARE(c.tensors.size(), std::size_t {2});
                    QCOMPARE(c.tensors[0].dtype, std::string("q8"));
                    QCOMPARE(storageOf(c, "attention").dtype, std::string("q8"));
                    QCOMPARE(storageOf(c, "attention").numel, std::uint64_t {6});
                    QCOMPARE(storageOf(c, "attention").nbytes, std::uint64_t {0});
                    QVERIFY(!storageOf(c, "attention").dataOffset);
                    QVERIFY(storageOf(c, "embedding").bytesComplete());
                }},
            {"dtype torch lacks", replacedInHeader(tiny, "\"I8\"", "\"F4\""),
                {QStringLiteral("dtype-without-torch-equivalent"), QStringLiteral("tensor-size-mismatch")},
                [&](const Checkpoint& c) { QCOMPARE(c.tensors[0].dtype, std::string("f4")); }},
            {"misaligned bits",
                replacedInHeader(replacedInHeader(tiny, "\"I8\"", "\"F6_E2M3\""), "[2,3]", "[1,3]"),
                {QStringLiteral("dtype-without-torch-equivalent"), QStringLiteral("tensor-size-misaligned")},
                nullptr},
            {"duplicate name", replacedInHeader(tiny, "\"embedding\"", "\"attention\""),
                {QStringLiteral("duplicate-tensor-name")},
                [&](const Checkpoint& c) {
                    QCOMPARE(c.tensors.size(), std::size_t {2});
                    QCOMPARE(c.tensors[1].name, std::string("attention"));
                    QCOMPARE(c.storages[1].key, std::string("attention (duplicate 2)"));
                    QVERIFY(c.storages[1].bytesComplete());
                }},
            {"negative offset", replacedInHeader(tiny, "[0,6]", "[-1,6]"),
                {QStringLiteral("data-gap"), QStringLiteral("tensor-offsets-invalid")},
                [&](const Checkpoint& c) {
                    QCOMPARE(c.tensors.size(), std::size_t {2});
                    QVERIFY(!storageOf(c, "attention").dataOffset);
                }},
            {"reversed offsets", replacedInHeader(tiny, "[6,10]", "[10,6]"),
                {QStringLiteral("tensor-offsets-invalid"), QStringLiteral("trailing-bytes")}, nullptr},
            {"fractional offset", replacedInHeader(tiny, "[6,10]", "[6.0,10]"),
                {QStringLiteral("tensor-offsets-invalid"), QStringLiteral("trailing-bytes")}, nullptr},
            {"three offsets", replacedInHeader(tiny, "[6,10]", "[6,10,14]"),
                {QStringLiteral("tensor-offsets-invalid"), QStringLiteral("trailing-bytes")}, nullptr},
            {"offsets past 2^64",
                replacedInHeader(tiny, "[6,10]", "[18446744073709551600,18446744073709551615]"),
                {QStringLiteral("tensor-offsets-invalid"), QStringLiteral("trailing-bytes")}, nullptr},
            {"offset above uint64", replacedInHeader(tiny, "[6,10]", "[6,18446744073709551616]"),
                {QStringLiteral("tensor-offsets-invalid"), QStringLiteral("trailing-bytes")}, nullptr},
            {"offsets at 2^48", replacedInHeader(tiny, "[6,10]", "[6,281474976710655]"),
                {QStringLiteral("file-truncated"), QStringLiteral("tensor-size-mismatch")},
                [&](const Checkpoint& c) { QVERIFY(storageOf(c, "embedding").bytesComplete()); }},
            {"shape overflows", replacedInHeader(tiny, "[2,2]", "[4294967296,4294967296,4294967296]"),
                {QStringLiteral("tensor-size-overflow")},
                [&](const Checkpoint& c) {
                    QCOMPARE(c.tensors[1].shape.size(), std::size_t {3});
                    QCOMPARE(storageOf(c, "embedding").nbytes, std::uint64_t {0});
                }},
            {"bits overflow",
                replacedInHeader(replacedInHeader(tiny, "[2,2]", "[2305843009213693952]"),
                    "\"I8\",\"shape\":[2305", "\"I64\",\"shape\":[2305"),
                {QStringLiteral("tensor-size-overflow")}, nullptr},
            {"shape with a string", replacedInHeader(tiny, "[2,2]", "[2,\"2\"]"),
                {QStringLiteral("tensor-info-invalid")},
                [&](const Checkpoint& c) { QCOMPARE(c.tensors.size(), std::size_t {1}); }},
            {"negative dimension", replacedInHeader(tiny, "[2,2]", "[2,-2]"),
                {QStringLiteral("tensor-info-invalid")}, nullptr},
            {"no dtype",
                editedHeader(tiny,
                    [](JsonValue& h) {
                        h.find("embedding")->object()->erase(h.find("embedding")->object()->begin());
                    }),
                {QStringLiteral("tensor-info-invalid")},
                [&](const Checkpoint& c) { QCOMPARE(c.tensors.size(), std::size_t {1}); }},
            {"entry not an object", editedHeader(tiny, [](JsonValue& h) { h.set("extra", 5); }),
                {QStringLiteral("tensor-info-invalid")}, nullptr},
            {"metadata",
                editedHeader(tiny,
                    [](JsonValue& h) {
                        JsonValue metadata;
                        metadata.insert("format", "pt");
                        metadata.insert("note", "it's\n");
                        h.object()->insert(h.object()->begin(), JsonMember {"__metadata__", metadata});
                    }),
                {},
                [&](const Checkpoint& c) {
                    const TreeNode& dict = c.tree[c.tree[0].children.at(0)];
                    QCOMPARE(dict.kind, TreeNodeKind::Dict);
                    QCOMPARE(dict.name, std::string("__metadata__"));
                    QCOMPARE(dict.children.size(), std::size_t {2});
                    QCOMPARE(c.tree[dict.children[0]].kind, TreeNodeKind::Value);
                    QCOMPARE(c.tree[dict.children[0]].name, std::string("format"));
                    QCOMPARE(c.tree[dict.children[0]].summary, std::string("'pt'"));
                    QCOMPARE(c.tree[dict.children[1]].summary, std::string("'it\\'s\\n'"));
                    QCOMPARE(c.tensors.size(), std::size_t {2});
                }},
            {"metadata not strings",
                editedHeader(tiny,
                    [](JsonValue& h) {
                        JsonValue metadata;
                        metadata.insert("epochs", 3);
                        h.set("__metadata__", metadata);
                    }),
                {QStringLiteral("metadata-not-string")},
                [&](const Checkpoint& c) {
                    QCOMPARE(c.tree[c.tree[0].children.back()].children.size(), std::size_t {1});
                }},
            {"metadata not an object", editedHeader(tiny, [](JsonValue& h) { h.set("__metadata__", "x"); }),
                {QStringLiteral("metadata-invalid")}, nullptr},
            {"header is an array", withHeader(tiny, "[]      "), {QStringLiteral("header-not-object")},
                [&](const Checkpoint& c) { QVERIFY(c.tensors.empty()); }},
            {"header starts with space", withHeader(tiny, " " + headerOf(tiny).chopped(1)),
                {QStringLiteral("header-start-invalid")},
                [&](const Checkpoint& c) { QCOMPARE(c.tensors.size(), std::size_t {2}); }},
            {"NUL padding", withHeader(tiny, headerOf(tiny).chopped(2) + QByteArray(2, '\0')),
                {QStringLiteral("header-padding-invalid")},
                [&](const Checkpoint& c) {
                    QCOMPARE(c.tensors.size(), std::size_t {2});
                    QVERIFY(c.storages[1].bytesComplete());
                }},
            {"invalid UTF-8 name", replacedInHeader(tiny, "attention", "attenti\xff\xfe"),
                {QStringLiteral("header-invalid-json")},
                [&](const Checkpoint& c) {
                    QVERIFY(c.tensors.empty());
                    QCOMPARE(c.findings[0].offset, std::optional<std::uint64_t>(8 + 2 + 7));
                    QVERIFY(c.findings[0].message.find("invalid UTF-8") != std::string::npos);
                }},
            {"cut JSON", withHeader(tiny, headerOf(tiny).left(60)), {QStringLiteral("header-invalid-json")},
                nullptr},
            {"deep nesting", withHeader(tiny, "{\"a\":" + QByteArray(200'000, '[')),
                {QStringLiteral("header-invalid-json")},
                [&](const Checkpoint& c) {
                    QVERIFY(
                        c.findings[0].message.find("nesting deeper than 128 levels") != std::string::npos);
                }},
            {"unaligned header", withHeader(tiny, headerOf(tiny) + ' '), {QStringLiteral("header-unaligned")},
                [&](const Checkpoint& c) {
                    QVERIFY(!c.hasErrors());
                    QVERIFY(c.storages[1].bytesComplete());
                }},
            {"empty header, data left", withHeader(tiny, "{}      "), {QStringLiteral("trailing-bytes")},
                nullptr},
            {"empty file", withHeader(tiny, "{}      ").left(16), {}, nullptr},
            {"appended bytes", tiny + "extra", {QStringLiteral("trailing-bytes")},
                [&](const Checkpoint& c) {
                    QCOMPARE(c.findings[0].offset, std::optional<std::uint64_t>(146));
                }},
            {"empty tensor", replacedInHeader(replacedInHeader(tiny, "[2,2]", "[2,0]"), "[6,10]", "[6,6]"),
                {QStringLiteral("trailing-bytes")},
                [&](const Checkpoint& c) {
                    QCOMPARE(c.tensors[1].stride, std::optional<std::vector<std::int64_t>>({1, 1}));
                    QCOMPARE(storageOf(c, "embedding").nbytes, std::uint64_t {0});
                    QVERIFY(storageOf(c, "embedding").bytesComplete());
                }},
            {"three bytes", QByteArray("abc"), {QStringLiteral("header-too-small")}, nullptr},
            {"no bytes", QByteArray(), {QStringLiteral("header-too-small")}, nullptr},
        };
        for (const Case& test : cases) {
            auto checkpoint = readBytes(test.file, QString::fromLatin1(test.name));
            const QString where = QString::fromLatin1(test.name);
            QVERIFY2(inconsistency(*checkpoint).isEmpty(),
                qPrintable(where + QLatin1Char(' ') + inconsistency(*checkpoint)));
            QVERIFY2(codesOf(*checkpoint) == test.codes,
                qPrintable(where + QStringLiteral(": expected ") + test.codes.join(QLatin1Char(','))
                    + QStringLiteral(", got") + findingsText(*checkpoint)));
            for (const Finding& finding : checkpoint->findings)
                QVERIFY2(!finding.message.empty(), qPrintable(where));
            if (test.check) {
                test.check(*checkpoint);
                if (QTest::currentTestFailed()) {
                    qWarning("in case %s%s", test.name, qPrintable(findingsText(*checkpoint)));
                    return;
                }
            }
        }
    }

    // A header that breaks one rule for every tensor gives a few findings and a count, not a
    // million lines.
    // The streaming header scan (issue 28) reads what the JSON parser reads, findings included, for
    // headers it takes (plain ones, any spacing and key order) and those it hands to the parser
    // (escapes, non-ASCII, numbers it does not vouch for, repeated or extra keys, damage).
    void scanAgreesWithParser()
    {
        const QByteArray data(64, '\0');
        for (const QByteArray& header : headerSamples()) {
            for (const QByteArray& padding : {QByteArray(), QByteArray(3, ' '), QByteArray(5, '\0')}) {
                const QByteArray file = withHeader(QByteArray(8, '\0'), header + padding) + data;
                const QString difference = scanAndParseDiffer(file);
                QVERIFY2(difference.isEmpty(),
                    qPrintable(QStringLiteral("%1\n%2").arg(QString::fromLatin1(header), difference)));
            }
        }
        // Real files, then their headers damaged with JSON's own characters, so many stay JSON.
        QList<QByteArray> files;
        for (const CorpusSample& sample : std::as_const(m_samples))
            files.append(sample.bytes);
        files.append(readAll(QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/dtypes/newdtypes.safetensors")));
        const QByteArray alphabet = "0123456789{}[],:\" .-eE\\a_";
        QRandomGenerator random(2828);
        for (const QByteArray& full : std::as_const(files)) {
            QVERIFY(!full.isEmpty());
            QVERIFY2(scanAndParseDiffer(full).isEmpty(), qPrintable(scanAndParseDiffer(full)));
            const auto dataStart
                = static_cast<quint32>(std::min<std::uint64_t>(8 + headerLengthOf(full), full.size()));
            for (int round = 0; round < 400; ++round) {
                QByteArray damaged = full;
                const int flips = 1 + static_cast<int>(random.bounded(2));
                for (int i = 0; i < flips; ++i)
                    damaged[8 + random.bounded(dataStart - 8)] = alphabet[static_cast<qsizetype>(
                        random.bounded(static_cast<quint32>(alphabet.size())))];
                const QString difference = scanAndParseDiffer(damaged);
                QVERIFY2(difference.isEmpty(),
                    qPrintable(QStringLiteral("round %1\n%2").arg(round).arg(difference)));
            }
        }
    }

    void findingsAreCapped()
    {
        const QByteArray& tiny = sample(kTiny).bytes;
        const QByteArray file = editedHeader(tiny, [](JsonValue& header) {
            for (int i = 0; i < 100; ++i) {
                JsonValue info;
                info.insert("dtype", "Q8");
                info.insert("shape", JsonValue(JsonValue::Array {JsonValue(0)}));
                info.insert("data_offsets", JsonValue(JsonValue::Array {JsonValue(10), JsonValue(10)}));
                header.insert("bad." + std::to_string(i), info);
            }
        });
        auto checkpoint = readBytes(file);
        QVERIFY2(inconsistency(*checkpoint).isEmpty(), qPrintable(inconsistency(*checkpoint)));
        QCOMPARE(checkpoint->tensors.size(), std::size_t {102});
        QCOMPARE(checkpoint->findings.size(), std::size_t {21});
        QVERIFY(
            checkpoint->findings.back().message.starts_with("80 more problems of this kind (unknown-dtype)"));
    }

    // A hostile header with very many names stays linear: 100,000 modules at the top level.
    void manyNamesStayFast()
    {
        JsonWriter writer;
        writer.beginObject();
        for (const char* leaf : {"weight", "bias"}) {
            for (int i = 0; i < 100'000; ++i) {
                writer.key("m" + std::to_string(i) + "." + leaf).beginObject();
                writer.member("dtype", "F32");
                writer.key("shape").beginArray().value(0).endArray();
                writer.key("data_offsets").beginArray().value(0).value(0).endArray();
                writer.endObject();
            }
        }
        writer.endObject();
        std::string header = writer.takeText();
        header.append((8 - header.size() % 8) % 8, ' ');
        const QByteArray file = withHeaderLength(QByteArray(8, '\0'), header.size())
            + QByteArray(header.data(), static_cast<qsizetype>(header.size()));
        QElapsedTimer timer;
        timer.start();
        auto checkpoint = readBytes(file);
        qInfo("200,000 tensors read in %lld ms", static_cast<long long>(timer.elapsed()));
        QVERIFY2(checkpoint->findings.empty(), qPrintable(findingsText(*checkpoint)));
        QCOMPARE(checkpoint->tensors.size(), std::size_t {200'000});
        QCOMPARE(checkpoint->tree[0].children.size(), std::size_t {100'000});
        QCOMPARE(checkpoint->tree[checkpoint->tree[0].children[5]].children.size(), std::size_t {2});
        QVERIFY2(inconsistency(*checkpoint).isEmpty(), qPrintable(inconsistency(*checkpoint)));
    }

    // One name repeated 50,000 times: one finding, unique storage keys, no quadratic search.
    void manyRepeatsStayFast()
    {
        JsonValue info;
        info.insert("dtype", "F32");
        info.insert("shape", JsonValue(JsonValue::Array {JsonValue(0)}));
        info.insert("data_offsets", JsonValue(JsonValue::Array {JsonValue(0), JsonValue(0)}));
        JsonValue header;
        for (int i = 0; i < 50'000; ++i)
            header.insert("a.w", info);
        std::string text = header.toJson();
        text.append((8 - text.size() % 8) % 8, ' ');
        auto checkpoint = readBytes(withHeaderLength(QByteArray(8, '\0'), text.size())
            + QByteArray(text.data(), static_cast<qsizetype>(text.size())));
        QCOMPARE(codesOf(*checkpoint), QStringList {QStringLiteral("duplicate-tensor-name")});
        QCOMPARE(checkpoint->findings.size(), std::size_t {1});
        QCOMPARE(checkpoint->tensors.size(), std::size_t {50'000});
        QCOMPARE(checkpoint->storages.back().key, std::string("a.w (duplicate 50000)"));
        QVERIFY2(inconsistency(*checkpoint).isEmpty(), qPrintable(inconsistency(*checkpoint)));
    }

    // Random damage to the length field and the header: never a crash, always a consistent model.
    // Damage to tensor bytes is invisible to the format and must not produce findings.
    void randomDamage()
    {
        QRandomGenerator random(1234);
        for (const QString& name : {kTiny, kMnist}) {
            const QByteArray& full = sample(name).bytes;
            const auto dataStart = static_cast<quint32>(8 + headerLengthOf(full));
            for (int round = 0; round < 3000; ++round) {
                QByteArray damaged = full;
                const int flips = 1 + static_cast<int>(random.bounded(3));
                for (int i = 0; i < flips; ++i)
                    damaged[random.bounded(dataStart)] = static_cast<char>(random.bounded(256));
                if (round % 3 == 0)
                    damaged.truncate(
                        static_cast<qsizetype>(random.bounded(static_cast<quint32>(damaged.size() + 1))));
                auto checkpoint = readBytes(damaged);
                QVERIFY2(inconsistency(*checkpoint).isEmpty(),
                    qPrintable(QStringLiteral("%1 round %2: %3")
                                   .arg(name)
                                   .arg(round)
                                   .arg(inconsistency(*checkpoint))));
            }
            QByteArray dataDamaged = full;
            for (int i = 0; i < 100; ++i)
                dataDamaged[dataStart + random.bounded(static_cast<quint32>(full.size()) - dataStart)]
                    ^= 0x5A;
            auto checkpoint = readBytes(dataDamaged);
            QVERIFY2(checkpoint->findings.empty(), qPrintable(findingsText(*checkpoint)));
        }
    }

    // safetensors 0.8 wrote it (tests/fixtures/dtypes); what load_file returned is in its
    // .expected.json: F4 is torch's float4_e2m1fn_x2 with the header's last dimension halved, the
    // float8 variants and U16/U32/U64 their torch dtypes, each with its bytes.
    void newerDtypesAsSafetensorsLoadsThem()
    {
        const QString path = QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/dtypes/newdtypes.safetensors");
        const QByteArray full = readAll(path);
        QVERIFY(!full.isEmpty());
        auto checkpoint = readBytes(full, path);
        QVERIFY2(checkpoint->findings.empty(), qPrintable(findingsText(*checkpoint)));
        QFile expectedFile(path + u".expected.json"_qs);
        QVERIFY(expectedFile.open(QIODevice::ReadOnly));
        const QJsonArray expected
            = QJsonDocument::fromJson(expectedFile.readAll()).object()[u"tensors"_qs].toArray();
        QCOMPARE(checkpoint->tensors.size(), std::size_t(expected.size()));
        for (const auto& value : expected) {
            const QJsonObject truth = value.toObject();
            const std::string name = truth[u"name"_qs].toString().toStdString();
            const auto storage = checkpoint->storageIndex(name);
            QVERIFY2(storage, name.c_str());
            const StorageRecord& record = checkpoint->storages[*storage];
            const TensorEntry& tensor = checkpoint->tensors[record.tensors.at(0)];
            QCOMPARE(tensor.dtype, truth[u"dtype"_qs].toString().toStdString());
            std::vector<std::int64_t> shape;
            for (const auto& size : truth[u"shape"_qs].toArray())
                shape.push_back(size.toInteger());
            QCOMPARE(tensor.shape, shape);
            QCOMPARE(record.numel, std::uint64_t(truth[u"numel"_qs].toInteger()));
            QCOMPARE(record.nbytes, std::uint64_t(truth[u"nbytes"_qs].toInteger()));
            QCOMPARE(tensor.nbytes(), std::uint64_t(truth[u"nbytes"_qs].toInteger()));
            QVERIFY(record.bytesComplete());
            // The bytes the inspector locates are the ones load_file returned.
            const QByteArray bytes = full.mid(qsizetype(*record.dataOffset), qsizetype(record.nbytes));
            QCOMPARE(QString::fromLatin1(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex()),
                truth[u"sha256"_qs].toString());
        }
        // Cut inside the F4 tensor's bytes: its storage is named incomplete, the others stay whole.
        const StorageRecord& blocks = checkpoint->storages[*checkpoint->storageIndex("mx.blocks")];
        auto cut = readBytes(full.left(qsizetype(*blocks.dataOffset + 2)), path);
        QVERIFY(codesOf(*cut).contains(u"file-truncated"_qs));
        const StorageRecord& cutBlocks = cut->storages[*cut->storageIndex("mx.blocks")];
        QCOMPARE(cutBlocks.dtype, std::string("float4_e2m1fn_x2"));
        QCOMPARE(cutBlocks.availableBytes, std::optional<std::uint64_t>(2));
        QVERIFY(!cutBlocks.bytesComplete());
    }

    // An F4 tensor torch cannot hold (an odd last dimension): named with safetensors' own refusal,
    // listed with the header's shape and no bytes.
    void f4WithAnOddLastDimension()
    {
        const QByteArray header = "{\"t\":{\"dtype\":\"F4\",\"shape\":[2,3],\"data_offsets\":[0,3]}}";
        QByteArray bytes(8, '\0');
        for (int i = 0; i < 8; ++i)
            bytes[i] = char((header.size() >> (8 * i)) & 0xFF);
        bytes += header + QByteArray("\x12\x34\x56", 3);
        auto checkpoint = readBytes(bytes);
        QCOMPARE(checkpoint->tensors.at(0).dtype, std::string("f4"));
        QCOMPARE(checkpoint->tensors.at(0).shape, (std::vector<std::int64_t> {2, 3}));
        QVERIFY(codesOf(*checkpoint).contains(u"dtype-without-torch-equivalent"_qs));
        QVERIFY2(findingsText(*checkpoint)
                     .contains(
                         u"f4_x2 dtype requires that the last dim be divisible by 2 in torch: got [2, 3]"_qs),
            qPrintable(findingsText(*checkpoint)));
        // An even one is torch's float4_e2m1fn_x2.
        QByteArray even = bytes;
        even.replace("[2,3]", "[3,2]");
        auto packed = readBytes(even);
        QCOMPARE(packed->tensors.at(0).dtype, std::string("float4_e2m1fn_x2"));
        QCOMPARE(packed->tensors.at(0).shape, (std::vector<std::int64_t> {3, 1}));
        QCOMPARE(packed->storages.at(0).nbytes, std::uint64_t(3));
    }

    // The readers' module-path cache (safetensors headers, the shard merge) builds the tree
    // Checkpoint::modulePathFor builds, node for node, whatever the order of the names: the next
    // tensor of one module, the next module of a layer, a prefix that grows or shrinks, a return to
    // an earlier module, names without a prefix, and the split rule's edges (an empty component,
    // a trailing dot).
    void modulePathCacheBuildsModulePathForsTree()
    {
        const std::vector<std::string> names {"model.layers.0.mlp.experts.0.down_proj.weight",
            "model.layers.0.mlp.experts.0.down_proj.weight_scale_inv",
            "model.layers.0.mlp.experts.0.up_proj.weight", "model.layers.0.mlp.experts.1.down_proj.weight",
            "model.layers.0.mlp.experts.10.down_proj.weight", "model.layers.0.mlp.experts.1",
            "model.layers.0.mlp.experts.1.x.y.z", "model.layers.0.mlp.gate.weight", "model.layers.0.mlp",
            "model.layers.0.mlp.experts.0.down_proj.bias", "model.layers.1.mlp.gate.weight",
            "model.layers.10.mlp.gate.weight", "model.layers.1.mlp.gate.weight2", "lm_head.weight", "lm_head",
            "bias", "model.norm.weight", "model..norm.weight", "model.norm.", "model.norm..weight", ".weight",
            "model.layers.1", "model.layers.1.mlp.gate.weight3", "model.layersx.1.a", "model.layers", "m.a.b",
            "m.a.bc.d", "m.ab.c", "m.a.b.c.d.e", "m.a.b"};
        Checkpoint direct;
        direct.ensureRoot();
        Checkpoint cached;
        cached.ensureRoot();
        ModulePathCache cache;
        std::string directLeaf;
        std::string cachedLeaf;
        for (const std::string& name : names) {
            const std::uint32_t directParent = direct.modulePathFor(0, name, directLeaf);
            direct.addTreeNode(directParent, TreeNodeKind::Tensor, directLeaf);
            const std::uint32_t cachedParent = cache.parentFor(cached, name, cachedLeaf);
            cached.addTreeNode(cachedParent, TreeNodeKind::Tensor, cachedLeaf);
            QCOMPARE(cachedParent, directParent);
            QCOMPARE(cachedLeaf, directLeaf);
        }
        QString directTree;
        QString cachedTree;
        testing::dumpTree(direct, 0, 0, directTree);
        testing::dumpTree(cached, 0, 0, cachedTree);
        QCOMPARE(cachedTree, directTree);
        QCOMPARE(cached.tree.size(), direct.tree.size());
    }

    // A set's safetensors shard is checked quietly and added straight into the merged checkpoint
    // (issue 28): that happens only to a file the reader says nothing about, and adds what the
    // reader adds, keyed after the shard.
    void checkedTensorsAddAsTheReaderAdds()
    {
        QList<QByteArray> files;
        for (const QByteArray& header : headerSamples()) {
            // Padded with spaces to 8 bytes, as writers pad: an unaligned header is a finding.
            const QByteArray aligned(static_cast<qsizetype>((8 - header.size() % 8) % 8), ' ');
            for (const QByteArray& padding : {QByteArray(), QByteArray(5, '\0'), aligned})
                files.append(withHeader(QByteArray(8, '\0'), header + padding) + QByteArray(64, '\0'));
        }
        for (const CorpusSample& sample : std::as_const(m_samples))
            files.append(sample.bytes);
        files.append(readAll(QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/dtypes/newdtypes.safetensors")));
        for (const char* shard : {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                 "model-00003-of-00003.safetensors"})
            files.append(readAll(QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/sharded/safetensors/")
                + QLatin1String(shard)));
        int addedFiles = 0;
        for (const QByteArray& bytes : std::as_const(files)) {
            const std::unique_ptr<Checkpoint> read = readBytes(bytes);
            const auto checked = checkSafetensorsQuietly(read->file);
            if (!read->findings.empty()) {
                QVERIFY2(!checked, qPrintable(findingsText(*read)));
                continue;
            }
            if (!checked)
                continue; // a header only the JSON parser reads, without a finding
            ++addedFiles;
            Checkpoint merged;
            merged.ensureRoot();
            ModulePathCache modules;
            addCheckedSafetensors(merged, *checked, "shard-1:", modules);
            QCOMPARE(merged.tensors.size(), read->tensors.size());
            QCOMPARE(merged.storages.size(), read->storages.size());
            for (std::size_t t = 0; t < read->tensors.size(); ++t) {
                const TensorEntry& want = read->tensors[t];
                const TensorEntry& got = merged.tensors[t];
                QCOMPARE(std::string_view(got.name), std::string_view(want.name));
                QCOMPARE(std::string_view(got.dtype), std::string_view(want.dtype));
                QVERIFY(got.shape == want.shape);
                QVERIFY(got.stride == want.stride);
                QCOMPARE(got.storage, want.storage);
                QCOMPARE(merged.treePath(got.treeNode), read->treePath(want.treeNode));
            }
            for (std::size_t k = 0; k < read->storages.size(); ++k) {
                const StorageRecord& want = read->storages[k];
                const StorageRecord& got = merged.storages[k];
                QCOMPARE(got.key.str(), "shard-1:" + want.key.str());
                QCOMPARE(got.record(), want.record());
                QCOMPARE(std::string_view(got.dtype), std::string_view(want.dtype));
                QCOMPARE(got.numel, want.numel);
                QCOMPARE(got.nbytes, want.nbytes);
                QVERIFY(got.dataOffset == want.dataOffset);
                QVERIFY(got.availableBytes == want.availableBytes);
                QVERIFY(got.tensors == want.tensors);
                QVERIFY(merged.storageIndex(got.key.view()) == std::optional<std::uint32_t>(k));
            }
        }
        // The corpus, the fixtures' dtypes file and shards (the plain headers above all cover 64
        // bytes with less: each says so, and is read on its own).
        QCOMPARE(addedFiles, 7);
    }

    void noFileBytes()
    {
        Checkpoint checkpoint;
        readSafetensors(checkpoint);
        QCOMPARE(codesOf(checkpoint), QStringList {QStringLiteral("no-file-data")});
        QCOMPARE(checkpoint.format, CheckpointFormat::Safetensors);
    }
};

QTEST_APPLESS_MAIN(TestSafetensors)
#include "tst_safetensors.moc"
