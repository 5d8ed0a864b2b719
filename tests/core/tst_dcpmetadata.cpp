// SPDX-License-Identifier: MIT
// torch.distributed.checkpoint's metadata classes are vetted inert data classes: a DCP folder written
// by real torch (tests/fixtures/sharded/dcp, torch.distributed.checkpoint.save with no process group)
// is not called dangerous, and its .metadata (read by DCP with pickle.load, not torch.load) is known
// inert. A third-party subclass (Megatron-core's MCoreMetadata) stays "cannot verify", and says it is
// a subclass of the vetted Metadata. The last pickles are built opcode by opcode (nothing unpickles
// them).
#include "core/io/mappedfile.h"
#include "core/read/checkpointreader.h"
#include "core/safety/picklecatalog.h"
#include "core/safety/pickleverdict.h"
#include "core/triage/triage.h"
#include "tests/common/testfiles.h"

#include <QTest>

#include <string>

using namespace ckpt;

class TestDcpMetadata : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void realDcpFolderIsNotDangerous();
    void everyMetadataClassIsVetted();
    void megatronSubclassCannotBeVerifiedAndSaysWhy();
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

QTEST_GUILESS_MAIN(TestDcpMetadata)
#include "tst_dcpmetadata.moc"
