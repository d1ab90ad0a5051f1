#include "common/edit_distance.hpp"

#include <catch2/catch.hpp>

#include <cctype>
#include <cstdint>
#include <string_view>
#include <vector>

using sprintrt::edit_distance;

TEST_CASE("edit distance counts insertions, deletions and substitutions") {
  using namespace std::string_view_literals;
  CHECK(edit_distance(""sv, ""sv) == 0);
  CHECK(edit_distance("abc"sv, ""sv) == 3);
  CHECK(edit_distance(""sv, "abc"sv) == 3);
  CHECK(edit_distance("kitten"sv, "sitting"sv) == 3);
  CHECK(edit_distance("sitting"sv, "kitten"sv) == 3);
  CHECK(edit_distance("flaw"sv, "lawn"sv) == 2);
  CHECK(edit_distance("numInstances"sv, "numInstance"sv) == 1);
}

TEST_CASE("edit distance compares elements with the given predicate") {
  using namespace std::string_view_literals;
  const auto ignore_case = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  };
  CHECK(edit_distance("SprintExecPath"sv, "sprintExecPath"sv) == 1);
  CHECK(edit_distance("SprintExecPath"sv, "sprintExecPath"sv, ignore_case) == 0);
  CHECK(edit_distance("initTimeOut"sv, "initTimeout"sv, ignore_case) == 0);
}

TEST_CASE("edit distance works on label sequences") {
  const std::vector<uint32_t> reference{3, 1, 4, 1, 5};
  CHECK(edit_distance(reference, reference) == 0);
  CHECK(edit_distance(std::vector<uint32_t>{3, 1, 1, 5}, reference) == 1);
  CHECK(edit_distance(std::vector<uint32_t>{}, reference) == 5);
  CHECK(edit_distance(std::vector<uint32_t>{9, 9, 4, 1, 5, 2}, reference) == 3);
}
