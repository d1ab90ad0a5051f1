#pragma once

/// @file
/// What a Sprint child printed: forwarded where `childOutput` says, and the
/// last 64 KiB kept for error messages ("child exited with status 1; its
/// output ended with: ..."). What reaches the log is escaped, as are the
/// error messages' lines: a child's output is bytes, and a terminal escape
/// in it must not reach the trainer's terminal. A file gets the bytes as
/// they are.
///
/// With `childOutput` "log" each line is logged at info, "[<worker>] line",
/// through the spdlog logger named `sprintrt.child` when one is registered
/// (looked up at each line, so one registered later takes over), else the
/// default logger. With {"file": DIR} the output is appended to
/// DIR/<worker>.log (`output_file`: the io thread never waits for the disk)
/// and its lines logged at debug. With "inherit" the output never passes
/// through sprintrt: `text()` says so instead of quoting it.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "process/output_file.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/options.hpp"

namespace sprintrt::process {

/// Collects a child's output.
class output_tail {
public:
  /// The most output kept for error messages.
  static constexpr size_t capacity = 64 * 1024;

  /// The longest line forwarded to the log as one line.
  static constexpr size_t max_line = 4096;

  /// The name of the spdlog logger that gets the lines of `log` mode.
  static constexpr const char* logger_name = "sprintrt.child";

  /// What `text()` says with `inherit`, where nothing is kept.
  static constexpr const char* inherited_note =
      "(not kept: childOutput \"inherit\" sent it to the trainer's own stdout and stderr)";

  /// Collects the output of the child called `child_name` (in log lines and
  /// file names), forwarded as `mode` says.
  explicit output_tail(std::string child_name, child_output_mode mode = {})
      : name_(std::move(child_name)), mode_(std::move(mode)) {}

  /// Opens the file of `file` mode (nothing for the others); fails with
  /// `io_error` naming the file and the reason. Call it before `append`.
  caf::error open();

  /// Returns the file of `file` mode, DIR/<name>.log, with every character
  /// of the name but letters, digits, '.', '_' and '-' replaced by '-'.
  std::string file_path() const;

  /// Appends output and forwards each completed line (`log`) or the bytes
  /// (`file`).
  void append(std::string_view bytes);

  /// Forwards a final unterminated line, if any.
  void flush();

  /// Returns the last `capacity` bytes of output (`inherited_note` with
  /// `inherit`).
  std::string text() const;

private:
  void forward_line();

  std::string name_;
  child_output_mode mode_;
  std::optional<output_file> file_;
  /// The kept output; trimmed to `capacity` when it grows past twice that.
  std::string kept_;
  std::string line_;
};

/// Returns the last `max_lines` lines of `text` (without trailing newlines),
/// for error messages where 64 KiB of output would drown the point; escaped
/// (`protocol::escape_for_log`), as are the lines `output_tail` logs. A run
/// of stack-trace frames ("#3  /path/prog(...) [0x...]") counts as one line
/// that says how many were left out: RASR prints some forty after its error
/// message, which would push the message itself out of the tail.
std::string last_lines(std::string_view text, size_t max_lines);

} // namespace sprintrt::process
