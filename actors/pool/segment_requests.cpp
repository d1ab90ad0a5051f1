#include "actors/pool/segment_requests.hpp"

#include "protocol/messages.hpp"
#include "protocol/ndarray_access.hpp"
#include "runtime/output_tail.hpp"

namespace sprintrt {

std::string_view loss_request::command() const noexcept {
  return protocol::loss_command_name;
}

caf::error loss_request::encode(protocol::byte_buffer& out,
                                const protocol::wire_format& format) const {
  const auto& in = job.log_posteriors;
  return protocol::encode_loss_command(out, format, job.segment, in.rows, in.cols, in.row(0),
                                       in.row_stride);
}

size_t loss_request::max_reply_size(const protocol::wire_format&) const noexcept {
  return protocol::max_loss_reply_size(job.log_posteriors.rows, job.log_posteriors.cols);
}

caf::expected<double> loss_request::reply_from(const protocol::value& reply) const {
  return store_loss_reply(reply, job);
}

std::string_view fsa_request::command() const noexcept {
  return protocol::fsa_command_name_of(query.source);
}

caf::error fsa_request::encode(protocol::byte_buffer& out,
                               const protocol::wire_format& format) const {
  return protocol::encode_fsa_command(out, format, query.text, query.source);
}

size_t fsa_request::max_reply_size(const protocol::wire_format& format) const noexcept {
  return format.max_message_size;
}

caf::expected<segment_fsa> fsa_request::reply_from(const protocol::value& reply) const {
  return fsa_from_reply(reply, query.source);
}

const std::string& segment_request::segment() const noexcept {
  return std::visit([](const auto& req) -> const std::string& { return req.segment(); }, what);
}

std::string segment_request::subject() const {
  return std::visit([](const auto& req) { return req.subject(); }, what);
}

std::string_view segment_request::command() const noexcept {
  return std::visit([](const auto& req) { return req.command(); }, what);
}

void segment_request::fail(const caf::error& err) {
  std::visit([&err](auto& req) { req.fail(err); }, what);
}

void segment_request::cancel(const caf::error& err) {
  std::visit([&err](auto& req) { req.cancel(err); }, what);
}

caf::error check_query(const fsa_query& query) {
  if (query.source != fsa_source::segment_name && query.source != fsa_source::orthography)
    return make_error(errc::invalid_input, "FSA query for '" + query.text + "': unknown source " +
                                               std::to_string(static_cast<unsigned>(query.source)));
  if (query.text.empty())
    return make_error(errc::invalid_input, query.source == fsa_source::orthography
                                               ? "orthography is empty"
                                               : "segment name is empty");
  return {};
}

caf::error check_job(const segment_job& job) {
  const auto& in = job.log_posteriors;
  const auto& out = job.error_signal;
  if (job.segment.empty())
    return make_error(errc::invalid_input, "segment name is empty");
  if (!in.valid())
    return make_error(errc::invalid_input, "segment '" + job.segment +
                                               "': log-posteriors slice is empty or outside its "
                                               "storage");
  if (!out.valid() || out.rows != in.rows || out.cols != in.cols)
    return make_error(errc::invalid_input,
                      "segment '" + job.segment + "': error signal slice must be a valid " +
                          std::to_string(in.rows) + " x " + std::to_string(in.cols) + " matrix");
  return {};
}

caf::expected<double> store_loss_reply(const protocol::value& reply, const segment_job& job) {
  auto decoded =
      protocol::decode_loss_reply(reply, job.log_posteriors.rows, job.log_posteriors.cols);
  if (!decoded)
    return decoded.error();
  const auto& out = job.error_signal;
  if (!write_output(
          job, [&] { protocol::copy_rows(decoded->error_signal, out.row(0), out.row_stride); }))
    return make_error(errc::cancelled, "segment '" + job.segment +
                                           "': its caller stopped waiting (output gate closed); "
                                           "the error signal was not written");
  return decoded->loss;
}

caf::expected<segment_fsa> fsa_from_reply(const protocol::value& reply, fsa_source source) {
  auto decoded = protocol::decode_fsa_reply(reply, source);
  if (!decoded)
    return decoded.error();
  segment_fsa fsa;
  fsa.num_states = decoded->num_states;
  fsa.edges.resize(3 * decoded->num_edges);
  fsa.weights.resize(decoded->num_edges);
  protocol::copy_rows(decoded->edges, fsa.edges.data(), fsa.edges.size());
  protocol::copy_rows(decoded->weights, fsa.weights.data(), fsa.weights.size());
  return fsa;
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
