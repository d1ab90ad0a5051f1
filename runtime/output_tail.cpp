#include "runtime/output_tail.hpp"

#include <cctype>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "protocol/utf8.hpp"

namespace sprintrt::runtime {

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
    auto logger = spdlog::get(logger_name);
    auto* target = logger ? logger.get() : spdlog::default_logger_raw();
    if (target->should_log(spdlog::level::info))
      target->info("[{}] {}", name_, protocol::escape_for_log(line_));
  } else if (spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("[{}] {}", name_, protocol::escape_for_log(line_));
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

std::string last_lines(std::string_view all, size_t max_lines) {
  size_t end = all.size();
  while (end > 0 && all[end - 1] == '\n')
    --end;
  size_t begin = end;
  for (size_t lines = 0; begin > 0 && lines < max_lines;) {
    --begin;
    if (all[begin] == '\n' && ++lines == max_lines) {
      ++begin;
      break;
    }
  }
  return protocol::escape_for_log(all.substr(begin, end - begin));
}

} // namespace sprintrt::runtime
