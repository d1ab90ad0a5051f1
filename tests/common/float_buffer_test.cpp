#include "sprintrt/float_buffer.hpp"

#include <catch2/catch.hpp>

#include "sprintrt/tensor.hpp"

using namespace sprintrt;

TEST_CASE("an owned float buffer holds its values and copies them out on request") {
  auto storage = make_storage(4, 0.5f);
  CHECK(storage->size() == 4);
  CHECK_FALSE(storage->empty());
  CHECK_FALSE(storage->borrowed());
  (*storage)[2] = 3.0f;
  CHECK(storage->to_vector() == std::vector<float>{0.5f, 0.5f, 3.0f, 0.5f});
  CHECK(make_storage(0)->empty());
}

TEST_CASE("a float buffer adopts a vector without copying it") {
  std::vector<float> values{1.0f, 2.0f, 3.0f};
  const float* address = values.data();
  auto storage = make_storage(std::move(values));
  CHECK(storage->data() == address);
  CHECK(storage->end() - storage->begin() == 3);
}

TEST_CASE("a borrowed float buffer reads the lender's memory and keeps its owner until the end") {
  float lent[6] = {1, 2, 3, 4, 5, 6};
  int released = 0;
  std::shared_ptr<const void> owner(lent, [&released](const float*) { ++released; });
  auto storage = std::make_shared<float_buffer>(lent, 6, std::move(owner));
  CHECK(storage->borrowed());
  CHECK(storage->data() == lent);
  auto t = tensor::from_storage(storage, {2, 3});
  REQUIRE(t);
  CHECK(t->data() == lent);
  lent[4] = 9.0f;
  CHECK(t->data()[4] == 9.0f);
  // A deep copy owns its values.
  auto copy = t->clone();
  CHECK(copy.data() != lent);
  CHECK_FALSE(copy.storage()->borrowed());
  storage.reset();
  CHECK(released == 0); // the tensor still holds it
  t = tensor{};
  CHECK(released == 1);
  CHECK(copy.data()[4] == 9.0f);
}

TEST_CASE("a tensor over storage of the wrong size is refused") {
  auto bad = tensor::from_storage(make_storage(5), {2, 3});
  REQUIRE_FALSE(bad);
  CHECK(bad.error() == errc::invalid_input);
  CHECK(render(bad.error()).find("shape [2, 3] needs 6 elements, got 5") != std::string::npos);
  auto none = tensor::from_storage(nullptr, {0});
  REQUIRE_FALSE(none);
  CHECK(render(none.error()).find("tensor of shape [0] has no storage") != std::string::npos);
}
