#include "sprintrt/tensor_eigen.hpp"

#include <catch2/catch.hpp>

using namespace sprintrt;

TEST_CASE("a segment of a time-major batch is an Eigen matrix without a copy") {
  auto batch = tensor::zeros({4, 3, 2});
  auto view = segment_matrix(batch, 1, 3);
  REQUIRE(view);
  CHECK(view->rows() == 3);
  CHECK(view->cols() == 2);
  (*view)(2, 1) = 7.0f;
  CHECK(batch.data()[(2 * 3 + 1) * 2 + 1] == 7.0f);
  view->row(0).setConstant(1.0f);
  CHECK(batch.data()[(0 * 3 + 1) * 2 + 0] == 1.0f);
  CHECK(batch.data()[(0 * 3 + 0) * 2 + 0] == 0.0f); // segment 0 untouched
  CHECK(view->sum() == Approx(9.0f));
}

TEST_CASE("views check the shapes they are asked for") {
  auto batch = tensor::zeros({4, 3, 2});
  CHECK(segment_matrix(batch, 3, 1).error() == errc::invalid_input);
  CHECK(segment_matrix(batch, 0, 5).error() == errc::invalid_input);
  CHECK(as_matrix(batch).error() == errc::invalid_input);
  auto m = tensor::zeros({2, 5});
  auto view = as_matrix(m);
  REQUIRE(view);
  view->setOnes();
  CHECK(m.data()[9] == 1.0f);
}
