// SPDX-License-Identifier: MIT
// torch.distributed.checkpoint's metadata classes are vetted inert data classes: a DCP folder written
// by real torch (tests/fixtures/sharded/dcp, torch.distributed.checkpoint.save with no process group)
// is not called dangerous, and its .metadata (read by DCP with pickle.load, not torch.load) is known
// inert. A third-party subclass (Megatron-core's MCoreMetadata) stays "cannot verify", and says it is
// a subclass of the vetted Metadata. The last pickles are built opcode by opcode (nothing unpickles
// them).
#include "core/io/mappedfile.h"
#include "core/model/shardset.h"
#include "core/read/checkpointreader.h"
#include "core/read/shardedreader.h"
#include "core/read/tensorlocator.h"
#include "core/safety/picklecatalog.h"
#include "core/safety/pickleverdict.h"
#include "core/safety/shardsafety.h"
#include "core/triage/shardchecks.h"
#include "core/triage/triage.h"
#include "tests/common/testfiles.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>

#include <string>

using namespace ckpt;

class TestDcpMetadata : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void realDcpFolderIsNotDangerous();
    void everyMetadataClassIsVetted();
    void megatronSubclassCannotBeVerifiedAndSaysWhy();
    // Issue 26: every DCP, read by the shape of its objects (tests/fixtures/dcp, torch 2.14's DCP).
    void newerTorchStorageMetadataIsRead();
    void megatronFolderIsReadByShapeNotName();
    void planClassesAndBytesBuffersAreVetted();
    void truncatedDistcpNamesEachRangePastItsEnd();
    void damagedChunkIsNamed();
    // Issue 26: writer extensions (FileSystemWriter(_extensions=[ZStandard()])) and per-rank
    // metadata (use_collectives=False), written by torch 2.14's DCP (generate_dcp_more.py).
    void zstdChunksAreUndoneAndRead();
    void unknownWriterExtensionIsNamed();
    void corruptZstdChunkIsNamed();
    void perRankMetadataIsReadRankByRank();
};

namespace {

SafetyVerdict rateBytes(const std::string& bytes)
{
    return ratePickleSafety(ByteView(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

// PROTO 2, GLOBAL module.name, EMPTY_TUPLE, NEWOBJ, EMPTY_DICT, BUILD, STOP: an object of that
// class with an empty state, as pickle protocol 2 writes a dataclass.
std::string objectOf(const std::string& module, const std::string& name)
{
    return std::string("\x80\x02", 2) + "c" + module + "\n" + name + "\n" + ")\x81}b.";
}

const DcpItem* itemOf(const DcpMetadata& dcp, const std::string& fqn, std::int32_t chunk = 0)
{
    for (const DcpDataFile& file : dcp.files)
        for (const DcpItem& item : file.items)
            if (item.fqn == fqn && (item.isBytes || item.chunk == chunk))
                return &item;
    return nullptr;
}

bool hasNode(const Checkpoint& checkpoint, const std::string& name, const std::string& parent)
{
    return std::any_of(checkpoint.tree.begin(), checkpoint.tree.end(), [&](const TreeNode& node) {
        return node.name == name && checkpoint.tree[node.parent].name == parent;
    });
}

// A copy of a fixture folder to damage.
QString copyOf(const QTemporaryDir& work, const QString& fixture)
{
    const QString from = testing::fixturePath(fixture);
    QString to = work.filePath(QStringLiteral("copy"));
    QDir().mkpath(to);
    for (const QString& name : QDir(from).entryList(QDir::Files | QDir::Hidden))
        QFile::copy(from + u'/' + name, to + u'/' + name);
    return to;
}

} // namespace

void TestDcpMetadata::realDcpFolderIsNotDangerous()
{
    const std::string folder = testing::fixturePath("sharded/dcp").toStdString();
    const auto metadata = MappedFile::open(folder + "/.metadata");
    QVERIFY(metadata);
    // The pickle alone: only vetted classes, some not on torch's weights_only list.
    const SafetyVerdict alone = ratePickleSafety((*metadata)->bytes());
    QVERIFY2(alone.rating == PickleSafety::NeedsAllowlist, alone.headline.c_str());
    QVERIFY(alone.unsafe.empty());
    // The folder: DCP reads it with pickle.load, so the weights_only list has no say.
    const Checkpoint checkpoint = readCheckpoint(folder);
    QVERIFY(checkpoint.shardSet);
    const SafetyVerdict verdict = rateShardSafety(checkpoint);
    QVERIFY2(verdict.rating == PickleSafety::KnownInert, verdict.headline.c_str());
    QVERIFY(verdict.addSafeGlobals2.empty());
    const TriageReport report = triage(checkpoint, {});
    QVERIFY2(!report.safety.dangerous(), report.safety.headline.c_str());
}

void TestDcpMetadata::everyMetadataClassIsVetted()
{
    for (const char* name : {"Metadata", "MetadataIndex", "ChunkStorageMetadata", "TensorStorageMetadata",
             "BytesStorageMetadata", "TensorProperties", "_MEM_FORMAT_ENCODING", "StorageMeta"}) {
        const auto inert = findInertGlobal("torch.distributed.checkpoint.metadata", name);
        QVERIFY2(inert && !inert->reason.empty(), name);
        const SafetyVerdict verdict = rateBytes(objectOf("torch.distributed.checkpoint.metadata", name));
        QVERIFY2(verdict.rating == PickleSafety::NeedsAllowlist, verdict.headline.c_str());
    }
    QVERIFY(findInertGlobal("torch.distributed.checkpoint.filesystem", "_StorageInfo"));
    QVERIFY(findInertGlobal("pathlib", "PosixPath"));
    // A path class is vetted; reaching the file system through pathlib is not.
    QVERIFY(!findInertGlobal("pathlib", "Path.write_text"));
    QVERIFY(!findInertGlobal("pathlib", "os"));
    QVERIFY(rateBytes(objectOf("pathlib", "os.system")).dangerous());
    // Not the whole package: other DCP modules hold planners and storage code.
    QVERIFY(!findInertGlobal("torch.distributed.checkpoint.filesystem", "FileSystemReader"));
}

void TestDcpMetadata::megatronSubclassCannotBeVerifiedAndSaysWhy()
{
    const SafetyVerdict verdict
        = rateBytes(objectOf("megatron.core.dist_checkpointing.strategies.torch", "MCoreMetadata"));
    QVERIFY(verdict.dangerous());
    QCOMPARE(verdict.unsafe.size(), std::size_t(1));
    QVERIFY2(verdict.unsafe.front().reason.find(
                 "a subclass of the vetted torch.distributed.checkpoint.metadata.Metadata")
            != std::string::npos,
        verdict.unsafe.front().reason.c_str());
    QVERIFY(!verdict.unsafe.front().knownDangerous);
    // A class merely named like a vetted one is not called a subclass.
    const SafetyVerdict lookalike = rateBytes(objectOf("mypackage.checkpoint", "Metadata"));
    QVERIFY(lookalike.dangerous());
    QVERIFY(lookalike.unsafe.front().reason.find("subclass") == std::string::npos);
}

void TestDcpMetadata::newerTorchStorageMetadataIsRead()
{
    const Checkpoint checkpoint = readCheckpoint(testing::fixturePath("dcp/plain").toStdString());
    QCOMPARE(checkpoint.format, CheckpointFormat::Distributed);
    QVERIFY(checkpoint.shardSet && checkpoint.shardSet->dcp);
    const DcpMetadata& dcp = *checkpoint.shardSet->dcp;
    QCOMPARE(dcp.metadataClass, std::string("torch.distributed.checkpoint.metadata.Metadata"));
    QCOMPARE(dcp.version, std::string("1.0.0"));
    QVERIFY(dcp.extraFields.empty());
    QCOMPARE(dcp.entries.size(), std::size_t(8)); // 4 tensors, a BytesIO, an int, a dict's two values
    QCOMPARE(checkpoint.tensors.size(), std::size_t(4));
    QCOMPARE(dcp.files.size(), std::size_t(1));
    QCOMPARE(dcp.files.front().items.size(), std::size_t(8));
    QCOMPARE(dcp.files.front().unclaimedBytes, std::uint64_t(0));
    QCOMPARE(dcp.archivesRead, std::uint32_t(4));
    const DcpItem* bf16 = itemOf(dcp, "model.proj.weight");
    QVERIFY(bf16);
    QCOMPARE(bf16->content, std::string("torch.save archive"));
    QCOMPARE(bf16->archiveDtype, std::string("bfloat16"));
    QCOMPARE(bf16->archiveShape, (std::vector<std::int64_t> {4, 8}));
    const DcpItem* blob = itemOf(dcp, "blob");
    QVERIFY(blob && blob->isBytes);
    QCOMPARE(blob->content, std::string("torch.save archive")); // the default planner's torch.save
    for (const Finding& finding : checkpoint.findings)
        QVERIFY2(finding.severity != Severity::Error, finding.message.c_str());
    // Every bytes entry is rated as the torch.load(weights_only=False) DCP runs on it: an int, a
    // float, a str and an io.BytesIO are inert.
    const SafetyVerdict verdict = rateShardSafety(checkpoint);
    QVERIFY2(verdict.rating == PickleSafety::KnownInert, verdict.headline.c_str());
    QCOMPARE(verdict.pickles.size(), std::size_t(5));
}

void TestDcpMetadata::megatronFolderIsReadByShapeNotName()
{
    const Checkpoint checkpoint = readCheckpoint(testing::fixturePath("dcp/megatron").toStdString());
    QCOMPARE(checkpoint.format, CheckpointFormat::Distributed);
    QVERIFY(checkpoint.shardSet && checkpoint.shardSet->dcp);
    const DcpMetadata& dcp = *checkpoint.shardSet->dcp;
    QCOMPARE(
        dcp.metadataClass, std::string("megatron.core.dist_checkpointing.strategies.torch.MCoreMetadata"));
    QCOMPARE(dcp.extraFields, (std::vector<std::string> {"all_local_plans", "mcore_data"}));
    QVERIFY(!dcp.framework.empty());
    QCOMPARE(dcp.entries.size(), std::size_t(6));
    QCOMPARE(dcp.files.size(), std::size_t(2));
    QCOMPARE(dcp.archivesRead, std::uint32_t(7)); // three tensors in two chunks, one in one
    const auto qkv = std::find_if(dcp.entries.begin(), dcp.entries.end(),
        [](const DcpEntry& entry) { return entry.fqn == "decoder.layers.self_attention.linear_qkv.weight"; });
    QVERIFY(qkv != dcp.entries.end());
    QCOMPARE(qkv->chunks.size(), std::size_t(2));
    QCOMPARE(qkv->chunks[1].offsets, (std::vector<std::int64_t> {1, 0, 0}));
    QCOMPARE(qkv->chunks[1].file, std::string("__0_1.distcp"));
    const DcpItem* second = itemOf(dcp, qkv->fqn, 1);
    QVERIFY(second);
    QCOMPARE(second->archiveShape, (std::vector<std::int64_t> {1, 12, 8}));
    QVERIFY(second->problem.empty());
    // Megatron's ShardedObjects: bytes entries holding a torch.save of a list.
    const DcpItem* rng = itemOf(dcp, "rng_state/shard_0.0_1.1");
    QVERIFY(rng && rng->isBytes);
    QCOMPARE(rng->content, std::string("torch.save archive"));
    QVERIFY(hasNode(checkpoint, "shard_0.0_1.1", "rng_state"));
    // common.pt is part of the document, under its own node; metadata.json is named.
    QVERIFY(hasNode(checkpoint, "iteration", "common.pt"));
    QVERIFY(hasNode(checkpoint, "args", "common.pt"));
    QCOMPARE(dcp.companions.size(), std::size_t(2));
    QCOMPARE(checkpoint.tensors.size(), std::size_t(4));
    // The subclass is rated (cannot verify: never imported), not read by its name; everything else
    // .metadata names is DCP's own; the bytes entries and common.pt are rated too.
    const SafetyVerdict verdict = rateShardSafety(checkpoint);
    QVERIFY(verdict.dangerous());
    QCOMPARE(verdict.unsafe.size(), std::size_t(1));
    QVERIFY(verdict.unsafe.front().where.find(".metadata") == 0);
    QVERIFY(std::any_of(verdict.pickles.begin(), verdict.pickles.end(),
        [](const std::string& pickle) { return pickle.starts_with("common.pt: "); }));
    QVERIFY(std::any_of(verdict.pickles.begin(), verdict.pickles.end(), [](const std::string& pickle) {
        return pickle.starts_with("__0_1.distcp @0 (rng_state/shard_0.0_1.1)");
    }));
}

void TestDcpMetadata::planClassesAndBytesBuffersAreVetted()
{
    for (const char* name : {"SavePlan", "WriteItem", "WriteItemType", "TensorWriteData", "BytesIOWriteData"})
        QVERIFY2(findInertGlobal("torch.distributed.checkpoint.planner", name), name);
    QVERIFY(findInertGlobal("torch.distributed.checkpoint.filesystem", "_StoragePrefix"));
    QVERIFY(!findInertGlobal("torch.distributed.checkpoint.planner", "SavePlanner"));
    QVERIFY(!rateBytes(objectOf("_io", "BytesIO")).dangerous());
    // The rest of _io still opens files.
    QVERIFY(rateBytes(objectOf("_io", "FileIO")).dangerous());
    QVERIFY(rateBytes(objectOf("_io", "open")).dangerous());
}

void TestDcpMetadata::truncatedDistcpNamesEachRangePastItsEnd()
{
    QTemporaryDir work;
    QVERIFY(work.isValid());
    const QString folder = copyOf(work, QStringLiteral("dcp/megatron"));
    QFile data(folder + QStringLiteral("/__0_1.distcp"));
    QVERIFY(data.resize(2000)); // inside the second range
    const Checkpoint checkpoint = readCheckpoint(folder.toStdString());
    QVERIFY(checkpoint.shardSet && checkpoint.shardSet->dcp);
    const DcpMetadata& dcp = *checkpoint.shardSet->dcp;
    QCOMPARE(checkpoint.tensors.size(), std::size_t(4)); // the metadata still lists them all
    const DcpItem* rng = itemOf(dcp, "rng_state/shard_0.0_1.1");
    QVERIFY(rng);
    QCOMPARE(rng->content, std::string("torch.save archive")); // before the cut: whole
    std::size_t past = 0;
    for (const DcpDataFile& file : dcp.files)
        for (const DcpItem& item : file.items)
            if (item.content == "past the end of the file") {
                ++past;
                QCOMPARE(file.name, std::string("__0_1.distcp"));
                QVERIFY(item.problem.find("2000 bytes") != std::string::npos);
            }
    QCOMPARE(past, std::size_t(3));
    const std::vector<Finding> findings = checkShards(checkpoint);
    QVERIFY(std::any_of(findings.begin(), findings.end(), [](const Finding& finding) {
        return finding.code == FindingCode::DcpChunkMissing
            && finding.message.find("__0_1.distcp is too short") != std::string::npos;
    }));
}

void TestDcpMetadata::damagedChunkIsNamed()
{
    QTemporaryDir work;
    QVERIFY(work.isValid());
    const QString folder = copyOf(work, QStringLiteral("dcp/plain"));
    const Checkpoint intact = readCheckpoint(folder.toStdString());
    QVERIFY(intact.shardSet && intact.shardSet->dcp);
    const DcpItem* target = itemOf(*intact.shardSet->dcp, "model.norm.weight");
    QVERIFY(target);
    // The chunk of model.norm.weight no longer starts with a zip header.
    QFile data(folder + QStringLiteral("/__0_0.distcp"));
    QVERIFY(data.open(QIODevice::ReadWrite));
    QVERIFY(data.seek(static_cast<qint64>(target->offset)));
    QCOMPARE(data.write("XXXX", 4), qint64(4));
    data.close();
    const Checkpoint damaged = readCheckpoint(folder.toStdString());
    const DcpItem* item = itemOf(*damaged.shardSet->dcp, "model.norm.weight");
    QVERIFY(item);
    QCOMPARE(item->content, std::string("not a torch.save archive"));
    QVERIFY(!item->problem.empty());
    QCOMPARE(damaged.tensors.size(), std::size_t(4));
    // The chunk after it is still read.
    const DcpItem* next = itemOf(*damaged.shardSet->dcp, "model.proj.weight");
    QVERIFY(next && next->archiveDtype == "bfloat16");
}

void TestDcpMetadata::zstdChunksAreUndoneAndRead()
{
    const auto shared
        = std::make_shared<const Checkpoint>(readCheckpoint(testing::fixturePath("dcp/zstd").toStdString()));
    const Checkpoint& checkpoint = *shared;
    QCOMPARE(checkpoint.format, CheckpointFormat::Distributed);
    QVERIFY(checkpoint.shardSet && checkpoint.shardSet->dcp);
    const DcpMetadata& dcp = *checkpoint.shardSet->dcp;
    QCOMPARE(dcp.entries.size(), std::size_t(8));
    QCOMPARE(checkpoint.tensors.size(), std::size_t(4));
    QCOMPARE(dcp.archivesRead, std::uint32_t(4)); // each chunk decompressed and read as its archive
    for (const DcpDataFile& file : dcp.files)
        for (const DcpItem& item : file.items) {
            QCOMPARE(item.transforms, (std::vector<std::string> {"stream.zstd/1"}));
            QVERIFY2(item.content == "torch.save archive through stream.zstd/1", item.content.c_str());
            QVERIFY2(item.problem.empty(), item.problem.c_str());
        }
    const DcpItem* bf16 = itemOf(dcp, "model.proj.weight");
    QVERIFY(bf16);
    QCOMPARE(bf16->archiveDtype, std::string("bfloat16"));
    QCOMPARE(bf16->archiveShape, (std::vector<std::int64_t> {4, 8}));
    for (const Finding& finding : checkpoint.findings)
        QVERIFY2(finding.severity != Severity::Error, finding.message.c_str());
    for (const Finding& finding : checkShards(checkpoint))
        QVERIFY2(finding.code != FindingCode::DcpChunkNotTorchSave, finding.message.c_str());
    // The values: every tensor located in its decompressed archive.
    const std::vector<LocatedTensor> located = locateTensors(shared);
    QCOMPARE(located.size(), std::size_t(4));
    for (const LocatedTensor& tensor : located) {
        QVERIFY2(tensor.checkpoint, tensor.problem.c_str());
        QVERIFY(tensor.checkpoint->storages.front().bytesComplete());
    }
    // The bytes entries are decompressed and rated as DCP's torch.load(weights_only=False) sees them.
    const SafetyVerdict verdict = rateShardSafety(checkpoint);
    QVERIFY2(verdict.rating == PickleSafety::KnownInert, verdict.headline.c_str());
    QCOMPARE(verdict.pickles.size(), std::size_t(5));
}

void TestDcpMetadata::unknownWriterExtensionIsNamed()
{
    const auto shared = std::make_shared<const Checkpoint>(
        readCheckpoint(testing::fixturePath("dcp/unknown_transform").toStdString()));
    const Checkpoint& checkpoint = *shared;
    QCOMPARE(checkpoint.format, CheckpointFormat::Distributed);
    QCOMPARE(checkpoint.tensors.size(), std::size_t(4)); // the metadata's dtypes and shapes still shown
    QCOMPARE(checkpoint.tensors.front().dtype, std::string("float32"));
    const auto named = std::find_if(checkpoint.findings.begin(), checkpoint.findings.end(),
        [](const Finding& finding) { return finding.code == FindingCode::DcpTransformUnknown; });
    QVERIFY(named != checkpoint.findings.end());
    QVERIFY2(named->message.find("stream.xor@example.org/1") != std::string::npos, named->message.c_str());
    QVERIFY(named->message.find("8 item(s)") != std::string::npos);
    QCOMPARE(std::count_if(checkpoint.findings.begin(), checkpoint.findings.end(),
                 [](const Finding& finding) { return finding.code == FindingCode::DcpChunkMismatch; }),
        std::ptrdiff_t(0));
    for (const LocatedTensor& tensor : locateTensors(shared)) {
        QVERIFY(!tensor.checkpoint);
        QVERIFY2(tensor.problem.find("Unknown extension name='stream.xor@example.org'") != std::string::npos,
            tensor.problem.c_str());
    }
    // The pickled values cannot be seen: not called inert.
    const SafetyVerdict verdict = rateShardSafety(checkpoint);
    QVERIFY(verdict.dangerous());
    QVERIFY(!verdict.cannotVerify.empty());
}

void TestDcpMetadata::corruptZstdChunkIsNamed()
{
    QTemporaryDir work;
    QVERIFY(work.isValid());
    const QString folder = copyOf(work, QStringLiteral("dcp/zstd"));
    const Checkpoint intact = readCheckpoint(folder.toStdString());
    QVERIFY(intact.shardSet && intact.shardSet->dcp);
    const DcpItem* target = itemOf(*intact.shardSet->dcp, "model.embed.weight");
    QVERIFY(target);
    QFile data(folder + QStringLiteral("/__0_0.distcp"));
    QVERIFY(data.open(QIODevice::ReadWrite));
    // The zstd frame's magic number of model.embed.weight's chunk, then the end of the last chunk.
    QVERIFY(data.seek(static_cast<qint64>(target->offset)));
    QCOMPARE(data.write("XXXX", 4), qint64(4));
    QVERIFY(data.resize(data.size() - 40));
    data.close();
    const auto shared = std::make_shared<const Checkpoint>(readCheckpoint(folder.toStdString()));
    const Checkpoint& damaged = *shared;
    QCOMPARE(damaged.tensors.size(), std::size_t(4));
    const DcpItem* item = itemOf(*damaged.shardSet->dcp, "model.embed.weight");
    QVERIFY(item);
    QVERIFY2(item->content.starts_with("transformed (stream.zstd/1)"), item->content.c_str());
    QVERIFY2(item->problem.find("zstd stream is corrupt") != std::string::npos, item->problem.c_str());
    QVERIFY(std::any_of(damaged.findings.begin(), damaged.findings.end(), [](const Finding& finding) {
        return finding.code == FindingCode::DcpTransformCorrupt
            && finding.message.find("model.embed.weight") != std::string::npos;
    }));
    // The chunk after it is still read; the last one lies past the end.
    const DcpItem* next = itemOf(*damaged.shardSet->dcp, "model.head.bias");
    QVERIFY(next && next->archiveDtype == "int64");
    const DcpItem* last = itemOf(*damaged.shardSet->dcp, "model.proj.weight");
    QVERIFY(last);
    QCOMPARE(last->content, std::string("past the end of the file"));
    const std::vector<LocatedTensor> located = locateTensors(shared);
    QVERIFY(!located.front().checkpoint);
    QVERIFY2(located.front().problem.find("could not be undone") != std::string::npos,
        located.front().problem.c_str());
}

void TestDcpMetadata::perRankMetadataIsReadRankByRank()
{
    const std::string folder = testing::fixturePath("dcp/per_rank").toStdString();
    // The folder, a rank's metadata file and a rank's data file all open the folder.
    for (const std::string& path : {folder, folder + "/__1.metadata", folder + "/__0_0.distcp"}) {
        const auto input = resolveShardedInput(path);
        QVERIFY2(input && input->layout == ShardLayout::Distributed, path.c_str());
        QCOMPARE(input->indexPath, folder + "/__0.metadata");
    }
    const auto shared = std::make_shared<const Checkpoint>(readCheckpoint(folder));
    const Checkpoint& checkpoint = *shared;
    QCOMPARE(checkpoint.format, CheckpointFormat::Distributed);
    QVERIFY(checkpoint.shardSet && checkpoint.shardSet->dcp);
    const DcpMetadata& dcp = *checkpoint.shardSet->dcp;
    QCOMPARE(dcp.metadataFiles, (std::vector<std::string> {"__0.metadata", "__1.metadata"}));
    QCOMPARE(dcp.entries.size(), std::size_t(8)); // three tensors and an int on each rank
    QCOMPARE(checkpoint.tensors.size(), std::size_t(6));
    QCOMPARE(dcp.files.size(), std::size_t(2));
    QCOMPARE(dcp.archivesRead, std::uint32_t(6));
    // Each rank's own value of the same key, from its own data file.
    const DcpItem* rng0 = itemOf(dcp, "rank0:rng");
    const DcpItem* rng1 = itemOf(dcp, "rank1:rng");
    QVERIFY(rng0 && rng1);
    QCOMPARE(rng1->archiveDtype, std::string("uint8"));
    QVERIFY(hasNode(checkpoint, "rng", "rank1"));
    QVERIFY(hasNode(checkpoint, "rank", "rank0"));
    QVERIFY(std::any_of(checkpoint.findings.begin(), checkpoint.findings.end(),
        [](const Finding& finding) { return finding.code == FindingCode::DcpPerRankMetadata; }));
    for (const Finding& finding : checkpoint.findings)
        QVERIFY2(finding.severity != Severity::Error, finding.message.c_str());
    const std::vector<LocatedTensor> located = locateTensors(shared);
    for (const LocatedTensor& tensor : located)
        QVERIFY2(tensor.checkpoint, tensor.problem.c_str());
    // Every rank's metadata and bytes entries rated.
    const SafetyVerdict verdict = rateShardSafety(checkpoint);
    QVERIFY2(verdict.rating == PickleSafety::KnownInert, verdict.headline.c_str());
    QVERIFY(std::any_of(verdict.pickles.begin(), verdict.pickles.end(),
        [](const std::string& pickle) { return pickle.starts_with("__1.metadata: "); }));
}

QTEST_GUILESS_MAIN(TestDcpMetadata)
#include "tst_dcpmetadata.moc"
