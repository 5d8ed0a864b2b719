// SPDX-License-Identifier: MIT
// Size arithmetic on numbers a file controls (issue 9): a view whose byte size overflows is
// reported with torch's own words (asked of torch 1.13 and 2.14 directly, by calling the rebuild
// function torch.load would call, never by unpickling the file), a storage of 2^62 floats never
// "needs 0 bytes", and the memory ledger never wraps a hostile size round to a small one.
#include "core/base/checkedarithmetic.h"
#include "core/devices/machinespec.h"
#include "core/plan/autoplacement.h"
#include "core/plan/memoryledger.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointbuilder.h"
#include "core/read/checkpointreader.h"

#include <QProcess>
#include <QTest>

using namespace ckpt;

namespace {

Checkpoint malformed(const char* name)
{
    // Built opcode by opcode by tests/data/malformed/make_hostile_names.py; never unpickled.
    return readCheckpoint(std::string(CKPT_SOURCE_DIR "/tests/data/malformed/") + name);
}

const Finding* findingFor(const Checkpoint& checkpoint, FindingCode code, const std::string& text)
{
    for (const Finding& finding : checkpoint.findings)
        if (finding.code == code && finding.message.find(text) != std::string::npos)
            return &finding;
    return nullptr;
}

// torch's message for each geometry of stride_overflow.pt, from the function torch.load calls.
QStringList torchMessages(const QString& python)
{
    const QString script = QStringLiteral(
        "import collections, warnings, torch\n"
        "warnings.simplefilter('ignore')\n"
        "for size, stride in [((5,), (2**62,)), ((2, 3), (2**62, 1))]:\n"
        "    try:\n"
        "        torch._utils._rebuild_tensor_v2(torch.FloatStorage(4), 0, size, stride, False,\n"
        "                                         collections.OrderedDict())\n"
        "        print('loads')\n"
        "    except RuntimeError as error:\n"
        "        print(str(error).splitlines()[0])\n");
    QStringList command = QProcess::splitCommand(python);
    QProcess process;
    process.start(command.takeFirst(), command << QStringLiteral("-c") << script);
    if (!process.waitForFinished(300'000) || process.exitCode() != 0)
        return {QStringLiteral("python failed: ") + QString::fromUtf8(process.readAllStandardError())};
    return QString::fromUtf8(process.readAllStandardOutput()).split(u'\n', Qt::SkipEmptyParts);
}

} // namespace

class TestSizeArithmetic : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void checkedOperations()
    {
        QCOMPARE(checkedMultiply<std::uint64_t>(1ull << 62, 4), std::nullopt);
        QCOMPARE(checkedMultiply<std::uint64_t>(1ull << 61, 4), std::optional<std::uint64_t>(1ull << 63));
        QCOMPARE(checkedAdd<std::uint64_t>(UINT64_MAX, 1), std::nullopt);
        QCOMPARE(checkedMultiply<std::int64_t>(INT64_MAX, 2), std::nullopt);
        QCOMPARE(saturatingAdd(UINT64_MAX - 1, 5), UINT64_MAX);
    }

    void viewSizeOverflowUsesTorchsWords_data()
    {
        QTest::addColumn<QString>("python");
        QTest::newRow("torch 1.13") << QStringLiteral(CKPT_LEGACY_PYTHON);
        QTest::newRow("torch 2.14") << QStringLiteral(CKPT_MODERN_PYTHON);
    }
    void viewSizeOverflowUsesTorchsWords()
    {
        QFETCH(QString, python);
        if (python.isEmpty())
            QSKIP("no interpreter configured for this torch");
        const QStringList truth = torchMessages(python);
        QCOMPARE(truth.size(), 2);
        QCOMPARE(truth[0],
            QStringLiteral(
                "Storage size calculation overflowed with sizes=[5] and strides=[4611686018427387904]"));
        const Checkpoint checkpoint = malformed("stride_overflow.pt");
        const char* names[] = {"'wide'", "'tall'"};
        for (int i = 0; i < 2; ++i) {
            const Finding* finding = findingFor(checkpoint, FindingCode::ViewSizeOverflow, names[i]);
            QVERIFY2(finding, names[i]);
            QCOMPARE(finding->severity, Severity::Error);
            QVERIFY2(QString::fromStdString(finding->message).contains(u'"' + truth[i] + u'"'),
                finding->message.c_str());
        }
        // The well-formed view beside them is fine.
        QVERIFY(!findingFor(checkpoint, FindingCode::ViewSizeOverflow, "'fine'"));
        QVERIFY(!findingFor(checkpoint, FindingCode::ViewOutOfBounds, "'fine'"));
        QCOMPARE(storageSizeOverflowMessage({2, 3}, {1ll << 62, 1}),
            std::string("Storage size calculation overflowed with sizes=[2, 3] and "
                        "strides=[4611686018427387904, 1]"));
    }

    void hugeStorageNeverNeedsZeroBytes()
    {
        const Checkpoint checkpoint = malformed("numel_overflow.pt");
        QCOMPARE(checkpoint.storages.size(), std::size_t(1));
        const StorageRecord& storage = checkpoint.storages.front();
        QCOMPARE(storage.numel, std::uint64_t(1) << 62);
        QCOMPARE(storage.nbytes, UINT64_MAX); // saturated, not 2^64 mod 2^64 = 0
        QVERIFY(!storage.bytesComplete());
        const Finding* finding
            = findingFor(checkpoint, FindingCode::StorageSizeOverflow, "4,611,686,018,427,387,904");
        QVERIFY(finding);
        QCOMPARE(finding->severity, Severity::Error);
        for (const Finding& other : checkpoint.findings)
            QVERIFY2(other.message.find("needs 0") == std::string::npos, other.message.c_str());

        // The ledger keeps it far over any capacity: no wrap to "fits".
        auto machine = parseMachineSpec("cuda:0=24GiB,cpu=64GiB");
        QVERIFY(machine);
        PlacementPlan plan(checkpoint);
        MemoryLedger ledger(checkpoint, plan, *machine);
        ledger.apply(plan.apply({PlacementRule::Kind::MapTag, "*", "cuda:0"}));
        bool sawCuda = false;
        for (const DeviceLedgerLine& line : ledger.lines()) {
            if (line.tag != "cuda:0")
                continue;
            sawCuda = true;
            QCOMPARE(line.plannedBytes, UINT64_MAX);
            QCOMPARE(line.allocatedBytes, UINT64_MAX);
            QVERIFY(line.overCapacity());
        }
        QVERIFY(sawCuda);
        // Automatic placement does not fit it anywhere (with the size wrapped to 0 it "fit").
        const auto placement = placeAutomatically(checkpoint, *machine);
        QVERIFY(placement.hasValue());
        QCOMPARE(placement->didNotFit.size(), std::size_t(1));

        // Moving it back and forth stays exact.
        ledger.apply(plan.apply({PlacementRule::Kind::MapTag, "*", "cpu"}));
        for (const DeviceLedgerLine& line : ledger.lines())
            if (line.tag == "cuda:0")
                QCOMPARE(line.plannedBytes, std::uint64_t(0));
    }
};

QTEST_GUILESS_MAIN(TestSizeArithmetic)
#include "tst_sizearithmetic.moc"
