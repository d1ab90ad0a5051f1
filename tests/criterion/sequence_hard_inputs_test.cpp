// The sequence criteria on inputs that break naive scaling, against the
// log-space double reference (sequence_engine), and a block of segments
// sharing one denominator against the same segments one at a time.

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "criterion/ctc_topology.hpp"
#include "criterion/frame_graph.hpp"
#include "criterion/sequence_criterion.hpp"
#include "criterion/sequence_engine.hpp"
#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using test::unwrap;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// A dense denominator like a label bigram over `classes` columns: one state
// per column and a start state, every column reachable from every state,
// the edges into state q + 1 emitting q; zero-cost self-loops.
wfsa bigram_denominator(uint32_t classes, std::mt19937& rng) {
  std::uniform_real_distribution<double> cost(0.5, 5.0);
  wfsa graph;
  graph.add_state(0, wfsa::none);
  for (uint32_t k = 0; k < classes; ++k)
    graph.add_state(wfsa::none, 0);
  // An unreachable state with edges of its own.
  const uint32_t unreachable = graph.add_state(wfsa::none, 0);
  for (uint32_t p = 0; p <= classes; ++p)
    for (uint32_t k = 0; k < classes; ++k)
      graph.edges.push_back({p, k + 1, k, p == k + 1 ? 0.0 : cost(rng)});
  graph.edges.push_back({unreachable, 1, 0, 0.0});
  return graph;
}

// log_softmax of N(0, spread) logits, in float as a network gives them.
row_matrix_f peaked(Eigen::Index frames, Eigen::Index classes, double spread, std::mt19937& rng) {
  return test::log_softmax(test::random_logits(frames, classes, rng, spread));
}

struct reference_result {
  double loss = 0;
  bool skipped = false;
  row_matrix_d gradient;
};

// docs/sequence-training.md's definitions, all in log space and double.
reference_result reference(sequence_kind kind, const sequence_scales& scales, const fsa& numerator,
                           const wfsa& denominator, const row_matrix_f& log_posteriors) {
  const row_matrix_d scores = scales.am * log_posteriors.cast<double>();
  reference_result out{0, false, row_matrix_d::Zero(scores.rows(), scores.cols())};
  sequence_engine engine;
  const wfsa num = to_wfsa(numerator);
  const auto best = engine.best_path(num, scores);
  if (kind != sequence_kind::mmi && !best)
    return {inf, true, out.gradient};
  if (kind == sequence_kind::smbr) {
    if (!std::isfinite(engine.run(denominator, scores)))
      return {inf, true, out.gradient};
    out.loss = -engine.expect_accuracy(*best, -scales.am, out.gradient);
    return out;
  }
  const double log_num = engine.run(num, scores);
  if (!std::isfinite(log_num))
    return {inf, true, out.gradient};
  engine.add_occupancy(-scales.am, out.gradient);
  row_matrix_d den_scores = scores;
  if (kind == sequence_kind::bmmi)
    for (Eigen::Index t = 0; t < scores.rows(); ++t)
      den_scores(t, (*best)[static_cast<size_t>(t)]) -= scales.boost;
  const double log_den = engine.run(denominator, den_scores);
  if (!std::isfinite(log_den))
    return {inf, true, row_matrix_d::Zero(scores.rows(), scores.cols())};
  engine.add_occupancy(scales.am, out.gradient);
  out.loss = log_den - log_num;
  return out;
}

std::vector<uint32_t> random_labels(size_t count, uint32_t classes, std::mt19937& rng) {
  std::uniform_int_distribution<uint32_t> label(1, classes - 1);
  std::vector<uint32_t> out(count);
  for (auto& k : out)
    k = label(rng);
  return out;
}

} // namespace

TEST_CASE("long segments, peaked posteriors and extreme scales: every criterion exact") {
  std::mt19937 rng{81};
  const uint32_t classes = 10;
  const auto denominator = bigram_denominator(classes, rng);
  const auto layout = lay_out(denominator);
  REQUIRE(layout.is_dense);
  const ctc_topology ctc{0};
  struct setting {
    Eigen::Index frames;
    double spread;
    double am;
  };
  for (const auto& s : {setting{3000, 2.0, 1.0}, setting{1500, 8.0, 1.0}, setting{1500, 8.0, 0.1},
                        setting{1500, 8.0, 10.0}}) {
    const auto numerator = unwrap(ctc.build("seg", random_labels(40, classes, rng)));
    const auto x = peaked(s.frames, classes, s.spread, rng);
    for (const auto kind : {sequence_kind::mmi, sequence_kind::bmmi, sequence_kind::smbr}) {
      const sequence_scales scales{s.am, 1, kind == sequence_kind::bmmi ? 0.5 : 0.0};
      const sequence_segment segment{"seg", &numerator, &denominator, classes - 1, 0, &layout};
      row_matrix_f error_signal(s.frames, classes);
      sequence_workspace workspace;
      const auto got = unwrap(sequence_loss(kind, scales, segment, x, error_signal, workspace));
      const auto want = reference(kind, scales, numerator, denominator, x);
      INFO("T " << s.frames << ", logits N(0, " << s.spread << "), am-scale " << s.am
                << ", criterion " << static_cast<int>(kind) << ", scaled "
                << workspace.stats().scaled << ", log space " << workspace.stats().log_space);
      REQUIRE(got.skipped == want.skipped);
      // Peaked posteriors at full scale leave the numerator's forward and
      // backward mass on disjoint states (each flushing the other's): the
      // check hands those back. The others stay in probability space.
      if (s.spread < 8 || s.am < 1)
        CHECK(workspace.stats().scaled == 1);
      CHECK(got.loss == Approx(want.loss).epsilon(1e-5));
      CHECK((error_signal.cast<double>() - want.gradient).cwiseAbs().maxCoeff() <= 1e-4);
    }
  }
}

TEST_CASE("a segment the scaled recursions cannot represent is computed in log space") {
  std::mt19937 rng{82};
  const uint32_t classes = 6;
  const auto denominator = bigram_denominator(classes, rng);
  const auto layout = lay_out(denominator);
  const ctc_topology ctc{0};
  const auto numerator = unwrap(ctc.build("seg", std::vector<uint32_t>{1, 2, 3}));
  auto x = peaked(30, classes, 1.0, rng);
  // -1e4 at a column the denominator emits: beyond double's range beside 0.
  x(10, 4) = -1e4f;
  const sequence_segment segment{"seg", &numerator, &denominator, classes - 1, 0, &layout};
  row_matrix_f error_signal(30, classes);
  sequence_workspace workspace;
  const auto got =
      unwrap(sequence_loss(sequence_kind::mmi, {}, segment, x, error_signal, workspace));
  CHECK(workspace.stats().log_space == 1);
  CHECK(workspace.stats().scaled == 0);
  const auto want = reference(sequence_kind::mmi, {}, numerator, denominator, x);
  CHECK(got.loss == Approx(want.loss).epsilon(1e-12));
  CHECK((error_signal.cast<double>() - want.gradient).cwiseAbs().maxCoeff() <= 1e-6);

  // The same without the extreme value: scaled.
  x(10, 4) = -3;
  unwrap(sequence_loss(sequence_kind::mmi, {}, segment, x, error_signal, workspace));
  CHECK(workspace.stats().scaled == 1);
}

TEST_CASE("a block sharing one denominator equals its segments one at a time") {
  std::mt19937 rng{83};
  const uint32_t classes = 8;
  const auto denominator = bigram_denominator(classes, rng);
  const auto layout = lay_out(denominator);
  const ctc_topology ctc{0};
  const std::vector<Eigen::Index> lengths = {40, 17, 33, 5, 40};
  const Eigen::Index frames = 40, batch = static_cast<Eigen::Index>(lengths.size());
  // [T, B, D] as a trainer lays it out.
  std::vector<float> x(static_cast<size_t>(frames * batch * classes));
  const auto one = peaked(frames * batch, classes, 2.0, rng);
  std::copy(one.data(), one.data() + one.size(), x.begin());
  std::vector<fsa> numerators;
  for (Eigen::Index b = 0; b < batch; ++b)
    numerators.push_back(unwrap(ctc.build("seg", random_labels(b == 3 ? 4 : 3, classes, rng))));
  for (const auto kind : {sequence_kind::mmi, sequence_kind::bmmi, sequence_kind::smbr}) {
    const sequence_scales scales{0.7, 1, kind == sequence_kind::bmmi ? 0.3 : 0.0};
    std::vector<float> out(x.size(), 7.0f);
    std::vector<std::string> names;
    for (Eigen::Index b = 0; b < batch; ++b)
      names.push_back("sequence " + std::to_string(b));
    std::vector<sequence_job> jobs;
    for (Eigen::Index b = 0; b < batch; ++b)
      jobs.push_back({{names[b], &numerators[b], &denominator, classes - 1, 0, &layout},
                      x.data() + b * classes,
                      lengths[b],
                      classes,
                      batch * classes,
                      out.data() + b * classes,
                      batch * classes});
    std::vector<full_sum_result> results(jobs.size());
    sequence_workspace workspace;
    workspace.set_warn_on_skip(false);
    REQUIRE_FALSE(sequence_loss_block(kind, scales, {jobs.data(), jobs.size()},
                                      {results.data(), results.size()}, workspace));
    // Sequence 3 has 4 labels in 5 frames: fine for CTC; all have paths.
    for (Eigen::Index b = 0; b < batch; ++b) {
      const Eigen::Map<const row_matrix_f, 0, Eigen::OuterStride<>> input{
          x.data() + b * classes, lengths[b], classes, Eigen::OuterStride<>{batch * classes}};
      const row_matrix_f alone_input = input;
      row_matrix_f alone(lengths[b], classes);
      sequence_workspace single;
      const auto want =
          unwrap(sequence_loss(kind, scales, jobs[b].segment, alone_input, alone, single));
      INFO("criterion " << static_cast<int>(kind) << ", sequence " << b);
      CHECK(results[b].loss == Approx(want.loss).epsilon(1e-12));
      const Eigen::Map<const row_matrix_f, 0, Eigen::OuterStride<>> got{
          out.data() + b * classes, lengths[b], classes, Eigen::OuterStride<>{batch * classes}};
      CHECK((got - alone).cwiseAbs().maxCoeff() <= 1e-6f);
    }
    CHECK(workspace.stats().scaled == static_cast<uint64_t>(batch));
  }
}
