#pragma once

/// @file
/// The typed interface of a remote worker pool (`sprintrt serve`), and the
/// values that cross the network to it through CAF's middleman.
///
/// Locally, segments travel as slices into shared storage (`segment_job`).
/// Across machines they travel as values: the segment's name and its rows
/// of float32 as raw bytes, which CAF's serializers copy in one piece (CAF
/// serializes a `std::vector<float>` element by element, which is slow). Both
/// ends must be little-endian; the handshake checks it.

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <caf/atom.hpp>
#include <caf/deserializer.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/serializer.hpp>
#include <caf/typed_actor.hpp>

#include "sprintrt/error.hpp"
#include "sprintrt/fsa_query.hpp"
#include "sprintrt/matrix_slice.hpp"
#include "sprintrt/segment_fsa.hpp"
#include "sprintrt/segment_job.hpp"
#include "sprintrt/version.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt {

/// The handshake of a trainer with a remote pool.
using hello_atom = caf::atom_constant<caf::atom("hello")>;

/// The version of the remote interface: what the handshake compares (and
/// names in its error), besides CAF's own check of the typed interface. It
/// names sprintrt's release: a trainer and a server of the same release
/// (0.3.x with 0.3.y) work together, others refuse each other.
inline constexpr const char* remote_interface_version =
    "sprintrt " SPRINTRT_RELEASE " remote pools (float32 little-endian, FSA queries)";

/// Why none of the values below crosses the network as a float or double
/// through CAF's own serialization: CAF 0.17 packs floating point numbers
/// with a loop that never ends for infinity (a skipped segment's loss is
/// +inf), and one value at a time. Every floating point value here goes as
/// its bytes, so that results arrive bit for bit.

/// A `rows` x `cols` float32 matrix, row-major, dense, in storage that can
/// be shared with a `matrix_slice` (so a server computes straight on what
/// it received and sends back the storage its pool wrote). On the wire: the
/// shape, then the floats' raw bytes in one piece.
struct float_rows {
  uint64_t rows = 0;
  uint64_t cols = 0;
  /// rows * cols values (null for an empty matrix).
  float_storage values;

  /// Returns it as a slice (for a job).
  matrix_slice slice() const { return {values, 0, rows, cols, cols}; }
};

/// Returns storage of `count` zeroed floats; large ones on transparent huge
/// pages where the kernel offers them (fewer page faults on first touch).
float_storage make_float_storage(size_t count);

/// Writes `count` elements of `size` bytes at `data` to `sink` as one
/// sequence of raw bytes.
caf::error save_raw(caf::serializer& sink, const void* data, size_t count, size_t size);

/// Begins reading a sequence of raw bytes written by `save_raw` of
/// elements of `size` bytes: returns how many elements follow, once the
/// byte count is known to be a whole number of elements that the message
/// still holds (a peer that claims 4 GB in a small message gets an error,
/// not an allocation). `what` names the value in errors.
caf::expected<size_t> begin_raw(caf::deserializer& source, size_t size, const char* what);

/// Reads a sequence of raw bytes written by `save_raw` into `out` (resized
/// to the element count `begin_raw` allows).
template <class Vector>
caf::error load_raw(caf::deserializer& source, Vector& out, const char* what) {
  using value_type = typename Vector::value_type;
  auto count = begin_raw(source, sizeof(value_type), what);
  if (!count)
    return std::move(count.error());
  out.resize(*count);
  if (*count > 0)
    if (auto err = source.apply_raw(*count * sizeof(value_type), out.data()))
      return err;
  return source.end_sequence();
}

/// Writes a `float_rows` to `sink`: rows, cols, then the raw bytes.
caf::error save_float_rows(caf::serializer& sink, float_rows& x);

/// Reads a `float_rows` from `source`; the byte count must be rows * cols * 4.
caf::error load_float_rows(caf::deserializer& source, float_rows& x);

/// CAF inspection through hand-written functions: `load(f, x)` when `f`
/// deserializes, `save(f, x)` when it serializes, `as_text()` otherwise
/// (rendering as text).
template <class Inspector, class T, class Load, class Save, class AsText>
typename Inspector::result_type inspect_with(Inspector& f, T& x, Load load, Save save,
                                             AsText as_text) {
  if constexpr (std::is_base_of_v<caf::deserializer, Inspector>)
    return load(f, x);
  else if constexpr (std::is_base_of_v<caf::serializer, Inspector>)
    return save(f, x);
  else
    return as_text();
}

/// CAF inspection of `float_rows`: the bytes in one piece when serialized,
/// only the shape when rendered as text.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, float_rows& x) {
  return inspect_with(f, x, load_float_rows, save_float_rows, [&] {
    return f(caf::meta::type_name("sprintrt::float_rows"), x.rows, x.cols);
  });
}

/// One segment for a remote pool: its name and log-posteriors [T, D].
struct remote_segment {
  std::string segment;
  float_rows log_posteriors;
};

/// A remote pool's answer for a segment: the loss (+inf if Sprint skipped
/// it) and the error signal [T, D].
struct remote_loss {
  double loss = 0;
  float_rows error_signal;
};

/// A segment's automaton as a remote pool sends it: `segment_fsa` with its
/// arrays as raw bytes.
struct remote_fsa {
  segment_fsa fsa;
};

/// Writes a `remote_loss` (the loss as its 8 bytes).
caf::error save_remote_loss(caf::serializer& sink, remote_loss& x);

/// Reads a `remote_loss`.
caf::error load_remote_loss(caf::deserializer& source, remote_loss& x);

/// Writes a `remote_fsa`.
caf::error save_remote_fsa(caf::serializer& sink, remote_fsa& x);

/// Reads a `remote_fsa`: the edges must be three per weight.
caf::error load_remote_fsa(caf::deserializer& source, remote_fsa& x);

/// CAF inspection of `remote_segment`.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, remote_segment& x) {
  return f(caf::meta::type_name("sprintrt::remote_segment"), x.segment, x.log_posteriors);
}

/// CAF inspection of `remote_loss`.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, remote_loss& x) {
  return inspect_with(f, x, load_remote_loss, save_remote_loss, [&] {
    return f(caf::meta::type_name("sprintrt::remote_loss"), x.loss, x.error_signal);
  });
}

/// CAF inspection of `remote_fsa`.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, remote_fsa& x) {
  return inspect_with(f, x, load_remote_fsa, save_remote_fsa, [&] {
    return f(caf::meta::type_name("sprintrt::remote_fsa"), x.fsa.num_states);
  });
}

/// How command `Command` crosses the network to a remote pool and back:
/// `work` is what the pool is sent, `reply` what it answers, and the
/// conversions on both ends. Specialized for each of `sprint_commands`; the
/// remote pool's interface has one row per command from these.
template <class Command>
struct remote_wire;

template <>
struct remote_wire<get_loss_command> {
  /// The job's posteriors as bytes: a `segment_job` points into this
  /// process's memory.
  using work = remote_segment;
  using reply = remote_loss;

  /// The trainer's end: the job's log-posteriors, copied out of its slice.
  static work to_remote(const segment_job& job);

  /// The trainer's end: writes the pool's error signal into the job's
  /// output (through its gate) and returns the loss. Errors:
  /// `invalid_message` for an error signal of the wrong shape, `cancelled`
  /// if the gate is closed (nothing written either way).
  static caf::expected<double> from_remote(reply& answer, const segment_job& job);

  /// The server's end: the job for its pool, computing straight on the
  /// received bytes into new storage, with an output gate of its own.
  /// Errors: `invalid_input` for a segment without frames.
  static caf::expected<segment_job> to_local(work& segment);

  /// The server's end: the answer made of the pool's loss and the job's
  /// output (shared, not copied).
  static reply to_reply(double loss, const segment_job& job);
};

template <>
struct remote_wire<export_fsa_command> {
  using work = fsa_query;
  /// The automaton with its arrays as raw bytes.
  using reply = remote_fsa;

  static work to_remote(const fsa_query& query) { return query; }

  static caf::expected<segment_fsa> from_remote(reply& answer, const fsa_query&) {
    return std::move(answer.fsa);
  }

  static caf::expected<fsa_query> to_local(work& query) { return std::move(query); }

  static reply to_reply(segment_fsa fsa, const fsa_query&) { return {std::move(fsa)}; }
};

/// A worker pool published for trainers on other machines.
///
/// - `(hello, interface, options) -> capacity`: a trainer's handshake, with
///   its `remote_interface_version` and its options' `remote_options_key`.
///   Errors: `invalid_options` naming what differs. The answer is the
///   pool's number of workers.
/// - one row per command of `sprint_commands`, `(atom, remote_wire::work)
///   -> remote_wire::reply`: `(compute, segment) -> remote_loss`, one
///   segment's loss and error signal; `(fsa, query) -> remote_fsa`, the
///   automaton of one segment or orthography. Errors are the pool's
///   (`child_exception`, `child_failed`, ...); `invalid_input` for a shape
///   that does not match its bytes or a segment without frames;
///   `invalid_request` before the trainer's hello.
///
/// The server takes commands from its trainers in turns, at most two per
/// worker at its pool at once. A trainer that disconnects loses its work:
/// what it queued is dropped, what is in progress is cancelled; other
/// trainers are served on.
using remote_pool_actor = sprint_commands::typed_actor_with<
    remote_wire, caf::replies_to<hello_atom, std::string, std::string>::with<uint64_t>>;

/// Registers the types above with CAF, as every process
/// that talks to remote pools must, under the same names on both ends.
void add_remote_message_types(caf::actor_system_config& config);

} // namespace sprintrt
