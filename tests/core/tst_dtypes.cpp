// SPDX-License-Identifier: MIT
// The newer dtypes (issue 26, docs/dtypes.md) in the load simulation: torch 1.13 cannot rebuild a
// tensor torch 2.x saved with _rebuild_tensor_v3 (float8, float4, uint16+, complex32), and the
// simulation says so with the message Debian's torch 1.13 prints for the fixture (checked with
// /usr/bin/python3, here and in tests/cli/tst_dtypes.cpp), both without and with weights_only;
// torch 2.x loads it. And the dtype table's release order.
#include "core/devices/machinespec.h"
#include "core/model/dtype.h"
#include "core/read/checkpointreader.h"
#include "core/triage/loadsimulation.h"
#include "tests/common/testfiles.h"

#include <QTest>

using namespace ckpt;
using ckpt::testing::fixturePath;

class TestDtypes : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void torch113FailsWhereTorch113Fails()
    {
        const Checkpoint checkpoint = readCheckpoint(fixturePath("dtypes/newdtypes.pt").toStdString());
        const auto machine = parseMachineSpec("cpu=16GiB");
        QVERIFY(machine);
        const LoadSimulation plain = simulateLoad(checkpoint, *machine, {}, TorchGeneration::Torch113, false);
        QVERIFY(!plain.loads);
        QCOMPARE(plain.errorType, std::string("AttributeError"));
        QCOMPARE(plain.error,
            std::string("Can't get attribute '_rebuild_tensor_v3' on <module 'torch._utils' from "
                        "'<site-packages>/torch/_utils.py'>"));
        const LoadSimulation weightsOnly
            = simulateLoad(checkpoint, *machine, {}, TorchGeneration::Torch113, true);
        QVERIFY(!weightsOnly.loads);
        QCOMPARE(weightsOnly.error,
            std::string(
                "Weights only load failed. Re-running `torch.load` with `weights_only` set to `False` will "
                "likely succeed, but it can result in arbitrary code execution.Do it only if you get the "
                "file from a trusted source. WeightsUnpickler error: Unsupported class "
                "torch._utils._rebuild_tensor_v3"));
        QVERIFY(simulateLoad(checkpoint, *machine, {}, TorchGeneration::Torch26Plus).loads);
        // A torch 2.x file of classic dtypes still loads in 1.13.
        const Checkpoint classic = readCheckpoint(fixturePath("torch-2/state_dict.pt").toStdString());
        QVERIFY(simulateLoad(classic, *machine, {}, TorchGeneration::Torch113, false).loads);
    }

    void releasesCompareAsNumbers()
    {
        QVERIFY(torchReleaseBefore("2.2", "2.10"));
        QVERIFY(!torchReleaseBefore("2.10", "2.9"));
        QVERIFY(!torchReleaseBefore("2.2", "2.2"));
        QCOMPARE(firstTorchForZip(*dtypeByName("float8_e4m3fn")), std::string_view("2.2"));
        QCOMPARE(firstTorchForZip(*dtypeByName("float8_e8m0fnu")), std::string_view("2.7"));
        QCOMPARE(firstTorchForZip(*dtypeByName("complex32")), std::string_view("2.2"));
        QCOMPARE(firstTorchForZip(*dtypeByName("complex64")), std::string_view());
        QCOMPARE(dtypeByName("float4_e2m1fn_x2")->safetensorsName, std::string_view("F4"));
        QCOMPARE(dtypeByName("float4_e2m1fn_x2")->safetensorsPerElement, 2u);
    }
};

QTEST_APPLESS_MAIN(TestDtypes)
#include "tst_dtypes.moc"
