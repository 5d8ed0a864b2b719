// SPDX-License-Identifier: MIT
#include "core/base/internedstring.h"

#include <array>
#include <mutex>
#include <ostream>
#include <unordered_set>

namespace ckpt {

namespace {

struct TransparentHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept
    {
        return std::hash<std::string_view> {}(text);
    }
};

struct Pool {
    std::mutex mutex;
    // Nodes of an unordered_set never move, so a pointer to an element stays valid as it grows.
    std::unordered_set<std::string, TransparentHash, std::equal_to<>> texts;
};

Pool& pool()
{
    // Never destroyed: an InternedString in a static object may be read during exit.
    static Pool* const instance = new Pool;
    return *instance;
}

} // namespace

const std::string& InternedString::emptyText() noexcept
{
    static const std::string empty;
    return empty;
}

const std::string& InternedString::intern(std::string_view text)
{
    // A reader interns the same few texts once per tensor: a small per-thread cache answers those
    // without taking the pool's lock.
    constexpr std::size_t kCacheSlots = 64;
    thread_local std::array<const std::string*, kCacheSlots> cache {};
    const std::size_t hash = std::hash<std::string_view> {}(text);
    const std::string*& slot = cache[hash % kCacheSlots];
    if (slot && *slot == text)
        return *slot;
    Pool& shared = pool();
    const std::lock_guard lock(shared.mutex);
    auto found = shared.texts.find(text);
    if (found == shared.texts.end())
        found = shared.texts.emplace(text).first;
    slot = &*found;
    return *found;
}

std::ostream& operator<<(std::ostream& out, InternedString text)
{
    return out << text.str();
}

} // namespace ckpt
