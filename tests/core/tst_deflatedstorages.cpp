// SPDX-License-Identifier: MIT
// Deflated storage records (issue 26; docs/formats.md, 1.6): the bytes every reader of tensor
// bytes sees are the inflated ones, whichever way a view reaches them (contiguous from an offset,
// piece by piece; strided, from the storage inflated whole), equal to the same tensors kept stored;
// a stream is inflated in pieces, stops where only a part is wanted, and a damaged one is said.
#include "core/format/inflate.h"
#include "core/format/ziparchive.h"
#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"
#include "core/read/storagebytes.h"
#include "core/read/tensorbytes.h"
#include "tests/common/testfiles.h"

#include <QTest>

using namespace ckpt;
using ckpt::testing::fixturePath;

namespace {

ByteBuffer tensorBytes(const Checkpoint& checkpoint, const std::string& name)
{
    ByteBuffer bytes;
    for (const TensorEntry& tensor : checkpoint.tensors)
        if (tensor.name == name) {
            const Status status = forEachTensorByteChunk(checkpoint, tensor, [&](ByteView chunk) -> Status {
                bytes.insert(bytes.end(), chunk.begin(), chunk.end());
                return std::nullopt;
            });
            if (status)
                qWarning("%s: %s", name.c_str(), status->message.c_str());
        }
    return bytes;
}

} // namespace

class TestDeflatedStorages : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void storagesAreMarkedAndReadable()
    {
        const Checkpoint all = readCheckpoint(fixturePath("zipold/deflated_state_dict.pt").toStdString());
        QCOMPARE(all.storages.size(), std::size_t(8));
        for (const StorageRecord& storage : all.storages) {
            QVERIFY(storage.deflated);
            QVERIFY(!storage.dataOffset);
            QVERIFY(!storage.bytesComplete());
            QVERIFY(storage.bytesReadable());
            QVERIFY(deflatedRecordOf(all, storage));
        }
        const Checkpoint mixed = readCheckpoint(fixturePath("zipold/deflated_mixed.pt").toStdString());
        int deflated = 0;
        for (const StorageRecord& storage : mixed.storages) {
            deflated += storage.deflated ? 1 : 0;
            QCOMPARE(storage.bytesComplete(), !storage.deflated);
            QVERIFY(storage.bytesReadable());
        }
        QCOMPARE(deflated, 4);
    }

    // The same tensors, deflated in one file and stored or deflated in the other: the same bytes,
    // through each path (a view from an offset, a transposed view, dtypes of every width).
    void tensorBytesAgreeAcrossCompression()
    {
        const Checkpoint all = readCheckpoint(fixturePath("zipold/deflated_state_dict.pt").toStdString());
        const Checkpoint mixed = readCheckpoint(fixturePath("zipold/deflated_mixed.pt").toStdString());
        QCOMPARE(all.tensors.size(), mixed.tensors.size());
        for (const TensorEntry& tensor : all.tensors) {
            const ByteBuffer a = tensorBytes(all, tensor.name.str());
            const ByteBuffer b = tensorBytes(mixed, tensor.name.str());
            QCOMPARE(a.size(), std::size_t(tensor.nbytes()));
            QVERIFY2(a == b, tensor.name.str().c_str());
        }
        // encoder.row2 is row 2 of the 6x5 float32 weight: bytes 40..60 of its storage.
        const ByteBuffer weight = tensorBytes(all, "encoder.weight");
        const ByteBuffer row2 = tensorBytes(all, "encoder.row2");
        QVERIFY(std::equal(row2.begin(), row2.end(), weight.begin() + 40));
        // encoder.weight_t is its transpose: element (i, j) is weight's (j, i).
        const ByteBuffer transposed = tensorBytes(all, "encoder.weight_t");
        QCOMPARE(transposed.size(), weight.size());
        for (std::ptrdiff_t i = 0; i < 5; ++i)
            for (std::ptrdiff_t j = 0; j < 6; ++j)
                QVERIFY(std::equal(transposed.begin() + (i * 6 + j) * 4,
                    transposed.begin() + (i * 6 + j) * 4 + 4, weight.begin() + (j * 5 + i) * 4));
    }

    void streamsInPiecesAndStopsEarly()
    {
        auto file = MappedFile::open(fixturePath("zipold/deflated_state_dict.pt").toStdString());
        QVERIFY(file.hasValue());
        const ZipArchive zip = ZipArchive::open(*file);
        const ZipEntry* zeros = nullptr; // the 256-byte all-zero storage, the best compressed
        for (const ZipEntry& entry : zip.entries())
            if (entry.name().ends_with("/data/6"))
                zeros = &entry;
        QVERIFY(zeros);
        QCOMPARE(zeros->method, std::uint16_t(8));
        const auto whole = zip.readPayload(*zeros, 1 << 20);
        QVERIFY(whole.hasValue());
        ByteBuffer pieces;
        QVERIFY(!zip.forEachPayloadChunk(*zeros, [&](ByteView piece) -> Status {
            pieces.insert(pieces.end(), piece.begin(), piece.end());
            return std::nullopt;
        }));
        QVERIFY(pieces == *whole);
        std::size_t first = 0;
        QVERIFY(!zip.forEachPayloadChunk(
            *zeros,
            [&](ByteView piece) -> Status {
                first += piece.size();
                return std::nullopt;
            },
            10));
        QCOMPARE(first, std::size_t(10));
        // A sink's error stops it and is returned as it is.
        const Status stopped
            = zip.forEachPayloadChunk(*zeros, [](ByteView) -> Status { return makeError("enough"); });
        QVERIFY(stopped && stopped->message == "enough");
    }

    void damagedStreamsAreSaid()
    {
        auto file = MappedFile::open(fixturePath("zipold/deflated_state_dict.pt").toStdString());
        QVERIFY(file.hasValue());
        const ZipArchive zip = ZipArchive::open(*file);
        const ZipEntry* bias = nullptr;
        for (const ZipEntry& entry : zip.entries())
            if (entry.name().ends_with("/data/1"))
                bias = &entry;
        QVERIFY(bias);
        const ByteView stream = file->get()->bytes().subspan(bias->dataOffset, bias->compressedSize);
        const auto sink = [](ByteView) -> Status { return std::nullopt; };
        // Cut off: half the compressed bytes.
        Status cut = inflateRawChunks(stream.first(stream.size() / 2), bias->uncompressedSize, sink);
        QVERIFY(cut);
        QVERIFY2(cut->message.find("cut off") != std::string::npos, cut->message.c_str());
        // Corrupt: an invalid block type (binary 11) in the first byte.
        ByteBuffer corrupt(stream.begin(), stream.end());
        corrupt[0] = 0x07;
        Status bad = inflateRawChunks(corrupt, bias->uncompressedSize, sink);
        QVERIFY(bad);
        QVERIFY2(bad->message.find("corrupt") != std::string::npos, bad->message.c_str());
        // Inflating to more or fewer bytes than recorded.
        QVERIFY(inflateRawChunks(stream, bias->uncompressedSize - 1, sink));
        Status longer = inflateRawChunks(stream, bias->uncompressedSize + 1, sink);
        QVERIFY(longer);
        QVERIFY2(longer->message.find("ends after") != std::string::npos, longer->message.c_str());
        // A prefix only is fine without reading the rest; the whole must end where it says.
        QVERIFY(!inflateRawChunks(stream.first(stream.size() / 2), bias->uncompressedSize, sink, 8));
    }
};

QTEST_GUILESS_MAIN(TestDeflatedStorages)
#include "tst_deflatedstorages.moc"
