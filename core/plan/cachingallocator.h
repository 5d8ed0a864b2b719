// SPDX-License-Identifier: MIT
#pragma once
// PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp) as torch.load meets it: one
// device, one stream, allocations that are never freed, default settings (no
// PYTORCH_CUDA_ALLOC_CONF: no max_split_size, no power-of-two rounding, no expandable segments).
//
// A request of n bytes is rounded up to a multiple of 512 (at least 512). Requests up to 1 MiB
// come from the small pool, whose segments are 2 MiB; larger ones from the large pool, whose
// segments are 20 MiB for requests under 10 MiB and the request rounded up to 2 MiB otherwise. A
// request takes the smallest free block of its pool that holds it (best fit) or a new segment
// (one cudaMalloc), and the block is split when what is left is worth keeping: at least 512 bytes
// in the small pool, more than 1 MiB in the large pool; otherwise the request takes the whole block.
#include <cstdint>
#include <set>
#include <tuple>
#include <vector>

namespace ckpt {

class CachingAllocatorModel {
public:
    static constexpr std::uint64_t kMinBlockSize = 512;
    static constexpr std::uint64_t kSmallSize = 1ull << 20;
    static constexpr std::uint64_t kSmallBuffer = 2ull << 20;
    static constexpr std::uint64_t kLargeBuffer = 20ull << 20;
    static constexpr std::uint64_t kMinLargeAlloc = 10ull << 20;
    static constexpr std::uint64_t kRoundLarge = 2ull << 20;

    static std::uint64_t roundSize(std::uint64_t bytes); // round_size()
    static std::uint64_t segmentSize(std::uint64_t rounded); // get_allocation_size()

    struct Placement {
        std::uint32_t segment = 0; // index into segments()
        std::uint64_t offset = 0; // in that segment
        std::uint64_t blockBytes = 0; // the block handed out (the request rounded, or a whole block)
        bool newSegment = false; // this request made the segment (a cudaMalloc of its size)
    };

    // A request of `bytes` (> 0; torch allocates nothing for an empty storage).
    Placement allocate(std::uint64_t bytes);
    const std::vector<std::uint64_t>& segments() const { return m_segments; }
    std::uint64_t reservedBytes() const { return m_reserved; } // torch.cuda.memory_reserved()
    std::uint64_t allocatedBytes() const { return m_allocated; } // torch.cuda.memory_allocated()

private:
    // (size, segment, offset): std::set's order is the allocator's (size, then address).
    using FreeBlock = std::tuple<std::uint64_t, std::uint32_t, std::uint64_t>;
    std::set<FreeBlock> m_small, m_large;
    std::vector<std::uint64_t> m_segments;
    std::uint64_t m_reserved = 0;
    std::uint64_t m_allocated = 0;
};

} // namespace ckpt
