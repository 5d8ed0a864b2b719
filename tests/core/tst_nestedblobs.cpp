// SPDX-License-Identifier: MIT
// Storages saved inside bytes (core/read/nestedblobs.cpp): the torch.save file handed to
// torch.storage._load_from_bytes is read with the file readers; damaged, cut or foreign bytes give
// a finding that says so, never a crash, and whatever else can be read is shown.
#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"
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

    // A pickle cut anywhere: no crash, and the tensors before the cut keep their devices.
    void truncatedPickleNeverCrashes()
    {
        const ByteBuffer whole = fixtureBytes("torch-2/pickled_dict.pkl");
        for (std::size_t length = 1; length < whole.size(); length += 7) {
            const Checkpoint cut
                = readBytes(ByteBuffer(whole.begin(), whole.begin() + std::ptrdiff_t(length)));
            for (const TensorEntry& tensor : cut.tensors)
                if (tensor.storage >= 0)
                    QVERIFY(tensor.device.has_value());
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
