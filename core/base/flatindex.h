// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace ckpt {

// A set of 32-bit indices into some array the caller owns, found by a hash of what they name:
// open addressing with linear probing, 8 bytes a slot, at most half the slots used. The keys are
// not stored: the caller passes their hash and a test that says whether an index holds the key
// sought, so a table over a million storages keyed by their names is 16 MB and no heap object per
// entry, where an unordered_map<std::string, uint32_t> held a node and a string each (~70 MB) and
// a look-up by string_view had to build a std::string.
//
// Indices are never removed. Equal keys may be inserted more than once (a caller that keeps the
// first checks with find() before inserting); find() meets them in insertion order, since a later
// one is always placed further along the probe sequence than an earlier one with the same hash.
class FlatIndex {
public:
    bool empty() const { return m_used == 0; }
    std::size_t size() const { return m_used; }
    void clear()
    {
        m_slots.clear();
        m_used = 0;
    }
    // Room for `count` indices without growing.
    void reserve(std::size_t count)
    {
        if (count * 2 > m_slots.size())
            rehash(count);
    }

    // The first index inserted under `hash` for which `matches(index)` holds.
    template<typename Matches> std::optional<std::uint32_t> find(std::uint64_t hash, Matches&& matches) const
    {
        if (m_slots.empty())
            return std::nullopt;
        const auto tag = static_cast<std::uint32_t>(hash);
        const std::size_t mask = m_slots.size() - 1;
        for (std::size_t at = tag & mask;; at = (at + 1) & mask) {
            const Slot& slot = m_slots[at];
            if (slot.indexPlusOne == 0)
                return std::nullopt;
            if (slot.hash == tag && matches(slot.indexPlusOne - 1))
                return slot.indexPlusOne - 1;
        }
    }

    // Adds `index` under `hash`, after any index already there under the same hash. `index` must
    // be below UINT32_MAX.
    void insert(std::uint64_t hash, std::uint32_t index)
    {
        if ((m_used + 1) * 2 > m_slots.size())
            rehash(m_used + 1);
        place({static_cast<std::uint32_t>(hash), index + 1});
        ++m_used;
    }

    // find() and, when nothing matches, insert() of `index`, in one walk of the probe sequence:
    // the index already there (nothing is added), or nullopt when `index` was added.
    template<typename Matches>
    std::optional<std::uint32_t> findOrInsert(std::uint64_t hash, std::uint32_t index, Matches&& matches)
    {
        if ((m_used + 1) * 2 > m_slots.size())
            rehash(m_used + 1);
        const auto tag = static_cast<std::uint32_t>(hash);
        const std::size_t mask = m_slots.size() - 1;
        for (std::size_t at = tag & mask;; at = (at + 1) & mask) {
            Slot& slot = m_slots[at];
            if (slot.indexPlusOne == 0) { // where insert() would place it: after every equal hash
                slot = {tag, index + 1};
                ++m_used;
                return std::nullopt;
            }
            if (slot.hash == tag && matches(slot.indexPlusOne - 1))
                return slot.indexPlusOne - 1;
        }
    }

private:
    struct Slot {
        std::uint32_t hash = 0; // the low 32 bits of the key's hash: the home slot, and a cheap test
        std::uint32_t indexPlusOne = 0; // 0: empty
    };

    void place(Slot slot)
    {
        const std::size_t mask = m_slots.size() - 1;
        std::size_t at = slot.hash & mask;
        while (m_slots[at].indexPlusOne != 0)
            at = (at + 1) & mask;
        m_slots[at] = slot;
    }

    // Grows to the smallest power of two that holds `count` at half load (16 at least), moving the
    // slots in their old order, which keeps equal hashes in insertion order along each probe run.
    void rehash(std::size_t count)
    {
        std::size_t size = 16;
        while (size < count * 2)
            size *= 2;
        if (size <= m_slots.size())
            return;
        std::vector<Slot> old(size);
        old.swap(m_slots);
        // Moving in old slot order can put a later-inserted equal hash before an earlier one when
        // a probe run wrapped around the end of the old table; so re-place each wrapped run's
        // tail (the slots before the first empty one) last.
        std::size_t firstEmpty = 0;
        while (firstEmpty < old.size() && old[firstEmpty].indexPlusOne != 0)
            ++firstEmpty;
        for (std::size_t i = firstEmpty; i < old.size(); ++i)
            if (old[i].indexPlusOne != 0)
                place(old[i]);
        for (std::size_t i = 0; i < firstEmpty && i < old.size(); ++i)
            place(old[i]);
    }

    std::vector<Slot> m_slots; // a power of two in size, or empty
    std::size_t m_used = 0;
};

} // namespace ckpt
