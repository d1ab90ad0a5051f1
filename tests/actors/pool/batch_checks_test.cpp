#include "actors/pool/batch_checks.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace sprintrt;
using namespace sprintrt::detail;

namespace {

/// A valid batch: T=4, B=3, D=2, lengths 4, 2, 3, log-posteriors log(0.5).
batch valid_batch() {
  batch b;
  b.log_posteriors = tensor::zeros({4, 3, 2});
  std::fill(b.log_posteriors.data(), b.log_posteriors.data() + b.log_posteriors.size(),
            std::log(0.5f));
  b.seq_lengths = {4, 2, 3};
  b.tags = {"a", "b", "c"};
  return b;
}

void check_invalid(const batch& b, const std::string& text) {
  auto err = check_batch(b);
  REQUIRE(err);
  CHECK(err == errc::invalid_input);
  INFO(render(err));
  CHECK(render(err).find(text) != std::string::npos);
}

float& at(batch& b, size_t t, size_t i, size_t d) {
  return b.log_posteriors.data()[(t * 3 + i) * 2 + d];
}

} // namespace

TEST_CASE("a batch-major array is named as such, not blamed on the lengths or tags") {
  // Four sequences of 3 frames passed as [B, T, D] = [4, 3, 2]: the four
  // lengths and tags match the first axis.
  batch b;
  b.log_posteriors = tensor::zeros({4, 3, 2});
  b.seq_lengths = {3, 3, 3, 3};
  b.tags = {"a", "b", "c", "d"};
  check_invalid(
      b, "seq_lengths has 4 entries, log_posteriors has B = 3; the first axis of "
         "log_posteriors, T = 4, matches instead: did you pass a batch-major (B, T, D) array? "
         "[T, B, D] (time-major) is due (swap its axes 0 and 1)");
  b.seq_lengths = {3, 3, 3};
  check_invalid(
      b, "tags has 4 entries, log_posteriors has B = 3; the first axis of "
         "log_posteriors, T = 4, matches instead: did you pass a batch-major (B, T, D) array?");
  // A count that matches neither axis gets no such guess.
  CHECK(batch_major_hint(5, 4, 3).empty());
  CHECK(batch_major_hint(3, 3, 3).empty());
}

TEST_CASE("a well-formed batch passes, with -inf and garbage in the padding") {
  auto b = valid_batch();
  at(b, 0, 0, 1) = -INFINITY;
  at(b, 3, 1, 0) = NAN;      // frame 3 of segment 1 (length 2) is padding
  at(b, 2, 1, 1) = INFINITY; // likewise
  CHECK_FALSE(check_batch(b));
}

TEST_CASE("every malformed batch is refused, naming what and where") {
  auto b = valid_batch();
  b.log_posteriors = tensor::zeros({4, 6});
  check_invalid(b, "log_posteriors must be [T, B, D], got shape [4, 6]");
  b = valid_batch();
  b.log_posteriors = tensor::zeros({0, 3, 2});
  check_invalid(b, "has an empty dimension");
  b = valid_batch();
  b.seq_lengths = {4, 2};
  check_invalid(b, "seq_lengths has 2 entries, log_posteriors has B = 3");
  b = valid_batch();
  b.tags.push_back("d");
  check_invalid(b, "tags has 4 entries");
  b = valid_batch();
  b.tags[1] = "";
  check_invalid(b, "tag 1 is empty");
  b = valid_batch();
  b.seq_lengths[2] = 0;
  check_invalid(b, "segment 2 ('c'): seq_length 0 is not in 1..4");
  b = valid_batch();
  b.seq_lengths[0] = 5;
  check_invalid(b, "segment 0 ('a'): seq_length 5 is not in 1..4");
  b = valid_batch();
  at(b, 1, 1, 1) = NAN;
  check_invalid(b, "segment 1 ('b'), frame 1, class 1: log-posterior is NaN");
  b = valid_batch();
  at(b, 2, 2, 0) = INFINITY;
  check_invalid(b, "segment 2 ('c'), frame 2, class 0: log-posterior is +inf");
}

TEST_CASE("automata requests need non-empty tags") {
  CHECK(check_tags({}) == errc::invalid_input);
  CHECK(check_tags({"a", ""}) == errc::invalid_input);
  CHECK_FALSE(check_tags({"a"}));
}
