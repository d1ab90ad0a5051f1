// The member count of aggregates (config/aggregate_fields.hpp), which the
// option table checks itself against.

#include "config/aggregate_fields.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sprintrt/options.hpp"

using sprintrt::config::aggregate_field_count;

namespace {

struct empty {};

struct inner {
  int a = 0;
  int b = 0;
};

struct mixed {
  std::string text;
  std::vector<std::string> words;
  std::map<std::string, std::string> items;
  std::optional<int> maybe;
  std::chrono::milliseconds duration{5};
  inner nested; // counts once: it is one member
  bool flag = true;
};

} // namespace

TEST_CASE("aggregate_field_count counts the members of an aggregate") {
  CHECK(aggregate_field_count<empty>() == 0);
  CHECK(aggregate_field_count<inner>() == 2);
  CHECK(aggregate_field_count<mixed>() == 7);
  CHECK(aggregate_field_count<sprintrt::remote_endpoint>() == 2);
  CHECK(aggregate_field_count<sprintrt::tls_files>() == 3);
  CHECK(aggregate_field_count<sprintrt::sprint_options>() == 22);
}
