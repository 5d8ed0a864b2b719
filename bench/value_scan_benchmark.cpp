// Benchmark (not a test): value-scan throughput on a 1 GiB float32 checkpoint written by torch.
// Run: build/dev/bench/bench_value_scan
// Throughput of the value scan on a 1 GiB float32 checkpoint written by torch (printed, not
// asserted: the machine decides the number).
#include "core/read/checkpointreader.h"
#include "valuescan.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace ckpt;

class TestValueScanThroughput : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void scanOneGibibyte()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString file = dir.filePath(QStringLiteral("one_gib.pt"));
        QProcess python;
        python.start(QStringLiteral(CKPT_LEGACY_PYTHON),
            QStringList {QStringLiteral("-c"),
                QStringLiteral("import sys, torch\n"
                               "g = torch.Generator().manual_seed(1)\n"
                               "w = torch.randn(1 << 28, generator=g)\n"
                               "w[12345] = float('nan')\n"
                               "torch.save({'w': w.reshape(1 << 14, 1 << 14)}, sys.argv[1])\n"),
                file});
        QVERIFY(python.waitForFinished(600'000));
        QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());

        const Checkpoint checkpoint = readCheckpoint(file.toStdString());
        QCOMPARE(checkpoint.tensors.size(), std::size_t(1));
        for (std::uint32_t bins : {0u, 64u})
            for (std::uint64_t chunk : {StatisticsOptions {}.chunkElements}) {
                StatisticsOptions options;
                options.histogramBins = bins;
                options.chunkElements = chunk;
                std::uint64_t calls = 0;
                const ValueScanResult result = scanValues(
                    checkpoint, [&](std::uint64_t, std::uint64_t) { return ++calls > 0; }, std::nullopt,
                    options);
                QVERIFY(!result.cancelled);
                QCOMPARE(result.bytesScanned, std::uint64_t(1) << 30);
                QVERIFY(result.tensors[0].statistics);
                QCOMPARE(result.tensors[0].statistics->nanCount, std::uint64_t(1));
                QCOMPARE(result.nonFiniteTensors.size(), std::size_t(1));
                qInfo("value scan of 1 GiB float32 (%u histogram bins, chunks of %llu): %.2f s, %.3f GB/s, "
                      "%.3f GiB/s, %llu "
                      "progress calls",
                    bins, static_cast<unsigned long long>(chunk), result.seconds,
                    double(result.bytesScanned) / result.seconds / 1e9,
                    double(result.bytesScanned) / result.seconds / double(1 << 30),
                    static_cast<unsigned long long>(calls));
            }
    }
};

QTEST_APPLESS_MAIN(TestValueScanThroughput)
#include "value_scan_benchmark.moc"
