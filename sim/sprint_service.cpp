#include "sim/sprint_service.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>
#include <variant>

#include <spdlog/spdlog.h>

#include "criterion/matrix_views.hpp"
#include "protocol/ndarray_access.hpp"
#include "protocol/utf8.hpp"
#include "sprintrt/logging.hpp"

namespace sprintrt::sim {

namespace {

/// The text of an exception reply: the error's own message, which names the
/// segment or command (the parent adds the command and segment itself).
std::string exception_text(const caf::error& err) {
  auto text = error_message(err);
  return text.empty() ? render(err) : text;
}

} // namespace

sprint_service::sprint_service(corpus_criterion segments_criterion, service_options options)
    : criterion_(std::move(segments_criterion)), options_(std::move(options)) {}

service_action sprint_service::handle(const protocol::value& message, protocol::byte_buffer& out) {
  auto request = protocol::decode_command(message);
  if (!request) {
    reply_error(request.error(), out);
    return service_action::reply;
  }
  return handle(*request, out);
}

service_action sprint_service::handle(const protocol::command& request,
                                      protocol::byte_buffer& out) {
  return std::visit([this, &out](const auto& command) { return serve(command, out); }, request);
}

service_action sprint_service::serve(const protocol::init_command& request,
                                     protocol::byte_buffer& out) {
  answer_init(request, out);
  return service_action::reply;
}

service_action sprint_service::serve(const protocol::loss_command& request,
                                     protocol::byte_buffer& out) {
  answer_loss(request, out);
  return service_action::reply;
}

service_action sprint_service::serve(const protocol::fsa_command& request,
                                     protocol::byte_buffer& out) {
  answer_fsa(request, out);
  return service_action::reply;
}

service_action sprint_service::serve(const protocol::exit_command&, protocol::byte_buffer&) {
  return service_action::exit;
}

void sprint_service::reply_exception(std::string_view message, protocol::byte_buffer& out) {
  // An exception reply is a short text: far below any sensible size limit.
  if (auto err = protocol::encode_exception_reply(out, options_.wire, message))
    logger().error("cannot encode the exception reply '{}': {}", message, render(err));
}

void sprint_service::reply_error(const caf::error& err, protocol::byte_buffer& out) {
  reply_exception(exception_text(err), out);
}

void sprint_service::check_encoded(caf::error encoded, protocol::byte_buffer& out) {
  // The failed encoder has removed its partial message from `out`.
  if (encoded)
    reply_error(encoded, out);
}

void sprint_service::answer_init(const protocol::init_command& request,
                                 protocol::byte_buffer& out) {
  if (request.version != protocol::protocol_version)
    logger().warn("init from '{}' asks for protocol version {}, this child speaks version {}; "
                  "answering anyway (the parent checks the version)",
                  request.client_name, request.version, protocol::protocol_version);
  check_encoded(protocol::encode_init_reply(out, options_.wire, options_.child_name,
                                            options_.init_reply_version,
                                            region_ != nullptr || options_.claim_shared_memory),
                out);
}

void sprint_service::answer_loss(const protocol::loss_command& request,
                                 protocol::byte_buffer& out) {
  if (request.shared_posteriors) {
    answer_shared_loss(request, out);
    return;
  }
  const auto& log_posteriors = request.log_posteriors;
  // decode_command checks all this; a command made by hand may not be.
  if (log_posteriors.type != protocol::dtype::float32 || log_posteriors.shape.size() != 2 ||
      log_posteriors.shape[0] != request.frames ||
      log_posteriors.data.size() != log_posteriors.num_elements() * sizeof(float)) {
    reply_exception("get_loss_and_error_signal for '" + request.segment_name +
                        "': log_posteriors must be float32 [seg_len, D]",
                    out);
    return;
  }
  const size_t frames = log_posteriors.shape[0];
  const size_t dim = log_posteriors.shape[1];
  const float* data = protocol::aligned_data<float>(log_posteriors);
  if (data == nullptr) {
    posteriors_.resize(frames * dim);
    protocol::copy_rows(log_posteriors, posteriors_.data(), dim);
    data = posteriors_.data();
  }
  auto loss = compute_loss(request.segment_name, data, frames, dim, out);
  if (!loss)
    return;
  check_encoded(protocol::encode_loss_reply(out, options_.wire, *loss, frames, dim,
                                            error_signal_.data(), options_.loss_encoding),
                out);
}

void sprint_service::answer_shared_loss(const protocol::loss_command& request,
                                        protocol::byte_buffer& out) {
  const auto& reference = *request.shared_posteriors;
  const std::string context = "get_loss_and_error_signal for '" + request.segment_name + "'";
  if (!region_) {
    reply_exception(context + ": its posteriors are in a shared region, but none was offered", out);
    return;
  }
  auto place = region_->view(reference.offset, reference.bytes(), alignof(float));
  if (!place) {
    reply_exception(context + ": " + exception_text(place.error()), out);
    return;
  }
  // Read in place; the error signal goes over the posteriors once computed,
  // where the parent copies it from.
  auto* slot = reinterpret_cast<float*>(*place);
  auto loss = compute_loss(request.segment_name, slot, reference.rows, reference.cols, out);
  if (!loss)
    return;
  std::memcpy(slot, error_signal_.data(), reference.bytes());
  check_encoded(
      protocol::encode_loss_reply(out, options_.wire, *loss, reference, options_.loss_encoding),
      out);
}

std::optional<double> sprint_service::compute_loss(const std::string& segment, const float* data,
                                                   size_t frames, size_t dim,
                                                   protocol::byte_buffer& out) {
  error_signal_.resize(frames * dim);
  const auto rows = static_cast<Eigen::Index>(frames);
  const auto cols = static_cast<Eigen::Index>(dim);
  Eigen::Map<const criterion::row_matrix_f> input{data, rows, cols};
  Eigen::Map<criterion::row_matrix_f> error_signal{error_signal_.data(), rows, cols};
  auto result = criterion_.loss_and_error_signal(segment, input, error_signal);
  if (!result) {
    reply_error(result.error(), out);
    return std::nullopt;
  }
  return result->loss;
}

void sprint_service::answer_fsa(const protocol::fsa_command& request, protocol::byte_buffer& out) {
  // A segment's FSA is exported straight from the criterion's cache; an
  // orthography's is built for this request.
  std::optional<criterion::fsa> built;
  auto automaton = criterion_.exported_fsa(request.source, request.text, built);
  if (!automaton) {
    reply_error(automaton.error(), out);
    return;
  }
  const criterion::fsa& exported = **automaton;
  check_encoded(protocol::encode_fsa_reply(out, options_.wire, exported.num_states(),
                                           exported.flat_edges(), exported.weights()),
                out);
}

caf::expected<double> sprint_service::answer(const segment_job& job) {
  using strided = Eigen::OuterStride<>;
  const auto& in = job.log_posteriors;
  const auto& out = job.error_signal;
  const auto rows = static_cast<Eigen::Index>(in.rows);
  const auto cols = static_cast<Eigen::Index>(in.cols);
  Eigen::Map<const criterion::row_matrix_f, Eigen::Unaligned, strided> input{
      in.row(0), rows, cols, strided{static_cast<Eigen::Index>(in.row_stride)}};
  Eigen::Map<criterion::row_matrix_f, Eigen::Unaligned, strided> error_signal{
      out.row(0), rows, cols, strided{static_cast<Eigen::Index>(out.row_stride)}};
  std::optional<decltype(criterion_.loss_and_error_signal(job.segment, input, error_signal))>
      computed;
  auto compute = [&] {
    computed.emplace(criterion_.loss_and_error_signal(job.segment, input, error_signal));
  };
  if (!write_output(job, compute))
    return make_error(errc::cancelled, "its caller stopped waiting (output gate closed); the "
                                       "error signal was not written");
  auto& result = *computed;
  if (!result)
    return protocol::classify_segment_error(
        make_error(errc::child_exception,
                   protocol::python_decodable(exception_text(result.error()))),
        job.segment);
  // The loss as the parent would read it from the reply sprint-sim sends.
  return protocol::check_reply_loss(protocol::loss_as_sent(result->loss, options_.loss_encoding));
}

caf::expected<segment_fsa> sprint_service::answer(const fsa_query& query) {
  std::optional<criterion::fsa> built;
  auto automaton = criterion_.exported_fsa(query.source, query.text, built);
  if (!automaton) {
    auto err = make_error(errc::child_exception,
                          protocol::python_decodable(exception_text(automaton.error())));
    return query.source == fsa_source::segment_name
               ? protocol::classify_segment_error(err, query.text)
               : err;
  }
  const criterion::fsa& exported = **automaton;
  segment_fsa result;
  result.num_states = exported.num_states();
  result.edges.assign(exported.flat_edges().begin(), exported.flat_edges().end());
  result.weights.assign(exported.weights().begin(), exported.weights().end());
  return result;
}

namespace {

// One overload per command of `protocol::command`, as `serve`'s.

std::string described(const protocol::init_command& init) {
  return std::string{protocol::init_command_name} + " '" + init.client_name + "' version " +
         std::to_string(init.version);
}

std::string described(const protocol::loss_command& loss) {
  const auto& shape = loss.log_posteriors.shape;
  const auto& shared = loss.shared_posteriors;
  const size_t rows = shared ? shared->rows : shape.size() == 2 ? shape[0] : 0;
  const size_t cols = shared ? shared->cols : shape.size() == 2 ? shape[1] : 0;
  return std::string{protocol::loss_command_name} + " '" + loss.segment_name + "' [" +
         std::to_string(rows) + " x " + std::to_string(cols) + "]" +
         (shared ? " in shared memory at " + std::to_string(shared->offset) : "");
}

std::string described(const protocol::fsa_command& fsa) {
  return std::string{protocol::fsa_command_name_of(fsa.source)} + " '" + fsa.text + "'";
}

std::string described(const protocol::exit_command&) {
  return std::string{protocol::exit_command_name};
}

} // namespace

std::string describe(const protocol::command& request) {
  return std::visit([](const auto& command) { return described(command); }, request);
}

} // namespace sprintrt::sim
