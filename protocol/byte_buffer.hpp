#pragma once

/// @file
/// A growable byte buffer that does not zero what it allocates.
///
/// Messages on a Sprint pipe reach tens of megabytes. `std::vector<std::byte>`
/// value-initializes every byte it grows by, and the page faults of a fresh
/// allocation of that size cost more than filling it, so the framing layer receives into,
/// and the writer encodes into, buffers of this type that are recycled between
/// messages and only ever initialized by the data written into them.

#include <cstddef>
#include <cstring>
#include <memory>

#include "common/span.hpp"

namespace sprintrt::protocol {

/// A move-only, growable array of bytes with uninitialized spare capacity.
class byte_buffer {
public:
  /// An empty buffer without storage.
  byte_buffer() noexcept = default;

  /// An empty buffer with room for `capacity` bytes.
  explicit byte_buffer(size_t capacity) { reserve(capacity); }

  byte_buffer(byte_buffer&& other) noexcept
      : data_(std::move(other.data_)), size_(other.size_), capacity_(other.capacity_) {
    other.size_ = 0;
    other.capacity_ = 0;
  }

  byte_buffer& operator=(byte_buffer&& other) noexcept {
    data_ = std::move(other.data_);
    size_ = other.size_;
    capacity_ = other.capacity_;
    other.size_ = 0;
    other.capacity_ = 0;
    return *this;
  }

  byte_buffer(const byte_buffer&) = delete;
  byte_buffer& operator=(const byte_buffer&) = delete;

  /// Returns the first byte's address (null without storage).
  std::byte* data() noexcept { return data_.get(); }
  const std::byte* data() const noexcept { return data_.get(); }

  /// Returns the number of bytes in use.
  size_t size() const noexcept { return size_; }

  /// Returns the number of bytes the buffer can hold without reallocating.
  size_t capacity() const noexcept { return capacity_; }

  /// Returns whether no bytes are in use.
  bool empty() const noexcept { return size_ == 0; }

  /// Returns the bytes in use.
  byte_span bytes() const noexcept { return {data_.get(), size_}; }

  /// Returns the spare capacity after the bytes in use.
  mutable_byte_span spare() noexcept { return {data_.get() + size_, capacity_ - size_}; }

  /// Makes room for at least `capacity` bytes, keeping the bytes in use.
  void reserve(size_t capacity) {
    if (capacity <= capacity_)
      return;
    // `new std::byte[n]` default-initializes: no zeroing, pages are touched
    // only when written.
    std::unique_ptr<std::byte[]> grown{new std::byte[capacity]};
    if (size_ > 0)
      std::memcpy(grown.get(), data_.get(), size_);
    data_ = std::move(grown);
    capacity_ = capacity;
  }

  /// Makes room for `extra` more bytes, at least doubling the capacity when it
  /// grows so that appending is amortized O(1).
  void reserve_extra(size_t extra) {
    if (extra <= capacity_ - size_)
      return;
    size_t wanted = size_ + extra;
    size_t doubled = capacity_ * 2;
    reserve(wanted > doubled ? wanted : doubled);
  }

  /// Sets the number of bytes in use. Growing exposes uninitialized bytes that
  /// the caller is about to overwrite; `n` must not exceed `capacity()`.
  void set_size(size_t n) noexcept { size_ = n <= capacity_ ? n : capacity_; }

  /// Appends `n` bytes copied from `src`.
  void append(const void* src, size_t n) {
    reserve_extra(n);
    if (n > 0)
      std::memcpy(data_.get() + size_, src, n);
    size_ += n;
  }

  /// Appends a range of bytes.
  void append(byte_span bytes) { append(bytes.data(), bytes.size()); }

  /// Appends one byte.
  void push_back(std::byte b) {
    reserve_extra(1);
    data_[size_++] = b;
  }

  /// Forgets the bytes in use, keeping the storage for reuse.
  void clear() noexcept { size_ = 0; }

  /// Removes the first `n` bytes, moving the rest to the front.
  void consume_front(size_t n) noexcept {
    if (n >= size_) {
      size_ = 0;
      return;
    }
    std::memmove(data_.get(), data_.get() + n, size_ - n);
    size_ -= n;
  }

private:
  std::unique_ptr<std::byte[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

} // namespace sprintrt::protocol
