#pragma once

/// @file
/// Reading a fuzz target's input from the front: a few bytes that choose the
/// case (a request's shape, which message to decode), then the bytes under
/// test. An input that ends early reads as zeros, so that every input is a
/// case and the mutator never wastes time on rejected ones.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/span.hpp"

namespace sprintrt::fuzz {

/// The unread part of a fuzz input.
class fuzz_input {
public:
  /// Reads `size` bytes at `data`, which must outlive the reader.
  fuzz_input(const uint8_t* data, size_t size) noexcept : data_(data), size_(size) {}

  /// Takes one byte, 0 when the input is used up.
  uint8_t byte() noexcept {
    if (size_ == 0)
      return 0;
    --size_;
    return *data_++;
  }

  /// Takes a text of up to `limit` bytes, its length in the byte before it.
  std::string text(size_t limit) {
    const size_t length = byte() % (limit + 1);
    const size_t taken = length < size_ ? length : size_;
    std::string result{reinterpret_cast<const char*>(data_), taken};
    data_ += taken;
    size_ -= taken;
    return result;
  }

  /// Returns the rest of the input (the reader is then used up).
  byte_span rest() noexcept {
    byte_span result{reinterpret_cast<const std::byte*>(data_), size_};
    data_ += size_;
    size_ = 0;
    return result;
  }

  /// Returns the rest of the input as text (the reader is then used up).
  std::string_view rest_text() noexcept {
    auto bytes = rest();
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  }

private:
  const uint8_t* data_;
  size_t size_;
};

} // namespace sprintrt::fuzz
