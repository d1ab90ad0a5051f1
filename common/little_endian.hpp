#pragma once

/// @file
/// Little-endian integers in byte buffers, as pickle opcodes and the
/// length-prefixed framing store them.

#include <cstddef>
#include <cstdint>

#include "common/span.hpp"

namespace sprintrt {

/// Returns the unsigned integer stored least significant byte first in
/// `bytes` (at most 8 of them).
inline uint64_t read_le(byte_span bytes) noexcept {
  uint64_t x = 0;
  for (size_t i = 0; i < bytes.size(); ++i)
    x |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  return x;
}

} // namespace sprintrt
