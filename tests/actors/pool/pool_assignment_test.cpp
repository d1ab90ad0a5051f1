#include "actors/pool/pool_assignment.hpp"

#include <catch2/catch.hpp>

#include <utility>
#include <vector>

using namespace sprintrt::detail;

TEST_CASE("an assignment counts its request into the load until released, once") {
  auto load = std::make_shared<worker_load>();
  assignment a{load, 3, 120};
  CHECK(a.held());
  CHECK(a.worker() == 3);
  CHECK(a.frames() == 120);
  CHECK(load->frames == 120);
  CHECK(load->requests == 1);
  a.release();
  CHECK_FALSE(a.held());
  CHECK(load->frames == 0);
  CHECK(load->requests == 0);
  a.release();
  CHECK(load->frames == 0);
  CHECK(load->requests == 0);
}

TEST_CASE("an assignment released by its destructor or moved is uncounted once") {
  auto load = std::make_shared<worker_load>();
  {
    assignment a{load, 0, 7};
    assignment b{load, 0, 5};
    CHECK(load->frames == 12);
    CHECK(load->requests == 2);
    assignment moved = std::move(a);
    CHECK_FALSE(a.held()); // NOLINT(bugprone-use-after-move): moved-from counts nothing
    CHECK(moved.held());
    CHECK(load->requests == 2);
    a.release();
    CHECK(load->frames == 12);
    // Move assignment releases what the target held first.
    moved = std::move(b);
    CHECK(load->frames == 5);
    CHECK(load->requests == 1);
    std::vector<assignment> kept;
    kept.push_back(std::move(moved));
    CHECK(load->requests == 1);
  }
  CHECK(load->frames == 0);
  CHECK(load->requests == 0);
}

TEST_CASE("an assignment outliving its worker slot releases into the shared load") {
  assignment a;
  CHECK_FALSE(a.held());
  std::weak_ptr<worker_load> watch;
  {
    auto load = std::make_shared<worker_load>();
    watch = load;
    a = assignment{load, 1, 4};
  }
  REQUIRE_FALSE(watch.expired());
  CHECK(watch.lock()->requests == 1);
  a.release();
  CHECK(watch.expired());
}
