#include "protocol/messages.hpp"
#include "protocol/pickle_repr.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "protocol/ndarray_access.hpp"
#include "protocol/utf8.hpp"
#include "sprintrt/tensor.hpp"

namespace sprintrt::protocol {

namespace {

// -- encoding helpers -----------------------------------------------------------

/// Frames one pickle whose top-level value `write_body` writes.
template <class F>
caf::error encode_message(byte_buffer& out, const wire_format& fmt, F&& write_body) {
  size_t start = begin_frame(out, fmt.framing);
  pickle_writer writer{out};
  writer.begin();
  write_body(writer);
  writer.end();
  return end_frame(out, fmt.framing, start, fmt.max_message_size);
}

caf::error check_text(std::string_view what, std::string_view text) {
  if (!is_valid_utf8(text))
    return make_error(errc::invalid_input, std::string{what} + " is not valid UTF-8");
  return {};
}

// -- decoding helpers -----------------------------------------------------------

caf::error invalid(std::string what) {
  return make_error(errc::invalid_message, std::move(what));
}

/// Returns the items of a tuple message, or an error naming `context`.
caf::expected<const value::items*> tuple_items(const value& message, std::string_view context) {
  if (!message.is(value::kind::tuple) || message.as_items().empty())
    return invalid(std::string{context} + ": expected a non-empty tuple, got " + repr(message));
  return &message.as_items();
}

/// A str, or bytes read as text (an older parent sends segment names as bytes).
std::optional<std::string> as_text(const value& x) {
  if (x.is(value::kind::str))
    return x.as_str();
  if (x.is(value::kind::bytes))
    return x.as_bytes().to_string();
  return std::nullopt;
}

/// An int, or a NumPy integer scalar (older RETURNN parents send seg_len as numpy.int32).
std::optional<int64_t> as_integer(const value& x) {
  if (x.is(value::kind::integer))
    return x.as_int();
  if (x.is(value::kind::numpy_scalar) && !is_floating(x.as_numpy_scalar().type))
    return x.as_numpy_scalar().to_int();
  return std::nullopt;
}

/// A float, an int, or a NumPy scalar (a child may return numpy.float32).
std::optional<double> as_number(const value& x) {
  if (x.is(value::kind::floating))
    return x.as_float();
  if (x.is(value::kind::integer))
    return static_cast<double>(x.as_int());
  if (x.is(value::kind::numpy_scalar))
    return x.as_numpy_scalar().to_double();
  return std::nullopt;
}

/// Checks that `x` is an array of `type` with exactly `shape`.
caf::error check_array(const value& x, std::string_view what, dtype type,
                       const std::vector<size_t>& shape) {
  if (!x.is(value::kind::ndarray))
    return invalid(std::string{what} + " must be a numpy array, got " + repr(x));
  const auto& a = x.as_ndarray();
  if (a.type != type)
    return invalid(std::string{what} + " must be " + to_string(type) + ", got " +
                   to_string(a.type));
  if (a.shape != shape)
    return invalid(std::string{what} + " has shape " + shape_string(a.shape) + ", expected " +
                   shape_string(shape));
  return {};
}

/// Checks the reply status. Returns the items after "ok"; turns
/// ("exception", message) into a `child_exception` error carrying message.
caf::expected<const value::items*> ok_reply(const value& message, std::string_view command,
                                            size_t arity) {
  auto items = tuple_items(message, std::string{"reply to "} + std::string{command});
  if (!items)
    return items.error();
  const auto& xs = **items;
  if (xs[0].is(value::kind::str) && xs[0].as_str() == "exception") {
    if (xs.size() >= 2)
      if (auto text = as_text(xs[1]))
        return make_error(errc::child_exception, *text);
    return make_error(errc::child_exception, repr(message));
  }
  if (!xs[0].is(value::kind::str) || xs[0].as_str() != "ok")
    return invalid("reply to " + std::string{command} +
                   " must start with 'ok' or 'exception', got " + repr(message));
  if (xs.size() != arity + 1)
    return invalid("reply to " + std::string{command} + " must have " + std::to_string(arity + 1) +
                   " items, got " + repr(message));
  return *items;
}

// -- command decoders -----------------------------------------------------------

caf::expected<command> decode_init(const value::items& xs) {
  if (xs.size() != 3 || !xs[1].is(value::kind::str) || !as_integer(xs[2]))
    return invalid("init expects (name: str, version: int), got " + repr(value::tuple(xs)));
  return init_command{xs[1].as_str(), *as_integer(xs[2])};
}

caf::expected<command> decode_loss(const value::items& xs) {
  if (xs.size() != 4)
    return invalid(
        "get_loss_and_error_signal expects (segment_name, seg_len, log_posteriors), got " +
        repr(value::tuple(xs)));
  auto name = as_text(xs[1]);
  auto frames = as_integer(xs[2]);
  if (!name || name->empty())
    return invalid("get_loss_and_error_signal: segment name must be a non-empty str, got " +
                   repr(xs[1]));
  if (!frames || *frames <= 0)
    return invalid("get_loss_and_error_signal for '" + *name +
                   "': seg_len must be a positive int, got " + repr(xs[2]));
  const std::string context = "get_loss_and_error_signal for '" + *name + "': log_posteriors";
  if (is_shared_array(xs[3])) {
    auto shared = read_shared_array(xs[3], context, static_cast<size_t>(*frames), 0);
    if (!shared)
      return shared.error();
    return loss_command{*name, static_cast<size_t>(*frames), ndarray{}, *shared};
  }
  if (!xs[3].is(value::kind::ndarray) || xs[3].as_ndarray().shape.size() != 2)
    return invalid(context + " must be a 2-d numpy array, got " + repr(xs[3]));
  const auto& lp = xs[3].as_ndarray();
  if (lp.shape[1] == 0)
    return invalid(context + " have no classes (shape " + repr(xs[3]) + ")");
  std::vector<size_t> expected{static_cast<size_t>(*frames), lp.shape[1]};
  if (auto err = check_array(xs[3], context, dtype::float32, expected))
    return err;
  return loss_command{*name, static_cast<size_t>(*frames), lp, std::nullopt};
}

caf::expected<command> decode_fsa(const value::items& xs, fsa_source source) {
  auto text = xs.size() == 2 ? as_text(xs[1]) : std::nullopt;
  if (!text || text->empty())
    return invalid(std::string{fsa_command_name_of(source)} + " expects (" +
                   (source == fsa_source::orthography ? "orthography" : "segment_name") +
                   ": str), got " + repr(value::tuple(xs)));
  return fsa_command{*text, source};
}

} // namespace

// -- commands -------------------------------------------------------------------

caf::expected<command> decode_command(const value& message) {
  auto items = tuple_items(message, "command");
  if (!items)
    return items.error();
  const auto& xs = **items;
  if (!xs[0].is(value::kind::str))
    return invalid("command name must be a str, got " + repr(xs[0]));
  const auto& name = xs[0].as_str();
  if (name == init_command_name)
    return decode_init(xs);
  if (name == loss_command_name)
    return decode_loss(xs);
  if (name == fsa_command_name)
    return decode_fsa(xs, fsa_source::segment_name);
  if (name == fsa_by_orthography_command_name)
    return decode_fsa(xs, fsa_source::orthography);
  if (name == exit_command_name) {
    if (xs.size() != 1)
      return invalid("exit takes no arguments, got " + repr(message));
    return exit_command{};
  }
  return invalid("unknown command '" + name + "'");
}

caf::error encode_init_command(byte_buffer& out, const wire_format& fmt) {
  return encode_message(out, fmt, [](pickle_writer& w) {
    w.begin_tuple(3);
    w.str(init_command_name);
    w.str(parent_name);
    w.integer(protocol_version);
    w.end_tuple(3);
  });
}

namespace {

/// Writes ("get_loss_and_error_signal", segment_name, frames, <what
/// `write_posteriors` writes>).
template <class F>
caf::error encode_loss_command_with(byte_buffer& out, const wire_format& fmt,
                                    std::string_view segment_name, size_t frames,
                                    F&& write_posteriors) {
  if (auto err = check_text("segment name", segment_name))
    return err;
  return encode_message(out, fmt, [&](pickle_writer& w) {
    w.begin_tuple(4);
    w.str(loss_command_name);
    w.str(segment_name);
    w.integer(static_cast<int64_t>(frames));
    write_posteriors(w);
    w.end_tuple(4);
  });
}

} // namespace

caf::error encode_loss_command(byte_buffer& out, const wire_format& fmt,
                               std::string_view segment_name, size_t frames, size_t dim,
                               const float* log_posteriors, size_t row_stride) {
  return encode_loss_command_with(out, fmt, segment_name, frames, [&](pickle_writer& w) {
    size_t shape[] = {frames, dim};
    strided_bytes data{reinterpret_cast<const std::byte*>(log_posteriors), frames,
                       dim * sizeof(float), row_stride * sizeof(float)};
    w.ndarray(fmt.array_module, dtype::float32, {shape, 2}, data);
  });
}

caf::error encode_loss_command(byte_buffer& out, const wire_format& fmt,
                               std::string_view segment_name, const shared_array& posteriors) {
  return encode_loss_command_with(out, fmt, segment_name, posteriors.rows,
                                  [&](pickle_writer& w) { write_shared_array(w, posteriors); });
}

caf::error encode_fsa_command(byte_buffer& out, const wire_format& fmt, std::string_view text,
                              fsa_source source) {
  if (auto err =
          check_text(source == fsa_source::orthography ? "orthography" : "segment name", text))
    return err;
  return encode_message(out, fmt, [&](pickle_writer& w) {
    w.begin_tuple(2);
    w.str(fsa_command_name_of(source));
    w.str(text);
    w.end_tuple(2);
  });
}

caf::error encode_exit_command(byte_buffer& out, const wire_format& fmt) {
  return encode_message(out, fmt, [](pickle_writer& w) {
    w.begin_tuple(1);
    w.str(exit_command_name);
    w.end_tuple(1);
  });
}

// -- replies --------------------------------------------------------------------

caf::expected<init_reply> decode_init_reply(const value& message) {
  // RETURNN checks len(ret) >= 3; we require the three items, and a fourth
  // only as the shared region's acceptance.
  const bool four = message.is(value::kind::tuple) && message.as_items().size() == 4;
  auto items = ok_reply(message, init_command_name, four ? 3 : 2);
  if (!items)
    return items.error();
  const auto& xs = **items;
  auto version = as_integer(xs[2]);
  if (!xs[1].is(value::kind::str) || !version)
    return invalid("reply to init must be ('ok', name: str, version: int), got " + repr(message));
  if (four && !(xs[3].is(value::kind::str) && xs[3].as_str() == shared_memory_tag))
    return invalid("reply to init: a fourth item must be '" + std::string{shared_memory_tag} +
                   "', got " + repr(message));
  return init_reply{xs[1].as_str(), *version, four};
}

caf::error check_protocol_version(const init_reply& reply) {
  if (reply.version == protocol_version)
    return {};
  return invalid("the child speaks protocol version " + std::to_string(reply.version) +
                 ", expected " + std::to_string(protocol_version));
}

size_t max_loss_reply_size(size_t frames, size_t dim) noexcept {
  constexpr size_t most = std::numeric_limits<size_t>::max();
  // 8 bytes on the wire per float at most; saturate rather than wrap.
  if (dim != 0 && frames > (most - reply_margin) / 8 / dim)
    return most;
  return 8 * frames * dim + reply_margin;
}

double loss_as_sent(double loss, loss_encoding encoding) noexcept {
  return encoding == loss_encoding::numpy_float32 ? static_cast<double>(static_cast<float>(loss))
                                                  : loss;
}

caf::expected<double> check_reply_loss(double loss) {
  if (std::isnan(loss) || loss == -std::numeric_limits<double>::infinity())
    return make_error(errc::child_exception,
                      std::string{"reply to get_loss_and_error_signal: loss is "} +
                          (std::isnan(loss) ? "NaN" : "-inf"));
  return loss;
}

caf::expected<loss_reply> decode_loss_reply(const value& message, size_t frames, size_t dim,
                                            bool shared) {
  auto items = ok_reply(message, loss_command_name, 2);
  if (!items)
    return items.error();
  const auto& xs = **items;
  auto loss = as_number(xs[1]);
  if (!loss)
    return invalid("reply to get_loss_and_error_signal: loss must be a number, got " + repr(xs[1]));
  if (auto checked = check_reply_loss(*loss); !checked)
    return checked.error();
  constexpr std::string_view what = "reply to get_loss_and_error_signal: error signal";
  if (shared) {
    auto reference = read_shared_array(xs[2], what, frames, dim);
    if (!reference)
      return reference.error();
    return loss_reply{*loss, ndarray{}, *reference};
  }
  if (auto err = check_array(xs[2], what, dtype::float32, {frames, dim}))
    return err;
  return loss_reply{*loss, xs[2].as_ndarray(), std::nullopt};
}

caf::expected<fsa_reply> decode_fsa_reply(const value& message, fsa_source source) {
  auto items = ok_reply(message, fsa_command_name_of(source), 4);
  if (!items)
    return items.error();
  const auto& xs = **items;
  auto num_states = as_integer(xs[1]);
  auto num_edges = as_integer(xs[2]);
  // State ids are uint32 on the wire and in merged automata.
  if (!num_states || *num_states <= 0 || *num_states > int64_t{UINT32_MAX} || !num_edges ||
      *num_edges < 0)
    return invalid("FSA reply: num_states must be an int in 1..2^32-1 and num_edges a "
                   "non-negative int, got " +
                   repr(message));
  auto edges_count = static_cast<size_t>(*num_edges);
  if (auto err = check_array(xs[3], "FSA reply: edges", dtype::uint32, {3 * edges_count}))
    return err;
  if (auto err = check_array(xs[4], "FSA reply: weights", dtype::float32, {edges_count}))
    return err;
  fsa_reply result{static_cast<size_t>(*num_states), edges_count, xs[3].as_ndarray(),
                   xs[4].as_ndarray()};
  // Rows 0 and 1 (from, to) must name existing states.
  for (size_t i = 0; i < 2 * edges_count; ++i) {
    auto state = element<uint32_t>(result.edges, i);
    if (state >= result.num_states)
      return invalid("FSA reply: edge " + std::to_string(i % edges_count) + " has " +
                     (i < edges_count ? "from" : "to") + " state " + std::to_string(state) +
                     ", but there are only " + std::to_string(result.num_states) + " states");
  }
  return result;
}

caf::error encode_init_reply(byte_buffer& out, const wire_format& fmt, std::string_view child_name,
                             int64_t version, bool shared_memory) {
  if (auto err = check_text("child name", child_name))
    return err;
  const size_t arity = shared_memory ? 4 : 3;
  return encode_message(out, fmt, [&](pickle_writer& w) {
    w.begin_tuple(arity);
    w.str("ok");
    w.str(child_name);
    w.integer(version);
    if (shared_memory)
      w.str(shared_memory_tag);
    w.end_tuple(arity);
  });
}

namespace {

/// Writes ("ok", loss, <what `write_error_signal` writes>).
template <class F>
caf::error encode_loss_reply_with(byte_buffer& out, const wire_format& fmt, double loss,
                                  loss_encoding encoding, F&& write_error_signal) {
  return encode_message(out, fmt, [&](pickle_writer& w) {
    w.begin_tuple(3);
    w.str("ok");
    if (encoding == loss_encoding::numpy_float32)
      w.numpy_scalar(numpy_scalar::of_float(dtype::float32, loss));
    else
      w.floating(loss);
    write_error_signal(w);
    w.end_tuple(3);
  });
}

} // namespace

caf::error encode_loss_reply(byte_buffer& out, const wire_format& fmt, double loss, size_t frames,
                             size_t dim, const float* error_signal, loss_encoding encoding) {
  return encode_loss_reply_with(out, fmt, loss, encoding, [&](pickle_writer& w) {
    size_t shape[] = {frames, dim};
    auto bytes =
        byte_span{reinterpret_cast<const std::byte*>(error_signal), frames * dim * sizeof(float)};
    w.ndarray(fmt.array_module, dtype::float32, {shape, 2}, strided_bytes::contiguous(bytes));
  });
}

caf::error encode_loss_reply(byte_buffer& out, const wire_format& fmt, double loss,
                             const shared_array& error_signal, loss_encoding encoding) {
  return encode_loss_reply_with(out, fmt, loss, encoding,
                                [&](pickle_writer& w) { write_shared_array(w, error_signal); });
}

caf::error encode_fsa_reply(byte_buffer& out, const wire_format& fmt, size_t num_states,
                            span<const uint32_t> edges, span<const float> weights) {
  if (edges.size() != 3 * weights.size())
    return make_error(errc::invalid_input, "FSA with " + std::to_string(weights.size()) +
                                               " weights needs " +
                                               std::to_string(3 * weights.size()) +
                                               " edge values, got " + std::to_string(edges.size()));
  return encode_message(out, fmt, [&](pickle_writer& w) {
    w.begin_tuple(5);
    w.str("ok");
    w.integer(static_cast<int64_t>(num_states));
    w.integer(static_cast<int64_t>(weights.size()));
    size_t edge_shape[] = {edges.size()};
    size_t weight_shape[] = {weights.size()};
    w.ndarray(fmt.array_module, dtype::uint32, {edge_shape, 1},
              strided_bytes::contiguous(as_bytes(edges)));
    w.ndarray(fmt.array_module, dtype::float32, {weight_shape, 1},
              strided_bytes::contiguous(as_bytes(weights)));
    w.end_tuple(5);
  });
}

caf::error encode_exception_reply(byte_buffer& out, const wire_format& fmt,
                                  std::string_view message) {
  // The message may come from anywhere (e.g. an error naming a non-UTF-8
  // segment); Python must be able to decode it.
  const std::string text = python_decodable(std::string{message});
  return encode_message(out, fmt, [&](pickle_writer& w) {
    w.begin_tuple(2);
    w.str("exception");
    w.str(text);
    w.end_tuple(2);
  });
}

std::string unknown_segment_text(std::string_view segment) {
  return "unknown segment '" + std::string{segment} + "'";
}

caf::error classify_segment_error(const caf::error& err, std::string_view segment) {
  if (err != errc::child_exception)
    return err;
  auto message = error_message(err);
  auto marker = unknown_segment_text(segment);
  if (message.compare(0, marker.size(), marker) != 0)
    return err;
  return make_error(errc::unknown_segment, std::move(message));
}

} // namespace sprintrt::protocol
