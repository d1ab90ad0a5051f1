#include "sprintrt/tensor.hpp"

#include <catch2/catch.hpp>

using namespace sprintrt;

TEST_CASE("tensors know their shape and share storage between copies") {
  auto t = tensor::zeros({2, 3, 4});
  CHECK(t.rank() == 3);
  CHECK(t.size() == 24);
  CHECK(t.shape_string() == "[2, 3, 4]");
  CHECK(t.unique());
  auto copy = t;
  CHECK_FALSE(t.unique());
  copy.data()[5] = 1.5f;
  CHECK(t.data()[5] == 1.5f);
  auto deep = t.clone();
  deep.data()[5] = 2.5f;
  CHECK(t.data()[5] == 1.5f);
}

TEST_CASE("from_vector adopts the data without copying and checks the size") {
  std::vector<float> data(6, 1.0f);
  const float* address = data.data();
  auto t = tensor::from_vector(std::move(data), {2, 3});
  REQUIRE(t);
  CHECK(t->data() == address);
  auto bad = tensor::from_vector(std::vector<float>(5), {2, 3});
  REQUIRE_FALSE(bad);
  CHECK(bad.error() == errc::invalid_input);
  CHECK(render(bad.error()).find("shape [2, 3] needs 6 elements, got 5") != std::string::npos);
}

TEST_CASE("a segment slice of a time-major batch strides over the other segments") {
  auto t = tensor::zeros({4, 3, 2});
  auto s = segment_slice(t, 1, 3);
  CHECK(s.valid());
  CHECK(s.offset == 2);
  CHECK(s.rows == 3);
  CHECK(s.cols == 2);
  CHECK(s.row_stride == 6);
  CHECK(s.row(2) == t.data() + (2 * 3 + 1) * 2);
}

TEST_CASE("matrix slices outside their storage are invalid") {
  auto s = matrix_slice::dense(3, 4);
  CHECK(s.valid());
  s.rows = 4;
  CHECK_FALSE(s.valid());
  s = matrix_slice::dense(3, 4);
  s.row_stride = 3;
  CHECK_FALSE(s.valid());
  s = matrix_slice::dense(3, 4);
  s.offset = 1;
  CHECK_FALSE(s.valid());
  s.row_stride = SIZE_MAX / 2;
  CHECK_FALSE(s.valid());
  CHECK_FALSE(matrix_slice{}.valid());
}
