#include "actors/worker/commands.hpp"

#include <cstring>
#include <memory>

#include "protocol/messages.hpp"
#include "protocol/ndarray_access.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

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
                                                   const work& job, const array_sink& sink) {
  const auto& in = job.log_posteriors;
  if (!sink.shared())
    return protocol::encode_loss_command(out, format, job.segment, in.rows, in.cols, in.row(0),
                                         in.row_stride);
  auto reference = sink.put(in);
  if (!reference)
    return reference.error();
  return protocol::encode_loss_command(out, format, job.segment, *reference);
}

size_t command_entry<get_loss_command>::max_reply_size(const protocol::wire_format&,
                                                       const work& job) noexcept {
  return protocol::max_loss_reply_size(job.log_posteriors.rows, job.log_posteriors.cols);
}

caf::expected<double> command_entry<get_loss_command>::decode(const protocol::value& reply,
                                                              const work& job,
                                                              const array_sink& sink) {
  const size_t rows = job.log_posteriors.rows;
  const size_t cols = job.log_posteriors.cols;
  auto decoded = protocol::decode_loss_reply(reply, rows, cols, sink.shared());
  if (!decoded)
    return protocol::classify_segment_error(decoded.error(), job.segment);
  const auto& out = job.error_signal;
  const float* shared = nullptr;
  if (sink.shared()) {
    auto place = sink.get(*decoded->shared_error_signal,
                          "reply to get_loss_and_error_signal: the error signal");
    if (!place)
      return place.error();
    shared = *place;
  }
  auto copy = [&] {
    if (!shared) {
      protocol::copy_rows(decoded->error_signal, out.row(0), out.row_stride);
      return;
    }
    // One copy, straight into the batch's rows. The child may still write
    // to the region (it is not trusted to have finished): what this copy
    // read is the answer, whatever comes later.
    for (size_t t = 0; t < rows; ++t)
      std::memcpy(out.row(t), shared + t * cols, cols * sizeof(float));
  };
  if (!write_output(job, copy))
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
                                                     const work& query, const array_sink&) {
  return protocol::encode_fsa_command(out, format, query.text, query.source);
}

caf::expected<segment_fsa> command_entry<export_fsa_command>::decode(const protocol::value& reply,
                                                                     const work& query,
                                                                     const array_sink&) {
  auto decoded = protocol::decode_fsa_reply(reply, query.source);
  if (!decoded)
    return query.source == fsa_source::segment_name
               ? protocol::classify_segment_error(decoded.error(), query.text)
               : decoded.error();
  segment_fsa fsa;
  fsa.num_states = decoded->num_states;
  fsa.edges.resize(3 * decoded->num_edges);
  fsa.weights.resize(decoded->num_edges);
  protocol::copy_rows(decoded->edges, fsa.edges.data(), fsa.edges.size());
  protocol::copy_rows(decoded->weights, fsa.weights.data(), fsa.weights.size());
  return fsa;
}

} // namespace sprintrt::detail
