#pragma once

/// @file
/// One segment's data as it travels between a trainer and the workers:
/// rows of float32 values inside storage that all parties share, so that a
/// segment of a [T, B, D] batch is sent without being copied out first, and
/// its error signal is written straight into the batch's output.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sprintrt/float_buffer.hpp"
#include "sprintrt/output_gate.hpp"

namespace sprintrt {

/// A `rows` x `cols` matrix inside shared storage: element (r, c) is
/// `(*storage)[offset + r * row_stride + c]`. Segment b of a time-major
/// [T, B, D] batch is {storage, b * D, T_b, D, B * D}.
struct matrix_slice {
  float_storage storage;
  size_t offset = 0;
  size_t rows = 0;
  size_t cols = 0;
  size_t row_stride = 0;

  /// A whole contiguous rows x cols matrix in new zeroed storage.
  static matrix_slice dense(size_t rows, size_t cols) {
    return {make_storage(rows * cols), 0, rows, cols, cols};
  }

  /// Returns the first element of row `r`.
  float* row(size_t r) const noexcept { return storage->data() + offset + r * row_stride; }

  /// Returns whether the slice has storage and lies within it, rows not
  /// overlapping.
  bool valid() const noexcept {
    if (!storage || rows == 0 || cols == 0 || row_stride < cols)
      return false;
    // offset + (rows - 1) * row_stride + cols <= size, without overflow.
    if (offset > storage->size() || cols > storage->size() - offset)
      return false;
    return rows - 1 <= (storage->size() - offset - cols) / row_stride;
  }
};

/// A request to compute one segment: its log-posteriors [T, D] are read from
/// `log_posteriors`, its error signal [T, D] is written into `error_signal`.
struct segment_job {
  /// The segment name (the corpus tag Sprint looks up).
  std::string segment;
  matrix_slice log_posteriors;
  matrix_slice error_signal;
  /// Optional: a caller that may stop waiting (a timeout) closes this gate
  /// first; from then on nothing is written into `error_signal`, and the
  /// request fails with `cancelled`. A pool gives every job it is sent a
  /// gate, which it closes when it answers `cancelled` (it stopped).
  std::shared_ptr<output_gate> gate{};
};

/// Runs `write` (which writes into `job.error_signal`) unless the job's
/// output gate is closed; returns whether it ran. A job without a gate is
/// always written.
template <class Write>
bool write_output(const segment_job& job, Write&& write) {
  if (job.gate)
    return job.gate->write_if_open(std::forward<Write>(write));
  write();
  return true;
}

/// A segment's automaton in the protocol's layout (docs/protocol.md section 4).
struct segment_fsa {
  /// State 0 is the start, num_states - 1 the single final state.
  uint64_t num_states = 0;
  /// 3 * E values: all `from` states, then all `to` states, then all emission
  /// indices.
  std::vector<uint32_t> edges;
  /// E costs in -log space.
  std::vector<float> weights;

  /// Returns the number of edges.
  size_t num_edges() const noexcept { return weights.size(); }
};

/// What an FSA export names: a segment of the worker's corpus (RASR's
/// `export_allophone_state_fsa_by_segment_name`) or a word sequence given
/// directly (`export_allophone_state_fsa_by_orthography`).
enum class fsa_source : uint8_t { segment_name, orthography };

/// One FSA export request: a segment name or an orthography, by `source`.
struct fsa_query {
  /// How `text` is looked up.
  fsa_source source = fsa_source::segment_name;
  /// The segment name or the orthography (for sprint-sim, the label
  /// sequence as in its corpus file: "3 17 5").
  std::string text;
};

/// Returns "segment_name" or "orthography" (anything else: "unknown").
inline std::string to_string(fsa_source source) {
  switch (source) {
  case fsa_source::segment_name:
    return "segment_name";
  case fsa_source::orthography:
    return "orthography";
  }
  return "unknown";
}

/// Returns "segment 'x'" or "orthography 'x'": how errors name a query.
inline std::string describe(const fsa_query& query) {
  return (query.source == fsa_source::orthography ? "orthography '" : "segment '") + query.text +
         "'";
}

/// Counters of one worker (one Sprint child and its restarts).
struct worker_stats {
  /// Requests answered successfully.
  uint64_t requests_served = 0;
  /// Requests that ended in an error.
  uint64_t requests_failed = 0;
  /// Time with a request in flight, in nanoseconds.
  int64_t busy_ns = 0;
  /// Children started after the first one (after failures); in a pool's
  /// stats, also the workers that replaced terminated ones in the slot.
  uint32_t restarts = 0;
  /// The current child's pid, or -1.
  int32_t pid = -1;
  /// Requests answered through the child's shared region instead of the
  /// pipes (`sharedMemory`, docs/protocol.md section 7).
  uint64_t shared_memory_requests = 0;
};

/// CAF inspection (serialization, rendering) of `segment_fsa`.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, segment_fsa& x) {
  return f(x.num_states, x.edges, x.weights);
}

/// CAF inspection of `fsa_query` (the source as its underlying byte).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fsa_query& x) {
  return f(x.source, x.text);
}

/// CAF inspection of `worker_stats`.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_stats& x) {
  return f(x.requests_served, x.requests_failed, x.busy_ns, x.restarts, x.pid,
           x.shared_memory_requests);
}

} // namespace sprintrt
