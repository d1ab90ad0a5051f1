#include "criterion/sequence_criterion.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "criterion/corpus.hpp"
#include "criterion/ctc_topology.hpp"
#include "criterion/denominator.hpp"
#include "criterion/hmm_topology.hpp"
#include "sequence_reference.hpp"
#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using sprintrt::errc;
using sprintrt::error_message;
using test::unwrap;

namespace {

constexpr sequence_kind all_kinds[] = {sequence_kind::mmi, sequence_kind::bmmi,
                                       sequence_kind::smbr};

const char* name_of(sequence_kind kind) {
  return kind == sequence_kind::mmi ? "mmi" : kind == sequence_kind::bmmi ? "bmmi" : "smbr";
}

hmm_topology make_hmm() {
  return unwrap(hmm_topology::make(test::distinct_hmm_costs()));
}

/// The criterion through `sequence_loss` for `reference` against
/// `hypotheses` (the reference among them), its denominator expanded from
/// the hypotheses' acceptor as a denominator file's is.
struct computed {
  full_sum_result result;
  row_matrix_f error_signal;
};

computed compute(sequence_kind kind, const sequence_scales& scales, const topology& top,
                 const hypothesis& reference, const std::vector<hypothesis>& hypotheses,
                 const row_matrix_f& log_posteriors) {
  const auto numerator = unwrap(top.build("ref", reference.labels));
  const auto graph = unwrap(top.expand("hypotheses", hypotheses_acceptor(hypotheses, scales.lm)));
  uint32_t max_emission = 0;
  for (const auto& edge : graph.edges)
    max_emission = std::max(max_emission, edge.emission);
  const sequence_segment segment{"seg", &numerator, &graph, max_emission,
                                 scales.lm * reference.cost};
  computed out;
  out.error_signal.resize(log_posteriors.rows(), log_posteriors.cols());
  sequence_workspace engine;
  out.result =
      unwrap(sequence_loss(kind, scales, segment, log_posteriors, out.error_signal, engine));
  return out;
}

void check_against_definition(sequence_kind kind, const sequence_scales& scales,
                              const topology& top, const hypothesis& reference,
                              const std::vector<hypothesis>& hypotheses,
                              const row_matrix_f& log_posteriors) {
  INFO(name_of(kind) << " with " << top.name() << ", T = " << log_posteriors.rows() << ", KAPPA "
                     << scales.am << ", LAMBDA " << scales.lm << ", B " << scales.boost);
  const auto want =
      test::sequence_by_definition(kind, scales, top, reference, hypotheses, log_posteriors);
  const auto got = compute(kind, scales, top, reference, hypotheses, log_posteriors);
  REQUIRE(std::isfinite(want.loss));
  CHECK_FALSE(got.result.skipped);
  CHECK(got.result.loss == Approx(want.loss).epsilon(1e-10).margin(1e-12));
  const double worst = (got.error_signal.cast<double>() - want.error_signal).cwiseAbs().maxCoeff();
  CHECK(worst <= 1e-6);
}

} // namespace

TEST_CASE("mmi, bmmi and smbr equal their definitions over every path, with CTC") {
  const ctc_topology ctc{0};
  std::mt19937 rng{11};
  const hypothesis reference{{1, 2}, 0.3};
  const std::vector<hypothesis> hypotheses = {
      {{2, 1}, 0.5}, {{1, 2}, 0.3}, {{1, 1}, 1.25}, {{3}, -0.2}, {{}, 2.0}};
  for (const auto& scales : {sequence_scales{1, 1, 0}, sequence_scales{0.7, 1.3, 0.5}})
    for (auto kind : all_kinds)
      for (Eigen::Index frames : {2, 4, 5})
        check_against_definition(kind, scales, ctc, reference, hypotheses,
                                 test::random_log_posteriors(frames, 4, rng));
}

TEST_CASE("mmi, bmmi and smbr equal their definitions over every path, with an HMM") {
  const auto hmm = make_hmm();
  std::mt19937 rng{12};
  const hypothesis reference{{2, 1}, 0};
  const std::vector<hypothesis> hypotheses = {
      {{2, 1}, 0}, {{2}, 0.4}, {{1, 2}, 0.1}, {{2, 2}, 0.9}, {{}, 1.5}};
  for (const auto& scales : {sequence_scales{1, 1, 0}, sequence_scales{1.4, 0.6, 0.8}})
    for (auto kind : all_kinds)
      for (Eigen::Index frames : {3, 5})
        check_against_definition(kind, scales, hmm, reference, hypotheses,
                                 test::random_log_posteriors(frames, 3, rng));
}

TEST_CASE("the criteria of a label n-gram denominator equal their definitions") {
  // Every label sequence the n-gram allows, up to T labels (CTC and the HMM
  // need a frame per label), weighted by its n-gram cost.
  const auto segments = unwrap(corpus::from_string("a\t1 2\nb\t2 2 1\nc\t1\n"));
  const ctc_topology ctc{0};
  const auto hmm = make_hmm();
  std::mt19937 rng{13};
  for (uint32_t order : {1u, 2u, 3u})
    for (double smoothing : {0.0, 0.5}) {
      const label_lm_options options{order, smoothing};
      const auto lm = unwrap(label_lm::estimate(segments, options));
      for (const topology* top :
           {static_cast<const topology*>(&ctc), static_cast<const topology*>(&hmm)}) {
        const Eigen::Index frames = 4;
        std::vector<hypothesis> hypotheses;
        for (const auto& labels : test::all_sequences(lm.vocabulary(), frames))
          if (const double cost = lm.cost(labels); std::isfinite(cost))
            hypotheses.push_back({labels, cost});
        const sequence_scales scales{0.9, 0.8, 0.6};
        const auto competitors =
            unwrap(denominator::from_label_lm(segments, *top, options, scales.lm));
        const auto view = unwrap(competitors.lookup("b"));
        const std::vector<uint32_t> labels = {2, 2, 1};
        const hypothesis reference{labels, lm.cost(labels)};
        CHECK(view.reference_cost == Approx(scales.lm * reference.cost).epsilon(1e-14));
        const auto numerator = unwrap(top->build("b", labels));
        for (auto kind : all_kinds) {
          INFO(name_of(kind) << " with " << top->name() << ", order " << order << ", smoothing "
                             << smoothing);
          const auto x = test::random_log_posteriors(frames, 3, rng);
          const auto want =
              test::sequence_by_definition(kind, scales, *top, reference, hypotheses, x);
          row_matrix_f error_signal(frames, 3);
          sequence_workspace engine;
          const sequence_segment segment{"b", &numerator, view.graph, view.max_emission,
                                         view.reference_cost};
          const auto got = unwrap(sequence_loss(kind, scales, segment, x, error_signal, engine));
          CHECK(got.loss == Approx(want.loss).epsilon(1e-10).margin(1e-12));
          CHECK((error_signal.cast<double>() - want.error_signal).cwiseAbs().maxCoeff() <= 1e-6);
        }
      }
    }
}

TEST_CASE("the error signals are the gradients of the losses in the logits") {
  const ctc_topology ctc{0};
  std::mt19937 rng{14};
  const hypothesis reference{{1, 2}, 0};
  const std::vector<hypothesis> hypotheses = {{{1, 2}, 0}, {{2, 1}, 0.5}, {{1}, 0.2}};
  const sequence_scales scales{0.8, 1.2, 0.7};
  for (auto kind : all_kinds) {
    INFO(name_of(kind));
    const auto logits = test::random_logits(5, 4, rng);
    const auto at = compute(kind, scales, ctc, reference, hypotheses, test::log_softmax(logits));
    const double h = 0.01;
    for (Eigen::Index t = 0; t < logits.rows(); ++t)
      for (Eigen::Index k = 0; k < logits.cols(); ++k) {
        const auto loss = [&](double offset) {
          auto shifted = logits;
          shifted(t, k) += offset;
          return compute(kind, scales, ctc, reference, hypotheses, test::log_softmax(shifted))
              .result.loss;
        };
        const double derivative =
            (loss(-2 * h) - 8 * loss(-h) + 8 * loss(h) - loss(2 * h)) / (12 * h);
        const double signal = at.error_signal(t, k);
        INFO("frame " << t << ", class " << k << ": finite difference " << derivative
                      << ", error signal " << signal);
        CHECK(std::abs(derivative - signal) <=
              1e-3 * std::max(std::abs(derivative), std::abs(signal)) + 2e-5);
      }
  }
}

TEST_CASE("a denominator equal to the numerator gives MMI loss 0 and no error signal") {
  std::mt19937 rng{15};
  const auto hmm = make_hmm();
  const ctc_topology ctc{0};
  for (const topology* top :
       {static_cast<const topology*>(&ctc), static_cast<const topology*>(&hmm)}) {
    const hypothesis reference{{1, 1, 2}, 0.4};
    const auto got = compute(sequence_kind::mmi, {1.3, 0.9, 0}, *top, reference, {reference},
                             test::random_log_posteriors(7, 3, rng));
    CHECK(std::abs(got.result.loss) <= 1e-12);
    CHECK(got.error_signal.cwiseAbs().maxCoeff() <= 1e-6);
  }
}

TEST_CASE("losses and error signals keep the criteria's bounds") {
  std::mt19937 rng{16};
  const ctc_topology ctc{0};
  const hypothesis reference{{1, 2, 3}, 0};
  const std::vector<hypothesis> hypotheses = {
      {{1, 2, 3}, 0}, {{1, 3}, 0.1}, {{2, 2, 3}, 0.2}, {{1, 2, 3, 3}, 0.3}};
  for (int round = 0; round < 5; ++round) {
    const auto x = test::random_log_posteriors(9, 4, rng);
    const auto mmi = compute(sequence_kind::mmi, {}, ctc, reference, hypotheses, x);
    CHECK(mmi.result.loss >= 0);
    const auto smbr = compute(sequence_kind::smbr, {}, ctc, reference, hypotheses, x);
    CHECK(smbr.result.loss <= 0);
    CHECK(smbr.result.loss >= -9);
    for (const auto* signal : {&mmi.error_signal, &smbr.error_signal})
      CHECK(signal->rowwise().sum().cwiseAbs().maxCoeff() <= 1e-6);
    // bmmi with no boost is mmi.
    const auto bmmi = compute(sequence_kind::bmmi, {1, 1, 0}, ctc, reference, hypotheses, x);
    CHECK(bmmi.result.loss == Approx(mmi.result.loss).epsilon(1e-14));
  }
}

TEST_CASE("the best path's ties go to the first edge, uniform posteriors included") {
  // With uniform posteriors every CTC path of "1" over 3 frames scores the
  // same. Viterbi keeps the first best edge into each state: into the final
  // state that is the copy of B_0 -> L_1 (emits 1), and into B_0 its blank
  // loop, so the path is blank, blank, 1.
  const ctc_topology ctc{0};
  const auto numerator = unwrap(ctc.build("seg", std::vector<uint32_t>{1}));
  const row_matrix_d scores = row_matrix_d::Constant(3, 2, std::log(0.5));
  sequence_engine engine;
  const auto best = engine.best_path(to_wfsa(numerator), scores);
  REQUIRE(best);
  CHECK(*best == std::vector<uint32_t>{0, 0, 1});
}

TEST_CASE("a reference without a path of T frames skips the segment") {
  const ctc_topology ctc{0};
  test::log_capture logs;
  std::mt19937 rng{17};
  for (auto kind : all_kinds) {
    const hypothesis reference{{1, 1, 2}, 0};
    const auto got = compute(kind, {}, ctc, reference, {reference, {{1}, 0}},
                             test::random_log_posteriors(3, 3, rng));
    CHECK(got.result.skipped);
    CHECK(std::isinf(got.result.loss));
    CHECK(got.error_signal.isZero());
  }
  REQUIRE(logs.messages().size() == 3);
  CHECK(logs.messages()[0].find("segment 'seg' skipped") != std::string::npos);
}

TEST_CASE("a denominator without a path of T frames skips the segment") {
  // The reference fits 3 frames; the only hypothesis needs 6 (CTC's blanks
  // between repeated labels), so log Z_den is -inf: no loss can be formed.
  const ctc_topology ctc{0};
  test::log_capture logs;
  std::mt19937 rng{18};
  for (auto kind : all_kinds) {
    const hypothesis reference{{1}, 0};
    const auto got =
        compute(kind, {}, ctc, reference, {{{1, 1, 1}, 0}}, test::random_log_posteriors(3, 3, rng));
    CHECK(got.result.skipped);
    CHECK(std::isinf(got.result.loss));
    CHECK(got.error_signal.isZero());
  }
  REQUIRE(logs.messages().size() == 3);
  CHECK(logs.messages()[0].find("its denominator has no path of 3 frames") != std::string::npos);
}

TEST_CASE("bad input is an error naming the segment, and writes nothing") {
  const ctc_topology ctc{0};
  const auto numerator = unwrap(ctc.build("seg", std::vector<uint32_t>{1}));
  const auto graph = unwrap(
      ctc.expand("den", hypotheses_acceptor(std::vector<hypothesis>{{{1}, 0}, {{5}, 0}}, 1.0)));
  sequence_workspace engine;
  std::mt19937 rng{18};
  const auto x = test::random_log_posteriors(4, 3, rng);
  row_matrix_f out = row_matrix_f::Constant(4, 3, 7.0f);
  const sequence_segment too_wide{"seg", &numerator, &graph, 5, 0};
  auto result = sequence_loss(sequence_kind::mmi, {}, too_wide, x, out, engine);
  REQUIRE_FALSE(result);
  CHECK(result.error() == errc::invalid_input);
  CHECK(error_message(result.error()) ==
        "segment 'seg': the denominator emits label 5, which is not a class of the "
        "log-posteriors (they have 3 columns)");
  const auto fitting = to_wfsa(numerator);
  const sequence_segment segment{"seg", &numerator, &fitting, 1, 0};
  auto nan = x;
  nan(2, 1) = std::numeric_limits<float>::quiet_NaN();
  result = sequence_loss(sequence_kind::smbr, {}, segment, nan, out, engine);
  REQUIRE_FALSE(result);
  CHECK(error_message(result.error())
            .find("segment 'seg': log-posterior at frame 2, index 1 is "
                  "NaN") == 0);
  row_matrix_f wrong(3, 3);
  result = sequence_loss(sequence_kind::bmmi, {1, 1, 1}, segment, x, wrong, engine);
  REQUIRE_FALSE(result);
  CHECK(result.error() == errc::invalid_input);
  CHECK((out.array() == 7.0f).all());
}

TEST_CASE("check_scales names the parameter out of range") {
  CHECK(check_scales(sequence_kind::mmi, {}).empty());
  CHECK(check_scales(sequence_kind::mmi, {0, 1, 0}) == "am-scale 0 is not a finite number > 0");
  CHECK(check_scales(sequence_kind::smbr, {1, -1, 0}) == "lm-scale -1 is not a finite number >= 0");
  CHECK(check_scales(sequence_kind::bmmi, {1, 1, std::nan("")}) ==
        "boost nan is not a finite number >= 0");
  CHECK(check_scales(sequence_kind::mmi, {1, 1, 0.5}) == "boost applies to criterion bmmi only");
  CHECK(check_scales(sequence_kind::bmmi, {1, 1, 0.5}).empty());
}
