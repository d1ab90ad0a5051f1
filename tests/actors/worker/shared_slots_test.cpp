// The slots of a child's shared region: first fit between the slots in use,
// the region growing only when none fits.

#include "actors/worker/shared_slots.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <vector>

using namespace sprintrt;
using namespace sprintrt::detail;

namespace {

const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));

shared_slots make_slots() {
  auto region = shared_region::create("shared_slots_test");
  REQUIRE(region);
  return shared_slots{std::move(*region)};
}

} // namespace

TEST_CASE("slots are page-aligned, placed first fit, and reused once released") {
  auto slots = make_slots();
  CHECK(slots.region()->size() == 0);
  auto a = slots.acquire(3 * page - 5);
  REQUIRE(a);
  CHECK(a->offset == 0);
  CHECK(a->region == slots.region().get());
  auto b = slots.acquire(page + 1);
  REQUIRE(b);
  CHECK(b->offset == 3 * page);
  CHECK(slots.region()->size() == 5 * page);
  CHECK(slots.in_use() == 2);

  // The gap before b fits a slot of up to three pages.
  slots.release(a->offset);
  auto c = slots.acquire(2 * page);
  REQUIRE(c);
  CHECK(c->offset == 0);
  CHECK(slots.region()->size() == 5 * page);
  // One that does not fit goes after the last, growing the region.
  auto d = slots.acquire(2 * page);
  REQUIRE(d);
  CHECK(d->offset == 5 * page);
  CHECK(slots.region()->size() == 7 * page);
  slots.release(b->offset);
  slots.release(b->offset); // no longer in use: nothing happens
  CHECK(slots.in_use() == 2);
  auto e = slots.acquire(3 * page);
  REQUIRE(e);
  CHECK(e->offset == 2 * page);
  CHECK(slots.region()->size() == 7 * page);
}

TEST_CASE("two slots at a time keep the region below three of the largest requests") {
  auto slots = make_slots();
  // Requests of growing and shrinking sizes, at most two in flight, as a
  // worker sends them.
  const uint64_t sizes[] = {10, 30, 20, 40, 10, 40, 40, 5, 40, 35, 40, 40};
  uint64_t largest = 0;
  std::vector<uint64_t> in_flight;
  for (auto pages : sizes) {
    if (in_flight.size() == 2) {
      slots.release(in_flight.front());
      in_flight.erase(in_flight.begin());
    }
    auto slot = slots.acquire(pages * page);
    REQUIRE(slot);
    in_flight.push_back(slot->offset);
    largest = std::max(largest, pages * page);
    CHECK(slots.region()->size() <= 3 * largest);
  }
}
