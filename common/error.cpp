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

namespace {

/// Whether `what` says more than its cause.
bool has_fields(const failure& what) noexcept {
  return !what.outer.empty() || !what.worker.empty() || !what.pool.empty() || !what.inner.empty() ||
         !what.child.ending.empty();
}

/// `a` and `b` joined with ": ", either of them possibly empty.
std::string joined(std::string a, const std::string& b) {
  if (a.empty())
    return b;
  if (!b.empty())
    a += ": " + b;
  return a;
}

} // namespace

// The fields travel as a message of builtin types (a plain message when
// there is only a cause), so that remote pools pass them on without a type
// of their own to announce.
caf::error make_error(errc code, failure what) {
  if (!has_fields(what))
    return make_error(code, std::move(what.cause));
  return caf::error{
      static_cast<uint8_t>(code), error_category,
      caf::make_message(std::move(what.outer), std::move(what.worker), std::move(what.pool),
                        std::move(what.inner), std::move(what.cause), what.child.pid,
                        std::move(what.child.ending), std::move(what.child.output_tail))};
}

failure failure_of(const caf::error& err) {
  failure what;
  if (!err || err.category() != error_category)
    return what;
  const auto& ctx = err.context();
  if (ctx.match_elements<std::string>()) {
    what.cause = ctx.get_as<std::string>(0);
  } else if (ctx.match_elements<std::string, std::string, std::string, std::string, std::string,
                                int32_t, std::string, std::string>()) {
    what.outer = ctx.get_as<std::string>(0);
    what.worker = ctx.get_as<std::string>(1);
    what.pool = ctx.get_as<std::string>(2);
    what.inner = ctx.get_as<std::string>(3);
    what.cause = ctx.get_as<std::string>(4);
    what.child.pid = ctx.get_as<int32_t>(5);
    what.child.ending = ctx.get_as<std::string>(6);
    what.child.output_tail = ctx.get_as<std::string>(7);
  }
  return what;
}

std::string to_string(const failure& what) {
  auto why = what.cause;
  if (!what.child.ending.empty()) {
    if (!why.empty())
      why += "; ";
    why += "Sprint child";
    if (what.child.pid >= 0)
      why += " pid " + std::to_string(what.child.pid);
    why += " " + what.child.ending;
    if (!what.child.output_tail.empty())
      why += "; its output ended with:\n" + what.child.output_tail;
  }
  return joined(joined(joined(what.outer, what.worker), what.inner), why);
}

bool same_cause(const failure& a, const failure& b) noexcept {
  return a.outer == b.outer && a.pool == b.pool && a.inner == b.inner && a.cause == b.cause &&
         a.child.ending == b.child.ending;
}

caf::error in_pool(const std::string& pool, const caf::error& err) {
  if (!err || err.category() != error_category)
    return err;
  auto what = failure_of(err);
  if (what.worker.empty() || !what.pool.empty())
    return err;
  what.pool = pool;
  return make_error(static_cast<errc>(err.code()), std::move(what));
}

std::string error_message(const caf::error& err) {
  if (!err)
    return {};
  if (err.category() == error_category)
    return to_string(failure_of(err));
  const auto& ctx = err.context();
  if (ctx.match_elements<std::string>())
    return ctx.get_as<std::string>(0);
  return {};
}

caf::error with_context(const std::string& context, const caf::error& err) {
  if (!err || err.category() != error_category)
    return err;
  auto code = static_cast<errc>(err.code());
  auto what = failure_of(err);
  if (what.worker.empty() && what.child.ending.empty())
    return make_error(code, joined(context, to_string(what)));
  if (what.worker.empty())
    what.inner = joined(context, what.inner);
  else
    what.outer = joined(context, what.outer);
  return make_error(code, std::move(what));
}

caf::error with_worker(const std::string& worker, const std::string& doing, const caf::error& err) {
  if (!err || err.category() != error_category)
    return err;
  auto what = failure_of(err);
  what.inner = joined(doing, joined(joined(what.outer, what.worker), what.inner));
  what.outer.clear();
  what.worker = worker;
  what.pool.clear();
  return make_error(static_cast<errc>(err.code()), std::move(what));
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
