#include "sprintrt/error.hpp"

#include <caf/make_message.hpp>
#include <caf/message.hpp>

namespace sprintrt {

const char* to_string(errc code) noexcept {
  switch (code) {
  case errc::protocol_error:
    return "protocol_error";
  case errc::truncated:
    return "truncated";
  case errc::message_too_large:
    return "message_too_large";
  case errc::invalid_message:
    return "invalid_message";
  case errc::invalid_input:
    return "invalid_input";
  case errc::invalid_options:
    return "invalid_options";
  case errc::unknown_segment:
    return "unknown_segment";
  case errc::io_error:
    return "io_error";
  case errc::spawn_failed:
    return "spawn_failed";
  case errc::child_exception:
    return "child_exception";
  case errc::child_failed:
    return "child_failed";
  case errc::timeout:
    return "timeout";
  case errc::cancelled:
    return "cancelled";
  case errc::invalid_request:
    return "invalid_request";
  case errc::worker_unavailable:
    return "worker_unavailable";
  }
  return "unknown_error";
}

caf::error make_error(errc code) {
  return caf::error{static_cast<uint8_t>(code), error_category};
}

caf::error make_error(errc code, std::string message) {
  return caf::error{static_cast<uint8_t>(code), error_category,
                    caf::make_message(std::move(message))};
}

std::string error_message(const caf::error& err) {
  if (!err)
    return {};
  const auto& ctx = err.context();
  if (ctx.size() == 1 && ctx.match_element<std::string>(0))
    return ctx.get_as<std::string>(0);
  return {};
}

caf::error with_context(const std::string& context, const caf::error& err) {
  if (!err || err.category() != error_category)
    return err;
  auto message = error_message(err);
  return make_error(static_cast<errc>(err.code()),
                    message.empty() ? context : context + ": " + message);
}

std::string render(const caf::error& err) {
  if (!err)
    return "none";
  if (err.category() != error_category)
    return caf::to_string(err);
  std::string result = to_string(static_cast<errc>(err.code()));
  auto message = error_message(err);
  if (!message.empty()) {
    result += ": ";
    result += message;
  }
  return result;
}

} // namespace sprintrt
