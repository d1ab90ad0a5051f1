#pragma once

/// @file
/// What a Sprint child printed: forwarded line by line to the log, and the
/// last 64 KiB kept for error messages ("child exited with status 1; its
/// output ended with: ..."). Both are escaped: a child's output is bytes,
/// and a terminal escape in it must not reach the trainer's terminal.

#include <cstddef>
#include <string>
#include <string_view>

namespace sprintrt::runtime {

/// Collects a child's output.
class output_tail {
public:
  /// The most output kept for error messages.
  static constexpr size_t capacity = 64 * 1024;

  /// The longest line forwarded to the log as one line.
  static constexpr size_t max_line = 4096;

  /// Collects the output of the child called `child_name` in log lines.
  explicit output_tail(std::string child_name) : name_(std::move(child_name)) {}

  /// Appends output; logs each completed line at debug level.
  void append(std::string_view bytes);

  /// Logs a final unterminated line, if any.
  void flush();

  /// Returns the last `capacity` bytes of output.
  std::string text() const;

private:
  std::string name_;
  /// The kept output; trimmed to `capacity` when it grows past twice that.
  std::string kept_;
  std::string line_;
};

/// Returns the last `max_lines` lines of `text` (without trailing newlines),
/// for error messages where 64 KiB of output would drown the point; escaped
/// (`protocol::escape_for_log`), as are the lines `output_tail` logs.
std::string last_lines(std::string_view text, size_t max_lines);

} // namespace sprintrt::runtime
