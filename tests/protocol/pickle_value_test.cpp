#include "protocol/pickle_value.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace sprintrt::protocol;
using kind = value::kind;

TEST_CASE("values report their kind and contents") {
  CHECK(value{}.is(kind::none));
  CHECK(value::boolean(true).as_bool());
  CHECK(value::integer(-7).as_int() == -7);
  CHECK(value::floating(2.5).as_float() == 2.5);
  CHECK(value::str("ok").as_str() == "ok");
  CHECK(value::bytes(bytes_ref::copy_of("ab")).as_bytes().to_string() == "ab");
  auto t = value::tuple({value::integer(1), value::str("x")});
  REQUIRE(t.is(kind::tuple));
  CHECK(t.as_items().size() == 2);
  CHECK(t.depth() == 1);
  CHECK(value::tuple({t}).depth() == 2);
  CHECK(value::integer(3).depth() == 0);
}

TEST_CASE("equality is structural, with floats compared by bits") {
  auto nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(value::floating(nan) == value::floating(nan));
  CHECK(value::floating(0.0) != value::floating(-0.0));
  CHECK(value::tuple({value::integer(1)}) == value::tuple({value::integer(1)}));
  CHECK(value::tuple({value::integer(1)}) != value::list({value::integer(1)}));
  CHECK(value::integer(1) != value::floating(1.0));
  CHECK(value::bytes(bytes_ref::copy_of("a")) == value::bytes(bytes_ref::copy_of("a")));
  CHECK(value::str("a") != value::bytes(bytes_ref::copy_of("a")));
  CHECK(value::scalar(numpy_scalar::of_float(dtype::float32, 2.5)) ==
        value::scalar(numpy_scalar::of_float(dtype::float32, 2.5)));
  CHECK(value::scalar(numpy_scalar::of_float(dtype::float32, 2.5)) !=
        value::scalar(numpy_scalar::of_float(dtype::float64, 2.5)));
}

TEST_CASE("copies share the object, as in Python") {
  auto l = value::list({});
  auto alias = l;
  REQUIRE(l.append(value::integer(1)));
  CHECK(alias.as_items().size() == 1);
}

TEST_CASE("a list cannot contain itself and a nested list is frozen") {
  auto l = value::list({});
  CHECK_FALSE(l.append(l));
  auto inner = value::list({});
  auto outer = value::list({});
  REQUIRE(outer.append(inner));
  CHECK_FALSE(inner.append(value::integer(1)));
  CHECK(inner.as_items().empty());
  // A tuple freezes what it holds, too.
  auto l2 = value::list({});
  auto t = value::tuple({l2});
  CHECK_FALSE(l2.append(value::integer(1)));
  auto d = value::dict({});
  CHECK_FALSE(d.set_item(value::str("self"), d));
  REQUIRE(d.set_item(value::str("k"), value::integer(1)));
  REQUIRE(d.set_item(value::str("k"), value::integer(2)));
  REQUIRE(d.as_dict().size() == 1);
  CHECK(d.as_dict()[0].second.as_int() == 2);
}

TEST_CASE("depth follows appends") {
  auto l = value::list({});
  REQUIRE(l.append(value::tuple({value::tuple({})})));
  CHECK(l.depth() == 3);
}

TEST_CASE("numpy scalars convert to the host's numbers") {
  CHECK(numpy_scalar::of_float(dtype::float32, 2.5).to_double() == 2.5);
  CHECK(numpy_scalar::of_float(dtype::float32, 0.1).to_double() == static_cast<double>(0.1f));
  CHECK(numpy_scalar::of_int(dtype::int32, -3).to_int() == -3);
  CHECK(numpy_scalar::of_int(dtype::uint32, 4000000000).to_int() == 4000000000);
  CHECK(numpy_scalar::of_int(dtype::uint8, 255).to_int() == 255);
  CHECK(numpy_scalar::of_int(dtype::int64, -1).to_double() == -1.0);
}

TEST_CASE("tree size counts shared values once per place") {
  auto leaf = value::tuple({value::integer(1), value::integer(2)});
  CHECK(leaf.tree_size() == 3);
  auto twice = value::tuple({leaf, leaf});
  CHECK(twice.tree_size() == 7);
  auto l = value::list({});
  REQUIRE(l.append(twice));
  CHECK(l.tree_size() == 8);
  CHECK(value::integer(5).tree_size() == 1);
}

TEST_CASE("only scalars are dict keys, found by content in O(1)") {
  auto d = value::dict({});
  CHECK_FALSE(d.set_item(value::tuple({}), value{}));
  CHECK_FALSE(d.set_item(value::list({}), value{}));
  REQUIRE(d.set_item(value::integer(1), value::str("int")));
  REQUIRE(d.set_item(value::floating(1.0), value::str("float")));
  REQUIRE(d.set_item(value::str("1"), value::str("str")));
  REQUIRE(d.set_item(value::bytes(bytes_ref::copy_of("1")), value::str("bytes")));
  REQUIRE(d.set_item(value::integer(1), value::str("again")));
  // Python would merge 1 and 1.0; keeping kinds apart is stricter and fine
  // for Sprint messages, which hold no dicts at all.
  REQUIRE(d.as_dict().size() == 4);
  CHECK(d.as_dict()[0].second.as_str() == "again");
}
