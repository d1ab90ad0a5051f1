#include "actors/worker/worker_requests.hpp"

#include "runtime/output_tail.hpp"

namespace sprintrt {

const std::string& segment_request::segment() const noexcept {
  return std::visit([](const auto& req) -> const std::string& { return req.segment(); }, what);
}

std::string segment_request::subject() const {
  return std::visit([](const auto& req) { return req.subject(); }, what);
}

std::string_view segment_request::command() const noexcept {
  return std::visit([](const auto& req) { return req.command(); }, what);
}

uint64_t segment_request::shared_bytes() const noexcept {
  return std::visit([](const auto& req) { return req.shared_bytes(); }, what);
}

void segment_request::fail(const caf::error& err) {
  std::visit([&err](auto& req) { req.fail(err); }, what);
}

void segment_request::cancel(const caf::error& err) {
  std::visit([&err](auto& req) { req.cancel(err); }, what);
}

namespace {

/// Where `describe_down`'s text of a child's output begins.
constexpr const char* output_tail_marker = "; its output ended with:\n";

} // namespace

std::string failure_cause_key(const std::string& text) {
  auto key = text.substr(0, text.find(output_tail_marker));
  for (auto at = key.find(" pid "); at != std::string::npos; at = key.find(" pid ", at + 1)) {
    auto end = at + 5;
    while (end < key.size() && key[end] >= '0' && key[end] <= '9')
      ++end;
    if (end > at + 5)
      key.erase(at, end - at);
  }
  return key;
}

std::string describe_down(const runtime::child_down& down) {
  std::string text;
  if (down.cause) {
    auto message = error_message(down.cause);
    text = (message.empty() ? render(down.cause) : message) + "; ";
  }
  text += "Sprint child";
  if (down.pid >= 0)
    text += " pid " + std::to_string(down.pid);
  text += " " + down.describe();
  auto lines = runtime::last_lines(down.output, 20);
  if (!lines.empty())
    text += output_tail_marker + lines;
  return text;
}

} // namespace sprintrt
