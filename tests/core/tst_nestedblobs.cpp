// SPDX-License-Identifier: MIT
// Storages saved inside bytes (core/read/nestedblobs.cpp): the torch.save file handed to
// torch.storage._load_from_bytes is read with the file readers; damaged, cut or foreign bytes give
// a finding that says so, never a crash, and whatever else can be read is shown.
#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"
#include "core/read/storagebytes.h"
#include "core/write/nestedblobwriter.h"
#include "tests/common/testfiles.h"

#include <QTest>

#include <algorithm>
#include <cstring>

using namespace ckpt;

namespace {

ByteBuffer fixtureBytes(const char* name)
{
    const QByteArray data = ckpt::testing::readAll(
        ckpt::testing::sourcePath(QStringLiteral("tests/fixtures/nested/") + QString::fromLatin1(name)));
    return ByteBuffer(data.begin(), data.end());
}

Checkpoint readBytes(ByteBuffer bytes)
{
    return readCheckpoint(MappedFile::fromBuffer(std::move(bytes), "test.pkl"));
}

bool hasFinding(const Checkpoint& checkpoint, const std::string& text)
{
    return std::any_of(checkpoint.findings.begin(), checkpoint.findings.end(),
        [&](const Finding& finding) { return finding.message.find(text) != std::string::npos; });
}

} // namespace

class TestNestedBlobs : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Protocol 3 and later write the bytes verbatim: the storage's bytes are located in the file
    // itself. Protocol 2's latin-1 text holds them only as text: no offset, but the same storages.
    void storagesAreLocatedWhereTheBytesAre()
    {
        const Checkpoint verbatim = readBytes(fixtureBytes("torch-2/pickled_dict.pkl"));
        QCOMPARE(verbatim.format, CheckpointFormat::PlainPickle);
        QCOMPARE(verbatim.storages.size(), std::size_t(5));
        QCOMPARE(verbatim.nestedBlobs.size(), std::size_t(5));
        for (const StorageRecord& storage : verbatim.storages)
            QVERIFY2(storage.bytesComplete(), storage.key.c_str());
        const Checkpoint text = readBytes(fixtureBytes("torch-2/pickled_dict_protocol2.pkl"));
        QCOMPARE(text.format, CheckpointFormat::PlainPickle);
        QCOMPARE(text.storages.size(), std::size_t(5));
        for (std::size_t s = 0; s < text.storages.size(); ++s) {
            QVERIFY(!text.storages[s].dataOffset);
            QVERIFY(text.nestedBlobs[s].bytesComplete);
            QCOMPARE(text.storages[s].device, verbatim.storages[s].device);
            QCOMPARE(text.storages[s].nbytes, verbatim.storages[s].nbytes);
        }
    }

    // Protocols 0-2 hold the nested files as latin-1 text: the storages' bytes are read from the
    // decoded copy, the same bytes protocol 5 keeps verbatim in the file (one dict pickled four
    // ways by one torch), for the legacy streams torch writes and for zip archives.
    void decodedBlobsHoldTheStoragesBytes_data()
    {
        QTest::addColumn<QString>("file");
        for (const char* name :
            {"pickled_dict_protocol0.pkl", "pickled_dict_protocol1.pkl", "pickled_dict_protocol2.pkl",
                "pickled_dict_zipblobs.pkl", "pickled_dict_zipblobs_protocol0.pkl",
                "pickled_dict_zipblobs_protocol1.pkl", "pickled_dict_zipblobs_protocol2.pkl"})
            for (const char* version : {"torch-1.13/", "torch-2/"})
                QTest::newRow((std::string(version) + name).c_str())
                    << QString::fromLatin1(version) + QString::fromLatin1(name);
    }

    void decodedBlobsHoldTheStoragesBytes()
    {
        QFETCH(QString, file);
        const std::string version = file.section(u'/', 0, 0).toStdString() + "/";
        const Checkpoint verbatim = readBytes(fixtureBytes((version + "pickled_dict.pkl").c_str()));
        const Checkpoint checkpoint = readBytes(fixtureBytes(file.toLatin1().constData()));
        QCOMPARE(checkpoint.storages.size(), verbatim.storages.size());
        QCOMPARE(checkpoint.nestedBlobs.size(), std::size_t(5));
        const bool zip = file.contains(u"zipblobs"_qs);
        const bool text = !file.endsWith(u"zipblobs.pkl"_qs);
        for (std::size_t s = 0; s < checkpoint.storages.size(); ++s) {
            const StorageRecord& storage = checkpoint.storages[s];
            QCOMPARE(checkpoint.nestedBlobs[s].innerFormat,
                zip ? CheckpointFormat::TorchZip : CheckpointFormat::TorchLegacy);
            QCOMPARE(storage.inDecodedBlob, text);
            QVERIFY(storage.bytesReadable());
            QCOMPARE(storage.device, verbatim.storages[s].device);
            const auto got = readStorageBytes(checkpoint, storage);
            QVERIFY2(got, got ? "" : got.error().message.c_str());
            const auto want = readStorageBytes(verbatim, verbatim.storages[s]);
            QVERIFY(want);
            QCOMPARE(got->bytes.size(), want->bytes.size());
            QVERIFY(std::equal(got->bytes.begin(), got->bytes.end(), want->bytes.begin()));
            std::string chunks;
            QVERIFY(!forEachStorageByteChunk(checkpoint, storage, storage.nbytes, [&](ByteView piece) {
                chunks.append(reinterpret_cast<const char*>(piece.data()), piece.size());
                return Status();
            }));
            QVERIFY(chunks.size() == want->bytes.size()
                && std::equal(
                    chunks.begin(), chunks.end(), reinterpret_cast<const char*>(want->bytes.data())));
        }
    }

    // A zip archive inside bytes is rewritten like a legacy stream: its storage recorded on the
    // planned device, its bytes and every other record kept, readable as a zip again.
    void zipBlobIsRewritten()
    {
        for (const char* name :
            {"torch-1.13/pickled_dict_zipblobs.pkl", "torch-2/pickled_dict_zipblobs_protocol2.pkl"}) {
            const Checkpoint checkpoint = readBytes(fixtureBytes(name));
            QCOMPARE(checkpoint.nestedBlobs.size(), std::size_t(5));
            const NestedBlob& blob = checkpoint.nestedBlobs[3]; // "head", float16 on cuda:1
            const auto rewritten = rewriteNestedBlob(checkpoint, blob, "cuda:7");
            QVERIFY2(rewritten, rewritten ? "" : rewritten.error().message.c_str());
            const Checkpoint inner = readBytes(ByteBuffer(rewritten->begin(), rewritten->end()));
            QCOMPARE(inner.format, CheckpointFormat::TorchZip);
            QCOMPARE(inner.storages.size(), std::size_t(1));
            QCOMPARE(inner.storages[0].device, std::optional<InternedString>(InternedString("cuda:7")));
            const auto got = readStorageBytes(inner, inner.storages[0]);
            const auto want = readStorageBytes(checkpoint, checkpoint.storages[blob.storage]);
            QVERIFY(got && want);
            QVERIFY(got->bytes.size() == want->bytes.size()
                && std::equal(got->bytes.begin(), got->bytes.end(), want->bytes.begin()));
            QVERIFY(!hasFinding(inner, "CRC"));
        }
    }

    // A pickle cut anywhere: no crash, and the tensors before the cut keep their devices.
    void truncatedPickleNeverCrashes()
    {
        for (const char* name : {"torch-2/pickled_dict.pkl", "torch-2/pickled_dict_protocol1.pkl",
                 "torch-2/pickled_dict_zipblobs_protocol2.pkl"}) {
            const ByteBuffer whole = fixtureBytes(name);
            for (std::size_t length = 1; length < whole.size(); length += 7) {
                const Checkpoint cut
                    = readBytes(ByteBuffer(whole.begin(), whole.begin() + std::ptrdiff_t(length)));
                for (const TensorEntry& tensor : cut.tensors)
                    if (tensor.storage >= 0)
                        QVERIFY(tensor.device.has_value());
                // Whatever storage was read can be read whole, or says why not.
                for (const StorageRecord& storage : cut.storages)
                    if (storage.bytesReadable())
                        QVERIFY(readStorageBytes(cut, storage));
            }
        }
    }

    // The file inside the bytes damaged (its magic number gone): said, and the tensor is still
    // listed, without storage.
    void damagedNestedFileIsSaid()
    {
        ByteBuffer bytes = fixtureBytes("torch-2/pickled_tensor.pkl");
        // The nested legacy stream starts with torch's magic number pickle: \x80\x02\x8a\x0a.
        const std::uint8_t magic[] = {0x80, 0x02, 0x8a, 0x0a};
        auto found = std::search(bytes.begin() + 2, bytes.end(), std::begin(magic), std::end(magic));
        QVERIFY(found != bytes.end());
        found[2] = 'X'; // not a pickle any more
        const Checkpoint checkpoint = readBytes(std::move(bytes));
        QCOMPARE(checkpoint.tensors.size(), std::size_t(1));
        QCOMPARE(checkpoint.tensors[0].storage, -1);
        QVERIFY(hasFinding(checkpoint, "inside bytes"));
    }
};

QTEST_GUILESS_MAIN(TestNestedBlobs)
#include "tst_nestedblobs.moc"
