#pragma once

/// @file
/// The first three bytes of a `shared_array_fuzzer` input: the loss request
/// whose reply is read and the slots around it in the child's region. The
/// fuzz target reads them, the seed generator writes them.

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_input.hpp"

namespace sprintrt::fuzz {

/// A loss request in a child's region, among other requests' slots.
struct shared_array_case {
  /// Its posteriors: `frames` x `dim` float32, each 1 to 64.
  size_t frames = 1;
  size_t dim = 1;
  /// Pages of a request that took a slot before this one's (0: none).
  unsigned pages_before = 0;
  /// Whether that request was answered before this one: its slot is free
  /// again, a gap in front of this one's.
  bool before_answered = false;
  /// Pages of a request that took a slot after this one's (0: none): the
  /// region then reaches past this one's slot.
  unsigned pages_after = 0;
  /// Whether the child mapped its region before the parent grew it for that
  /// request: its mapping then ends before the file does, and a reference
  /// beyond it makes the child map the file again.
  bool child_mapped_early = false;

  /// Reads a case from the front of `in`.
  static shared_array_case read(fuzz_input& in) {
    shared_array_case c;
    c.frames = 1 + in.byte() % 64;
    c.dim = 1 + in.byte() % 64;
    const uint8_t layout = in.byte();
    c.pages_before = layout & 3;
    c.pages_after = (layout >> 2) & 3;
    c.before_answered = (layout & 16) != 0;
    c.child_mapped_early = (layout & 32) != 0;
    return c;
  }

  /// Returns the bytes that `read` reads as this case.
  std::string header() const {
    const auto layout =
        static_cast<unsigned>(pages_before | pages_after << 2 | (before_answered ? 16 : 0) |
                              (child_mapped_early ? 32 : 0));
    return {static_cast<char>(frames - 1), static_cast<char>(dim - 1), static_cast<char>(layout)};
  }
};

} // namespace sprintrt::fuzz
