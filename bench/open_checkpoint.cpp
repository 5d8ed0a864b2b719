// SPDX-License-Identifier: MIT
// Time to open a checkpoint with the core reader: sniff, central directory, pickle, model, tree.
// Tensor bytes are memory-mapped and never touched, which is the point being measured.
// usage: bench_open_checkpoint [--repeat N] FILE...
#include "core/base/mallocpolicy.h"
#include "core/read/checkpointreader.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/resource.h>
#include <vector>

int main(int argc, char** argv)
{
    ckpt::returnLargeBlocksToTheSystem(); // as the programs it stands for
    int repeat = 5;
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
            repeat = std::max(1, std::atoi(argv[++i]));
        else
            files.emplace_back(argv[i]);
    }
    if (files.empty()) {
        std::fprintf(stderr, "usage: bench_open_checkpoint [--repeat N] FILE...\n");
        return 64;
    }
    std::printf(
        "%-40s %12s %9s %9s %10s %10s\n", "file", "size", "tensors", "storages", "best ms", "median ms");
    for (const std::string& file : files) {
        std::vector<double> times;
        std::size_t tensors = 0, storages = 0;
        std::uint64_t size = 0;
        for (int r = 0; r < repeat; ++r) {
            const auto start = std::chrono::steady_clock::now();
            const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(file);
            const auto end = std::chrono::steady_clock::now();
            times.push_back(std::chrono::duration<double, std::milli>(end - start).count());
            tensors = checkpoint.tensors.size();
            storages = checkpoint.storages.size();
            size = checkpoint.fileSize;
        }
        std::sort(times.begin(), times.end());
        std::string name = file.substr(file.find_last_of('/') + 1);
        if (name.size() > 40)
            name = name.substr(0, 37) + "...";
        std::printf("%-40s %12s %9zu %9zu %10.2f %10.2f\n", name.c_str(), ckpt::formatBytes(size).c_str(),
            tensors, storages, times.front(), times[times.size() / 2]);
    }
    rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    std::printf(
        "peak resident memory of this process: %.1f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
    return 0;
}
