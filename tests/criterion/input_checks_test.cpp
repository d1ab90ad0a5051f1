#include "criterion/input_checks.hpp"

#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using sprintrt::errc;
using sprintrt::error_message;

TEST_CASE("log-posteriors may hold -inf, but not NaN or +inf, and must not be empty") {
  row_matrix_f log_posteriors = row_matrix_f::Constant(3, 2, -0.5f);
  log_posteriors(1, 1) = -std::numeric_limits<float>::infinity();
  CHECK(!check_log_posteriors("s", log_posteriors));
  log_posteriors(2, 0) = std::numeric_limits<float>::infinity();
  auto err = check_log_posteriors("s", log_posteriors);
  CHECK(err == errc::invalid_input);
  CHECK(error_message(err) ==
        "segment 's': log-posterior at frame 2, index 0 is +inf (only finite values and -inf "
        "are valid)");
  // The first bad value in row-major order is reported.
  log_posteriors(0, 1) = std::numeric_limits<float>::quiet_NaN();
  CHECK(error_message(check_log_posteriors("s", log_posteriors)) ==
        "segment 's': log-posterior at frame 0, index 1 is NaN (only finite values and -inf "
        "are valid)");
  CHECK(error_message(check_log_posteriors("s", row_matrix_f(2, 0))) ==
        "segment 's': log-posteriors have shape [2, 0] (need at least one frame and one class)");
}

TEST_CASE("every emission must be a column of the log-posteriors") {
  const std::vector<fsa_edge> edges = {{0, 1, 0, 0.0f}, {1, 1, 4, 0.0f}};
  const auto automaton = test::unwrap(fsa::make(2, edges));
  CHECK(!check_emissions("s", automaton, 5));
  auto err = check_emissions("s", automaton, 4);
  CHECK(err == errc::invalid_input);
  CHECK(error_message(err) ==
        "segment 's': label 4 (emitted by FSA edge 1) is not a class of the log-posteriors, "
        "which have 4 columns");
}

TEST_CASE("outputs must have the log-posteriors' shape") {
  const row_matrix_f log_posteriors(3, 2);
  CHECK(!check_output_shape("s", log_posteriors, 3, 2));
  CHECK(check_output_shape("s", log_posteriors, 2, 3) == errc::invalid_input);
  CHECK(error_message(check_output_shape("s", log_posteriors, 3, 1)) ==
        "segment 's': output has shape [3, 1], but the log-posteriors have shape [3, 2]");
}

TEST_CASE("segment inputs are checked for values first, then for emissions") {
  const std::vector<fsa_edge> edges = {{0, 1, 3, 0.0f}};
  const auto automaton = test::unwrap(fsa::make(2, edges));
  row_matrix_f log_posteriors = row_matrix_f::Zero(2, 3);
  CHECK(error_message(check_segment_inputs("s", automaton, log_posteriors))
            .find("label 3 (emitted by FSA edge 0)") != std::string::npos);
  log_posteriors(1, 2) = std::numeric_limits<float>::quiet_NaN();
  CHECK(error_message(check_segment_inputs("s", automaton, log_posteriors))
            .find("frame 1, index 2 is NaN") != std::string::npos);
  CHECK(!check_segment_inputs("s", automaton, row_matrix_f::Zero(2, 4)));
}
