#pragma once

/// @file
/// The check every test that starts children ends with.

#include <catch2/catch.hpp>

#include "tests/support/process_checks.hpp"

namespace sprintrt::test {

/// Checks that no child process (running or zombie) is left, and no
/// descriptor opened since `fds` was taken is still open.
inline void check_nothing_left(const fd_snapshot& fds) {
  for (const auto& child : child_processes())
    FAIL_CHECK("child left behind: pid " << child.pid << " state " << child.state << " ("
                                         << child.command << ")");
  auto leaked = fds.leaked_fds();
  INFO(describe_fds(leaked));
  CHECK(leaked.empty());
}

} // namespace sprintrt::test
