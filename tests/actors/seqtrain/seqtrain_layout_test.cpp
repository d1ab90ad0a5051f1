#include "actors/seqtrain/seqtrain_layout.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <vector>

using sprintrt::errc;
using sprintrt::matrix_slice;
using sprintrt::seqtrain_batch;
using sprintrt::seqtrain_part;
using sprintrt::detail::check_parts;
using sprintrt::detail::lay_out_train_result;
using sprintrt::detail::plan_train;
using sprintrt::detail::sequence_outcome;
using sprintrt::detail::sequence_shape;

namespace {

/// A sequence's hat_y [frames, dim] with values base + r + c / 10.
matrix_slice hat_y(size_t frames, size_t dim, float base) {
  auto m = matrix_slice::dense(frames, dim);
  for (size_t r = 0; r < frames; ++r)
    for (size_t c = 0; c < dim; ++c)
      m.row(r)[c] = base + static_cast<float>(r) + static_cast<float>(c) / 10.0f;
  return m;
}

struct fixture {
  std::map<uint64_t, std::pair<double, matrix_slice>> data;

  std::function<sequence_outcome(uint64_t)> lookup() {
    return [this](uint64_t seq) { return sequence_outcome{data[seq].first, &data[seq].second}; };
  }
};

/// hat_y[t, column, c] of a [T, B, D] result.
float at(const sprintrt::seqtrain_result& r, size_t t, size_t column, size_t c) {
  const auto& s = r.hat_y.shape();
  return r.hat_y.data()[(t * s[1] + column) * s[2] + c];
}

} // namespace

TEST_CASE("two batches lie side by side; a chunked sequence is charged by its share of frames") {
  fixture f;
  f.data[10] = {3.0, hat_y(3, 2, 10)};
  f.data[11] = {8.0, hat_y(4, 2, 20)};
  // Batch 0: 4 frames x 2 slices; sequence 10 whole in slice 0, frames [2, 4)
  // of sequence 11 at rows [1, 3) of slice 1. Batch 1: 2 frames x 1 slice,
  // frames [0, 2) of sequence 11.
  std::vector<seqtrain_batch> batches{
      {4, 2, {seqtrain_part{10, 0, 0, 0, 3}, seqtrain_part{11, 1, 1, 2, 4}}},
      {2, 1, {seqtrain_part{11, 0, 0, 0, 2}}},
  };
  auto plan = plan_train(batches);
  REQUIRE(plan);
  CHECK(plan->start_seq == 10);
  CHECK(plan->end_seq == 12);
  CHECK(plan->sequences == std::vector<uint64_t>{10, 11});
  CHECK(plan->num_frames == 4);
  CHECK(plan->num_columns == 3);
  auto result = lay_out_train_result(batches, *plan, f.lookup());
  CHECK(result.hat_y.shape() == std::vector<size_t>{4, 3, 2});
  CHECK(result.loss == std::vector<float>{3.0f, 4.0f, 4.0f});
  // Column 0: sequence 10's rows 0..2, row 3 zero.
  CHECK(at(result, 0, 0, 0) == 10.0f);
  CHECK(at(result, 2, 0, 1) == 12.1f);
  CHECK(at(result, 3, 0, 0) == 0.0f);
  // Column 1: rows 1, 2 hold sequence 11's frames 2, 3.
  CHECK(at(result, 0, 1, 0) == 0.0f);
  CHECK(at(result, 1, 1, 0) == 22.0f);
  CHECK(at(result, 2, 1, 1) == 23.1f);
  CHECK(at(result, 3, 1, 1) == 0.0f);
  // Column 2 (batch 1, slice 0): sequence 11's frames 0, 1; rows 2, 3 zero.
  CHECK(at(result, 0, 2, 0) == 20.0f);
  CHECK(at(result, 1, 2, 1) == 21.1f);
  CHECK(at(result, 2, 2, 0) == 0.0f);
  CHECK(at(result, 3, 2, 1) == 0.0f);
}

TEST_CASE("parts in one slice add their losses; a skipped sequence is +inf") {
  fixture f;
  f.data[12] = {6.0, hat_y(4, 1, 0)};
  f.data[13] = {5.0, hat_y(2, 1, 100)};
  f.data[14] = {INFINITY, hat_y(2, 1, 200)};
  std::vector<seqtrain_batch> batches{
      {4,
       2,
       {seqtrain_part{12, 0, 0, 0, 2}, seqtrain_part{13, 0, 2, 0, 2},
        seqtrain_part{14, 1, 0, 0, 2}}},
  };
  auto plan = plan_train(batches);
  REQUIRE(plan);
  auto result = lay_out_train_result(batches, *plan, f.lookup());
  // 6 * 2/4 + 5 * 2/2.
  CHECK(result.loss == std::vector<float>{8.0f, INFINITY});
  CHECK(at(result, 1, 0, 0) == 1.0f);
  CHECK(at(result, 2, 0, 0) == 100.0f);
  CHECK(at(result, 3, 0, 0) == 101.0f);
  CHECK(at(result, 1, 1, 0) == 201.0f);
}

TEST_CASE("malformed train batches are refused naming batch and part") {
  auto error_of = [](std::vector<seqtrain_batch> batches) {
    auto plan = plan_train(batches);
    REQUIRE_FALSE(plan);
    CHECK(plan.error() == errc::invalid_input);
    return sprintrt::error_message(plan.error());
  };
  CHECK(error_of({}) == "train: no batches");
  CHECK(error_of({{2, 1, {}}}) == "train: the batches have no parts");
  CHECK(error_of({{0, 1, {seqtrain_part{1, 0, 0, 0, 1}}}}) ==
        "train: batch 0 is empty (0 frames x 1 slices)");
  CHECK(
      error_of({{2, 1, {seqtrain_part{1, 0, 0, 0, 1}}}, {2, 2, {seqtrain_part{2, 2, 0, 0, 1}}}}) ==
      "train: batch 1, part 0 (sequence 2): batch_slice 2 is not below num_slices 2");
  CHECK(error_of({{2, 1, {seqtrain_part{1, 0, 0, 3, 3}}}}) ==
        "train: batch 0, part 0 (sequence 1): frames [3, 3) are empty");
  CHECK(error_of({{2, 1, {seqtrain_part{1, 0, 1, 0, 2}}}}) ==
        "train: batch 0, part 0 (sequence 1): rows [1, 3) exceed the batch's 2 frames");
}

TEST_CASE("a part beyond its sequence's frames or of another width is refused") {
  std::map<uint64_t, sequence_shape> shapes{{1, {2, 3}}, {2, {5, 4}}};
  auto shape_of = [&](uint64_t seq) { return shapes.at(seq); };
  std::vector<seqtrain_batch> too_long{{5, 1, {seqtrain_part{1, 0, 0, 0, 3}}}};
  auto plan = plan_train(too_long);
  REQUIRE(plan);
  auto err = check_parts(too_long, *plan, shape_of);
  CHECK(err == errc::invalid_input);
  CHECK(sprintrt::error_message(err) ==
        "train: batch 0, part 0 (sequence 1): frames [0, 3) exceed the sequence's 2 frames");
  std::vector<seqtrain_batch> widths{
      {5, 2, {seqtrain_part{1, 0, 0, 0, 2}, seqtrain_part{2, 1, 0, 0, 5}}}};
  plan = plan_train(widths);
  REQUIRE(plan);
  CHECK(sprintrt::error_message(check_parts(widths, *plan, shape_of)) ==
        "train: batch 0, part 1 (sequence 2): the sequence has 4 classes, sequence 1 has 3");
  std::vector<seqtrain_batch> fine{{5, 1, {seqtrain_part{2, 0, 0, 1, 5}}}};
  plan = plan_train(fine);
  REQUIRE(plan);
  CHECK_FALSE(check_parts(fine, *plan, shape_of));
}
