// SPDX-License-Identifier: MIT
// Benchmark (not a test): value-scan throughput over a checkpoint written by torch, with the native
// kernels on 1 thread and on every thread, and with libtorch's kernels, with and without the
// histogram. bench/run-values-benchmark.sh writes the file and prints numpy's figure next to these.
//   usage: bench_value_scan FILE [--no-libtorch]
#include "core/read/checkpointreader.h"
#include "valuescan.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <string>

using namespace ckpt;

namespace {

// CPU seconds of this process (all threads): on a shared machine wall time carries other people's
// load, so throughput is also given per CPU second.
double cpuSeconds()
{
    rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench_value_scan FILE [--no-libtorch]\n");
        return 64;
    }
    const bool withLibtorch = !(argc > 2 && std::strcmp(argv[2], "--no-libtorch") == 0);
    const Checkpoint checkpoint = readCheckpoint(argv[1]);
    struct Run {
        const char* engine;
        bool libtorchOnly;
        unsigned threads;
        std::uint32_t bins;
    };
    const Run runs[] = {
        {"native", false, 1, 0},
        {"native", false, 1, 64},
        {"native", false, 0, 0},
        {"native", false, 0, 64},
        {"libtorch", true, 0, 64},
    };
    for (const Run& run : runs) {
        if (run.libtorchOnly && !withLibtorch)
            continue;
        StatisticsOptions options;
        options.libtorchOnly = run.libtorchOnly;
        options.threads = run.threads;
        options.histogramBins = run.bins;
        std::uint64_t calls = 0;
        const double cpuBefore = cpuSeconds();
        const ValueScanResult result = scanValues(
            checkpoint, [&](std::uint64_t, std::uint64_t) { return ++calls > 0; }, std::nullopt, options);
        const double cpu = cpuSeconds() - cpuBefore;
        std::uint64_t nonFinite = 0;
        for (const TensorValues& values : result.tensors)
            if (values.statistics)
                nonFinite += values.statistics->nanCount + values.statistics->positiveInfinityCount
                    + values.statistics->negativeInfinityCount;
        std::printf(
            "%-8s %-11s %-12s wall %6.2f s %6.3f GB/s  cpu %6.2f s %6.3f GB per cpu-s  (%llu non-finite, "
            "%llu progress calls)\n",
            run.engine, run.threads == 1 ? "1 thread" : "all threads",
            run.bins ? "histogram" : "no histogram", result.seconds,
            double(result.bytesScanned) / result.seconds / 1e9, cpu, double(result.bytesScanned) / cpu / 1e9,
            static_cast<unsigned long long>(nonFinite), static_cast<unsigned long long>(calls));
        std::fflush(stdout);
    }
    return 0;
}
