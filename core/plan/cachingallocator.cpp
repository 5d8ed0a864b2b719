// SPDX-License-Identifier: MIT
#include "core/plan/cachingallocator.h"

namespace ckpt {

namespace {

std::uint64_t roundUp(std::uint64_t value, std::uint64_t step)
{
    // Saturates instead of wrapping: only a hostile size comes near 2^64.
    if (value > UINT64_MAX - (step - 1))
        return UINT64_MAX / step * step;
    return (value + step - 1) / step * step;
}

std::uint64_t saturatingAdd(std::uint64_t a, std::uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

} // namespace

std::uint64_t CachingAllocatorModel::roundSize(std::uint64_t bytes)
{
    return bytes < kMinBlockSize ? kMinBlockSize : roundUp(bytes, kMinBlockSize);
}

std::uint64_t CachingAllocatorModel::segmentSize(std::uint64_t rounded)
{
    if (rounded <= kSmallSize)
        return kSmallBuffer;
    if (rounded < kMinLargeAlloc)
        return kLargeBuffer;
    return roundUp(rounded, kRoundLarge);
}

CachingAllocatorModel::Placement CachingAllocatorModel::allocate(std::uint64_t bytes)
{
    const std::uint64_t size = roundSize(bytes);
    const bool small = size <= kSmallSize;
    std::set<FreeBlock>& pool = small ? m_small : m_large;
    Placement placement;
    std::uint64_t blockSize = 0;
    // Best fit: the smallest free block that holds the request, the lowest address among equals.
    if (auto it = pool.lower_bound(FreeBlock {size, 0, 0}); it != pool.end()) {
        std::tie(blockSize, placement.segment, placement.offset) = *it;
        pool.erase(it);
    } else {
        blockSize = segmentSize(size);
        placement.segment = static_cast<std::uint32_t>(m_segments.size());
        placement.offset = 0;
        placement.newSegment = true;
        m_segments.push_back(blockSize);
        m_reserved = saturatingAdd(m_reserved, blockSize);
    }
    const std::uint64_t remaining = blockSize - size;
    const bool split = small ? remaining >= kMinBlockSize : remaining > kSmallSize;
    placement.blockBytes = split ? size : blockSize;
    if (split)
        pool.insert(FreeBlock {remaining, placement.segment, placement.offset + size});
    m_allocated = saturatingAdd(m_allocated, placement.blockBytes);
    return placement;
}

} // namespace ckpt
