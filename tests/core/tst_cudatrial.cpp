// SPDX-License-Identifier: MIT
// The trial on a machine's GPUs with a fake CUDA runtime (no GPU is needed): the caching
// allocator's rounding and segments, the measured context fed to the ledger, a plan that fits, one
// that does not, an allocation that fails midway, a read-back that differs, no driver, a cancel.
// tests/tools/cuda-trial-check.sh checks the same against a real GPU and real torch.
#include "core/devices/cudaruntime.h"
#include "core/devices/detectmachine.h"
#include "core/devices/machineinventory.h"
#include "core/model/checkpoint.h"
#include "core/plan/cachingallocator.h"
#include "core/plan/memoryledger.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/report/cudatrialreport.h"
#include "core/tasks/cudatrial.h"
#include "tests/common/fakecudaruntime.h"

#include <QTest>

#include <sstream>

using namespace ckpt;
using ckpt::test::FakeCudaRuntime;

namespace {

constexpr std::uint64_t MiB = 1ull << 20;
constexpr std::uint64_t GiB = 1ull << 30;

// Written by torch 2.x: storages recorded on cpu, cuda:0, cuda:1 and bare "cuda" (tensors from 12 to 48
// bytes).
std::string mixedFixture()
{
    return CKPT_SOURCE_DIR "/tests/fixtures/torch-2/devices_mixed.pt";
}

// Everything on cuda:0 (the CPU's storages too), so the fixture's every storage is tried.
PlacementPlan allOnFirstGpu(const Checkpoint& checkpoint)
{
    PlacementPlan plan(checkpoint);
    for (const char* tag : {"cpu", "cuda:1", "cuda"})
        plan.apply(PlacementRule {PlacementRule::Kind::MapTag, tag, "cuda:0"});
    return plan;
}

CudaTrialOutcome trial(FakeCudaRuntime& runtime, const Checkpoint& checkpoint, const PlacementPlan& plan,
    bool load, CudaTrialProgress progress = {})
{
    CudaTrialRequest request;
    request.checkpoint = &checkpoint;
    request.plan = &plan;
    request.runtime = &runtime;
    request.nvmlFree = runtime.nvml();
    request.load = load;
    request.progress = std::move(progress);
    return runCudaTrial(request);
}

std::string text(const CudaTrialOutcome& outcome)
{
    std::ostringstream out;
    writeCudaTrialText(out, outcome);
    return out.str();
}

} // namespace

class TestCudaTrial : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // c10/cuda/CUDACachingAllocator.cpp's round_size and get_allocation_size, and its splitting.
    void allocatorRounding()
    {
        using Model = CachingAllocatorModel;
        QCOMPARE(Model::roundSize(1), 512u);
        QCOMPARE(Model::roundSize(512), 512u);
        QCOMPARE(Model::roundSize(513), 1024u);
        QCOMPARE(Model::segmentSize(MiB), 2 * MiB); // the largest small request
        QCOMPARE(Model::segmentSize(MiB + 512), 20 * MiB);
        QCOMPARE(Model::segmentSize(10 * MiB - 512), 20 * MiB);
        QCOMPARE(Model::segmentSize(10 * MiB), 10 * MiB);
        QCOMPARE(Model::segmentSize(10 * MiB + 512), 12 * MiB);
        QCOMPARE(Model::roundSize(UINT64_MAX) % 512, 0u); // saturates, never wraps to 0
    }

    void allocatorSegments()
    {
        CachingAllocatorModel small;
        for (int i = 0; i < 4096; ++i) // 4096 x 512 B fill one 2 MiB segment exactly
            small.allocate(100);
        QCOMPARE(small.segments().size(), 1u);
        QCOMPARE(small.allocate(1).newSegment, true);
        QCOMPARE(small.reservedBytes(), 4 * MiB);

        // 1.5 MiB requests share 20 MiB segments: twelve split it, the thirteenth takes the last 2 MiB
        // whole (what would be left, 0.5 MiB, is not more than 1 MiB), the fourteenth makes a new one.
        CachingAllocatorModel large;
        for (int i = 0; i < 12; ++i)
            QCOMPARE(large.allocate(3 * MiB / 2).blockBytes, 3 * MiB / 2);
        const auto thirteenth = large.allocate(3 * MiB / 2);
        QCOMPARE(thirteenth.newSegment, false);
        QCOMPARE(thirteenth.blockBytes, 2 * MiB);
        QCOMPARE(large.allocate(3 * MiB / 2).newSegment, true);
        QCOMPARE(large.reservedBytes(), 40 * MiB);
        QCOMPARE(large.allocatedBytes(), 12 * (3 * MiB / 2) + 2 * MiB + 3 * MiB / 2);

        // A 10.5 MiB request gets a 12 MiB segment and leaves 1.5 MiB free, which the next 1.2 MiB
        // request takes (best fit) instead of a new 20 MiB segment; 11 MiB leaves 1 MiB: not split.
        CachingAllocatorModel fit;
        fit.allocate(21 * MiB / 2);
        const auto reused = fit.allocate(6 * MiB / 5);
        QCOMPARE(reused.newSegment, false);
        QCOMPARE(reused.offset, 21 * MiB / 2);
        QCOMPARE(fit.reservedBytes(), 12 * MiB);
        QCOMPARE(fit.allocate(11 * MiB).blockBytes, 12 * MiB);
    }

    void measuredContextFeedsTheLedger()
    {
        FakeCudaRuntime runtime;
        runtime.addGpu(80 * GiB, 500 * MiB, 1 * GiB);
        runtime.addGpu(80 * GiB, 520 * MiB);
        const CudaMeasurement measurement = measureCudaDevices(runtime, runtime.nvml());
        QVERIFY(!measurement.unavailable);
        QCOMPARE(measurement.devices.size(), 2u);
        QCOMPARE(measurement.devices[0].contextBytes, std::optional<std::uint64_t>(500 * MiB));
        QCOMPARE(measurement.devices[1].contextBytes, std::optional<std::uint64_t>(520 * MiB));
        QCOMPARE(measurement.devices[0].freeBytes, 80 * GiB - 1 * GiB - 500 * MiB);

        MachineInventory machine;
        machine.devices.push_back(
            {"cuda:0", "GPU", 80 * GiB, 79 * GiB, std::nullopt, runtime.gpus[0].uuid, {}, false});
        machine.devices.push_back(
            {"cuda:1", "GPU", 80 * GiB, 80 * GiB, std::nullopt, runtime.gpus[1].uuid, {}, false});
        machine.devices.push_back({"cpu", "CPU", 64 * GiB, 60 * GiB, std::nullopt, {}, {}, false});
        const LedgerAssumptions assumptions;
        applyMeasurement(machine, measurement);
        QCOMPARE(machine.measuredContextOf("cuda:1"), std::optional<std::uint64_t>(520 * MiB));
        QCOMPARE(machine.devices[0].freeBytes, std::optional<std::uint64_t>(79 * GiB)); // before the context

        const Checkpoint checkpoint = readCheckpoint(mixedFixture());
        QCOMPARE(checkpoint.format, CheckpointFormat::TorchZip);
        const PlacementPlan plan(checkpoint); // as recorded: cuda:0, cuda:1 and "cuda"
        const MemoryLedger ledger(checkpoint, plan, machine, assumptions);
        int checked = 0;
        for (const DeviceLedgerLine& line : ledger.lines()) {
            if (line.tag == "cuda:0" || line.tag == "cuda:1") {
                QVERIFY(line.contextMeasured);
                QCOMPARE(line.contextBytes, line.tag == "cuda:0" ? 500 * MiB : 520 * MiB);
                ++checked;
            } else if (line.tag == "cuda") { // not a device of the machine: the assumption
                QVERIFY(!line.contextMeasured);
                QCOMPARE(line.contextBytes, assumptions.cudaContextBytes);
                ++checked;
            }
        }
        QCOMPARE(checked, 3);
    }

    void unmeasuredContextKeepsTheAssumption()
    {
        FakeCudaRuntime runtime;
        runtime.addGpu(80 * GiB, 500 * MiB);
        const CudaMeasurement measurement = measureCudaDevices(runtime, NvmlFreeSnapshot {});
        QCOMPARE(measurement.devices.size(), 1u);
        QVERIFY(!measurement.devices[0].contextBytes);
        QCOMPARE(measurement.notes.size(), 1u);
        QVERIFY(measurement.notes[0].find("the assumption stays") != std::string::npos);
    }

    void fitsAndLoadsEveryByte()
    {
        FakeCudaRuntime runtime;
        runtime.addGpu(80 * GiB, 500 * MiB);
        const Checkpoint checkpoint = readCheckpoint(mixedFixture());
        const PlacementPlan plan = allOnFirstGpu(checkpoint);
        const CudaTrialOutcome outcome = trial(runtime, checkpoint, plan, true);
        QVERIFY(!outcome.unavailable);
        QCOMPARE(outcome.devices.size(), 1u);
        const CudaTrialDevice& device = outcome.devices[0];
        QCOMPARE(device.tag, std::string("cuda:0"));
        QCOMPARE(device.storages, 5u);
        QCOMPARE(device.plannedBytes, 120u);
        QCOMPARE(device.allocatedBytes, 5 * 512u); // each rounded to 512 bytes
        QCOMPARE(device.reservedBytes, 2 * MiB); // in one small segment
        QVERIFY(device.placed);
        QVERIFY(device.loaded);
        QCOMPARE(device.storagesCompared, 5u);
        QCOMPARE(device.bytesCompared, 120u);
        QCOMPARE(runtime.bytesCopiedToDevice, 120u);
        QVERIFY(outcome.fits());
        QVERIFY(outcome.loadMatched());
        QCOMPARE(outcome.exitCode(), 0);
        QVERIFY(runtime.live.empty()); // everything freed
        QVERIFY(text(outcome).find("every byte read back equal") != std::string::npos);
    }

    void doesNotFit()
    {
        FakeCudaRuntime runtime;
        runtime.addGpu(2 * MiB + 100 * MiB, 100 * MiB, MiB / 2); // 1.5 MiB left: no 2 MiB segment
        const Checkpoint checkpoint = readCheckpoint(mixedFixture());
        const PlacementPlan plan = allOnFirstGpu(checkpoint);
        const CudaTrialOutcome outcome = trial(runtime, checkpoint, plan, true);
        QCOMPARE(outcome.devices.size(), 1u);
        const CudaTrialDevice& device = outcome.devices[0];
        QVERIFY(!device.placed);
        QVERIFY(device.outOfMemory);
        QCOMPARE(device.failedAt, std::string("on_cpu (storage 0)"));
        QVERIFY(!outcome.fits());
        QCOMPARE(outcome.exitCode(), 1);
        QCOMPARE(runtime.bytesCopiedToDevice, 0u); // no load when it does not fit
        const std::string report = text(outcome);
        QVERIFY2(report.find("DOES NOT FIT: at on_cpu (storage 0)") != std::string::npos, report.c_str());
        QVERIFY(report.find("not run: the plan does not fit") != std::string::npos);
    }

    // Storages pretended larger than the small fixture's, so they need several segments: the second
    // allocation fails (not for memory), and what the first made is freed.
    void allocationFailsMidway()
    {
        FakeCudaRuntime runtime;
        runtime.addGpu(80 * GiB, 500 * MiB);
        runtime.failAllocation = 2;
        Checkpoint checkpoint = readCheckpoint(mixedFixture());
        for (StorageRecord& storage : checkpoint.storages)
            storage.nbytes = 15 * MiB;
        const PlacementPlan plan = allOnFirstGpu(checkpoint);
        const CudaTrialOutcome outcome = trial(runtime, checkpoint, plan, false);
        const CudaTrialDevice& device = outcome.devices.at(0);
        QVERIFY(!device.placed);
        QVERIFY(!device.outOfMemory);
        QCOMPARE(device.reservedBeforeFailure, 16 * MiB); // the first storage's segment
        QVERIFY(device.failure.find("code 999") != std::string::npos);
        QCOMPARE(outcome.exitCode(), 1);
        QVERIFY(runtime.live.empty());
        QVERIFY(text(outcome).find("FAILED: at on_cuda0 (storage 1)") != std::string::npos);
    }

    // A damaged or hostile file claiming storages near 2^64 bytes: it does not fit, nothing wraps.
    void hostileSizes()
    {
        FakeCudaRuntime runtime;
        runtime.addGpu(80 * GiB, 500 * MiB);
        Checkpoint checkpoint = readCheckpoint(mixedFixture());
        for (StorageRecord& storage : checkpoint.storages)
            storage.nbytes = UINT64_MAX - 7;
        const PlacementPlan plan = allOnFirstGpu(checkpoint);
        const CudaTrialOutcome outcome = trial(runtime, checkpoint, plan, true);
        const CudaTrialDevice& device = outcome.devices.at(0);
        QVERIFY(!device.placed);
        QVERIFY(device.outOfMemory);
        QCOMPARE(device.plannedBytes, UINT64_MAX);
        QCOMPARE(outcome.exitCode(), 1);
        QCOMPARE(runtime.bytesCopiedToDevice, 0u);
    }

    void corruptedReadBack()
    {
        FakeCudaRuntime runtime;
        runtime.addGpu(80 * GiB, 500 * MiB);
        runtime.corruptReadBack = true;
        const Checkpoint checkpoint = readCheckpoint(mixedFixture());
        const PlacementPlan plan = allOnFirstGpu(checkpoint);
        const CudaTrialOutcome outcome = trial(runtime, checkpoint, plan, true);
        const CudaTrialDevice& device = outcome.devices.at(0);
        QVERIFY(device.placed);
        QVERIFY(!device.loaded);
        QCOMPARE(device.mismatchedStorages, 5u);
        QCOMPARE(device.mismatches.size(), 5u);
        QVERIFY(device.mismatches[0].find("differ from byte 0 on") != std::string::npos);
        QVERIFY(outcome.fits());
        QVERIFY(!outcome.loadMatched());
        QCOMPARE(outcome.exitCode(), 1);
        QVERIFY(runtime.live.empty());
        QVERIFY(text(outcome).find("READ BACK DIFFERENT") != std::string::npos);
    }

    // A storage whose bytes the file does not hold whole (as a cut-short file leaves it): listed as
    // unreadable, the others still compared, the load not passed.
    void storageBytesMissing()
    {
        FakeCudaRuntime runtime;
        runtime.addGpu(80 * GiB, 500 * MiB);
        Checkpoint checkpoint = readCheckpoint(mixedFixture());
        checkpoint.storages[2].availableBytes = 5; // on_cuda1's 48 bytes cut after 5
        const PlacementPlan plan = allOnFirstGpu(checkpoint);
        const CudaTrialOutcome outcome = trial(runtime, checkpoint, plan, true);
        const CudaTrialDevice& device = outcome.devices.at(0);
        QVERIFY(device.placed);
        QCOMPARE(device.unreadable.size(), 1u);
        QVERIFY2(device.unreadable[0].starts_with("on_cuda1 (storage 2): "), device.unreadable[0].c_str());
        QCOMPARE(device.storagesCompared, 4u);
        QCOMPARE(device.mismatchedStorages, 0u);
        QVERIFY(!device.loaded);
        QCOMPARE(outcome.exitCode(), 1);
        QVERIFY(runtime.live.empty());
        QVERIFY(text(outcome).find("1 could not be read from the file") != std::string::npos);
    }

    void copyFails()
    {
        FakeCudaRuntime runtime;
        runtime.addGpu(80 * GiB, 500 * MiB);
        runtime.failCopies = true;
        const Checkpoint checkpoint = readCheckpoint(mixedFixture());
        const PlacementPlan plan = allOnFirstGpu(checkpoint);
        const CudaTrialOutcome outcome = trial(runtime, checkpoint, plan, true);
        QVERIFY(outcome.devices.at(0).loadFailure.find("code 700") != std::string::npos);
        QCOMPARE(outcome.exitCode(), 1);
        QVERIFY(runtime.live.empty());
    }

    void planNamesAGpuTheMachineLacks()
    {
        FakeCudaRuntime runtime;
        runtime.addGpu(80 * GiB, 500 * MiB);
        const Checkpoint checkpoint = readCheckpoint(mixedFixture());
        const PlacementPlan plan(checkpoint); // as recorded: cuda:1 too
        const CudaTrialOutcome outcome = trial(runtime, checkpoint, plan, false);
        QCOMPARE(outcome.devices.size(), 2u);
        QVERIFY(outcome.devices[0].placed); // cuda:0 with bare "cuda"'s storage
        QCOMPARE(outcome.devices[0].storages, 2u);
        QVERIFY(!outcome.devices[1].present);
        QCOMPARE(outcome.exitCode(), 1);
        QVERIFY(
            text(outcome).find("cuda:1: 1 storage, 48 B planned: DOES NOT FIT: this machine has no cuda:1")
            != std::string::npos);
    }

    void noDriver()
    {
        FakeCudaRuntime runtime;
        runtime.reason = "no NVIDIA driver is installed (libcuda.so.1 not found)";
        const Checkpoint checkpoint = readCheckpoint(mixedFixture());
        const PlacementPlan plan = allOnFirstGpu(checkpoint);
        const CudaTrialOutcome outcome = trial(runtime, checkpoint, plan, true);
        QVERIFY(outcome.unavailable);
        QCOMPARE(outcome.exitCode(), 2);
        QVERIFY(text(outcome).find("not run: no NVIDIA driver") != std::string::npos);
    }

    // This machine's real runtime where there is no driver (the build machines): a reason, no crash.
    void systemRuntimeWithoutDriver()
    {
        const std::unique_ptr<CudaRuntime> runtime = makeSystemCudaRuntime();
        const std::optional<std::string> reason = runtime->unavailableReason();
        if (!reason)
            QSKIP("this machine has a usable CUDA driver");
        QVERIFY(!reason->empty());
        QCOMPARE(runtime->deviceCount(), 0);
        CudaDevicePointer pointer = 0;
        QVERIFY(runtime->allocate(0, 512, pointer));
        const CudaMeasurement measurement = measureCudaDevices(*runtime, systemNvmlFreeSnapshot());
        QCOMPARE(measurement.unavailable, reason);
    }

    void cancelFreesEverything()
    {
        FakeCudaRuntime runtime;
        runtime.addGpu(80 * GiB, 500 * MiB);
        const Checkpoint checkpoint = readCheckpoint(mixedFixture());
        const PlacementPlan plan = allOnFirstGpu(checkpoint);
        int calls = 0;
        const CudaTrialOutcome outcome = trial(
            runtime, checkpoint, plan, true, [&](const std::string& phase, std::uint64_t, std::uint64_t) {
                ++calls;
                return phase != "loading" || calls < 8;
            });
        QVERIFY(outcome.cancelled);
        QCOMPARE(outcome.exitCode(), 2);
        QVERIFY(runtime.live.empty());
        QVERIFY(runtime.bytesCopiedToDevice < 120u);
    }
};

QTEST_GUILESS_MAIN(TestCudaTrial)
#include "tst_cudatrial.moc"
