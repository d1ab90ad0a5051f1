// The table of sprint-sim's parameters (sim/sprint_sim_parameters.hpp): each
// declared once, and the usage line and --help derived from it. How the
// parameters parse is tested in sprint_sim_config_test.cpp.

#include "sim/sprint_sim_parameters.hpp"

#include <set>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using namespace sprintrt::sim;
using test::unwrap;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// `text` with each run of white space one space, as if nothing were wrapped.
std::string unwrapped(const std::string& text) {
  std::istringstream words{text};
  std::string result;
  for (std::string word; words >> word;)
    result += (result.empty() ? "" : " ") + word;
  return result;
}

} // namespace

TEST_CASE("every parameter has its own name, a value form and a meaning") {
  std::set<std::string_view> names;
  for (const auto& p : sim_parameters()) {
    INFO(p.name);
    CHECK(names.insert(p.name).second);
    CHECK(p.name.find('.') == std::string_view::npos);
    CHECK_FALSE(p.value_form.empty());
    CHECK_FALSE(p.help.empty());
    CHECK(static_cast<bool>(p.apply));
    CHECK(static_cast<bool>(p.show));
    CHECK(static_cast<bool>(p.satisfied) == (p.required != requirement::optional));
    CHECK(find_sim_parameter(p.name) == &p);
  }
  CHECK(find_sim_parameter("log-channel") == nullptr);
}

TEST_CASE("the usage line names the parameters the process requires") {
  CHECK(sim_usage() == "usage: sprint-sim --*.python-control-enabled=true "
                       "--*.pymod-config=c2p_fd:C,p2c_fd:P,... --*.corpus=FILE "
                       "[--*.NAME=VALUE ...]\n");
}

TEST_CASE("--help lists every parameter with its form and its default") {
  const auto help = sim_parameters_help();
  for (const auto& p : sim_parameters()) {
    INFO(p.name);
    CHECK(contains(help, "  --*." + std::string{p.name} + "=" + std::string{p.value_form}));
  }
  CHECK(contains(help, "\n  --*.topology=ctc|hmm          the topology of the segments' FSAs "
                       "[ctc]\n"));
  CHECK(contains(help, "[0.02]"));
  CHECK(contains(help, "[sprint-sim]"));
  CHECK(contains(help, "[warn]"));
  CHECK(contains(unwrapped(help), "shm-shrink or shm-claim [none] (the process only)"));
  CHECK(contains(help, "[returnn.util.task_system]"));
  CHECK(contains(help, "--*.corpus=FILE"));
  CHECK(contains(help, "(required)"));
  std::istringstream lines{help};
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    CHECK(line.size() <= 80);
  }
}

TEST_CASE("each default shown is the value a parse without the parameter gives, and reads back") {
  const sprint_sim_config defaults;
  const auto parsed =
      unwrap(parse_sim_parameters({"--*.corpus=c.txt"}, parameter_scope::in_process));
  for (const auto& p : sim_parameters()) {
    INFO(p.name);
    if (p.name == "corpus")
      continue;
    const auto shown = p.show(defaults);
    CHECK(p.show(parsed) == shown);
    if (shown.empty())
      continue;
    const std::string text = "--*." + std::string{p.name} + "=" + shown;
    sprint_sim_config config;
    CHECK_FALSE(p.apply(sim_argument{text, p.name, shown}, config));
    CHECK(p.show(config) == shown);
  }
}

TEST_CASE("a value given is shown as given") {
  const auto config = unwrap(parse_sim_parameters(
      {"--*.corpus=c.txt", "--*.topology=hmm", "--*.hmm-silence-index=3",
       "--*.loss-type=numpy-float32", "--*.log-level=debug", "--*.framing=raw"},
      parameter_scope::in_process));
  CHECK(find_sim_parameter("topology")->show(config) == "hmm");
  CHECK(find_sim_parameter("hmm-silence-index")->show(config) == "3");
  CHECK(find_sim_parameter("loss-type")->show(config) == "numpy-float32");
  CHECK(find_sim_parameter("log-level")->show(config) == "debug");
  CHECK(find_sim_parameter("framing")->show(config) == "raw");
  CHECK(find_sim_parameter("corpus")->show(config) == "c.txt");
}
