// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/flatindex.h"

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace ckpt {

// A checkpoint's storages by key, each key answered by the first storage indexed under it.
//
// torch.save names its storages "0", "1", "2"... in the order its pickle first meets them, which
// is the order the readers add them: storage i has the key i. While that holds, the index holds
// nothing (a key is its own index: the dense prefix); the first storage that breaks it (the legacy
// format's addresses, a safetensors name, a storage of a nested file) and every later one go to a
// FlatIndex. For 100,000 tensors that is the 2 MB of slots at the peak of `info` (issue 28's
// "dense path for torch's numeric keys"), and no hashing of keys.
//
// The keys are not stored: keyOf(i) gives storage i's key now, and `count` is how many storages
// there are, as with FlatIndex. A storage's key is final once it is indexed (the readers set it
// first): one changed later is not found under its old key, and which storage its new key finds
// is not promised.
class StorageKeyIndex {
public:
    // Storages indexed, by either part.
    std::size_t size() const { return m_dense + m_hashed.size(); }
    // Of those, the ones held in the hashed part (the rest cost nothing).
    std::size_t hashedCount() const { return m_hashed.size(); }

    // Room for `count` storages in all. Only a hint while the keys are dense: the hashed part
    // takes it when its first storage comes, less the dense prefix it will never hold.
    void reserve(std::size_t count)
    {
        if (count > m_reserved)
            m_reserved = count;
        if (!m_hashed.empty() && count > m_dense)
            m_hashed.reserve(count - m_dense);
    }

    template<typename KeyOf>
    std::optional<std::uint32_t> find(std::string_view key, std::size_t count, KeyOf&& keyOf) const
    {
        if (const std::optional<std::uint32_t> number = inDensePrefix(key, count, keyOf))
            return number; // the dense prefix was indexed first, so it holds the first storage
        if (m_hashed.empty())
            return std::nullopt;
        return m_hashed.find(
            hashOf(key), [&](std::uint32_t index) { return index < count && keyOf(index) == key; });
    }

    // Indexes storage `index` under its key: true when no earlier storage holds the key (this one
    // is now found by it), false when one does (look-ups keep answering that one).
    template<typename KeyOf> bool add(std::uint32_t index, std::size_t count, KeyOf&& keyOf)
    {
        const std::string_view key = keyOf(index);
        if (index == m_dense && m_hashed.empty() && decimalIndex(key) == index) {
            ++m_dense; // "0", "1", "2"...: no earlier storage can hold a key equal to this index
            return true;
        }
        if (inDensePrefix(key, count, keyOf))
            return false;
        if (m_hashed.empty() && m_reserved > m_dense)
            m_hashed.reserve(m_reserved - m_dense);
        return !m_hashed.findOrInsert(
            hashOf(key), index, [&](std::uint32_t other) { return other < count && keyOf(other) == key; });
    }

private:
    // The storage of the dense prefix that the key names and still has, if any.
    template<typename KeyOf>
    std::optional<std::uint32_t> inDensePrefix(std::string_view key, std::size_t count, KeyOf& keyOf) const
    {
        const std::optional<std::uint32_t> number = decimalIndex(key);
        if (number && *number < m_dense && *number < count && keyOf(*number) == key)
            return number;
        return std::nullopt;
    }

    static std::uint64_t hashOf(std::string_view key) { return std::hash<std::string_view> {}(key); }

    // The number a key spells the way torch.save writes it ("0", "17"; not "017", "+1" or "1 "),
    // when it fits in 32 bits.
    static std::optional<std::uint32_t> decimalIndex(std::string_view key)
    {
        if (key.empty() || key.size() > 10 || (key.size() > 1 && key.front() == '0'))
            return std::nullopt;
        std::uint32_t value = 0;
        const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), value);
        if (error != std::errc {} || end != key.data() + key.size()) // from_chars takes no sign for unsigned
            return std::nullopt;
        return value;
    }

    std::uint32_t m_dense = 0; // storages [0, m_dense) are indexed under their own number
    std::size_t m_reserved = 0;
    FlatIndex m_hashed;
};

} // namespace ckpt
