#pragma once

/// @file
/// A minimal C++17 stand-in for `std::span`: a pointer and a count, no
/// ownership. Used wherever code reads or writes a range of bytes or numbers it
/// does not own (message buffers, tensor rows).

#include <cassert>
#include <cstddef>
#include <type_traits>
#include <vector>

namespace sprintrt {

/// A contiguous range of `T` owned by someone else.
template <class T>
class span {
public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using iterator = T*;

  /// An empty span.
  constexpr span() noexcept = default;

  /// Views `size` elements starting at `data`.
  constexpr span(T* data, size_t size) noexcept : data_(data), size_(size) {}

  /// Views the elements of a C array.
  template <size_t N>
  constexpr span(T (&array)[N]) noexcept : data_(array), size_(N) {}

  /// Views the elements of a vector.
  template <class U, class = std::enable_if_t<std::is_convertible_v<U (*)[], T (*)[]>>>
  span(std::vector<U>& xs) noexcept : data_(xs.data()), size_(xs.size()) {}

  /// Views the elements of a const vector.
  template <class U, class = std::enable_if_t<std::is_convertible_v<const U (*)[], T (*)[]>>>
  span(const std::vector<U>& xs) noexcept : data_(xs.data()), size_(xs.size()) {}

  /// Converts a span of `U` to a span of `T` (e.g. mutable to const).
  template <class U, class = std::enable_if_t<std::is_convertible_v<U (*)[], T (*)[]>>>
  constexpr span(span<U> other) noexcept : data_(other.data()), size_(other.size()) {}

  /// Returns the first element's address.
  constexpr T* data() const noexcept { return data_; }

  /// Returns the number of elements.
  constexpr size_t size() const noexcept { return size_; }

  /// Returns whether the span has no elements.
  constexpr bool empty() const noexcept { return size_ == 0; }

  /// Returns the element at `i`; `i` must be less than `size()`.
  constexpr T& operator[](size_t i) const noexcept {
    assert(i < size_);
    return data_[i];
  }

  constexpr iterator begin() const noexcept { return data_; }
  constexpr iterator end() const noexcept { return data_ + size_; }

  /// Returns the `count` elements starting at `offset`; both must be in range.
  constexpr span subspan(size_t offset, size_t count) const noexcept {
    assert(offset <= size_ && count <= size_ - offset);
    return {data_ + offset, count};
  }

  /// Returns the elements from `offset` to the end.
  constexpr span subspan(size_t offset) const noexcept { return subspan(offset, size_ - offset); }

private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

/// A read-only range of bytes.
using byte_span = span<const std::byte>;

/// A writable range of bytes.
using mutable_byte_span = span<std::byte>;

/// Views any object's bytes, e.g. a `std::string` or a vector of floats.
template <class T>
byte_span as_bytes(span<T> xs) noexcept {
  return {reinterpret_cast<const std::byte*>(xs.data()), xs.size() * sizeof(T)};
}

} // namespace sprintrt
