#include "tools/sprintrt/value_json.hpp"

#include <catch2/catch.hpp>

#include <limits>

#include <nlohmann/json.hpp>

using namespace sprintrt::protocol;
using sprintrt::cli::float_to_json;
using sprintrt::cli::from_json;
using sprintrt::cli::to_json;
using json = nlohmann::json;

TEST_CASE("values print in the golden vectors' typed JSON form") {
  auto inf = std::numeric_limits<double>::infinity();
  CHECK(to_json(value{}) == json::parse(R"({"none": null})"));
  CHECK(to_json(value::boolean(true)) == json::parse(R"({"bool": true})"));
  CHECK(to_json(value::integer(-3)) == json::parse(R"({"int": -3})"));
  CHECK(to_json(value::floating(12.375)) == json::parse(R"({"float": 12.375})"));
  CHECK(to_json(value::floating(inf)) == json::parse(R"({"float": "inf"})"));
  CHECK(to_json(value::floating(-inf)) == json::parse(R"({"float": "-inf"})"));
  CHECK(to_json(value::floating(std::nan(""))) == json::parse(R"({"float": "nan"})"));
  CHECK(to_json(value::str("ok")) == json::parse(R"({"str": "ok"})"));
  CHECK(to_json(value::bytes(bytes_ref::copy_of("co"))) == json::parse(R"({"bytes_hex": "636f"})"));
  CHECK(to_json(value::tuple({value::integer(1)})) == json::parse(R"({"tuple": [{"int": 1}]})"));
  CHECK(to_json(value::list({})) == json::parse(R"({"list": []})"));
  CHECK(to_json(value::dict({{value::str("k"), value{}}})) ==
        json::parse(R"({"dict": [[{"str": "k"}, {"none": null}]]})"));
  CHECK(to_json(value::scalar(numpy_scalar::of_float(dtype::float32, 2.5))) ==
        json::parse(R"({"numpy_scalar": {"dtype": "float32", "value": 2.5}})"));
  CHECK(to_json(value::scalar(numpy_scalar::of_int(dtype::int32, 3))) ==
        json::parse(R"({"numpy_scalar": {"dtype": "int32", "value": 3}})"));
  float data[] = {0.7f, 0.5f};
  ndarray a{dtype::float32, {2}, bytes_ref::unowned({reinterpret_cast<std::byte*>(data), 8})};
  // float32 values widen exactly: 0.7f prints as Python's repr of that double.
  CHECK(to_json(value::array(a)).dump() ==
        R"({"ndarray":{"data":[0.699999988079071,0.5],"dtype":"float32","shape":[2]}})");
}

TEST_CASE("typed JSON reads back to the same value") {
  auto text = R"({"tuple": [{"str": "ok"}, {"float": "-inf"}, {"bytes_hex": "00ff"},
    {"list": [{"none": null}, {"bool": false}]},
    {"dict": [[{"int": 1}, {"str": "v"}]]},
    {"ndarray": {"dtype": "uint32", "shape": [2, 2], "data": [0, 1, 4294967295, 3]}},
    {"ndarray": {"dtype": "float32", "shape": [3], "arange": true}},
    {"numpy_scalar": {"dtype": "float64", "value": "nan"}}]})";
  auto j = json::parse(text);
  auto x = from_json(j);
  REQUIRE(x);
  auto expanded = to_json(*x);
  CHECK(expanded["tuple"][6]["ndarray"]["data"] == json::parse("[0.0, 1.0, 2.0]"));
  expanded["tuple"][6] = j["tuple"][6];
  CHECK(expanded == j);
}

TEST_CASE("malformed typed JSON is refused with the offending part") {
  for (auto text : {R"({"int": "x"})", R"({"a": 1, "b": 2})", R"({"bytes_hex": "abc"})",
                    R"({"ndarray": {"dtype": "float16", "shape": [1], "data": [1]}})",
                    R"({"ndarray": {"dtype": "int32", "shape": [2], "data": [1]}})",
                    R"({"ndarray": {"dtype": "int32", "shape": [1], "data": [1.5]}})",
                    R"({"dict": [[{"int": 1}]]})", R"([1])"}) {
    INFO(text);
    auto x = from_json(json::parse(text));
    REQUIRE_FALSE(x);
    CHECK(x.error() == sprintrt::errc::invalid_input);
  }
}

TEST_CASE("numbers are JSON numbers, non-finite ones strings") {
  auto inf = std::numeric_limits<double>::infinity();
  CHECK(float_to_json(12.375) == json(12.375));
  CHECK(float_to_json(inf) == json("inf"));
  CHECK(float_to_json(-inf) == json("-inf"));
  CHECK(float_to_json(std::nan("")) == json("nan"));
}
