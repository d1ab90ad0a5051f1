#include "config/child_environment.hpp"

#include <catch2/catch.hpp>

using sprintrt::environment_changes;
using namespace sprintrt::config;

namespace {

using strings = std::vector<std::string>;

const char* const parent[] = {"PATH=/bin", "HOME=/home/u", "THEANO_FLAGS=device=gpu", "LANG=C",
                              nullptr};

} // namespace

TEST_CASE("without changes the child gets the parent's variables, sorted by name") {
  CHECK(child_environment({}, parent) ==
        strings{"HOME=/home/u", "LANG=C", "PATH=/bin", "THEANO_FLAGS=device=gpu"});
}

TEST_CASE("unset removes, set adds and overrides") {
  environment_changes changes;
  changes.set = {{"THEANO_FLAGS", "device=cpu"}, {"CORPUS", "/data/c.txt"}};
  changes.unset = {"LANG", "NOT_THERE"};
  CHECK(child_environment(changes, parent) ==
        strings{"CORPUS=/data/c.txt", "HOME=/home/u", "PATH=/bin", "THEANO_FLAGS=device=cpu"});
}

TEST_CASE("a variable both set and unset ends up set") {
  environment_changes changes;
  changes.set = {{"LANG", "de_DE"}};
  changes.unset = {"LANG"};
  CHECK(child_environment(changes, parent) ==
        strings{"HOME=/home/u", "LANG=de_DE", "PATH=/bin", "THEANO_FLAGS=device=gpu"});
}

TEST_CASE("the first of duplicate parent entries counts, entries without '=' are dropped") {
  const char* const odd[] = {"A=1", "JUNK", "A=2", "B=", nullptr};
  CHECK(child_environment({}, odd) == strings{"A=1", "B="});
}

TEST_CASE("a null parent environment is empty") {
  environment_changes changes;
  changes.set = {{"X", "1"}};
  CHECK(child_environment(changes, nullptr) == strings{"X=1"});
  CHECK(child_environment({}, nullptr).empty());
}

TEST_CASE("the lookup sees the child's environment and owns its copy") {
  environment_changes changes;
  changes.set = {{"CORPUS", "/data/c.txt"}, {"EMPTY", ""}};
  changes.unset = {"HOME"};
  env_lookup lookup;
  {
    auto env = child_environment(changes, parent);
    lookup = environment_lookup(env);
  }
  CHECK(lookup("CORPUS") == std::optional<std::string>{"/data/c.txt"});
  CHECK(lookup("THEANO_FLAGS") == std::optional<std::string>{"device=gpu"});
  CHECK(lookup("EMPTY") == std::optional<std::string>{""});
  CHECK(lookup("HOME") == std::nullopt);
  CHECK(lookup("MISSING") == std::nullopt);
}

TEST_CASE("the lookup takes the first of duplicate names") {
  auto lookup = environment_lookup({"A=1", "A=2", "junk"});
  CHECK(lookup("A") == std::optional<std::string>{"1"});
  CHECK(lookup("junk") == std::nullopt);
}
