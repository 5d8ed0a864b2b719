// SPDX-License-Identifier: MIT
// The reader as a whole on damaged copies of torch-written fixtures: a file cut at any point is
// read without a crash, says that it is truncated, and salvages exactly the storages whose bytes
// lie before the cut. Hostile pickles are shown, never run.
#include "core/io/mappedfile.h"
#include "core/read/checkpointreader.h"
#include "tests/common/testfiles.h"

#include <QFile>
#include <QTest>

using namespace ckpt::testing;

using namespace ckpt;

namespace {

Checkpoint readBytes(const QByteArray& bytes, const char* name)
{
    return readCheckpoint(MappedFile::fromBuffer(ByteBuffer(bytes.begin(), bytes.end()), name));
}

} // namespace

class TestCheckpointReader : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void truncationSalvagesCompleteStorages_data()
    {
        QTest::addColumn<QString>("file");
        QTest::newRow("zip, training checkpoint") << fixturePath("torch-2/training_checkpoint.pt");
        QTest::newRow("zip, torch 1.13") << fixturePath("torch-1.13/devices_mixed.pt");
        QTest::newRow("legacy") << fixturePath("torch-1.13/legacy_state_dict.pt");
        QTest::newRow("torchscript") << fixturePath("torch-2/torchscript_traced.pt");
    }
    void truncationSalvagesCompleteStorages()
    {
        QFETCH(QString, file);
        const QByteArray full = readAll(file);
        QVERIFY2(!full.isEmpty(), qPrintable(file));
        const Checkpoint whole = readBytes(full, "whole");
        QVERIFY(!whole.hasErrors());
        QVERIFY(!whole.tensors.empty());

        const qsizetype step = std::max<qsizetype>(1, full.size() / 400);
        int cutsWithAllTensors = 0;
        for (qsizetype cut = 0; cut < full.size(); cut += step) {
            const Checkpoint partial = readBytes(full.left(cut), "cut");
            QVERIFY2(partial.hasErrors(), qPrintable(QStringLiteral("cut at %1 reported no error").arg(cut)));
            for (const StorageRecord& storage : partial.storages) {
                if (!storage.bytesComplete())
                    continue;
                // A storage said to be complete really lies before the cut, at the offset the
                // whole file has it.
                QVERIFY(*storage.dataOffset + storage.nbytes <= static_cast<std::uint64_t>(cut));
                auto it = whole.storageIndexByKey.find(storage.key);
                QVERIFY(it != whole.storageIndexByKey.end());
                QCOMPARE(*storage.dataOffset, *whole.storages[it->second].dataOffset);
            }
            if (partial.tensors.size() == whole.tensors.size())
                ++cutsWithAllTensors;
        }
        // Once the pickle is complete (it comes first in torch's zips and legacy files), every
        // tensor is listed even though the rest of the file is missing.
        QVERIFY(cutsWithAllTensors > 0);
    }

    void corruptedBytesNeverCrash()
    {
        const QByteArray full = readAll(fixturePath("torch-2/training_checkpoint.pt"));
        QVERIFY(!full.isEmpty());
        std::uint32_t seed = 12345;
        for (int i = 0; i < 1500; ++i) {
            QByteArray damaged = full;
            for (int k = 0; k < 4; ++k) {
                seed = seed * 1664525u + 1013904223u;
                damaged[static_cast<qsizetype>(seed % static_cast<std::uint32_t>(damaged.size()))]
                    = static_cast<char>(seed >> 24);
            }
            const Checkpoint checkpoint = readBytes(damaged, "damaged");
            QVERIFY(!checkpoint.tree.empty());
        }
    }

    void cutStorageIsNamed()
    {
        // A file cut in the middle of its last storage: that storage is named as incomplete.
        const QByteArray full = readAll(fixturePath("torch-2/state_dict.pt"));
        const Checkpoint whole = readBytes(full, "whole");
        QVERIFY(!whole.storages.empty());
        const StorageRecord& last = whole.storages.back();
        QVERIFY(last.dataOffset.has_value());
        const Checkpoint cut
            = readBytes(full.left(static_cast<qsizetype>(*last.dataOffset + last.nbytes / 2)), "cut");
        bool found = false;
        for (const Finding& finding : cut.findings)
            found = found || finding.code == "record-truncated" || finding.code == "zip-truncated"
                || finding.code == "truncated";
        QVERIFY(found);
    }
};

QTEST_APPLESS_MAIN(TestCheckpointReader)
#include "tst_checkpointreader.moc"
