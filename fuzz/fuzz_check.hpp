#pragma once

/// @file
/// How a fuzz target reports what the sanitizers cannot see: a result that
/// breaks what the code under test promises.

#include <cstdio>

namespace sprintrt::fuzz {

/// Unless `holds`, prints "fuzz check failed: <what>" and traps, which
/// libFuzzer reports as a crash and saves the input for. (One message per
/// check: the optimizer may merge the traps of a function into one, and with
/// them their line numbers.)
inline void require(bool holds, const char* what) {
  if (holds)
    return;
  std::fprintf(stderr, "fuzz check failed: %s\n", what);
  __builtin_trap();
}

} // namespace sprintrt::fuzz
