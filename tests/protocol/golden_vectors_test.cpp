// Every golden vector written by the real Python implementation decodes to
// exactly the value vectors.json gives, and our writer's re-encoding of it
// decodes back to the same value.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "protocol/framing.hpp"
#include "protocol/ndarray_access.hpp"
#include "protocol/pickle_reader.hpp"
#include "protocol/pickle_writer.hpp"
#include "tests/support/golden_vectors.hpp"
#include "tools/sprintrt/value_json.hpp"

using namespace sprintrt::protocol;
using sprintrt::errc;
using sprintrt::render;
using sprintrt::cli::from_json;
using sprintrt::cli::to_json;
using sprintrt::test::golden_vectors;

namespace {

/// Checks `decoded` against an expected typed JSON value. The golden
/// vectors abbreviate large arrays as {"arange": true}: data 0, 1, 2, ...
void check_matches(const value& decoded, const nlohmann::json& expected) {
  if (expected.contains("ndarray") && expected["ndarray"].value("arange", false)) {
    REQUIRE(decoded.is(value::kind::ndarray));
    const auto& a = decoded.as_ndarray();
    const auto& spec = expected["ndarray"];
    CHECK(to_string(a.type) == spec["dtype"].get<std::string>());
    CHECK(a.shape == spec["shape"].get<std::vector<size_t>>());
    REQUIRE(a.type == dtype::float32);
    for (size_t i = 0; i < a.num_elements(); ++i)
      REQUIRE(element<float>(a, i) == static_cast<float>(i));
    return;
  }
  if (expected.contains("tuple")) {
    REQUIRE(decoded.is(value::kind::tuple));
    const auto& items = decoded.as_items();
    REQUIRE(items.size() == expected["tuple"].size());
    for (size_t i = 0; i < items.size(); ++i)
      check_matches(items[i], expected["tuple"][i]);
    return;
  }
  CHECK(to_json(decoded) == expected);
}

} // namespace

TEST_CASE("every golden vector decodes to its value in vectors.json") {
  REQUIRE(golden_vectors().size() == 18);
  for (const auto& v : golden_vectors()) {
    INFO(v.name);
    frame_decoder decoder{v.framing};
    REQUIRE_FALSE(decoder.feed({v.wire.data(), v.wire.size()}));
    auto message = decoder.next();
    REQUIRE(message);
    CHECK_FALSE(decoder.next());
    auto decoded = read_pickle(message->bytes());
    INFO((decoded ? "" : render(decoded.error())));
    REQUIRE(decoded);
    check_matches(*decoded, v.expected);
  }
}

TEST_CASE("our encoding of every golden value decodes to the same value") {
  for (const auto& v : golden_vectors()) {
    INFO(v.name);
    auto decoded = read_pickle(v.pickle());
    REQUIRE(decoded);
    // The legacy vectors name TaskSystem; keep the module the vector used.
    auto module = v.name.rfind("legacy_", 0) == 0 ? legacy_array_module : default_array_module;
    byte_buffer out;
    REQUIRE_FALSE(write_pickle(out, *decoded, module));
    auto again = read_pickle(out.bytes());
    REQUIRE(again);
    CHECK(*again == *decoded);
  }
}

TEST_CASE("every proper prefix of a golden pickle is reported as truncated") {
  for (const auto& v : golden_vectors()) {
    INFO(v.name);
    auto pickle = v.pickle();
    for (size_t n = 0; n < pickle.size(); ++n) {
      auto x = read_pickle(pickle.subspan(0, n));
      REQUIRE_FALSE(x);
      REQUIRE(x.error() == errc::truncated);
    }
  }
}
