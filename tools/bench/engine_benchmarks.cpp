// The scaled forward-backward engine over a batch sharing a label-bigram
// denominator (the denominator of lattice-free MMI), against the same
// matrix products alone through the same GEMM: the share of the machine's
// practical peak the engine reaches (BENCHMARKS.md, "Sequence criteria").

#include <random>
#include <string>
#include <vector>

#include "criterion/corpus.hpp"
#include "criterion/ctc_topology.hpp"
#include "criterion/dense_product.hpp"
#include "criterion/frame_graph.hpp"
#include "criterion/label_lm.hpp"
#include "criterion/random_posteriors.hpp"
#include "criterion/scaled_forward_backward.hpp"
#include "tools/bench/bench.hpp"

namespace sprintrt::bench {

namespace {

using criterion::row_matrix_d;

constexpr uint32_t seed = 20261207;

struct batch_shape {
  size_t batch;
  size_t frames;
  size_t dim;
};

/// The CTC expansion of the label bigram of `shape.batch` random label
/// sequences of 20-60 labels over `shape.dim` columns (blank 0), laid out
/// for the engine: lattice-free MMI's denominator, as `fsa_loss` builds it.
criterion::frame_graph bigram_layout(const batch_shape& shape) {
  std::mt19937 rng{seed};
  std::uniform_int_distribution<size_t> count{20, 60};
  std::uniform_int_distribution<uint32_t> label{1, static_cast<uint32_t>(shape.dim - 1)};
  std::string text;
  for (size_t b = 0; b < shape.batch; ++b) {
    text += "seq-" + std::to_string(b) + "\t";
    const size_t n = count(rng);
    for (size_t i = 0; i < n; ++i)
      text += (i ? " " : "") + std::to_string(label(rng));
    text += "\n";
  }
  const auto corpus = unwrap(criterion::corpus::from_string(text), "corpus");
  const auto lm = unwrap(criterion::label_lm::estimate(corpus, {2, 1.0}), "label lm");
  const criterion::ctc_topology ctc{0};
  const auto expanded = unwrap(ctc.expand("denominator", lm.acceptor(1.0)), "expansion");
  return criterion::lay_out(criterion::single_ended(expanded));
}

/// Forward and backward with occupancies over the shared layout, one block
/// of `shape.batch` sequences of random log-posteriors, on one thread.
void engine(bench_state& state, const batch_shape& shape) {
  const auto layout = bigram_layout(shape);
  if (!layout.is_dense)
    throw std::runtime_error("the bigram's layout is not dense");
  std::vector<row_matrix_d> scores(shape.batch);
  std::vector<row_matrix_d> gradients(shape.batch, row_matrix_d(shape.frames, shape.dim));
  std::vector<criterion::scaled_sequence> block;
  for (size_t b = 0; b < shape.batch; ++b) {
    criterion::row_matrix_f lp(shape.frames, shape.dim);
    criterion::fill_random_log_posteriors(lp.data(), shape.frames, shape.dim, uint64_t{seed + b});
    scores[b] = lp.cast<double>();
    block.push_back(criterion::scaled_sequence::of(scores[b], &gradients[b]));
  }
  std::vector<criterion::scaled_outcome> outcomes(shape.batch);
  criterion::scaled_forward_backward run;
  run_warm(state, [&] {
    run.run(layout, {block.data(), block.size()}, true, 1.0, {outcomes.data(), outcomes.size()});
    for (const auto& outcome : outcomes)
      if (!outcome.exact)
        throw std::runtime_error(std::string{"a sequence was handed back: "} + outcome.why);
  });
  const double states = layout.num_states;
  // Two products of [B, S] x [S, S] per frame (forward, backward).
  state.counters["GFLOP/s"] =
      benchmark::Counter(4.0 * shape.batch * states * states * static_cast<double>(shape.frames),
                         benchmark::Counter::kIsIterationInvariantRate);
  state.counters["frame_states"] = states;
}

/// The engine's matrix products alone: 2 T products of [B, S] x [S, S]
/// through the same GEMM (`dense_product`), no emissions, no scaling.
void products(bench_state& state, const batch_shape& shape) {
  const auto layout = bigram_layout(shape);
  const auto states = static_cast<Eigen::Index>(layout.num_states);
  const auto rows = static_cast<Eigen::Index>(shape.batch);
  Eigen::MatrixXd in = Eigen::MatrixXd::Random(rows, states).cwiseAbs();
  Eigen::MatrixXd out(rows, states);
  run_warm(state, [&] {
    for (size_t t = 0; t < 2 * shape.frames; ++t) {
      criterion::dense_product(in.data(), rows, layout.dense.data(), states, t % 2 == 1,
                               out.data());
      in.swap(out);
    }
    benchmark::DoNotOptimize(in.data());
  });
  state.counters["GFLOP/s"] = benchmark::Counter(
      4.0 * shape.batch * static_cast<double>(states * states) * static_cast<double>(shape.frames),
      benchmark::Counter::kIsIterationInvariantRate);
}

} // namespace

void register_engine_benchmarks() {
  const batch_shape shape{32, 300, 80};
  const size_list sizes{{"B", shape.batch}, {"T", shape.frames}, {"D", shape.dim}};
  const std::string name = shape_name(sizes);
  add_benchmark("criterion/scaled/bigram/" + name, benchmark::kMillisecond, timing::cpu,
                [shape](bench_state& state) { engine(state, shape); });
  add_benchmark("baseline/gemm/bigram/" + name, benchmark::kMillisecond, timing::cpu,
                [shape](bench_state& state) { products(state, shape); });
  declare_figure("scaled forward-backward of a shared label-bigram denominator, one thread (" +
                     shape_text(sizes) + "), against its matrix products alone (" +
                     criterion::dense_product_target() + ")",
                 "ms/batch", "criterion/scaled/bigram/" + name, "baseline/gemm/bigram/" + name);
}

} // namespace sprintrt::bench
