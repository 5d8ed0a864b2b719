// SPDX-License-Identifier: MIT
// Integrity and placement-smell checks of the triage: CRC of every record, truncation with the
// storages that can be salvaged, files that are not checkpoints, mixed devices in one module, and
// TorchScript code that names a device (written by real torch 1.13 into a temporary folder).
#include "core/format/formatsniffer.h"
#include "core/format/ziparchive.h"
#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"
#include "core/triage/triage.h"
#include "tests/common/testfiles.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <set>

using namespace ckpt::testing;

using namespace ckpt;

namespace {

std::vector<const Finding*> withCode(const std::vector<Finding>& findings, FindingCode code)
{
    std::vector<const Finding*> found;
    for (const Finding& finding : findings)
        if (finding.code == code)
            found.push_back(&finding);
    return found;
}

} // namespace

class TestIntegrityChecks : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void intactFixturesHaveNoCrcMismatch_data()
    {
        QTest::addColumn<QString>("file");
        for (const char* name : {"torch-2/state_dict.pt", "torch-1.13/state_dict.pt",
                 "torch-1.13/torchscript_scripted.pt", "torch-2/training_checkpoint.pt"})
            QTest::newRow(name) << fixturePath(QString::fromLatin1(name));
    }
    void intactFixturesHaveNoCrcMismatch()
    {
        QFETCH(QString, file);
        const Checkpoint checkpoint = readCheckpoint(file.toStdString());
        const std::vector<Finding> findings = checkIntegrity(checkpoint);
        QVERIFY(withCode(findings, FindingCode::CrcMismatch).empty());
        QVERIFY(withCode(findings, FindingCode::TruncatedSalvage).empty());
        for (const Finding& finding : findings)
            QVERIFY2(finding.severity != Severity::Error, finding.message.c_str());
    }

    // The reader parses the zip directory once and keeps it with the checkpoint; the triage (CRCs,
    // TorchScript code) uses that parse instead of its own, which at a million records cost a
    // second and ~100 MB each time. A checkpoint without it (put together another way) still gets
    // the same findings, from a parse of its own.
    void triageParsesTheZipDirectoryOnce_data()
    {
        QTest::addColumn<QString>("file");
        for (const char* name : {"torch-2/state_dict.pt", "torch-2/torchscript_scripted.pt",
                 "torch-1.13/torchscript_scripted.pt"})
            QTest::newRow(name) << fixturePath(QString::fromLatin1(name));
    }
    void triageParsesTheZipDirectoryOnce()
    {
        QFETCH(QString, file);
        const std::uint64_t before = ZipArchive::openCount();
        const Checkpoint checkpoint = readCheckpoint(file.toStdString());
        QVERIFY(checkpoint.zip);
        QCOMPARE(checkpoint.zip->file(), checkpoint.file);
        QCOMPARE(ZipArchive::openCount() - before, std::uint64_t {1});
        triage(checkpoint, TriageOptions {});
        QCOMPARE(ZipArchive::openCount() - before, std::uint64_t {1});

        Checkpoint withoutArchive = readCheckpoint(file.toStdString());
        withoutArchive.zip.reset();
        const std::uint64_t fallbackBefore = ZipArchive::openCount();
        const std::vector<Finding> fallback = checkIntegrity(withoutArchive);
        QVERIFY(ZipArchive::openCount() > fallbackBefore);
        const std::vector<Finding> shared = checkIntegrity(checkpoint);
        QCOMPARE(fallback.size(), shared.size());
        for (std::size_t i = 0; i < shared.size(); ++i) {
            QVERIFY(fallback[i].code == shared[i].code);
            QCOMPARE(fallback[i].message, shared[i].message);
        }
    }

    void flippedByteIsFoundByCrc()
    {
        const QString source = fixturePath(QStringLiteral("torch-2/state_dict.pt"));
        const Checkpoint original = readCheckpoint(source.toStdString());
        QVERIFY(original.storages.size() >= 2);
        const StorageRecord& victim = original.storages[1];
        QVERIFY(victim.dataOffset && victim.nbytes > 0);

        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString copy = dir.filePath(QStringLiteral("flipped.pt"));
        QByteArray bytes = readAll(source);
        bytes[qsizetype(*victim.dataOffset + victim.nbytes / 2)] ^= 0x01;
        QVERIFY(writeAll(copy, bytes));

        const Checkpoint damaged = readCheckpoint(copy.toStdString());
        const std::vector<Finding> findings = checkIntegrity(damaged);
        const auto mismatches = withCode(findings, FindingCode::CrcMismatch);
        QCOMPARE(mismatches.size(), std::size_t(1)); // that record and nowhere else
        const Finding& finding = *mismatches.front();
        QCOMPARE(finding.record, victim.record());
        QCOMPARE(finding.severity, Severity::Error);
        QVERIFY(!finding.fix.empty() && !finding.explanation.empty());
        const std::set<std::uint32_t> expected(victim.tensors.begin(), victim.tensors.end());
        QCOMPARE(std::set<std::uint32_t>(finding.tensors.begin(), finding.tensors.end()), expected);
        for (std::uint32_t tensor : victim.tensors)
            QVERIFY2(finding.message.find(std::string(original.tensors[tensor].name)) != std::string::npos,
                finding.message.c_str());
    }

    void truncatedZipListsSalvageableStorages_data()
    {
        QTest::addColumn<QString>("file");
        QTest::newRow("torch-2 training") << fixturePath(QStringLiteral("torch-2/training_checkpoint.pt"));
        QTest::newRow("torch-1.13 state_dict") << fixturePath(QStringLiteral("torch-1.13/state_dict.pt"));
    }
    void truncatedZipListsSalvageableStorages()
    {
        QFETCH(QString, file);
        const Checkpoint original = readCheckpoint(file.toStdString());
        QVERIFY(original.storages.size() >= 4);
        // Cut in the middle of the storage whose bytes are in the middle of the file's storages.
        std::vector<const StorageRecord*> byOffset;
        for (const StorageRecord& storage : original.storages)
            if (storage.dataOffset && storage.nbytes > 1)
                byOffset.push_back(&storage);
        std::sort(byOffset.begin(), byOffset.end(),
            [](const StorageRecord* a, const StorageRecord* b) { return *a->dataOffset < *b->dataOffset; });
        const StorageRecord* middle = byOffset[byOffset.size() / 2];
        const std::uint64_t cut = *middle->dataOffset + middle->nbytes / 2;

        std::set<std::string> expectedKeys;
        std::set<std::string> expectedTensors;
        for (const StorageRecord& storage : original.storages)
            if (storage.dataOffset && *storage.dataOffset + storage.nbytes <= cut) {
                expectedKeys.insert(storage.key.str());
                for (std::uint32_t tensor : storage.tensors)
                    expectedTensors.insert(std::string(original.tensors[tensor].name));
            }
        QVERIFY(!expectedKeys.empty());
        QVERIFY(expectedKeys.size() < original.storages.size());

        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString copy = dir.filePath(QStringLiteral("cut.pt"));
        QVERIFY(writeAll(copy, readAll(file).left(qsizetype(cut))));
        const Checkpoint damaged = readCheckpoint(copy.toStdString());
        const std::vector<Finding> findings = checkIntegrity(damaged);
        const auto salvage = withCode(findings, FindingCode::TruncatedSalvage);
        QCOMPARE(salvage.size(), std::size_t(1));
        const Finding& finding = *salvage.front();
        QCOMPARE(finding.severity, Severity::Error);
        std::set<std::string> salvagedTensors;
        for (std::uint32_t tensor : finding.tensors)
            salvagedTensors.insert(std::string(damaged.tensors[tensor].name));
        QCOMPARE(salvagedTensors, expectedTensors);
        const std::string counted
            = std::to_string(expectedKeys.size()) + " of " + std::to_string(original.storages.size());
        QVERIFY2(finding.message.find(counted + " storages") != std::string::npos, finding.message.c_str());
        QVERIFY2(finding.fix.find("re-download") != std::string::npos, finding.fix.c_str());
        QVERIFY(finding.fix.find(counted) != std::string::npos);
        // Every salvageable key is named before "; lost:", every other after it.
        const std::size_t lostAt = finding.message.find("; lost:");
        QVERIFY(lostAt != std::string::npos);
        for (const StorageRecord& storage : damaged.storages) {
            const bool salvageable = expectedKeys.count(storage.key.str()) > 0;
            QCOMPARE(storage.bytesComplete(), salvageable);
        }
        // No CRC complaint about the records cut off: those are truncation, not corruption.
        QVERIFY(withCode(findings, FindingCode::CrcMismatch).empty());
    }

    void nonCheckpointsAreNamedWithAFix_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("fixWords");
        const QString corpus = corpusFilesDir() + QLatin1Char('/');
        QTest::newRow("git lfs") << corpus + QStringLiteral("lukesin__nas-for-kws__checkpoint.pth.tar")
                                 << int(ContainerKind::GitLfsPointer) << QStringLiteral("git lfs pull");
        QTest::newRow("png") << corpus + QStringLiteral("mmaitre314__picklescan__tests__data__bad_pytorch.pt")
                             << int(ContainerKind::Png) << QStringLiteral("real checkpoint");
        QTest::newRow("hdf5") << corpus + QStringLiteral("ronvree__AlphaZero__checkpoint230small.pth.tar")
                              << int(ContainerKind::Hdf5) << QStringLiteral("h5py");
        QTest::newRow("empty") << corpus
                + QStringLiteral("pytorch__serve__frontend__archive__src__test__resources__models__noop_no_"
                                 "archive__noop__model.pt")
                               << int(ContainerKind::Empty) << QStringLiteral("again");
    }
    void nonCheckpointsAreNamedWithAFix()
    {
        QFETCH(QString, file);
        QFETCH(int, kind);
        QFETCH(QString, fixWords);
        if (!QFile::exists(file))
            QSKIP("the corpus is not on this machine");
        const Checkpoint checkpoint = readCheckpoint(file.toStdString());
        QCOMPARE(int(checkpoint.container.kind), kind);
        const std::vector<Finding> findings = checkIntegrity(checkpoint);
        const auto named = withCode(findings, FindingCode::NotACheckpoint);
        QCOMPARE(named.size(), std::size_t(1));
        QVERIFY2(
            named.front()->fix.find(fixWords.toStdString()) != std::string::npos, named.front()->fix.c_str());
        QVERIFY(!named.front()->explanation.empty());
        QVERIFY(checkPlacementSmells(checkpoint).empty());
    }

    void mixedDevicesInOneModule_data()
    {
        QTest::addColumn<QString>("version");
        QTest::newRow("torch-1.13") << QStringLiteral("torch-1.13");
        QTest::newRow("torch-2") << QStringLiteral("torch-2");
    }
    void mixedDevicesInOneModule()
    {
        // devices_mixed.pt is one flat state_dict: on_cpu, also_cpu (cpu), on_cuda0 (cuda:0),
        // on_cuda1 and its view on_cuda1_row (cuda:1), on_cuda (bare cuda).
        QFETCH(QString, version);
        const Checkpoint mixed = readCheckpoint(
            QString(fixturePath(version) + QStringLiteral("/devices_mixed.pt")).toStdString());
        const std::vector<Finding> smells = checkPlacementSmells(mixed);
        const auto found = withCode(smells, FindingCode::MixedDevicesInModule);
        QCOMPARE(found.size(), std::size_t(1));
        const Finding& finding = *found.front();
        for (const char* words : {"2 on cpu", "1 on cuda:0", "2 on cuda:1", "1 on cuda"})
            QVERIFY2(finding.message.find(words) != std::string::npos, finding.message.c_str());
        QCOMPARE(finding.tensors.size(), mixed.tensors.size());
        QVERIFY2(finding.fix.find("remap") != std::string::npos
                && finding.fix.find("map_location") != std::string::npos,
            finding.fix.c_str());

        for (const char* clean : {"/state_dict.pt", "/training_checkpoint.pt", "/devices_cuda1.pt"}) {
            const Checkpoint checkpoint
                = readCheckpoint(QString(fixturePath(version) + QString::fromLatin1(clean)).toStdString());
            const std::vector<Finding> none = checkPlacementSmells(checkpoint);
            QVERIFY2(none.empty(), none.empty() ? "" : none.front().message.c_str());
        }
    }

    void torchScriptCodeThatNamesADevice()
    {
        const QString python = QStringLiteral(CKPT_LEGACY_PYTHON);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString script = dir.filePath(QStringLiteral("write.py"));
        const QString output = dir.filePath(QStringLiteral("scripted.pt"));
        QVERIFY(writeAll(script,
            "import sys, torch\n"
            "class M(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.w = torch.nn.Parameter(torch.ones(2))\n"
            "    def forward(self, x):\n"
            "        y = x * self.w\n"
            "        return y.to(\"cuda\")\n"
            "torch.jit.script(M()).save(sys.argv[1])\n"));
        QProcess process;
        process.start(python, {script, output});
        if (!process.waitForStarted())
            QSKIP("no python3 with torch 1.13 to write the TorchScript file");
        QVERIFY(process.waitForFinished(120000));
        if (process.exitCode() != 0)
            QSKIP(qPrintable(u"torch could not script the module: "_qs
                + QString::fromUtf8(process.readAllStandardError())));

        const Checkpoint checkpoint = readCheckpoint(output.toStdString());
        QCOMPARE(checkpoint.format, CheckpointFormat::TorchScript);
        const std::vector<Finding> smells = checkPlacementSmells(checkpoint);
        const auto found = withCode(smells, FindingCode::DeviceInCode);
        QCOMPARE(found.size(), std::size_t(1));
        const Finding& finding = *found.front();
        QVERIFY2(finding.record.ends_with("code/__torch__.py"), finding.record.c_str());
        QVERIFY2(finding.message.find("a remap will not fix code that names a device") != std::string::npos,
            finding.message.c_str());
        // torch 1.13 writes `return torch.to(y, torch.device("cuda"))` on line 11 of the class.
        QVERIFY2(finding.message.find("code/__torch__.py line 11: return torch.to(y, torch.device(\"cuda\"))")
                != std::string::npos,
            finding.message.c_str());
        QVERIFY(!finding.fix.empty());

        // The fixtures' scripted modules name no device in their code.
        const Checkpoint clean
            = readCheckpoint(fixturePath(QStringLiteral("torch-1.13/torchscript_scripted.pt")).toStdString());
        QVERIFY(withCode(checkPlacementSmells(clean), FindingCode::DeviceInCode).empty());
    }
};

QTEST_GUILESS_MAIN(TestIntegrityChecks)
#include "tst_integritychecks.moc"
