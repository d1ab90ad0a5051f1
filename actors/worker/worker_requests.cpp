#include "actors/worker/worker_requests.hpp"

#include "process/output_tail.hpp"

namespace sprintrt::detail {

const std::string& segment_request::text() const noexcept {
  return std::visit(
      [](const auto& req) -> const std::string& { return entry_of<decltype(req)>::text(req.work); },
      what);
}

std::string segment_request::subject() const {
  return std::visit([](const auto& req) { return entry_of<decltype(req)>::subject(req.work); },
                    what);
}

std::string_view segment_request::command() const noexcept {
  return std::visit([](const auto& req) { return entry_of<decltype(req)>::name(req.work); }, what);
}

uint64_t segment_request::shared_bytes() const noexcept {
  return std::visit([](const auto& req) { return entry_of<decltype(req)>::shared_bytes(req.work); },
                    what);
}

void segment_request::fail(const caf::error& err) {
  std::visit([&err](auto& req) { req.fail(err); }, what);
}

void segment_request::cancel(const caf::error& err) {
  std::visit([&err](auto& req) { req.cancel(err); }, what);
}

failure child_failure(const process::child_down& down) {
  failure what;
  if (down.cause) {
    auto message = error_message(down.cause);
    what.cause = message.empty() ? render(down.cause) : message;
  }
  what.child.pid = down.pid >= 0 ? static_cast<int32_t>(down.pid) : -1;
  what.child.ending = down.describe();
  what.child.output_tail = process::last_lines(down.output, 20);
  return what;
}

std::string describe_down(const process::child_down& down) {
  return to_string(child_failure(down));
}

} // namespace sprintrt::detail
