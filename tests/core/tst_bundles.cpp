// SPDX-License-Identifier: MIT
// Bundles (core/read/bundlereader.h, core/write/bundlewriter.h): archives that carry checkpoint
// files, read member by member through libarchive and checked against what real torch.load said of
// each member once tarfile/zipfile extracted it (tests/fixtures/bundles/*.expected.json); cut and
// corrupted bundles; the remapped copy through the save task.
#include "core/format/formatsniffer.h"
#include "core/io/mappedfile.h"
#include "core/model/formatcapabilities.h"
#include "core/model/shardset.h"
#include "core/plan/placementplan.h"
#include "core/read/bundlereader.h"
#include "core/read/checkpointreader.h"
#include "core/tasks/savecopy.h"
#include "tests/common/testfiles.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <map>
#include <set>

using namespace ckpt;
using ckpt::testing::fixturePath;
using ckpt::testing::readAll;
using ckpt::testing::writeAll;

namespace {

QString bundle(const QString& name)
{
    return fixturePath(QStringLiteral("bundles/") + name);
}

QJsonObject expectedOf(const QString& name)
{
    return QJsonDocument::fromJson(readAll(bundle(name) + QStringLiteral(".expected.json"))).object();
}

std::string shown(const QString& member)
{
    QString name = member;
    while (name.startsWith(QStringLiteral("./")))
        name.remove(0, 2);
    return name.toStdString();
}

const ShardFile* memberNamed(const Checkpoint& checkpoint, const std::string& name)
{
    for (const ShardFile& shard : checkpoint.shardSet->shards)
        if (shard.name == name)
            return &shard;
    return nullptr;
}

// Every member torch read as a checkpoint is a node with torch's tensors, dtypes, shapes and
// recorded devices; every other member is listed with its size.
void compareWithTorch(const Checkpoint& checkpoint, const QJsonObject& expected)
{
    QVERIFY(checkpoint.shardSet);
    QVERIFY(checkpoint.shardSet->bundle);
    const BundleInfo& info = *checkpoint.shardSet->bundle;
    const QJsonArray members = expected.value(QStringLiteral("members")).toArray();
    QCOMPARE(info.members.size(), std::size_t(members.size()));
    std::size_t checkpoints = 0;
    for (qsizetype m = 0; m < members.size(); ++m) {
        const QJsonObject want = members[m].toObject();
        const BundleMember& member = info.members[std::size_t(m)];
        std::string name = want.value(QStringLiteral("name")).toString().toStdString();
        if (want.value(QStringLiteral("folder")).toBool()) {
            QCOMPARE(member.type, std::string("folder"));
            continue;
        }
        QCOMPARE(member.name, name);
        if (want.value(QStringLiteral("truncated")).toBool()) { // tarfile could not read it whole either
            QVERIFY2(member.truncated, name.c_str());
            continue;
        }
        QVERIFY2(!member.truncated, name.c_str());
        QCOMPARE(member.type, std::string("file"));
        QCOMPARE(member.size, std::uint64_t(want.value(QStringLiteral("size")).toInteger()));
        const bool isCheckpoint = want.value(QStringLiteral("checkpoint")).toBool();
        QVERIFY2((member.shard >= 0) == isCheckpoint, name.c_str());
        if (!isCheckpoint)
            continue;
        ++checkpoints;
        const ShardFile* shard
            = memberNamed(checkpoint, shown(want.value(QStringLiteral("name")).toString()));
        QVERIFY2(shard, name.c_str());
        // A top-level node named after the member, holding its tree.
        const TreeNode& root = checkpoint.tree[0];
        bool found = false;
        for (const std::uint32_t child : root.children)
            found = found || checkpoint.tree[child].name == shard->name;
        QVERIFY2(found, shard->name.c_str());
        const QJsonObject tensors = want.value(QStringLiteral("tensors")).toObject();
        QCOMPARE(shard->model()->tensors.size(), std::size_t(tensors.size()));
        std::map<std::string, const TensorEntry*> byName;
        for (std::uint32_t t = 0; t < shard->model()->tensors.size(); ++t)
            byName[std::string(checkpoint.tensors[shard->firstTensor + t].name)]
                = &checkpoint.tensors[shard->firstTensor + t];
        for (auto it = tensors.begin(); it != tensors.end(); ++it) {
            const TensorEntry* tensor = byName[it.key().toStdString()];
            QVERIFY2(tensor, qPrintable(it.key()));
            const QJsonObject w = it.value().toObject();
            QCOMPARE(tensor->dtype.str(), w.value(QStringLiteral("dtype")).toString().toStdString());
            QJsonArray shape;
            for (const std::int64_t d : tensor->shape)
                shape.append(qint64(d));
            QCOMPARE(shape, w.value(QStringLiteral("shape")).toArray());
            QCOMPARE(tensor->device.value_or("none").str(),
                w.value(QStringLiteral("device")).toString().toStdString());
            QCOMPARE(checkpoint.shardSet->shardOfStorage(tensor->storage), shard);
        }
    }
    QCOMPARE(checkpoint.shardSet->shards.size(), checkpoints);
    QCOMPARE(!info.damage.empty(), expected.value(QStringLiteral("damaged")).toBool());
}

} // namespace

class TestBundles : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void readsAsTorchDoes_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("kind");
        QTest::newRow("AllenNLP model.tar.gz")
            << QStringLiteral("allennlp_model.tar.gz") << QStringLiteral("compressed-tar");
        QTest::newRow("NeMo .nemo (tar)") << QStringLiteral("nemo_model.nemo") << QStringLiteral("tar");
        QTest::newRow("NeMo .nemo (tar.gz)")
            << QStringLiteral("nemo_gzip.nemo") << QStringLiteral("compressed-tar");
        QTest::newRow("zip of checkpoints") << QStringLiteral("run_bundle.zip") << QStringLiteral("zip");
        QTest::newRow("truncated tar.gz")
            << QStringLiteral("broken_truncated.tar.gz") << QStringLiteral("compressed-tar");
    }
    void readsAsTorchDoes()
    {
        QFETCH(QString, name);
        QFETCH(QString, kind);
        const Checkpoint checkpoint = readCheckpoint(bundle(name).toStdString());
        compareWithTorch(checkpoint, expectedOf(name));
        QCOMPARE(std::string(bundleKindName(checkpoint.shardSet->bundle->kind)), kind.toStdString());
        QCOMPARE(std::string(formatCapabilities(checkpoint).name), std::string("bundle"));
        bool said = false;
        for (const Finding& finding : checkpoint.findings)
            said = said || finding.code == FindingCode::BundleRead;
        QVERIFY(said);
    }

    // An uncompressed tar's members are views of the mapped bundle at their data offsets; a
    // compressed one's are decompressed in memory, or past the limit into an anonymous file.
    void readInPlaceOrDecompressed()
    {
        const std::string nemo = bundle(QStringLiteral("nemo_model.nemo")).toStdString();
        const Checkpoint tar = readCheckpoint(nemo);
        const ShardFile* weights = memberNamed(tar, "model_weights.ckpt");
        QVERIFY(weights);
        const BundleMember& member = tar.shardSet->bundle->members[2];
        QCOMPARE(member.name, std::string("./model_weights.ckpt"));
        QVERIFY(member.dataOffset.has_value());
        QVERIFY2(member.readAs.starts_with("in place at byte "), member.readAs.c_str());
        const QByteArray whole = readAll(bundle(QStringLiteral("nemo_model.nemo")));
        const ByteView view = weights->model()->file->bytes();
        QCOMPARE(QByteArray(reinterpret_cast<const char*>(view.data()), qsizetype(view.size())),
            whole.mid(qsizetype(*member.dataOffset), qsizetype(member.size)));
        auto mapped = MappedFile::open(nemo);
        QVERIFY(mapped);
        // In place means in the bundle's own map: the member's bytes lie inside it.
        const Checkpoint again = readCheckpoint(*mapped);
        const ByteView inner = memberNamed(again, "model_weights.ckpt")->model()->file->bytes();
        QVERIFY(inner.data() >= (*mapped)->bytes().data()
            && inner.data() + inner.size() <= (*mapped)->bytes().data() + (*mapped)->size());

        const std::string gz = bundle(QStringLiteral("allennlp_model.tar.gz")).toStdString();
        const Checkpoint memory = readCheckpoint(gz);
        QVERIFY(memory.shardSet->bundle->members[1].readAs.starts_with("decompressed in memory"));
        ReadOptions small;
        small.maxBundleMemberInMemory = 100;
        const Checkpoint spilled = readCheckpoint(gz, small);
        QVERIFY2(spilled.shardSet->bundle->members[1].readAs.starts_with(
                     "decompressed into an anonymous temporary file"),
            spilled.shardSet->bundle->members[1].readAs.c_str());
        compareWithTorch(spilled, expectedOf(QStringLiteral("allennlp_model.tar.gz")));
    }

    // The sniffer tells a bundle's tar from PyTorch 0.1.x's tar format; a torch zip is no bundle.
    void sniffedApart()
    {
        const QByteArray oldTar
            = readAll(QStringLiteral(CKPT_SOURCE_DIR "/tests/data/sniff/torch_tar_layout.tar"));
        QCOMPARE(sniffContainer(
                     {reinterpret_cast<const std::uint8_t*>(oldTar.constData()), std::size_t(oldTar.size())})
                     .kind,
            ContainerKind::TorchTar);
        const QByteArray nemo = readAll(bundle(QStringLiteral("nemo_model.nemo")));
        QCOMPARE(sniffContainer(
                     {reinterpret_cast<const std::uint8_t*>(nemo.constData()), std::size_t(nemo.size())})
                     .kind,
            ContainerKind::Tar);
        const Checkpoint zip = readCheckpoint(fixturePath("torch-2/state_dict.pt").toStdString());
        QCOMPARE(zip.format, CheckpointFormat::TorchZip);
        QVERIFY(!zip.shardSet);
    }

    // A bundle cut at any length, or with bytes flipped: no crash, nothing invented; the members
    // before the damage are read, and the damage is named.
    void cutAndCorrupted_data()
    {
        QTest::addColumn<QString>("name");
        for (const char* name :
            {"nemo_model.nemo", "allennlp_model.tar.gz", "run_bundle.zip", "nemo_gzip.nemo"})
            QTest::newRow(name) << QString::fromLatin1(name);
    }
    void cutAndCorrupted()
    {
        QFETCH(QString, name);
        const QByteArray whole = readAll(bundle(name));
        const QJsonObject expected = expectedOf(name);
        std::set<std::string> allTensors;
        for (const QJsonValue member : expected.value(QStringLiteral("members")).toArray())
            for (const QString& tensor : member.toObject().value(QStringLiteral("tensors")).toObject().keys())
                allTensors.insert(tensor.toStdString());
        // Where the last member's bytes end (an uncompressed tar's members lie in place; past them
        // only the end-of-archive zeros follow), else the whole file: a cut before it loses data.
        qsizetype dataEnd = whole.size();
        const Checkpoint complete = readCheckpoint(bundle(name).toStdString());
        for (const BundleMember& member : complete.shardSet->bundle->members)
            if (member.dataOffset)
                dataEnd = qsizetype(*member.dataOffset + member.size);
        for (qsizetype cut = 0; cut < whole.size(); cut += std::max<qsizetype>(1, whole.size() / 97)) {
            ByteBuffer bytes(whole.begin(), whole.begin() + cut);
            const Checkpoint checkpoint = readCheckpoint(MappedFile::fromBuffer(std::move(bytes), "cut"));
            for (const TensorEntry& tensor : checkpoint.tensors)
                QVERIFY2(allTensors.count(std::string(tensor.name)), tensor.name.str().c_str());
            if (checkpoint.shardSet && checkpoint.shardSet->bundle && !checkpoint.tensors.empty()
                && cut < dataEnd)
                QVERIFY2(checkpoint.hasErrors(), qPrintable(QStringLiteral("cut at %1").arg(cut)));
        }
        for (qsizetype at = 0; at < whole.size(); at += std::max<qsizetype>(1, whole.size() / 61)) {
            ByteBuffer bytes(whole.begin(), whole.end());
            bytes[std::size_t(at)] ^= 0x5a;
            (void)readCheckpoint(MappedFile::fromBuffer(std::move(bytes), "flipped"));
        }
    }

    void truncatedKeepsWhatCameBefore()
    {
        const Checkpoint checkpoint
            = readCheckpoint(bundle(QStringLiteral("broken_truncated.tar.gz")).toStdString());
        QVERIFY(checkpoint.shardSet && checkpoint.shardSet->bundle);
        const std::string& damage = checkpoint.shardSet->bundle->damage;
        QVERIFY2(damage.find("vocabulary/embeddings.bin") != std::string::npos, damage.c_str());
        QVERIFY2(damage.find("gzip stream ends early") != std::string::npos, damage.c_str());
        bool named = false;
        for (const Finding& finding : checkpoint.findings)
            named = named
                || (finding.code == FindingCode::BundleDamaged && finding.severity == Severity::Error);
        QVERIFY(named);
        QCOMPARE(checkpoint.tensors.size(), std::size_t(5));
        // A damaged bundle is not rewritten: the copy would lose what follows the damage.
        const auto refused = refuseSaveCopy(checkpoint, false);
        QVERIFY(refused);
        // The scanner cannot read the stream's end either, so it is refused as unverifiable first;
        // with the override it still cannot be remapped, for the damage.
        QCOMPARE(refused->status, SaveCopyStatus::RefusedDangerous);
        const auto anyway = refuseSaveCopy(checkpoint, true);
        QVERIFY(anyway);
        QCOMPARE(anyway->status, SaveCopyStatus::CannotRemap);
        QVERIFY2(anyway->why.find("damaged") != std::string::npos, anyway->why.c_str());
    }

    // The save task writes a bundle of the same kind: the moved members rewritten, the rest copied.
    void saveWritesABundleOfTheSameKind_data()
    {
        QTest::addColumn<QString>("name");
        for (const char* name :
            {"nemo_model.nemo", "allennlp_model.tar.gz", "run_bundle.zip", "nemo_gzip.nemo"})
            QTest::newRow(name) << QString::fromLatin1(name);
    }
    void saveWritesABundleOfTheSameKind()
    {
        QFETCH(QString, name);
        const Checkpoint input = readCheckpoint(bundle(name).toStdString());
        PlacementPlan plan(input);
        plan.apply(PlacementRule {PlacementRule::Kind::MapTag, "*", "cpu"});
        QTemporaryDir dir;
        const std::string output = dir.filePath(name).toStdString();
        SaveCopyRequest request;
        request.input = &input;
        request.plan = &plan;
        request.outputPath = output;
        const SaveCopyOutcome outcome = saveRemappedCopy(request);
        QVERIFY2(outcome.written(), outcome.why.c_str());
        QVERIFY(outcome.folder);
        QVERIFY(!outcome.folder->shards.empty());
        const Checkpoint copy = readCheckpoint(output);
        QVERIFY(copy.shardSet && copy.shardSet->bundle);
        QCOMPARE(copy.shardSet->bundle->kind, input.shardSet->bundle->kind);
        QCOMPARE(copy.shardSet->bundle->filter, input.shardSet->bundle->filter);
        QCOMPARE(copy.tensors.size(), input.tensors.size());
        for (const StorageRecord& storage : copy.storages)
            QCOMPARE(storage.device.value_or("none").str(), std::string("cpu"));
        QCOMPARE(copy.shardSet->bundle->members.size(), input.shardSet->bundle->members.size());
        // Never over the input.
        SaveCopyRequest over = request;
        over.outputPath = bundle(name).toStdString();
        const QByteArray before = readAll(bundle(name));
        QVERIFY(!saveRemappedCopy(over).written());
        QCOMPARE(readAll(bundle(name)), before);
    }
};

QTEST_GUILESS_MAIN(TestBundles)
#include "tst_bundles.moc"
