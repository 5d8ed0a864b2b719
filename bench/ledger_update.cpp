// SPDX-License-Identifier: MIT
// Time to update the memory ledger after one move, on a large checkpoint: the desktop app does
// this on every drop, so it must cost what the move touches, not what the checkpoint holds.
// usage: bench_ledger_update FILE [MOVES]
#include "core/devices/machinespec.h"
#include "core/plan/memoryledger.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench_ledger_update FILE [MOVES]\n");
        return 64;
    }
    const int moves = argc > 2 ? std::atoi(argv[2]) : 20000;
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(argv[1]);
    const auto opened = Clock::now();
    auto machine = ckpt::parseMachineSpec("cuda:0=80GiB,cuda:1=80GiB,cuda:2=80GiB,cuda:3=80GiB,cpu=512GiB");
    if (!machine || checkpoint.tensors.empty()) {
        std::fprintf(stderr, "cannot set up the benchmark\n");
        return 2;
    }
    ckpt::PlacementPlan plan(checkpoint);
    ckpt::MemoryLedger ledger(checkpoint, plan, *machine);
    const auto built = Clock::now();

    std::mt19937 random(2026);
    const char* devices[] = {"cpu", "cuda:0", "cuda:1", "cuda:2", "cuda:3"};
    std::vector<ckpt::PlacementRule> rules;
    rules.reserve(static_cast<std::size_t>(moves));
    for (int i = 0; i < moves; ++i)
        rules.push_back({ckpt::PlacementRule::Kind::MoveTensor,
            checkpoint.tensors[random() % checkpoint.tensors.size()].name.str(), devices[random() % 5]});
    double planSeconds = 0, ledgerSeconds = 0;
    for (const ckpt::PlacementRule& rule : rules) {
        const auto a = Clock::now();
        const ckpt::PlacementChange change = plan.apply(rule);
        const auto b = Clock::now();
        ledger.apply(change);
        const auto c = Clock::now();
        planSeconds += std::chrono::duration<double>(b - a).count();
        ledgerSeconds += std::chrono::duration<double>(c - b).count();
    }
    std::uint64_t total = 0;
    for (const ckpt::DeviceLedgerLine& line : ledger.lines())
        total += line.plannedBytes;
    std::printf("checkpoint: %zu tensors, %zu storages, %zu tree nodes (opened in %.0f ms; plan + ledger "
                "built in %.0f ms)\n",
        checkpoint.tensors.size(), checkpoint.storages.size(), checkpoint.tree.size(),
        std::chrono::duration<double, std::milli>(opened - start).count(),
        std::chrono::duration<double, std::milli>(built - opened).count());
    std::printf("%d single-tensor moves: ledger update %.2f us per move, plan rule %.2f us per move (name "
                "looked up in the sorted index)\n",
        moves, ledgerSeconds / moves * 1e6, planSeconds / moves * 1e6);
    std::printf("totals still equal the checkpoint's storage bytes: %s\n",
        total == checkpoint.totalStorageBytes() ? "yes" : "NO");
    return total == checkpoint.totalStorageBytes() ? 0 : 1;
}
