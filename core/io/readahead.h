// SPDX-License-Identifier: MIT
#pragma once
// Reading ahead of a pass over memory-mapped bytes (the value scan of `check --values`): a cold
// file is read at the disk's speed only while the disk always has the next bytes asked for. A
// page fault reads around itself and waits; a hint given when a tensor starts (madvise WILLNEED)
// blocks until its reads are queued and leaves the disk idle at every tensor's end. Here one
// thread walks the ranges the pass will read, in its order, asking for the next few MiB at a time
// (madvise MADV_WILLNEED: the reads are queued, nothing is copied) while it is less than `window`
// bytes ahead of the pass, so reading and computing overlap. Hints only: a failure changes
// nothing but speed, and nothing is ever read into this process's own memory.
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace ckpt {

class ReadAhead {
public:
    struct Range {
        const std::uint8_t* data = nullptr; // null: bytes the pass walks that are not in a map
        std::uint64_t length = 0;
    };
    static constexpr std::uint64_t kDefaultWindow = 128ull << 20;
    // How a hint is given: madvise(MADV_WILLNEED) unless a test records the hints (the kernel may
    // drop a hint on a loaded machine, so what was asked for is what a test can hold it to).
    using Advise = void (*)(const std::uint8_t* data, std::uint64_t length);
    static void adviseWillNeed(const std::uint8_t* data, std::uint64_t length);

    explicit ReadAhead(
        std::vector<Range> ranges, std::uint64_t window = kDefaultWindow, Advise advise = &adviseWillNeed);
    ~ReadAhead(); // stops the thread (at most one hint later)
    ReadAhead(const ReadAhead&) = delete;
    ReadAhead& operator=(const ReadAhead&) = delete;

    // The pass has finished `position` bytes of the ranges, counted in their order.
    void reached(std::uint64_t position);

private:
    void run();

    std::vector<Range> m_ranges;
    std::uint64_t m_window;
    Advise m_advise;
    std::mutex m_mutex;
    std::condition_variable m_moved;
    std::uint64_t m_position = 0; // guarded by m_mutex
    bool m_stopping = false; // guarded by m_mutex
    std::thread m_thread;
};

} // namespace ckpt
