#include "runtime/output_tail.hpp"

#include <spdlog/spdlog.h>

#include "protocol/utf8.hpp"

namespace sprintrt::runtime {

void output_tail::append(std::string_view bytes) {
  kept_.append(bytes);
  // Trimming only at twice the capacity keeps appends amortized O(1).
  if (kept_.size() > 2 * capacity)
    kept_.erase(0, kept_.size() - capacity);
  for (char c : bytes) {
    if (c == '\n' || line_.size() >= max_line) {
      spdlog::debug("[{}] {}", name_, protocol::escape_for_log(line_));
      line_.clear();
      if (c == '\n')
        continue;
    }
    line_ += c;
  }
}

void output_tail::flush() {
  if (!line_.empty())
    spdlog::debug("[{}] {}", name_, protocol::escape_for_log(line_));
  line_.clear();
}

std::string output_tail::text() const {
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
