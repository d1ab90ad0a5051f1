#include "sim/corpus_criterion.hpp"

#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "criterion/ctc_topology.hpp"
#include "criterion/hmm_topology.hpp"
#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using namespace sprintrt::sim;
using sprintrt::errc;
using sprintrt::error_message;
using test::unwrap;

namespace {

corpus_criterion make_ctc_criterion() {
  return corpus_criterion{unwrap(corpus::from_string("a\t1 2 2\nb\t3\nbad\t0 1\n")),
                          std::make_shared<ctc_topology>(0)};
}

} // namespace

TEST_CASE("the criterion computes a segment's full-sum from its corpus labels") {
  auto crit = make_ctc_criterion();
  CHECK(crit.fsa_topology().name() == "ctc");
  CHECK(crit.segments().size() == 3);
  std::mt19937 rng{31};
  const auto log_posteriors = test::random_log_posteriors(6, 4, rng);
  row_matrix_f error_signal(6, 4);
  const auto result = unwrap(crit.loss_and_error_signal("a", log_posteriors, error_signal));
  CHECK(result.loss == Approx(test::ctc_by_definition({1, 2, 2}, 0, log_posteriors)).epsilon(1e-9));
  // Again, now from the cached FSA.
  row_matrix_f again(6, 4);
  CHECK(unwrap(crit.loss_and_error_signal("a", log_posteriors, again)).loss == result.loss);
  CHECK(again == error_signal);
}

TEST_CASE("the criterion exports the topology's FSA of a segment") {
  auto crit = make_ctc_criterion();
  const auto exported = unwrap(crit.segment_fsa("b"));
  const auto built = unwrap(ctc_topology{0}.build("b", std::vector<uint32_t>{3}));
  CHECK(exported.num_states() == built.num_states());
  CHECK(exported.edges() == built.edges());
}

TEST_CASE("the criterion aligns a segment") {
  hmm_options options;
  auto crit = corpus_criterion{unwrap(corpus::from_string("s\t2 1\n")),
                               std::make_shared<hmm_topology>(unwrap(hmm_topology::make(options)))};
  row_matrix_f log_posteriors = row_matrix_f::Constant(4, 3, -10.0f);
  for (Eigen::Index t = 0; t < 4; ++t)
    log_posteriors(t, t < 3 ? 2 : 1) = -0.01f;
  const auto alignment = unwrap(crit.align("s", log_posteriors));
  CHECK(alignment.emissions == std::vector<uint32_t>{2, 2, 2, 1});
}

TEST_CASE("the criterion reports unknown segments and topology errors") {
  auto crit = make_ctc_criterion();
  row_matrix_f log_posteriors = row_matrix_f::Zero(3, 4);
  row_matrix_f error_signal(3, 4);
  auto unknown = crit.loss_and_error_signal("zzz", log_posteriors, error_signal);
  REQUIRE(!unknown);
  CHECK(unknown.error() == errc::unknown_segment);
  CHECK(error_message(unknown.error()).find("'zzz'") != std::string::npos);
  CHECK(!crit.segment_fsa("zzz"));
  CHECK(crit.align("zzz", log_posteriors).error() == errc::unknown_segment);
  // Label 0 is the blank.
  auto bad = crit.segment_fsa("bad");
  REQUIRE(!bad);
  CHECK(error_message(bad.error()) == "segment 'bad': label number 1 is 0, the CTC blank index");
}

TEST_CASE("the topology's errors for an orthography name the orthography, once") {
  auto crit = make_ctc_criterion();
  auto bad = crit.orthography_fsa("1 0 2");
  REQUIRE(!bad);
  CHECK(bad.error() == errc::invalid_input);
  CHECK(error_message(bad.error()) ==
        "orthography '1 0 2': label number 2 is 0, the CTC blank index");
  auto hmm_crit = corpus_criterion{unwrap(corpus::from_string("a\t1 2\n")),
                                   std::make_shared<hmm_topology>(unwrap(hmm_topology::make({})))};
  auto silent = hmm_crit.orthography_fsa("");
  REQUIRE(!silent);
  CHECK(error_message(silent.error()) == "orthography '' has no labels, and the HMM topology has "
                                         "no silence state to align it to");
}

TEST_CASE("the criterion's exported FSA of a request: a segment's cached, an orthography's built") {
  auto crit = make_ctc_criterion();
  std::optional<fsa> built;
  const fsa* segment = unwrap(crit.exported_fsa(sprintrt::fsa_source::segment_name, "a", built));
  CHECK(segment == unwrap(crit.cached_fsa("a")));
  CHECK(!built);
  const fsa* orthography =
      unwrap(crit.exported_fsa(sprintrt::fsa_source::orthography, "1 2 2", built));
  REQUIRE(built);
  CHECK(orthography == &*built);
  CHECK(orthography->edges() == segment->edges());
  CHECK(orthography->num_states() == segment->num_states());
  // Errors are those of the two ways: an unknown segment, a bad orthography.
  std::optional<fsa> none;
  CHECK(crit.exported_fsa(sprintrt::fsa_source::segment_name, "zzz", none).error() ==
        errc::unknown_segment);
  auto bad = crit.exported_fsa(sprintrt::fsa_source::orthography, "1 0 2", none);
  REQUIRE(!bad);
  CHECK(error_message(bad.error()) ==
        "orthography '1 0 2': label number 2 is 0, the CTC blank index");
  CHECK(!none);
}

TEST_CASE("a warmed-up criterion computes a known segment without allocating") {
  auto crit = make_ctc_criterion();
  std::mt19937 rng{32};
  const auto log_posteriors = test::random_log_posteriors(8, 4, rng);
  row_matrix_f error_signal(8, 4);
  unwrap(crit.loss_and_error_signal("a", log_posteriors, error_signal));
  unwrap(crit.loss_and_error_signal("b", log_posteriors, error_signal));
  const size_t before = test::allocation_count();
  const auto result = crit.loss_and_error_signal("a", log_posteriors, error_signal);
  CHECK(test::allocation_count() == before);
  CHECK(result);
}

TEST_CASE("criterion zero answers loss 0 and zeros for any segment, after the input checks") {
  auto crit = corpus_criterion{unwrap(corpus::from_string("a\t1 2 2\nb\t3\nbad\t0 1\n")),
                               std::make_shared<ctc_topology>(0), criterion_kind::zero};
  CHECK(crit.kind() == criterion_kind::zero);
  std::mt19937 rng{33};
  const auto log_posteriors = test::random_log_posteriors(5, 4, rng);
  // Known, unknown, with a label beyond the width, or without an FSA (label
  // 0 is the blank), and too short for its labels: all loss 0, no FSA built.
  for (auto segment : {"a", "zzz", "bad"}) {
    INFO(segment);
    row_matrix_f error_signal = row_matrix_f::Constant(5, 4, 7.0f);
    const auto result = unwrap(crit.loss_and_error_signal(segment, log_posteriors, error_signal));
    CHECK(result.loss == 0.0);
    CHECK_FALSE(result.skipped);
    CHECK(error_signal == row_matrix_f::Zero(5, 4));
  }
  row_matrix_f one_frame = row_matrix_f::Constant(1, 1, -1.0f);
  row_matrix_f one_out(1, 1);
  CHECK(unwrap(crit.loss_and_error_signal("a", one_frame, one_out)).loss == 0.0);
  // The posteriors and the output are still checked.
  auto with_inf = log_posteriors;
  with_inf(1, 2) = std::numeric_limits<float>::infinity();
  row_matrix_f error_signal(5, 4);
  auto bad = crit.loss_and_error_signal("a", with_inf, error_signal);
  REQUIRE(!bad);
  CHECK(bad.error() == errc::invalid_input);
  CHECK(error_message(bad.error()).find("index 2 is +inf") != std::string::npos);
  row_matrix_f wrong_shape(5, 3);
  CHECK(crit.loss_and_error_signal("a", log_posteriors, wrong_shape).error() ==
        errc::invalid_input);
  row_matrix_f empty(0, 4);
  row_matrix_f empty_out(0, 4);
  CHECK(crit.loss_and_error_signal("a", empty, empty_out).error() == errc::invalid_input);
  // FSA exports still come from the corpus and topology.
  CHECK(unwrap(crit.segment_fsa("b")).edges() ==
        unwrap(ctc_topology{0}.build("b", std::vector<uint32_t>{3})).edges());
  CHECK(crit.segment_fsa("zzz").error() == errc::unknown_segment);
}

TEST_CASE("criterion zero does not allocate") {
  auto crit = corpus_criterion{unwrap(corpus::from_string("a\t1\n")),
                               std::make_shared<ctc_topology>(0), criterion_kind::zero};
  std::mt19937 rng{34};
  const auto log_posteriors = test::random_log_posteriors(8, 4, rng);
  row_matrix_f error_signal(8, 4);
  const size_t before = test::allocation_count();
  const auto result = crit.loss_and_error_signal("unknown", log_posteriors, error_signal);
  CHECK(test::allocation_count() == before);
  CHECK(result);
}
