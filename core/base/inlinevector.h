// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace ckpt {

// A vector that keeps up to N items in itself and goes to the heap only past that. The model holds
// a shape and a stride per tensor and a few index lists per storage that have one item in the
// common case; as std::vector each was a heap block (and a malloc and a free) per tensor. For
// plain values only (dimensions, indices): items are copied as bytes.
//
// It reads like the std::vector it replaces (size, [], iteration, ==, ordering) and converts to
// and from one, so code that only reads it, or fills it from a vector, needs no change.
template<typename T, std::size_t N> class InlineVector {
    static_assert(std::is_trivially_copyable_v<T> && N > 0);

public:
    using value_type = T;
    using size_type = std::size_t;
    using iterator = T*;
    using const_iterator = const T*;
    using reverse_iterator = std::reverse_iterator<T*>;
    using const_reverse_iterator = std::reverse_iterator<const T*>;
    using reference = T&;
    using const_reference = const T&;

    InlineVector() noexcept = default;
    InlineVector(std::initializer_list<T> items) { assign(items.begin(), items.size()); }
    InlineVector(const std::vector<T>& items) { assign(items.data(), items.size()); }
    InlineVector(const InlineVector& other) { assign(other.data(), other.size()); }
    InlineVector(InlineVector&& other) noexcept { take(other); }
    ~InlineVector() { release(); }

    InlineVector& operator=(const InlineVector& other)
    {
        if (this != &other) {
            m_size = 0;
            assign(other.data(), other.size());
        }
        return *this;
    }
    InlineVector& operator=(InlineVector&& other) noexcept
    {
        if (this != &other) {
            release();
            take(other);
        }
        return *this;
    }

    operator std::vector<T>() const { return std::vector<T>(begin(), end()); }

    std::size_t size() const noexcept { return m_size; }
    bool empty() const noexcept { return m_size == 0; }
    std::size_t capacity() const noexcept { return m_capacity; }
    T* data() noexcept { return onHeap() ? m_heap : m_inline; }
    const T* data() const noexcept { return onHeap() ? m_heap : m_inline; }
    T* begin() noexcept { return data(); }
    T* end() noexcept { return data() + m_size; }
    const T* begin() const noexcept { return data(); }
    const T* end() const noexcept { return data() + m_size; }
    reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
    reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
    const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
    const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }
    T& operator[](std::size_t i) noexcept { return data()[i]; }
    const T& operator[](std::size_t i) const noexcept { return data()[i]; }
    // As std::vector::at: an index past the end throws (callers that use it rely on that).
    const T& at(std::size_t i) const
    {
        if (i >= m_size)
            throw std::out_of_range("InlineVector::at");
        return data()[i];
    }
    T& front() noexcept { return data()[0]; }
    const T& front() const noexcept { return data()[0]; }
    T& back() noexcept { return data()[m_size - 1]; }
    const T& back() const noexcept { return data()[m_size - 1]; }

    void clear() noexcept { m_size = 0; }
    void reserve(std::size_t count)
    {
        if (count > m_capacity)
            grow(count);
    }
    void push_back(T item)
    {
        if (m_size == m_capacity)
            grow(std::size_t(m_capacity) * 2);
        data()[m_size++] = item;
    }
    void pop_back() noexcept { --m_size; }
    void resize(std::size_t count, T item = T())
    {
        reserve(count);
        for (std::size_t i = m_size; i < count; ++i)
            data()[i] = item;
        m_size = static_cast<std::uint32_t>(count);
    }

    friend bool operator==(const InlineVector& a, const InlineVector& b) noexcept
    {
        return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }
    friend auto operator<=>(const InlineVector& a, const InlineVector& b) noexcept
    {
        return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end());
    }
    friend bool operator==(const InlineVector& a, const std::vector<T>& b) noexcept
    {
        return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }

private:
    template<typename, std::size_t> friend class OptionalInlineVector;

    bool onHeap() const noexcept { return m_capacity > N; }
    void assign(const T* items, std::size_t count)
    {
        reserve(count);
        if (count != 0)
            std::memcpy(data(), items, count * sizeof(T));
        m_size = static_cast<std::uint32_t>(count);
    }
    void grow(std::size_t capacity)
    {
        T* bigger = static_cast<T*>(::operator new(capacity * sizeof(T)));
        if (m_size != 0)
            std::memcpy(bigger, data(), m_size * sizeof(T));
        release();
        m_heap = bigger;
        m_capacity = static_cast<std::uint32_t>(capacity);
    }
    void release() noexcept
    {
        if (onHeap())
            ::operator delete(m_heap);
        m_capacity = N;
    }
    void take(InlineVector& other) noexcept
    {
        if (other.onHeap())
            m_heap = other.m_heap;
        else
            std::memcpy(m_inline, other.m_inline, sizeof m_inline);
        m_size = other.m_size;
        m_capacity = other.m_capacity;
        other.m_size = 0;
        other.m_capacity = N;
    }

    union {
        T m_inline[N] {};
        T* m_heap;
    };
    std::uint32_t m_size = 0;
    std::uint32_t m_capacity = N;
};

// An optional InlineVector the size of one: "none" is a capacity of 0, which an InlineVector never
// has. A tensor's stride is optional (sparse and nested layouts have none), and as
// std::optional<Dimensions> its flag cost 8 bytes per tensor. It reads like that std::optional.
template<typename T, std::size_t N> class OptionalInlineVector {
public:
    using value_type = InlineVector<T, N>;

    OptionalInlineVector() noexcept { m_value.m_capacity = 0; }
    OptionalInlineVector(std::nullopt_t) noexcept
        : OptionalInlineVector()
    { }
    OptionalInlineVector(const value_type& value)
        : m_value(value)
    { }
    OptionalInlineVector(value_type&& value) noexcept
        : m_value(std::move(value))
    { }
    OptionalInlineVector(const std::vector<T>& value)
        : m_value(value)
    { }
    OptionalInlineVector(const std::optional<value_type>& value)
        : OptionalInlineVector()
    {
        if (value)
            *this = *value;
    }
    OptionalInlineVector(const OptionalInlineVector& other)
        : OptionalInlineVector()
    {
        if (other)
            *this = *other;
    }
    // Moved from, it holds an empty vector if it held one, as a moved-from std::optional does.
    OptionalInlineVector(OptionalInlineVector&& other) noexcept
        : m_value(std::move(other.m_value))
    {
        if (!has_value())
            other.m_value.m_capacity = 0;
    }
    ~OptionalInlineVector() = default;

    OptionalInlineVector& operator=(const OptionalInlineVector& other)
    {
        if (this == &other)
            return *this;
        if (other)
            return *this = *other;
        reset();
        return *this;
    }
    OptionalInlineVector& operator=(OptionalInlineVector&& other) noexcept
    {
        if (this != &other) {
            m_value = std::move(other.m_value);
            if (!has_value())
                other.m_value.m_capacity = 0;
        }
        return *this;
    }
    OptionalInlineVector& operator=(std::nullopt_t) noexcept
    {
        reset();
        return *this;
    }
    OptionalInlineVector& operator=(const value_type& value)
    {
        engage();
        m_value = value;
        return *this;
    }
    OptionalInlineVector& operator=(value_type&& value) noexcept
    {
        m_value = std::move(value);
        return *this;
    }
    OptionalInlineVector& operator=(const std::vector<T>& value) { return *this = value_type(value); }
    OptionalInlineVector& operator=(const std::optional<value_type>& value)
    {
        if (value)
            return *this = *value;
        reset();
        return *this;
    }

    bool has_value() const noexcept { return m_value.m_capacity != 0; }
    explicit operator bool() const noexcept { return has_value(); }
    value_type& operator*() noexcept { return m_value; }
    const value_type& operator*() const noexcept { return m_value; }
    value_type* operator->() noexcept { return &m_value; }
    const value_type* operator->() const noexcept { return &m_value; }
    const value_type& value() const
    {
        if (!has_value())
            throw std::bad_optional_access();
        return m_value;
    }
    void reset() noexcept
    {
        m_value = value_type();
        m_value.m_capacity = 0;
    }

    friend bool operator==(const OptionalInlineVector& a, const OptionalInlineVector& b) noexcept
    {
        return a.has_value() == b.has_value() && (!a.has_value() || a.m_value == b.m_value);
    }
    friend bool operator==(const OptionalInlineVector& a, const std::optional<std::vector<T>>& b) noexcept
    {
        return a.has_value() == b.has_value() && (!a.has_value() || a.m_value == *b);
    }
    friend bool operator==(const OptionalInlineVector& a, std::nullopt_t) noexcept { return !a.has_value(); }

private:
    // Gives a "none" its inline capacity back, so that assigning fills the inline items.
    void engage() noexcept
    {
        if (!has_value())
            m_value.m_capacity = N;
    }

    value_type m_value;
};

} // namespace ckpt
