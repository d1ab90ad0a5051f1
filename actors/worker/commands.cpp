#include "actors/worker/commands.hpp"

#include <memory>

#include "protocol/messages.hpp"
#include "protocol/ndarray_access.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt {

// -- get_loss_command -----------------------------------------------------------------------

caf::error command_entry<get_loss_command>::check(const work& job) {
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

caf::error command_entry<get_loss_command>::admit(work& job) {
  if (!job.gate)
    job.gate = std::make_shared<output_gate>();
  return {};
}

std::string_view command_entry<get_loss_command>::name(const work&) noexcept {
  return protocol::loss_command_name;
}

caf::error command_entry<get_loss_command>::encode(protocol::byte_buffer& out,
                                                   const protocol::wire_format& format,
                                                   const work& job) {
  const auto& in = job.log_posteriors;
  return protocol::encode_loss_command(out, format, job.segment, in.rows, in.cols, in.row(0),
                                       in.row_stride);
}

size_t command_entry<get_loss_command>::max_reply_size(const protocol::wire_format&,
                                                       const work& job) noexcept {
  return protocol::max_loss_reply_size(job.log_posteriors.rows, job.log_posteriors.cols);
}

caf::expected<double> command_entry<get_loss_command>::decode(const protocol::value& reply,
                                                              const work& job) {
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

// -- export_fsa_command ------------------------------------------------------------------------

caf::error command_entry<export_fsa_command>::check(const work& query) {
  if (query.source != fsa_source::segment_name && query.source != fsa_source::orthography)
    return make_error(errc::invalid_input, "FSA query for '" + query.text + "': unknown source " +
                                               std::to_string(static_cast<unsigned>(query.source)));
  if (query.text.empty())
    return make_error(errc::invalid_input, query.source == fsa_source::orthography
                                               ? "orthography is empty"
                                               : "segment name is empty");
  return {};
}

std::string_view command_entry<export_fsa_command>::name(const work& query) noexcept {
  return protocol::fsa_command_name_of(query.source);
}

caf::error command_entry<export_fsa_command>::encode(protocol::byte_buffer& out,
                                                     const protocol::wire_format& format,
                                                     const work& query) {
  return protocol::encode_fsa_command(out, format, query.text, query.source);
}

caf::expected<segment_fsa> command_entry<export_fsa_command>::decode(const protocol::value& reply,
                                                                     const work& query) {
  auto decoded = protocol::decode_fsa_reply(reply, query.source);
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

} // namespace sprintrt
