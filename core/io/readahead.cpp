// SPDX-License-Identifier: MIT
#include "core/io/readahead.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

namespace ckpt {

namespace {

// One hint: small enough that the thread soon sees the pass move, large enough to be few calls.
constexpr std::uint64_t kStep = 4ull << 20;

} // namespace

void ReadAhead::adviseWillNeed(const std::uint8_t* data, std::uint64_t length)
{
    static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto start = reinterpret_cast<std::uintptr_t>(data) & ~(page - 1);
    const auto end = reinterpret_cast<std::uintptr_t>(data) + length;
    madvise(reinterpret_cast<void*>(start), end - start, MADV_WILLNEED); // a hint: errors change nothing
}

ReadAhead::ReadAhead(std::vector<Range> ranges, std::uint64_t window, Advise advise)
    : m_ranges(std::move(ranges))
    , m_window(std::max<std::uint64_t>(window, kStep))
    , m_advise(advise ? advise : &adviseWillNeed)
{
    bool anything = false;
    for (const Range& range : m_ranges)
        anything = anything || (range.data && range.length > 0);
    if (anything)
        m_thread = std::thread([this] { run(); });
}

ReadAhead::~ReadAhead()
{
    {
        const std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_moved.notify_all();
    if (m_thread.joinable())
        m_thread.join();
}

void ReadAhead::reached(std::uint64_t position)
{
    {
        const std::lock_guard lock(m_mutex);
        if (position <= m_position)
            return;
        m_position = position;
    }
    m_moved.notify_all();
}

void ReadAhead::run()
{
    std::uint64_t asked = 0; // bytes of the ranges hinted (or skipped), in their order
    std::uint64_t rangeStart = 0; // where m_ranges[range] begins, in the same count
    std::size_t range = 0;
    for (;;) {
        {
            std::unique_lock lock(m_mutex);
            m_moved.wait(lock, [&] { return m_stopping || asked < m_position + m_window; });
            if (m_stopping)
                return;
            asked = std::max(asked, m_position); // never hint what the pass has already read
        }
        while (range < m_ranges.size() && rangeStart + m_ranges[range].length <= asked)
            rangeStart += m_ranges[range++].length;
        if (range == m_ranges.size())
            return;
        const Range& current = m_ranges[range];
        const std::uint64_t inRange = asked - rangeStart;
        const std::uint64_t step = std::min(kStep, current.length - inRange);
        if (current.data)
            m_advise(current.data + inRange, step);
        asked += step;
    }
}

} // namespace ckpt
