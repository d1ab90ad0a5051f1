#include "process/output_tail.hpp"

#include <cctype>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "protocol/utf8.hpp"
#include "sprintrt/logging.hpp"

namespace sprintrt::process {

caf::error output_tail::open() {
  if (mode_.kind != child_output_mode::file || file_)
    return {};
  auto file = output_file::open(file_path());
  if (!file)
    return file.error();
  file_.emplace(std::move(*file));
  return {};
}

std::string output_tail::file_path() const {
  std::string file = name_;
  for (char& c : file)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      c = '-';
  return (std::filesystem::path{mode_.directory} / (file + ".log")).string();
}

void output_tail::append(std::string_view bytes) {
  kept_.append(bytes);
  // Trimming only at twice the capacity keeps appends amortized O(1).
  if (kept_.size() > 2 * capacity)
    kept_.erase(0, kept_.size() - capacity);
  if (file_)
    file_->write(bytes);
  for (char c : bytes) {
    if (c == '\n' || line_.size() >= max_line) {
      forward_line();
      if (c == '\n')
        continue;
    }
    line_ += c;
  }
}

void output_tail::forward_line() {
  if (mode_.kind == child_output_mode::log) {
    // Looked up at each line: a logger registered (or dropped) while the
    // child runs is used from then on.
    auto registered = spdlog::get(logger_name);
    auto& target = registered ? *registered : logger();
    if (target.should_log(spdlog::level::info))
      target.info("[{}] {}", name_, protocol::escape_for_log(line_));
  } else if (logger().should_log(spdlog::level::debug)) {
    logger().debug("[{}] {}", name_, protocol::escape_for_log(line_));
  }
  line_.clear();
}

void output_tail::flush() {
  if (!line_.empty())
    forward_line();
}

std::string output_tail::text() const {
  if (mode_.kind == child_output_mode::inherit)
    return inherited_note;
  if (kept_.size() <= capacity)
    return kept_;
  return kept_.substr(kept_.size() - capacity);
}

namespace {

/// Whether `line` is a frame of a stack trace ("  #12  /path/prog(sym+0x1)
/// [0x55...]", as RASR prints after an error): the frames say where, the
/// lines before them what.
bool is_stack_frame(std::string_view line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos || line[i] != '#')
    return false;
  size_t digits = line.find_first_not_of("0123456789", i + 1);
  return digits != i + 1 && digits != std::string_view::npos &&
         (line[digits] == ' ' || line[digits] == '\t');
}

} // namespace

std::string last_lines(std::string_view all, size_t max_lines) {
  size_t end = all.size();
  while (end > 0 && all[end - 1] == '\n')
    --end;
  // Walks back line by line; a run of stack frames counts as one line.
  std::vector<std::string> kept;
  size_t frames = 0;
  auto close_run = [&] {
    if (frames > 0)
      kept.push_back("    (" + std::to_string(frames) + " stack frame line" +
                     (frames == 1 ? "" : "s") + " left out)");
    frames = 0;
  };
  while (end > 0 && kept.size() < max_lines) {
    size_t begin = all.rfind('\n', end - 1);
    begin = begin == std::string_view::npos ? 0 : begin + 1;
    auto line = all.substr(begin, end - begin);
    if (is_stack_frame(line)) {
      ++frames;
    } else {
      close_run();
      if (kept.size() < max_lines)
        kept.push_back(protocol::escape_for_log(line));
    }
    end = begin > 0 ? begin - 1 : 0;
  }
  close_run();
  std::string text;
  for (auto line = kept.rbegin(); line != kept.rend(); ++line) {
    if (!text.empty())
      text += '\n';
    text += *line;
  }
  return text;
}

} // namespace sprintrt::process
