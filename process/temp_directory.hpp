#pragma once

/// @file
/// A scratch directory that cleans up after itself: the demo writes its
/// corpus there, tests and benchmarks their inputs.

#include <string>

#include "sprintrt/error.hpp"

namespace sprintrt::process {

/// A fresh directory under the system's temporary directory, removed with
/// everything in it when the object is destroyed. Move-only.
class temp_directory {
public:
  /// Creates `<tmp>/<prefix>-XXXXXX` (mkdtemp); fails with `io_error`.
  static caf::expected<temp_directory> make(const std::string& prefix);

  /// Takes over `other`'s directory; `other` then owns none.
  temp_directory(temp_directory&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  /// Removes this directory, then takes over `other`'s.
  temp_directory& operator=(temp_directory&& other) noexcept;
  temp_directory(const temp_directory&) = delete;
  temp_directory& operator=(const temp_directory&) = delete;

  /// Removes the directory and its contents.
  ~temp_directory();

  /// Returns the directory's path.
  const std::string& path() const noexcept { return path_; }

private:
  explicit temp_directory(std::string path) : path_(std::move(path)) {}
  void remove() noexcept;

  std::string path_;
};

} // namespace sprintrt::process
