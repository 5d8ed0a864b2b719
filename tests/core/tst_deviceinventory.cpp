// SPDX-License-Identifier: MIT
// Device inventory: detection against a fake driver layer (no driver, 0/1/4 GPUs, CUDA's own order
// or the emulated one, CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES as CUDA applies them), described
// machines and byte sizes, saved target profiles, and one detection on this real machine.
//
// Why one file of about 800 lines: the fake driver and its fixtures are shared by the detection
// cases, and spec parsing and saved profiles are tested against detected machines too; one suite
// keeps the fake in one place.

#include "core/devices/deviceinventory.h"
#include "core/json/json.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <fstream>

using namespace ckpt;

namespace {

class FakeGpuDriver : public GpuDriver {
public:
    std::optional<std::string> reason;
    std::vector<PhysicalGpu> gpus;
    std::optional<std::vector<std::string>> cudaOrder;
    std::vector<std::string> driverNotes;

    std::optional<std::string> unavailableReason() override { return reason; }
    std::vector<PhysicalGpu> physicalGpus() override { return gpus; }
    std::optional<std::vector<std::string>> cudaOrderUuids() override { return cudaOrder; }
    std::vector<std::string> notes() override { return driverNotes; }
};

constexpr std::uint64_t GiB = 1ull << 30;

PhysicalGpu makeGpu(std::string name, std::string uuid, std::string pci, std::uint64_t totalGiB,
    std::uint64_t freeGiB, int major, int minor, int multiProcessors)
{
    PhysicalGpu gpu;
    gpu.name = std::move(name);
    gpu.uuid = std::move(uuid);
    gpu.pciBusId = std::move(pci);
    gpu.totalBytes = totalGiB * GiB;
    gpu.freeBytes = freeGiB * GiB;
    gpu.major = major;
    gpu.minor = minor;
    gpu.multiProcessorCount = multiProcessors;
    return gpu;
}

// Four different GPUs in NVML's (PCI bus) order. Fastest first by the emulation: the H100
// (9.0), the RTX 3090 (8.6), the A100 (8.0), the T4 (7.5). Two UUIDs share the prefix "GPU-8f6".
std::vector<PhysicalGpu> fourGpus()
{
    return {
        makeGpu("NVIDIA GeForce RTX 3090", "GPU-8f6c1a2b-0000-4000-8000-000000000000", "00000000:1A:00.0", 24,
            20, 8, 6, 82),
        makeGpu("NVIDIA A100-SXM4-80GB", "GPU-8f6d3c4d-1111-4111-8111-111111111111", "00000000:3B:00.0", 80,
            79, 8, 0, 108),
        makeGpu("NVIDIA H100 80GB HBM3", "GPU-3b5e7f90-2222-4222-8222-222222222222", "00000000:5C:00.0", 80,
            70, 9, 0, 132),
        makeGpu("Tesla T4", "GPU-c0ffee00-3333-4333-8333-333333333333", "00000000:AF:00.0", 16, 15, 7, 5, 40),
    };
}

const CpuMemory kCpu {64 * GiB, 48 * GiB};

QStringList tagsOf(const MachineInventory& machine)
{
    QStringList tags;
    for (const DeviceInfo& device : machine.devices)
        tags << QString::fromStdString(device.tag);
    return tags;
}

// The GPUs' names in cuda:N order.
QStringList gpuNames(const MachineInventory& machine)
{
    QStringList names;
    for (const DeviceInfo* device : machine.gpus())
        names << QString::fromStdString(device->name);
    return names;
}

QString allNotes(const MachineInventory& machine)
{
    QStringList notes;
    for (const std::string& note : machine.notes)
        notes << QString::fromStdString(note);
    return notes.join(QLatin1Char('\n'));
}

void checkCpuLast(const MachineInventory& machine)
{
    QVERIFY(!machine.devices.empty());
    const DeviceInfo& cpu = machine.devices.back();
    QCOMPARE(cpu.tag, std::string("cpu"));
    QCOMPARE(cpu.totalBytes, kCpu.totalBytes);
    QCOMPARE(cpu.freeBytes, std::optional<std::uint64_t>(kCpu.availableBytes));
    QVERIFY(!cpu.name.empty());
    QVERIFY(!cpu.opaque);
}

QString q(const std::string& text)
{
    return QString::fromStdString(text);
}

std::string errorOf(const Expected<MachineInventory>& parsed)
{
    return parsed ? std::string("(parsed)") : parsed.error().message;
}

} // namespace

class TestDeviceInventory : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void noDriverIsTheCpuAlone()
    {
        FakeGpuDriver driver;
        driver.reason = "no NVIDIA driver is installed (libnvidia-ml.so.1 not found)";
        driver.gpus = fourGpus(); // never consulted when the driver is unavailable
        const MachineInventory machine = detectMachine(driver, {}, kCpu);
        QCOMPARE(tagsOf(machine), QStringList {QStringLiteral("cpu")});
        checkCpuLast(machine);
        QVERIFY(!machine.described);
        QVERIFY2(allNotes(machine).contains(
                     QStringLiteral("no NVIDIA driver is installed (libnvidia-ml.so.1 not found)")),
            qPrintable(allNotes(machine)));
        QVERIFY(allNotes(machine).contains(QStringLiteral("the inventory is the CPU alone")));
    }

    void zeroGpus()
    {
        FakeGpuDriver driver;
        const MachineInventory machine = detectMachine(driver, {}, kCpu);
        QCOMPARE(tagsOf(machine), QStringList {QStringLiteral("cpu")});
        checkCpuLast(machine);
        QVERIFY2(allNotes(machine).contains(QStringLiteral("no GPU found")), qPrintable(allNotes(machine)));

        // The system driver says 0 GPUs through its reason.
        driver.reason = "the NVIDIA driver is installed but reports 0 GPUs";
        const MachineInventory again = detectMachine(driver, {}, kCpu);
        QCOMPARE(tagsOf(again), QStringList {QStringLiteral("cpu")});
        QVERIFY(allNotes(again).contains(QStringLiteral("reports 0 GPUs")));
    }

    void oneGpuCarriesEverything()
    {
        FakeGpuDriver driver;
        driver.gpus = {fourGpus()[1]};
        const MachineInventory machine = detectMachine(driver, {}, kCpu);
        QCOMPARE(tagsOf(machine), (QStringList {QStringLiteral("cuda:0"), QStringLiteral("cpu")}));
        const DeviceInfo& gpu = machine.devices[0];
        QCOMPARE(gpu.name, std::string("NVIDIA A100-SXM4-80GB"));
        QCOMPARE(gpu.totalBytes, 80 * GiB);
        QCOMPARE(gpu.freeBytes, std::optional<std::uint64_t>(79 * GiB));
        QCOMPARE(gpu.computeCapability, (std::optional<std::pair<int, int>>(std::pair(8, 0))));
        QCOMPARE(gpu.uuid, std::string("GPU-8f6d3c4d-1111-4111-8111-111111111111"));
        QCOMPARE(gpu.pciBusId, std::string("00000000:3B:00.0"));
        QVERIFY(!gpu.opaque);
        checkCpuLast(machine);
        QCOMPARE(machine.find("cuda:0"), &machine.devices[0]);
        QCOMPARE(machine.find("cuda:1"), nullptr);
        // One GPU: nothing to say about its order.
        QVERIFY2(!allNotes(machine).contains(QStringLiteral("device order")), qPrintable(allNotes(machine)));
    }

    void fourGpusFastestFirstEmulated()
    {
        FakeGpuDriver driver;
        driver.gpus = fourGpus();
        const MachineInventory machine = detectMachine(driver, {}, kCpu);
        QCOMPARE(tagsOf(machine),
            (QStringList {QStringLiteral("cuda:0"), QStringLiteral("cuda:1"), QStringLiteral("cuda:2"),
                QStringLiteral("cuda:3"), QStringLiteral("cpu")}));
        QCOMPARE(gpuNames(machine),
            (QStringList {QStringLiteral("NVIDIA H100 80GB HBM3"), QStringLiteral("NVIDIA GeForce RTX 3090"),
                QStringLiteral("NVIDIA A100-SXM4-80GB"), QStringLiteral("Tesla T4")}));
        // Memory follows its GPU through the reordering.
        QCOMPARE(machine.devices[0].totalBytes, 80 * GiB);
        QCOMPARE(machine.devices[0].freeBytes, std::optional<std::uint64_t>(70 * GiB));
        QCOMPARE(machine.devices[1].totalBytes, 24 * GiB);
        QCOMPARE(machine.devices[1].freeBytes, std::optional<std::uint64_t>(20 * GiB));
        QCOMPARE(machine.devices[3].freeBytes, std::optional<std::uint64_t>(15 * GiB));
        checkCpuLast(machine);
        QCOMPARE(machine.gpus().size(), std::size_t(4));
        const QString notes = allNotes(machine);
        QVERIFY2(notes.contains(QStringLiteral(
                     "device order emulated: CUDA_DEVICE_ORDER=FASTEST_FIRST (CUDA's default)")),
            qPrintable(notes));
        QVERIFY2(notes.contains(
                     QStringLiteral("physical GPU 2 (NVIDIA H100 80GB HBM3, 00000000:5C:00.0) is cuda:0")),
            qPrintable(notes));
    }

    void fastestFirstTies()
    {
        // Same capability: more multiprocessors first; same again: ascending PCI bus id, compared
        // as numbers (0x9 before 0x1A) and whatever NVML's order.
        FakeGpuDriver driver;
        driver.gpus = {
            makeGpu("small", "GPU-a", "00000000:1A:00.0", 8, 8, 8, 6, 28),
            makeGpu("twin b", "GPU-b", "00000000:1a:00.0", 8, 8, 8, 6, 82),
            makeGpu("big", "GPU-c", "00000000:B0:00.0", 8, 8, 8, 6, 84),
            makeGpu("twin a", "GPU-d", "00000000:09:00.0", 8, 8, 8, 6, 82),
        };
        const MachineInventory machine
            = detectMachine(driver, {{"CUDA_DEVICE_ORDER", "FASTEST_FIRST"}}, kCpu);
        QCOMPARE(gpuNames(machine),
            (QStringList {QStringLiteral("big"), QStringLiteral("twin a"), QStringLiteral("twin b"),
                QStringLiteral("small")}));
        QVERIFY(!allNotes(machine).contains(QStringLiteral("CUDA's default")));
    }

    void pciBusOrder()
    {
        FakeGpuDriver driver;
        auto gpus = fourGpus();
        std::reverse(gpus.begin(), gpus.end()); // an NVML order that is not the PCI order
        driver.gpus = gpus;
        const MachineInventory machine = detectMachine(driver, {{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}}, kCpu);
        QCOMPARE(gpuNames(machine),
            (QStringList {QStringLiteral("NVIDIA GeForce RTX 3090"), QStringLiteral("NVIDIA A100-SXM4-80GB"),
                QStringLiteral("NVIDIA H100 80GB HBM3"), QStringLiteral("Tesla T4")}));
        QVERIFY2(
            allNotes(machine).contains(QStringLiteral("device order emulated: CUDA_DEVICE_ORDER=PCI_BUS_ID")),
            qPrintable(allNotes(machine)));
    }

    void unknownDeviceOrderValue()
    {
        FakeGpuDriver driver;
        driver.gpus = fourGpus();
        const MachineInventory machine
            = detectMachine(driver, {{"CUDA_DEVICE_ORDER", "SLOWEST_FIRST"}}, kCpu);
        QCOMPARE(gpuNames(machine).first(), QStringLiteral("NVIDIA H100 80GB HBM3"));
        QVERIFY(allNotes(machine).contains(
            QStringLiteral("CUDA_DEVICE_ORDER=SLOWEST_FIRST is not a value CUDA knows")));
    }

    void cudaOrderWins()
    {
        // libcuda's order is taken as is: CUDA has already applied both variables, so they are
        // not applied a second time.
        FakeGpuDriver driver;
        driver.gpus = fourGpus();
        driver.cudaOrder = std::vector<std::string> {driver.gpus[3].uuid, driver.gpus[1].uuid};
        const MachineInventory machine = detectMachine(
            driver, {{"CUDA_VISIBLE_DEVICES", "3,1"}, {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}}, kCpu);
        QCOMPARE(gpuNames(machine),
            (QStringList {QStringLiteral("Tesla T4"), QStringLiteral("NVIDIA A100-SXM4-80GB")}));
        QCOMPARE(machine.devices[0].freeBytes, std::optional<std::uint64_t>(15 * GiB));
        QCOMPARE(machine.devices[1].totalBytes, 80 * GiB);
        checkCpuLast(machine);
        const QString notes = allNotes(machine);
        QVERIFY2(notes.contains(QStringLiteral("device order from libcuda")), qPrintable(notes));
        QVERIFY(notes.contains(QStringLiteral("CUDA_VISIBLE_DEVICES=3,1 applied by CUDA")));
        QVERIFY(!notes.contains(QStringLiteral("emulated")));
    }

    void cudaOrderAbsentIsEmulated()
    {
        // Same GPUs, no libcuda: the emulation must reach the same numbering for "3,1" under PCI order.
        FakeGpuDriver driver;
        driver.gpus = fourGpus();
        driver.driverNotes = {"CUDA's own device order is unavailable: libcuda.so.1 could not be loaded"};
        const MachineInventory machine = detectMachine(
            driver, {{"CUDA_VISIBLE_DEVICES", "3,1"}, {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}}, kCpu);
        QCOMPARE(gpuNames(machine),
            (QStringList {QStringLiteral("Tesla T4"), QStringLiteral("NVIDIA A100-SXM4-80GB")}));
        QVERIFY(allNotes(machine).contains(QStringLiteral("libcuda.so.1 could not be loaded")));
        QVERIFY(allNotes(machine).contains(QStringLiteral("emulated")));
    }

    void cudaOrderWithUnknownAndNone()
    {
        FakeGpuDriver driver;
        driver.gpus = fourGpus();
        driver.cudaOrder
            = std::vector<std::string> {"GPU-00000000-dead-beef-0000-000000000000", driver.gpus[0].uuid};
        const MachineInventory machine = detectMachine(driver, {}, kCpu);
        // The unknown device keeps its ordinal, so cuda:1 is still the RTX 3090 as torch numbers it.
        QCOMPARE(tagsOf(machine),
            (QStringList {QStringLiteral("cuda:0"), QStringLiteral("cuda:1"), QStringLiteral("cpu")}));
        QCOMPARE(machine.devices[0].freeBytes, std::nullopt);
        QCOMPARE(machine.devices[1].name, std::string("NVIDIA GeForce RTX 3090"));
        QVERIFY(allNotes(machine).contains(QStringLiteral("not listed by NVML")));

        driver.cudaOrder = std::vector<std::string> {};
        const MachineInventory none = detectMachine(driver, {{"CUDA_VISIBLE_DEVICES", ""}}, kCpu);
        QCOMPARE(tagsOf(none), QStringList {QStringLiteral("cpu")});
        QVERIFY2(allNotes(none).contains(QStringLiteral("hides all 4 GPU(s)")), qPrintable(allNotes(none)));
    }

    void visibleDevices_data()
    {
        QTest::addColumn<QString>("order");
        QTest::addColumn<QString>("visible");
        QTest::addColumn<QStringList>("expected"); // physical GPUs (NVML index) as cuda:0, cuda:1, ...
        QTest::addColumn<QString>("note");

        const QString pci = QStringLiteral("PCI_BUS_ID");
        const auto list = [](std::initializer_list<const char*> items) {
            QStringList result;
            for (const char* item : items)
                result << QString::fromLatin1(item);
            return result;
        };
        QTest::newRow("reordered")
            << pci << "2,0" << list({"2", "0"})
            << "CUDA_VISIBLE_DEVICES=2,0 applied: physical GPU 2 (NVIDIA H100 80GB HBM3, "
               "00000000:5C:00.0) is cuda:0, physical GPU 0";
        QTest::newRow("invalid index truncates")
            << pci << "0,7,1" << list({"0"})
            << "entry 2 \"7\" is not a valid GPU index (this machine has 4 GPUs), "
               "so CUDA enumerates only the GPUs named before it";
        QTest::newRow("invalid first") << pci << "7,0" << list({}) << "so CUDA exposes no GPU";
        QTest::newRow("negative stops") << pci << "0,2,-1,1" << list({"0", "2"}) << "entry 3 \"-1\"";
        QTest::newRow("empty") << pci << "" << list({}) << "CUDA_VISIBLE_DEVICES is set but empty";
        QTest::newRow("blank") << pci << "  " << list({}) << "set but empty";
        QTest::newRow("duplicate") << pci << "0,1,0" << list({}) << "names the same GPU twice";
        QTest::newRow("strtoul") << pci << "1gpu2,3" << list({"1", "3"}) << "applied";
        QTest::newRow("spaces and signs") << pci << " +3 , -0 " << list({"3", "0"}) << "applied";
        QTest::newRow("word stops") << pci << "3,two,1" << list({"3"}) << "\"two\" is not a GPU index";
        QTest::newRow("empty entry stops") << pci << "1,,2" << list({"1"}) << "entry 2 \"\"";
        QTest::newRow("uuid prefix") << pci << "GPU-8f6c" << list({"0"}) << "applied";
        QTest::newRow("uuid full and prefix") << pci << "GPU-c0ffee00-3333-4333-8333-333333333333,GPU-3b"
                                              << list({"3", "2"}) << "physical GPU 3 (Tesla T4";
        QTest::newRow("uuid ambiguous")
            << pci << "GPU-3b,GPU-8f6" << list({"2"}) << "is ambiguous: it starts the UUIDs of 2 GPUs";
        QTest::newRow("uuid unknown") << pci << "GPU-ffff" << list({}) << "matches no GPU's UUID";
        QTest::newRow("uuid then index") << pci << "GPU-3b,1" << list({"2"}) << "is not a GPU UUID";
        QTest::newRow("uuid duplicate")
            << pci << "GPU-8f6c,GPU-8f6c1a2b" << list({}) << "names the same GPU twice";
        QTest::newRow("index then uuid") << pci << "1,GPU-3b" << list({"1"}) << "is not a GPU index";
        QTest::newRow("mig") << pci << "MIG-0123abcd" << list({}) << "names MIG instances";
        // Under FASTEST_FIRST, indices count in the emulated order: 0 is the H100, 3 the T4.
        QTest::newRow("fastest first indices")
            << QString() << "0,3" << list({"2", "3"})
            << "physical GPU 2 (NVIDIA H100 80GB HBM3, 00000000:5C:00.0) is cuda:0";
    }

    void visibleDevices()
    {
        QFETCH(QString, order);
        QFETCH(QString, visible);
        QFETCH(QStringList, expected);
        QFETCH(QString, note);

        FakeGpuDriver driver;
        driver.gpus = fourGpus();
        std::map<std::string, std::string> environment {{"CUDA_VISIBLE_DEVICES", visible.toStdString()}};
        if (!order.isEmpty())
            environment["CUDA_DEVICE_ORDER"] = order.toStdString();
        const MachineInventory machine = detectMachine(driver, environment, kCpu);

        QStringList physical;
        for (const DeviceInfo* device : machine.gpus()) {
            for (std::size_t i = 0; i < driver.gpus.size(); ++i) {
                if (driver.gpus[i].uuid == device->uuid)
                    physical << QString::number(i);
            }
        }
        QCOMPARE(physical, expected);
        for (std::size_t i = 0; i < machine.gpus().size(); ++i)
            QCOMPARE(machine.gpus()[i]->tag, "cuda:" + std::to_string(i));
        checkCpuLast(machine);
        QVERIFY2(allNotes(machine).contains(note), qPrintable(allNotes(machine)));
        if (expected.isEmpty())
            QVERIFY2(allNotes(machine).contains(QStringLiteral("the inventory is the CPU alone")),
                qPrintable(allNotes(machine)));
    }

    void unknownMemoryAndCpu()
    {
        FakeGpuDriver driver;
        PhysicalGpu gpu = fourGpus()[0];
        gpu.totalBytes = 0; // NVML could not tell
        gpu.freeBytes = 0;
        driver.gpus = {gpu};
        const MachineInventory machine = detectMachine(driver, {}, CpuMemory {});
        QCOMPARE(machine.devices[0].freeBytes, std::nullopt);
        QCOMPARE(machine.devices.back().tag, std::string("cpu"));
        QCOMPARE(machine.devices.back().freeBytes, std::nullopt);
        QVERIFY(allNotes(machine).contains(QStringLiteral("the memory of cuda:0 is unknown")));
        QVERIFY(allNotes(machine).contains(QStringLiteral("the CPU's memory is unknown")));
    }

    void byteSizes_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<quint64>("bytes");
        QTest::addColumn<QString>("error"); // empty: must parse

        const auto good = [](const char* text, std::uint64_t bytes) {
            QTest::newRow(text) << QString::fromLatin1(text) << quint64(bytes) << QString();
        };
        const auto bad = [](const char* text, const char* error) {
            QTest::newRow(text) << QString::fromLatin1(text) << quint64(0) << QString::fromLatin1(error);
        };
        good("0", 0);
        good("1", 1);
        good("512B", 512);
        good("1KB", 1000);
        good("1KiB", 1024);
        good("24GiB", 24 * GiB);
        good("80GB", 80'000'000'000ull);
        good("1.5TiB", 1'649'267'441'664ull);
        good("2TB", 2'000'000'000'000ull);
        good("0.5KiB", 512);
        good("1.1KiB", 1126); // 1126.4 rounds to the nearest byte
        good("1.0", 1);
        good(" 2 GiB ", 2 * GiB);
        good("64gib", 64 * GiB);
        good("3mb", 3'000'000);
        good("18446744073709551615", 18446744073709551615ull);
        good("17179869183GiB", 17179869183ull * GiB);
        bad("", "no size given");
        bad("GiB", "does not start with a number");
        bad(".5GiB", "does not start with a number");
        bad("-1GiB", "is negative");
        bad("1.GiB", "no digits after the '.'");
        bad("1.5", "not a whole number of bytes");
        bad("24G", "\"G\" in \"24G\" is ambiguous: write GB (powers of 1000) or GiB (powers of 1024)");
        bad("8k", "write KB (powers of 1000) or KiB");
        bad("24GX", "unknown unit \"GX\"");
        bad("1PiB", "unknown unit \"PiB\"");
        bad("18446744073709551616", "too large");
        bad("17179869184GiB", "too large");
    }

    void byteSizes()
    {
        QFETCH(QString, text);
        QFETCH(quint64, bytes);
        QFETCH(QString, error);
        const auto parsed = parseByteSize(text.toStdString());
        if (error.isEmpty()) {
            QVERIFY2(parsed.hasValue(), parsed ? "" : parsed.error().message.c_str());
            QCOMPARE(quint64(*parsed), bytes);
        } else {
            QVERIFY(!parsed.hasValue());
            QVERIFY2(q(parsed.error().message).contains(error), parsed.error().message.c_str());
        }
    }

    void goodSpecs_data()
    {
        QTest::addColumn<QString>("spec");
        QTest::addColumn<QString>("canonical");
        QTest::addColumn<QStringList>("opaque");

        QTest::newRow("issue example") << "cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB"
                                       << "cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB" << QStringList();
        QTest::newRow("count") << "2xcuda=80GiB,cpu=256GiB"
                               << "cuda:0=80GiB,cuda:1=80GiB,cpu=256GiB" << QStringList();
        QTest::newRow("count continues") << "cuda:0=24GiB,2xcuda=80GiB"
                                         << "cuda:0=24GiB,cuda:1=80GiB,cuda:2=80GiB" << QStringList();
        QTest::newRow("sorted") << "cpu=64GiB,cuda:1=8GiB,mps=4GB,cuda:0=16GiB"
                                << "cuda:0=16GiB,cuda:1=8GiB,mps=4GB,cpu=64GiB"
                                << QStringList {QStringLiteral("mps")};
        QTest::newRow("mps alone") << "mps=32GB"
                                   << "mps=32GB" << QStringList {QStringLiteral("mps")};
        QTest::newRow("xpu") << "xpu:0=48GiB,cpu=1TiB"
                             << "xpu:0=48GiB,cpu=1TiB" << QStringList {QStringLiteral("xpu:0")};
        QTest::newRow("xpu count") << "2xxpu=16GiB"
                                   << "xpu:0=16GiB,xpu:1=16GiB"
                                   << QStringList {QStringLiteral("xpu:0"), QStringLiteral("xpu:1")};
        QTest::newRow("spaces and case") << " cuda:0 = 24 GiB , cpu = 64gib "
                                         << "cuda:0=24GiB,cpu=64GiB" << QStringList();
        QTest::newRow("bare cuda") << "cuda=16GiB,cuda=8GiB"
                                   << "cuda:0=16GiB,cuda:1=8GiB" << QStringList();
        QTest::newRow("fraction") << "cpu=1.5TiB"
                                  << "cpu=1536GiB" << QStringList();
        QTest::newRow("odd bytes") << "cuda:0=1000001"
                                   << "cuda:0=1000001" << QStringList();
        QTest::newRow("no cpu") << "cuda:0=8GiB"
                                << "cuda:0=8GiB" << QStringList();
        QTest::newRow("private use") << "privateuseone=1GB"
                                     << "privateuseone=1GB" << QStringList {QStringLiteral("privateuseone")};
    }

    void goodSpecs()
    {
        QFETCH(QString, spec);
        QFETCH(QString, canonical);
        QFETCH(QStringList, opaque);
        const auto parsed = parseMachineSpec(spec.toStdString(), "lab box");
        QVERIFY2(parsed.hasValue(), errorOf(parsed).c_str());
        QCOMPARE(parsed->name, std::string("lab box"));
        QVERIFY(parsed->described);
        QCOMPARE(q(formatMachineSpec(*parsed)), canonical);
        QStringList opaqueTags;
        for (const DeviceInfo& device : parsed->devices) {
            if (device.opaque)
                opaqueTags << q(device.tag);
            QCOMPARE(device.freeBytes, std::nullopt);
        }
        QCOMPARE(opaqueTags, opaque);
        if (parsed->find("cpu"))
            QCOMPARE(parsed->devices.back().tag, std::string("cpu"));
        else
            QVERIFY(!canonical.contains(QStringLiteral("cpu")));

        // Round trip: the canonical form parses to the same devices.
        const auto again = parseMachineSpec(formatMachineSpec(*parsed));
        QVERIFY2(again.hasValue(), errorOf(again).c_str());
        QCOMPARE(again->devices.size(), parsed->devices.size());
        for (std::size_t i = 0; i < parsed->devices.size(); ++i) {
            QCOMPARE(again->devices[i].tag, parsed->devices[i].tag);
            QCOMPARE(again->devices[i].totalBytes, parsed->devices[i].totalBytes);
            QCOMPARE(again->devices[i].opaque, parsed->devices[i].opaque);
        }
    }

    void specNotesGaps()
    {
        const auto parsed = parseMachineSpec("cuda:0=8GiB,cuda:2=8GiB,cpu=16GiB");
        QVERIFY(parsed.hasValue());
        QCOMPARE(parsed->gpus().size(), std::size_t(2));
        QVERIFY2(allNotes(*parsed).contains(QStringLiteral("cuda:1 is not described")),
            qPrintable(allNotes(*parsed)));
        QCOMPARE(parseMachineSpec("cuda:0=8GiB,cuda:1=8GiB")->notes.size(), std::size_t(0));
    }

    void badSpecs_data()
    {
        QTest::addColumn<QString>("spec");
        QTest::addColumn<QString>("error");

        QTest::newRow("empty") << ""
                               << "the machine spec is empty";
        QTest::newRow("blank") << "  "
                               << "the machine spec is empty";
        QTest::newRow("empty part") << "cuda:0=24GiB,,cpu=1GiB"
                                    << "part 2 (at character 14): is empty";
        QTest::newRow("trailing comma") << "cpu=1GiB,"
                                        << "part 2 (at character 10): is empty";
        QTest::newRow("no equals") << "cuda:0"
                                   << "part 1 \"cuda:0\" (at character 1): has no '='";
        QTest::newRow("upper case") << "CUDA:0=1GiB"
                                    << "device tags are lower case";
        QTest::newRow("index not a number") << "cuda:x=1GiB"
                                            << "the index after \"cuda:\" must be a number";
        QTest::newRow("empty index") << "cuda:=1GiB"
                                     << "must be a number";
        QTest::newRow("leading zero") << "cuda:01=1GiB"
                                      << "leading zero";
        QTest::newRow("bad type") << "cuda-0=1GiB"
                                  << "\"cuda-0\" is not a device type";
        QTest::newRow("no tag") << "=1GiB"
                                << "the device tag is missing";
        QTest::newRow("unknown unit") << "cpu=1GiB, cuda:0=24GX"
                                      << "part 2 \"cuda:0=24GX\" (at character 11): unknown unit \"GX\"";
        QTest::newRow("ambiguous unit") << "cuda:0=24G"
                                        << "is ambiguous";
        QTest::newRow("no size") << "cuda:0=,cpu=1GiB"
                                 << "no size given";
        QTest::newRow("zero") << "cuda:0=0"
                              << "a capacity above 0 bytes";
        QTest::newRow("negative") << "cuda:0=-1GiB"
                                  << "is negative";
        QTest::newRow("duplicate")
            << "cuda:0=1GiB,cuda:0=2GiB"
            << "part 2 \"cuda:0=2GiB\" (at character 13): cuda:0 is described twice (part 1 "
               "\"cuda:0=1GiB\" gives it too)";
        QTest::newRow("duplicate by count") << "2xcuda=1GiB,cuda:1=1GiB"
                                            << "cuda:1 is described twice";
        QTest::newRow("duplicate cpu") << "cpu=1GiB,cpu=2GiB"
                                       << "cpu is described twice";
        QTest::newRow("count with index") << "2xcuda:0=1GiB"
                                          << "a count goes with a bare device type";
        QTest::newRow("zero count") << "0xcuda=1GiB"
                                    << "the count 0 must be between 1 and 1024";
        QTest::newRow("huge count") << "99999xcuda=1GiB"
                                    << "must be between 1 and 1024";
        QTest::newRow("digit tag") << "2cuda=1GiB"
                                   << "a device tag starts with a letter";
        QTest::newRow("cpu index") << "cpu:0=1GiB"
                                   << "the CPU is written cpu, without an index";
        QTest::newRow("cpu count") << "2xcpu=1GiB"
                                   << "a machine has one cpu entry";
    }

    void badSpecs()
    {
        QFETCH(QString, spec);
        QFETCH(QString, error);
        const auto parsed = parseMachineSpec(spec.toStdString());
        QVERIFY(!parsed.hasValue());
        QVERIFY2(q(parsed.error().message).contains(error), parsed.error().message.c_str());
        if (!spec.trimmed().isEmpty())
            QVERIFY2(q(parsed.error().message).contains(QLatin1Char('"') + spec + QLatin1Char('"')),
                parsed.error().message.c_str());
    }

    void formatDetectedMachine()
    {
        FakeGpuDriver driver;
        driver.gpus = {fourGpus()[2]};
        const MachineInventory machine = detectMachine(driver, {}, kCpu);
        QCOMPARE(q(formatMachineSpec(machine)), QStringLiteral("cuda:0=80GiB,cpu=64GiB"));
    }

    void profilesExplicitPath()
    {
        QTemporaryDir folder;
        QVERIFY(folder.isValid());
        const std::string path = folder.filePath(QStringLiteral("nested/deeper/targets.json")).toStdString();

        TargetProfiles profiles(path);
        QCOMPARE(profiles.load(), std::nullopt); // missing file: an empty list
        QVERIFY(profiles.profiles().empty());

        QCOMPARE(profiles.set("lab box", "cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB"), std::nullopt);
        QCOMPARE(profiles.set("big", "2xcuda=80GiB,cpu=1TiB"), std::nullopt);
        const Status invalid = profiles.set("broken", "cuda:0=24G");
        QVERIFY(invalid.has_value());
        QVERIFY2(q(invalid->message).contains(QStringLiteral("ambiguous")), invalid->message.c_str());
        QVERIFY(profiles.set("", "cpu=1GiB").has_value());
        QVERIFY(profiles.set("a=b", "cpu=1GiB").has_value());
        QVERIFY(profiles.set(" padded", "cpu=1GiB").has_value());
        QCOMPARE(profiles.profiles().size(), std::size_t(2));
        QCOMPARE(profiles.find("big"), std::optional<std::string>("2xcuda=80GiB,cpu=1TiB"));
        QCOMPARE(profiles.find("broken"), std::nullopt);

        QCOMPARE(profiles.save(), std::nullopt);
        QVERIFY(QFile::exists(q(path)));
        // Nothing but the file: the temporary one was renamed over it.
        const QDir saved(folder.filePath(QStringLiteral("nested/deeper")));
        QCOMPARE(saved.entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot),
            QStringList {QStringLiteral("targets.json")});

        std::ifstream file(path);
        const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
        const auto document = parseJson(text);
        QVERIFY(document.hasValue());
        QCOMPARE(document->member("profiles").member("lab box").toString(),
            std::string("cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB"));

        TargetProfiles reloaded(path);
        QCOMPARE(reloaded.load(), std::nullopt);
        QCOMPARE(reloaded.profiles(), profiles.profiles());

        QVERIFY(reloaded.remove("big"));
        QVERIFY(!reloaded.remove("big"));
        QCOMPARE(reloaded.save(), std::nullopt);
        TargetProfiles third(path);
        QCOMPARE(third.load(), std::nullopt);
        QCOMPARE(third.profiles().size(), std::size_t(1));
        QVERIFY(third.find("lab box").has_value());

        // Saving over the file again replaces it (rename over an existing target).
        QCOMPARE(third.set("lab box", "cpu=32GiB"), std::nullopt);
        QCOMPARE(third.save(), std::nullopt);
        TargetProfiles fourth(path);
        QCOMPARE(fourth.load(), std::nullopt);
        QCOMPARE(fourth.find("lab box"), std::optional<std::string>("cpu=32GiB"));
    }

    void profilesDefaultPath()
    {
        QTemporaryDir folder;
        QVERIFY(folder.isValid());
        const QByteArray previous = qgetenv("XDG_CONFIG_HOME");
        const bool hadPrevious = qEnvironmentVariableIsSet("XDG_CONFIG_HOME");
        qputenv("XDG_CONFIG_HOME", folder.path().toLocal8Bit());

        const std::string expected = folder.path().toStdString() + "/ckpt-inspector/targets.json";
        QCOMPARE(TargetProfiles::defaultPath(), expected);
        {
            TargetProfiles profiles;
            QCOMPARE(profiles.load(), std::nullopt);
            QCOMPARE(profiles.set("lab box", "cuda:0=24GiB,cpu=64GiB"), std::nullopt);
            QCOMPARE(profiles.save(), std::nullopt);
        }
        QVERIFY(QFile::exists(q(expected)));
        TargetProfiles again;
        QCOMPARE(again.load(), std::nullopt);
        QVERIFY(again.find("lab box").has_value());

        // A relative XDG_CONFIG_HOME is invalid by the XDG specification and ignored.
        qputenv("XDG_CONFIG_HOME", "relative/config");
        QVERIFY(TargetProfiles::defaultPath().find("relative/config") == std::string::npos);
        QVERIFY(q(TargetProfiles::defaultPath())
                    .endsWith(QStringLiteral("/.config/ckpt-inspector/targets.json")));

        if (hadPrevious)
            qputenv("XDG_CONFIG_HOME", previous);
        else
            qunsetenv("XDG_CONFIG_HOME");
    }

    void profilesBadFiles()
    {
        QTemporaryDir folder;
        QVERIFY(folder.isValid());
        const QString path = folder.filePath(QStringLiteral("targets.json"));
        const auto write = [&](const char* content) {
            QFile file(path);
            QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
            file.write(content);
        };

        write("{\"profiles\": {\"a\": ");
        TargetProfiles truncated(path.toStdString());
        Status status = truncated.load();
        QVERIFY(status.has_value());
        QVERIFY2(
            q(status->message).contains(path) && q(status->message).contains(QStringLiteral("invalid JSON")),
            status->message.c_str());

        write("{\"profiles\": {\"a\": 5}}");
        TargetProfiles notString(path.toStdString());
        status = notString.load();
        QVERIFY(status.has_value());
        QVERIFY2(q(status->message).contains(QStringLiteral("\"a\" is not a spec string")),
            status->message.c_str());

        write("[1, 2]");
        TargetProfiles notObject(path.toStdString());
        QVERIFY(notObject.load().has_value());

        // An invalid spec edited in by hand loads, and is reported when used.
        write("{\"profiles\": {\"good\": \"cpu=1GiB\", \"typo\": \"cuda:0=24G\"}, \"future\": true}");
        TargetProfiles edited(path.toStdString());
        QCOMPARE(edited.load(), std::nullopt);
        QCOMPARE(edited.profiles().size(), std::size_t(2));
        const auto typo = resolveMachine("typo", edited);
        QVERIFY(!typo.hasValue());
        QVERIFY2(q(typo.error().message)
                     .contains(QStringLiteral("the saved target \"typo\" holds an invalid spec")),
            typo.error().message.c_str());
        QVERIFY(resolveMachine("good", edited).hasValue());
    }

    void resolve()
    {
        TargetProfiles profiles(QDir::temp().filePath(QStringLiteral("never-written.json")).toStdString());
        QCOMPARE(profiles.set("lab box", "2xcuda=24GiB,cpu=64GiB"), std::nullopt);

        const auto saved = resolveMachine("lab box", profiles);
        QVERIFY(saved.hasValue());
        QCOMPARE(saved->name, std::string("lab box"));
        QVERIFY(saved->described);
        QCOMPARE(tagsOf(*saved),
            (QStringList {QStringLiteral("cuda:0"), QStringLiteral("cuda:1"), QStringLiteral("cpu")}));

        const auto spec = resolveMachine("cuda:0=8GiB", profiles);
        QVERIFY(spec.hasValue());
        QCOMPARE(spec->name, std::string("described machine"));

        const auto neither = resolveMachine("lab-box", profiles);
        QVERIFY(!neither.hasValue());
        QVERIFY2(q(neither.error().message)
                     .contains(QStringLiteral("neither a saved target (saved targets: \"lab box\")"))
                && q(neither.error().message).contains(QStringLiteral("nor a machine spec")),
            neither.error().message.c_str());

        const auto badSpec = resolveMachine("cuda:0=8G", profiles);
        QVERIFY(!badSpec.hasValue());
        QVERIFY2(q(badSpec.error().message).contains(QStringLiteral("is not a saved target"))
                && q(badSpec.error().message).contains(QStringLiteral("ambiguous")),
            badSpec.error().message.c_str());

        const auto here = resolveMachine("", profiles);
        QVERIFY(here.hasValue());
        QVERIFY(!here->described);
        QVERIFY(here->find("cpu"));
    }

    void thisRealMachine()
    {
        const CpuMemory memory = readCpuMemory();
        QVERIFY(memory.totalBytes > 0);
        QVERIFY(memory.availableBytes <= memory.totalBytes);

        const MachineInventory machine = detectThisMachine();
        qInfo().noquote() << "detected:" << q(formatMachineSpec(machine));
        for (const std::string& note : machine.notes)
            qInfo().noquote() << "  note:" << q(note);
        QVERIFY(!machine.devices.empty());
        QCOMPARE(machine.devices.back().tag, std::string("cpu"));
        QVERIFY(machine.devices.back().totalBytes > 0);
        QVERIFY(!machine.described);
        if (machine.gpus().empty()) {
            // No driver or no GPU here: a note must say why.
            QVERIFY2(allNotes(machine).contains(QStringLiteral("no GPU")), qPrintable(allNotes(machine)));
        } else {
            for (const DeviceInfo* gpu : machine.gpus())
                QVERIFY(gpu->uuid.rfind("GPU-", 0) == 0);
        }
        // A second detection works too (fresh driver, nothing cached in a broken state).
        QCOMPARE(detectThisMachine().devices.size(), machine.devices.size());
    }
};

QTEST_GUILESS_MAIN(TestDeviceInventory)
#include "tst_deviceinventory.moc"
