// A libFuzzer target that misbehaves on purpose, to show that the harness
// (fuzz/with_limits.sh: its memory limits and sanitizer options) still
// reports a real leak after the sanitizer's quarantine was made smaller.
// fuzz/selftest.sh runs it once per mode, chosen by the environment variable
// SPRINTRT_FUZZ_SELFTEST:
//
//   grow   every input adds memory that stays reachable (a growing static
//          container, which LeakSanitizer cannot see): the RSS limit must
//          end the run.
//   leak   every input allocates and drops the pointer: LeakSanitizer must
//          report it.
//   churn  every input allocates and frees a few megabytes, as a decoder of a
//          large message does: the run must end clean, and the freed memory
//          the sanitizer holds back must stay far below the RSS limit.
//
// Any other value (or none) does nothing, so that a run by mistake is clean.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace {

/// What each input does; from SPRINTRT_FUZZ_SELFTEST.
std::string_view mode;

/// Where `grow` keeps its memory.
std::vector<std::unique_ptr<char[]>> kept;

/// Each of `grow`'s pieces: a separate allocation well below libFuzzer's
/// -malloc_limit_mb, so that only the RSS limit can end the run.
constexpr size_t piece_size = size_t{8} << 20;

/// `grow` stops here, far beyond any RSS limit the harness sets, so that a
/// harness that fails to stop it does not exhaust the machine.
constexpr size_t most_pieces = 256;

/// Keeps a pointer from being optimized away without keeping it reachable
/// (a volatile variable that each input overwrites).
char* volatile last_allocation = nullptr;

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* chosen = std::getenv("SPRINTRT_FUZZ_SELFTEST");
  mode = chosen != nullptr ? chosen : "";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char first = size > 0 ? static_cast<char>(data[0]) : 0;
  if (mode == "grow") {
    if (kept.size() < most_pieces) {
      // Touched, so that the pages count in the process's RSS.
      kept.emplace_back(new char[piece_size]);
      std::memset(kept.back().get(), first, piece_size);
    }
  } else if (mode == "leak") {
    last_allocation = new char[64];
    last_allocation[0] = first;
  } else if (mode == "churn") {
    std::vector<char> scratch(size_t{4} << 20, first);
    last_allocation = scratch.data();
  }
  return 0;
}
