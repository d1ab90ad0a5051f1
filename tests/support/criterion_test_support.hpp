#pragma once

/// @file
/// Reference implementations and fixtures for the criterion and sim tests:
/// exhaustive path enumeration (the definition the recursions must match), the
/// CTC criterion by its textbook definition, seeded random posteriors and FSAs,
/// and a capture of spdlog warnings.

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "criterion/fsa.hpp"
#include "criterion/hmm_topology.hpp"
#include "criterion/matrix_views.hpp"

namespace sprintrt::criterion::test {

/// Every path of exactly T edges from the start to the final state, summed up.
struct brute_force_result {
  /// log of the sum over paths of exp(path score); -inf without paths.
  double log_total = 0;
  /// gamma[t, k]: the probability mass of the paths whose frame-t edge emits k.
  row_matrix_d gamma;
  /// The best path's score and its edges (empty without paths).
  double best_score = 0;
  std::vector<uint32_t> best_edges;
  /// The number of paths.
  size_t num_paths = 0;
};

/// Enumerates all paths of `automaton` over `log_posteriors` by depth-first
/// search: exponential, for T up to about 6.
brute_force_result enumerate_paths(const fsa& automaton, const row_matrix_f& log_posteriors);

/// -log p(labels | x) by the CTC definition: the sum over all D^T symbol
/// sequences whose collapse (merge repeats, drop blanks) equals `labels`.
double ctc_by_definition(const std::vector<uint32_t>& labels, uint32_t blank,
                         const row_matrix_f& log_posteriors);

/// Row-wise log_softmax of `logits`, computed in double, rounded to float.
row_matrix_f log_softmax(const row_matrix_d& logits);

/// Normally distributed logits [T, D] with standard deviation `scale`.
row_matrix_d random_logits(Eigen::Index frames, Eigen::Index classes, std::mt19937& rng,
                           double scale = 1.5);

/// log_softmax of `random_logits` (criterion/random_posteriors.hpp, scale 1.5).
row_matrix_f random_log_posteriors(Eigen::Index frames, Eigen::Index classes, std::mt19937& rng);

/// A random FSA: `num_states` states, `num_edges` edges with random ends,
/// emissions below `classes` and weights in [-0.5, 2], some +inf.
fsa random_fsa(uint32_t num_states, uint32_t num_edges, uint32_t classes, std::mt19937& rng);

/// `count` labels drawn uniformly from 0..classes-1 without `blank`.
std::vector<uint32_t> random_labels(size_t count, uint32_t classes, uint32_t blank,
                                    std::mt19937& rng);

/// Every label sequence over `labels` of at most `max_length` labels, the
/// empty one first, shorter before longer.
std::vector<std::vector<uint32_t>> all_sequences(const std::vector<uint32_t>& labels,
                                                 size_t max_length);

/// HMM options with distinct costs and silence column 0 everywhere, so that
/// a wrong transition shows in every score.
hmm_options distinct_hmm_costs();

/// Returns how many times `operator new` ran in this process so far (the test
/// binary replaces it to count): lets tests pin that a warmed-up workspace does
/// not allocate.
size_t allocation_count() noexcept;

/// Unwraps an expected value in a test, failing with the rendered error.
template <class T>
T unwrap(caf::expected<T> value) {
  if (!value)
    FAIL("unexpected error: " << render(value.error()));
  return std::move(*value);
}

/// Replaces sprintrt's logger while alive, recording what is logged; then
/// restores the default.
class log_capture {
public:
  log_capture();
  ~log_capture();
  log_capture(const log_capture&) = delete;
  log_capture& operator=(const log_capture&) = delete;

  /// Returns the messages logged so far, formatted without time stamps.
  std::vector<std::string> messages() const;

private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

} // namespace sprintrt::criterion::test

namespace Catch {

/// Prints FSA edges in failed comparisons.
template <>
struct StringMaker<sprintrt::criterion::fsa_edge> {
  static std::string convert(const sprintrt::criterion::fsa_edge& edge) {
    return "{" + sprintrt::criterion::to_string(edge) + "}";
  }
};

} // namespace Catch
