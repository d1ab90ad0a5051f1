// The full sum: the batch FSA is split into one `fsa` per sequence (its
// states renumbered from 0 at its start state), each run through a
// `full_sum_engine` on that sequence's frames, read in place. The engine
// computes the plain full sum for any finite (or -inf) scores, normalized or
// not, and rejects NaN and +inf.
//
// The sequence criteria: a shared denominator is converted and laid out
// once, before the threads start, and only read by them; each thread takes a
// block of the batch's sequences, cuts their numerators out of the batch FSA
// and runs `sequence_loss_block` over them: one scaled forward-backward of
// the shared denominator for the whole block. Per-sequence denominators are
// cut out like the numerators, a block per sequence.
//
// Threads take their tasks longest first; each has its own workspace, kept
// for the next call (worker_cache).

#include "criterion/batch_loss.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "criterion/batch_threads.hpp"
#include "criterion/frame_graph.hpp"
#include "criterion/full_sum.hpp"
#include "criterion/wfsa.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::criterion {

namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();

std::string text(int64_t value) {
  return std::to_string(value);
}

caf::error invalid(std::string message) {
  return make_error(errc::invalid_input, std::move(message));
}

const char* name_of(sequence_kind kind) {
  switch (kind) {
  case sequence_kind::mmi:
    return "mmi";
  case sequence_kind::bmmi:
    return "bmmi";
  case sequence_kind::smbr:
    return "smbr";
  }
  return "?";
}

/// Zeroes the gradient rows of sequence b from frame `from` on.
void clear_rows(const frames_view& x, int64_t b, int64_t from, float* gradient) {
  for (int64_t t = from; t < x.frames; ++t)
    std::memset(gradient + (t * x.batch + b) * x.classes, 0,
                static_cast<size_t>(x.classes) * sizeof(float));
}

// --- The full sum.

/// One thread's workspace for the full sum.
struct full_sum_worker {
  full_sum_worker() { engine.set_warn_on_skip(false); } // the caller reports skips
  full_sum_engine engine;
  std::vector<fsa_edge> edges;
  row_matrix_d gamma;
};

/// Computes sequence b into loss[b] and its gradient rows; returns an error
/// message, empty on success.
std::string full_sum_sequence(full_sum_worker& w, const batch_loss_inputs& in, int64_t b,
                              double* loss, float* gradient) {
  const frames_view& x = in.log_probs;
  const batch_fsa& graph = *in.numerator;
  const int64_t length = in.lengths[b];
  clear_rows(x, b, length, gradient);
  if (length == 0) {
    // The only path of no edges stays in the start state.
    loss[b] = graph.start(b) == graph.end(b) ? 0.0 : infinity;
    return {};
  }
  auto automaton = sequence_fsa(graph, b, w.edges);
  if (!automaton)
    return graph.name + ", sequence " + text(b) + ": " + error_message(automaton.error());
  const std::string name = "sequence " + text(b) + " of log_probs";
  w.gamma.resize(length, x.classes);
  auto result = w.engine.loss_and_occupancy(name, *automaton, x.sequence(b, length), w.gamma);
  if (!result)
    return error_message(result.error());
  loss[b] = result->loss;
  for (int64_t t = 0; t < length; ++t) {
    const double* gamma = w.gamma.row(t).data();
    float* row = gradient + (t * x.batch + b) * x.classes;
    for (int64_t k = 0; k < x.classes; ++k)
      row[k] = static_cast<float>(-gamma[k]);
  }
  return {};
}

std::string full_sum(const batch_loss_inputs& in, size_t threads, double* loss, float* gradient) {
  const batch_fsa& graph = *in.numerator;
  auto workers = worker_cache<full_sum_worker>::take(threads);
  auto error = run_sequences(
      threads, in.log_probs.batch,
      [&](int64_t b) { return in.lengths[b] * (graph.edge_count(b) + 1); },
      [&](size_t w, int64_t b) { return full_sum_sequence(*workers[w], in, b, loss, gradient); });
  worker_cache<full_sum_worker>::give_back(workers);
  return error;
}

// --- The sequence criteria.

/// One thread's workspace for a block of sequences.
struct sequence_worker {
  sequence_worker() { workspace.set_warn_on_skip(false); } // the caller reports skips
  sequence_workspace workspace;
  // Per sequence of the block: its numerator's edges and FSA, its
  // denominator (unless shared), and its name.
  std::vector<std::vector<fsa_edge>> edges;
  std::vector<fsa> numerators;
  std::vector<wfsa> denominators;
  std::vector<std::string> names;
  std::vector<sequence_job> jobs;
  std::vector<full_sum_result> results;
};

/// What every block of one call shares, read by the threads.
struct shared_inputs {
  const batch_loss_inputs& in;
  /// The denominator of every sequence when it has one sequence, its
  /// layout and its highest emission.
  const wfsa* graph = nullptr;
  const frame_graph* layout = nullptr;
  uint32_t max_emission = 0;
  /// The sequences whose denominator ran in each space, from every thread.
  std::atomic<uint64_t> scaled{0};
  std::atomic<uint64_t> log_space{0};
};

/// Computes the sequences `block` into loss[b] and their gradient rows;
/// returns an error message, empty on success.
std::string sequence_block(sequence_worker& w, shared_inputs& shared,
                           const std::vector<int64_t>& block, double* loss, float* gradient) {
  const batch_loss_inputs& in = shared.in;
  const frames_view& x = in.log_probs;
  const size_t count = block.size();
  w.edges.resize(count);
  w.numerators.clear();
  w.denominators.resize(count);
  w.names.resize(count);
  w.jobs.clear();
  std::vector<int64_t> members;
  for (size_t i = 0; i < count; ++i) {
    const int64_t b = block[i];
    const int64_t length = in.lengths[b];
    clear_rows(x, b, length, gradient);
    if (length == 0) {
      // Nothing to tell apart: 0 when the numerator has the empty path.
      loss[b] = in.numerator->start(b) == in.numerator->end(b) ? 0.0 : infinity;
      continue;
    }
    auto numerator = sequence_fsa(*in.numerator, b, w.edges[i]);
    if (!numerator)
      return in.numerator->name + ", sequence " + text(b) + ": " + error_message(numerator.error());
    w.numerators.push_back(std::move(*numerator));
    members.push_back(b);
  }
  for (size_t i = 0; i < members.size(); ++i) {
    const int64_t b = members[i];
    const wfsa* denominator = shared.graph;
    uint32_t den_max_emission = shared.max_emission;
    if (denominator == nullptr) {
      sequence_wfsa(*in.denominator, b, w.denominators[i]);
      denominator = &w.denominators[i];
      den_max_emission = max_emission(w.denominators[i]);
    }
    w.names[i] = "sequence " + text(b) + " of log_probs";
    const double cost = in.numerator_cost != nullptr ? in.numerator_cost[b] : 0.0;
    w.jobs.push_back(
        {{w.names[i], &w.numerators[i], denominator, den_max_emission, cost, shared.layout},
         x.data + b * x.sequence_stride,
         in.lengths[b],
         x.classes,
         x.frame_stride,
         gradient + b * x.classes,
         x.batch * x.classes});
  }
  w.results.resize(w.jobs.size());
  const auto before = w.workspace.stats();
  if (auto err = sequence_loss_block(*in.kind, in.scales, {w.jobs.data(), w.jobs.size()},
                                     {w.results.data(), w.results.size()}, w.workspace))
    return error_message(err);
  shared.scaled += w.workspace.stats().scaled - before.scaled;
  shared.log_space += w.workspace.stats().log_space - before.log_space;
  for (size_t i = 0; i < members.size(); ++i)
    loss[members[i]] = w.results[i].loss;
  return {};
}

// How many sequences sharing a denominator one block holds at most: wide
// enough for the products' efficiency, narrow enough to keep a few threads
// busy with a batch of 32.
constexpr int64_t shared_block_width = 8;

std::string sequence_criterion(shared_inputs& shared, size_t threads, double* loss,
                               float* gradient) {
  const batch_loss_inputs& in = shared.in;
  const int64_t batch = in.log_probs.batch;
  // A shared denominator: blocks of about `shared_block_width` sequences,
  // dealt out longest first so that the blocks' frames and work match. The
  // blocks depend on the batch alone, never on the threads, so that the
  // results do not either (a block's products sum in an order that may
  // depend on its width). Otherwise a block per sequence, taken longest
  // first.
  std::vector<int64_t> order(static_cast<size_t>(batch));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return in.lengths[x] > in.lengths[y]; });
  const auto shared_blocks =
      static_cast<size_t>((batch + shared_block_width - 1) / shared_block_width);
  std::vector<std::vector<int64_t>> blocks(shared.graph ? shared_blocks
                                                        : static_cast<size_t>(batch));
  for (size_t i = 0; i < order.size(); ++i)
    blocks[i % blocks.size()].push_back(order[i]);
  const auto work = [&](int64_t block) {
    int64_t sum = 0;
    for (const int64_t b : blocks[static_cast<size_t>(block)]) {
      const int64_t den_edges = in.denominator->edge_count(shared.graph ? 0 : b);
      sum += in.lengths[b] * (in.numerator->edge_count(b) + den_edges + 1);
    }
    return sum;
  };
  auto workers = worker_cache<sequence_worker>::take(threads);
  auto error = run_sequences(
      threads, static_cast<int64_t>(blocks.size()), work, [&](size_t w, int64_t block) {
        return sequence_block(*workers[w], shared, blocks[static_cast<size_t>(block)], loss,
                              gradient);
      });
  worker_cache<sequence_worker>::give_back(workers);
  return error;
}

} // namespace

caf::error check_lengths(const int64_t* lengths, int64_t batch, int64_t frames) {
  for (int64_t b = 0; b < batch; ++b)
    if (lengths[b] < 0 || lengths[b] > frames)
      return invalid("seq_lens[" + text(b) + "] is " + text(lengths[b]) + ", not in [0, " +
                     text(frames) + "] (log_probs' frames)");
  return {};
}

caf::expected<batch_loss_counts> batch_loss(const batch_loss_inputs& in, double* loss,
                                            float* gradient) {
  const frames_view& x = in.log_probs;
  const int64_t batch = x.batch;
  if (in.numerator == nullptr)
    return invalid("batch_loss: no FSA given");
  if (in.kind && in.denominator == nullptr)
    return invalid(std::string{"criterion "} + name_of(*in.kind) + " needs a denominator");
  if (!in.kind && in.denominator != nullptr)
    return invalid("the full sum takes no denominator");
  if (in.kind) {
    if (auto problem = check_scales(*in.kind, in.scales); !problem.empty())
      return invalid(problem);
  }
  if (in.numerator->sequences != batch)
    return invalid(in.numerator->name + " has " + text(in.numerator->sequences) +
                   " sequences for a batch of " + text(batch));
  if (in.denominator != nullptr && in.denominator->sequences != 1 &&
      in.denominator->sequences != batch)
    return invalid(in.denominator->name + " has " + text(in.denominator->sequences) +
                   " sequences for a batch of " + text(batch) +
                   " (one graph for every sequence, or one per sequence)");
  if (in.threads < 1)
    return invalid("num_threads must be at least 1, got " + text(in.threads));
  if (auto err = check_lengths(in.lengths, batch, x.frames))
    return err;
  if (auto err = check_and_group(*in.numerator, x.classes))
    return err;
  if (in.denominator != nullptr)
    if (auto err = check_and_group(*in.denominator, x.classes))
      return err;
  const auto threads = static_cast<size_t>(std::max<int64_t>(1, std::min(in.threads, batch)));
  if (!in.kind) {
    if (auto error = full_sum(in, threads, loss, gradient); !error.empty())
      return invalid(std::move(error));
    return batch_loss_counts{};
  }
  shared_inputs shared{in};
  wfsa graph;
  std::optional<frame_graph> layout;
  if (in.denominator->sequences == 1) {
    sequence_wfsa(*in.denominator, 0, graph);
    shared.graph = &graph;
    shared.max_emission = max_emission(graph);
    layout.emplace(lay_out(graph));
    shared.layout = &*layout;
  }
  if (auto error = sequence_criterion(shared, threads, loss, gradient); !error.empty())
    return invalid(std::move(error));
  return batch_loss_counts{shared.scaled.load(), shared.log_space.load()};
}

} // namespace sprintrt::criterion
