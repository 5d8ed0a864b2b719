// SPDX-License-Identifier: MIT
// Every writer reads its output back before it takes the target's name (core/write/readbackverifier):
// a fault put into the written file, or into what the writer meant, just before that check (the
// test hook ReadBackFaultForTesting, as a writer bug would) must be refused with a message naming
// the tensor, and leave nothing under the target. The faults that matter most are the quiet ones:
// a file whose tensors view the same bytes of the same storage under the same names, dtypes and
// shapes, but with another stride or storage offset (torch would load other values).
#include "core/model/checkpoint.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/write/extractwriter.h"
#include "core/write/readbackverifier.h"
#include "core/write/remapwriter.h"
#include "core/write/safetensorswriter.h"
#include "core/write/shardedwriter.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <unistd.h>

using namespace ckpt;

namespace {

QByteArray readAll(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

// Replaces the whole written file with `bytes`.
void replaceWith(int fd, const QByteArray& bytes)
{
    QVERIFY(::ftruncate(fd, 0) == 0);
    QCOMPARE(::pwrite(fd, bytes.constData(), static_cast<std::size_t>(bytes.size()), 0),
        static_cast<ssize_t>(bytes.size()));
}

// Replaces the first `from` in the written file by `to` (same length).
void patch(int fd, const QByteArray& from, const QByteArray& to)
{
    QCOMPARE(from.size(), to.size());
    QByteArray bytes(static_cast<qsizetype>(::lseek(fd, 0, SEEK_END)), '\0');
    QCOMPARE(::pread(fd, bytes.data(), static_cast<std::size_t>(bytes.size()), 0),
        static_cast<ssize_t>(bytes.size()));
    const qsizetype at = bytes.indexOf(from);
    QVERIFY(at >= 0);
    QCOMPARE(::pwrite(fd, to.constData(), static_cast<std::size_t>(to.size()), at),
        static_cast<ssize_t>(to.size()));
}

PlacementRule rule(PlacementRule::Kind kind, const char* text)
{
    auto parsed = PlacementRule::parse(kind, text);
    return parsed.hasValue() ? *parsed : PlacementRule {};
}

bool nothingBut(const QString& folder, const QStringList& names)
{
    QStringList present
        = QDir(folder).entryList(QDir::Files | QDir::Dirs | QDir::Hidden | QDir::NoDotAndDotDot);
    present.sort();
    QStringList wanted = names;
    wanted.sort();
    return present == wanted;
}

} // namespace

class TestWriteVerification : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_meant; // w = base[0:4], m = base.view(4, 4)
    QString m_shifted; // the same storage bytes, names, dtypes and shapes: w = base[4:8], m = .t()

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_meant = m_dir.path() + QStringLiteral("/meant.pt");
        m_shifted = m_dir.path() + QStringLiteral("/shifted.pt");
        // Written by real torch (Debian's 1.13); both hold one storage "0" with the same bytes.
        const QString script
            = QStringLiteral("import sys, torch\n"
                             "base = torch.arange(16, dtype=torch.float32)\n"
                             "torch.save({'w': base[0:4], 'm': base.view(4, 4)}, sys.argv[1])\n"
                             "torch.save({'w': base[4:8], 'm': base.view(4, 4).t()}, sys.argv[2])\n");
        QProcess python;
        python.start(QStringLiteral(CKPT_LEGACY_PYTHON), {QStringLiteral("-c"), script, m_meant, m_shifted});
        QVERIFY(python.waitForFinished(120'000));
        QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());
        const Checkpoint meant = readCheckpoint(m_meant.toStdString());
        const Checkpoint shifted = readCheckpoint(m_shifted.toStdString());
        QCOMPARE(meant.tensors.size(), std::size_t(2));
        QCOMPARE(shifted.tensors.size(), std::size_t(2));
        QCOMPARE(meant.storages.size(), std::size_t(1));
        QCOMPARE(shifted.storages.size(), std::size_t(1));
        QCOMPARE(meant.storages[0].key, shifted.storages[0].key);
    }

    // The remap writer used to compare names, dtypes and shapes only: a copy whose tensors had
    // another stride and offset over the same bytes passed its check.
    void remapCatchesStrideAndStorageOffset()
    {
        const Checkpoint checkpoint = readCheckpoint(m_meant.toStdString());
        PlacementPlan plan(checkpoint);
        plan.apply(rule(PlacementRule::Kind::MapTag, "*=cpu"));
        QTemporaryDir out;
        const std::string target = out.filePath(QStringLiteral("out.pt")).toStdString();
        const QByteArray shifted = readAll(m_shifted);
        const ScopedReadBackFault fault({[&](int fd) { replaceWith(fd, shifted); }, {}});
        const auto result = writeRemappedCopy(checkpoint, plan, target);
        QVERIFY2(!result.hasValue(), "a copy with other strides and offsets was accepted");
        const QString message = QString::fromStdString(result.error().message);
        qInfo("%s", qPrintable(message));
        QVERIFY2(
            message.contains(QStringLiteral("'w'")) && message.contains(QStringLiteral("storage offset 4")),
            qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("'m'")) && message.contains(QStringLiteral("stride")),
            qPrintable(message));
        QVERIFY(nothingBut(out.path(), {}));
    }

    // The same fault for the extract writer (which checked stride and offset already).
    void extractCatchesStrideAndStorageOffset()
    {
        const Checkpoint checkpoint = readCheckpoint(m_meant.toStdString());
        PlacementPlan plan(checkpoint);
        QTemporaryDir out;
        const std::string target = out.filePath(QStringLiteral("out.pt")).toStdString();
        const QByteArray shifted = readAll(m_shifted);
        const ScopedReadBackFault fault({[&](int fd) { replaceWith(fd, shifted); }, {}});
        const auto result = writeExtractedStateDict(checkpoint, plan, target);
        QVERIFY2(!result.hasValue(), "a state_dict with other strides and offsets was accepted");
        const QString message = QString::fromStdString(result.error().message);
        qInfo("%s", qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("'w'")) || message.contains(QStringLiteral("'m'")),
            qPrintable(message));
        QVERIFY(nothingBut(out.path(), {}));
    }

    // A safetensors file whose header names another dtype of the same size.
    void safetensorsCatchesADtypeChange()
    {
        const Checkpoint checkpoint = readCheckpoint(m_meant.toStdString());
        QTemporaryDir out;
        const std::string target = out.filePath(QStringLiteral("out.safetensors")).toStdString();
        const ScopedReadBackFault fault(
            {[](int fd) { patch(fd, QByteArrayLiteral("\"F32\""), QByteArrayLiteral("\"I32\"")); }, {}});
        const auto result = writeSafetensors({{&checkpoint, 0, "w"}, {&checkpoint, 1, "m"}}, target);
        QVERIFY2(!result.hasValue(), "a safetensors file with another dtype was accepted");
        const QString message = QString::fromStdString(result.error().message);
        QVERIFY2(message.contains(QStringLiteral("'")), qPrintable(message));
        QVERIFY(nothingBut(out.path(), {}));
    }

    // A changed data byte (the file's last: the end of the last tensor's data).
    void safetensorsCatchesAChangedByte()
    {
        const Checkpoint checkpoint = readCheckpoint(m_meant.toStdString());
        QTemporaryDir out;
        const std::string target = out.filePath(QStringLiteral("out.safetensors")).toStdString();
        const ScopedReadBackFault fault({[](int fd) {
                                             const off_t last = ::lseek(fd, 0, SEEK_END) - 1;
                                             char byte = 0;
                                             QVERIFY(::pread(fd, &byte, 1, last) == 1);
                                             byte = static_cast<char>(byte ^ 0x01);
                                             QVERIFY(::pwrite(fd, &byte, 1, last) == 1);
                                         },
            {}});
        const auto result = writeSafetensors({{&checkpoint, 0, "w"}, {&checkpoint, 1, "m"}}, target);
        QVERIFY2(!result.hasValue(), "a safetensors file with a changed byte was accepted");
        const QString message = QString::fromStdString(result.error().message);
        QVERIFY2(message.contains(QStringLiteral("the bytes of storage '"))
                && message.contains(QStringLiteral("differ")),
            qPrintable(message));
        QVERIFY(nothingBut(out.path(), {}));
    }

    // What the safetensors writer meant is a contiguous tensor at offset 0 of its own storage;
    // its check used to compare dtypes, shapes and bytes only. A writer that meant a strided view
    // (or an offset) and wrote a contiguous one must be refused.
    void safetensorsCatchesStrideAndStorageOffset()
    {
        const Checkpoint checkpoint = readCheckpoint(m_meant.toStdString());
        for (const bool offset : {false, true}) {
            QTemporaryDir out;
            const std::string target = out.filePath(QStringLiteral("out.safetensors")).toStdString();
            const ScopedReadBackFault fault({{}, [offset](IntendedOutput& intended) {
                                                 for (IntendedTensor& tensor : intended.tensors)
                                                     if (tensor.name == "m") {
                                                         if (offset)
                                                             tensor.storageOffset = 4;
                                                         else
                                                             tensor.stride = std::vector<std::int64_t> {1, 4};
                                                     }
                                             }});
            const auto result = writeSafetensors({{&checkpoint, 0, "w"}, {&checkpoint, 1, "m"}}, target);
            QVERIFY2(!result.hasValue(), offset ? "a wrong storage offset passed" : "a wrong stride passed");
            const QString message = QString::fromStdString(result.error().message);
            qInfo("%s", qPrintable(message));
            QVERIFY2(message.contains(QStringLiteral("'m'"))
                    && message.contains(offset ? QStringLiteral("storage offset") : QStringLiteral("stride")),
                qPrintable(message));
            QVERIFY(nothingBut(out.path(), {}));
        }
    }

    // A flipped storage byte in one shard of a remapped folder: the folder is refused, nothing
    // takes the target's name.
    void shardedFolderCatchesAWrongByte()
    {
        const Checkpoint checkpoint = readCheckpoint(CKPT_SOURCE_DIR "/tests/fixtures/sharded/bin_cpu");
        QVERIFY(checkpoint.shardSet);
        PlacementPlan plan(checkpoint);
        plan.apply(rule(PlacementRule::Kind::MapTag, "*=cpu"));
        QTemporaryDir out;
        const std::string target = out.filePath(QStringLiteral("copy")).toStdString();
        bool flipped = false;
        const ScopedReadBackFault fault({[&flipped](int fd) {
                                             if (flipped)
                                                 return;
                                             const Checkpoint written
                                                 = readCheckpoint("/proc/self/fd/" + std::to_string(fd));
                                             for (const StorageRecord& storage : written.storages)
                                                 if (!flipped && storage.dataOffset && storage.nbytes > 0) {
                                                     char byte = 0;
                                                     const auto at = static_cast<off_t>(*storage.dataOffset);
                                                     QVERIFY(::pread(fd, &byte, 1, at) == 1);
                                                     byte = static_cast<char>(byte ^ 0x40);
                                                     QVERIFY(::pwrite(fd, &byte, 1, at) == 1);
                                                     flipped = true;
                                                 }
                                         },
            {}});
        const auto result = writeRemappedFolder(checkpoint, plan, target);
        QVERIFY(flipped);
        QVERIFY2(!result.hasValue(), "a shard with a wrong byte was accepted");
        const QString message = QString::fromStdString(result.error().message);
        QVERIFY2(message.contains(QStringLiteral(".bin")), qPrintable(message));
        QVERIFY(nothingBut(out.path(), {}));
    }

    // The rest of what the verifier checks, each through a writer that meant something else than it
    // wrote: a storage shared otherwise, a device, a global the pickle should not name, a record
    // length, a dtype. Each is refused with the tensor or storage named.
    void everyPartOfTheIntentIsChecked_data()
    {
        QTest::addColumn<int>("part");
        QTest::addColumn<QString>("expected");
        QTest::newRow("storage sharing")
            << 0 << QStringLiteral("tensor 'w' reads back with storage '0' instead of '7'");
        QTest::newRow("tensor device")
            << 1 << QStringLiteral("tensor 'm' reads back with device 'cpu' instead of 'cuda:0'");
        QTest::newRow("storage device")
            << 2 << QStringLiteral("storage '0' reads back on 'cpu' instead of 'cuda:1'");
        QTest::newRow("global") << 3 << QStringLiteral("names the global torch._utils._rebuild_tensor_v2");
        QTest::newRow("record length") << 4 << QStringLiteral("storage '0' holds 64 bytes instead of 60");
        QTest::newRow("dtype") << 5
                               << QStringLiteral("tensor 'w' reads back with dtype float32 instead of int32");
        QTest::newRow("bytes") << 6
                               << QStringLiteral(
                                      "the bytes of storage '0' differ from what was meant (CRC mismatch)");
    }

    void everyPartOfTheIntentIsChecked()
    {
        QFETCH(int, part);
        QFETCH(QString, expected);
        const Checkpoint checkpoint = readCheckpoint(m_meant.toStdString());
        PlacementPlan plan(checkpoint);
        for (const bool extract : {false, true}) {
            QTemporaryDir out;
            const std::string target = out.filePath(QStringLiteral("out.pt")).toStdString();
            const ScopedReadBackFault fault(
                {{}, [part](IntendedOutput& intended) {
                     for (IntendedTensor& tensor : intended.tensors) {
                         if (part == 0 && tensor.name == "w")
                             tensor.storageKey = "7";
                         if (part == 1 && tensor.name == "m")
                             tensor.device = "cuda:0";
                         if (part == 5 && tensor.name == "w")
                             tensor.dtype = "int32";
                     }
                     if (part == 2)
                         intended.storages.at(0).device = "cuda:1";
                     if (part == 3)
                         intended.allowedGlobals->erase({"torch._utils", "_rebuild_tensor_v2"});
                     if (part == 4)
                         intended.storages.at(0).length = 60;
                     if (part == 6)
                         *intended.storages.at(0).crc ^= 1;
                 }});
            QString message;
            if (extract) {
                const auto written = writeExtractedStateDict(checkpoint, plan, target);
                if (!written.hasValue())
                    message = QString::fromStdString(written.error().message);
            } else {
                const auto written = writeRemappedCopy(checkpoint, plan, target);
                if (!written.hasValue())
                    message = QString::fromStdString(written.error().message);
            }
            QVERIFY2(!message.isEmpty(), qPrintable(QStringLiteral("accepted: ") + expected));
            QVERIFY2(message.contains(expected), qPrintable(message));
            QVERIFY(nothingBut(out.path(), {}));
        }
    }

    // Without a fault every writer still writes and verifies.
    void withoutAFaultEveryWriterVerifies()
    {
        const Checkpoint checkpoint = readCheckpoint(m_meant.toStdString());
        PlacementPlan plan(checkpoint);
        QTemporaryDir out;
        const auto copy
            = writeRemappedCopy(checkpoint, plan, out.filePath(QStringLiteral("r.pt")).toStdString());
        QVERIFY2(copy.hasValue() && copy->verified, copy.hasValue() ? "" : copy.error().message.c_str());
        const auto extracted
            = writeExtractedStateDict(checkpoint, plan, out.filePath(QStringLiteral("e.pt")).toStdString());
        QVERIFY2(extracted.hasValue() && extracted->verified,
            extracted.hasValue() ? "" : extracted.error().message.c_str());
        const auto safetensors = writeSafetensors({{&checkpoint, 0, "w"}, {&checkpoint, 1, "m"}},
            out.filePath(QStringLiteral("s.safetensors")).toStdString());
        QVERIFY2(safetensors.hasValue() && safetensors->verified,
            safetensors.hasValue() ? "" : safetensors.error().message.c_str());
    }
};

QTEST_APPLESS_MAIN(TestWriteVerification)
#include "tst_writeverification.moc"
