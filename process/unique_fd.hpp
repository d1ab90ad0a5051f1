#pragma once

/// @file
/// A file descriptor that closes itself: every fd sprintrt opens is owned by
/// exactly one of these, so none can leak on an error path.

#include <unistd.h>

#include <utility>

namespace sprintrt::process {

/// Owns one file descriptor (or none: -1).
class unique_fd {
public:
  /// Owns nothing.
  unique_fd() noexcept = default;

  /// Takes ownership of `fd` (-1 for none).
  explicit unique_fd(int fd) noexcept : fd_(fd) {}

  unique_fd(unique_fd&& other) noexcept : fd_(other.release()) {}

  unique_fd& operator=(unique_fd&& other) noexcept {
    reset(other.release());
    return *this;
  }

  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;

  ~unique_fd() { reset(); }

  /// Returns the descriptor (-1 for none) without giving up ownership.
  int get() const noexcept { return fd_; }

  /// Returns whether a descriptor is owned.
  explicit operator bool() const noexcept { return fd_ >= 0; }

  /// Gives up ownership and returns the descriptor.
  int release() noexcept { return std::exchange(fd_, -1); }

  /// Closes the owned descriptor, if any, and owns `fd` instead.
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = fd;
  }

private:
  int fd_ = -1;
};

} // namespace sprintrt::process
