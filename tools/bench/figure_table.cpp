#include "tools/bench/figure_table.hpp"

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

namespace sprintrt::bench {

namespace {

nlohmann::json& figures() {
  static nlohmann::json all = nlohmann::json::array();
  return all;
}

} // namespace

void declare_figure(std::string title, std::string unit, std::string value, std::string baseline,
                    std::string ratio, std::string target, std::string on, bool python) {
  figures().push_back({{"title", std::move(title)},
                       {"unit", std::move(unit)},
                       {"value", std::move(value)},
                       {"baseline", std::move(baseline)},
                       {"ratio", std::move(ratio)},
                       {"target", std::move(target)},
                       {"on", std::move(on)},
                       {"python", python}});
}

void publish_figures() {
  benchmark::AddCustomContext("figures", figures().dump());
}

} // namespace sprintrt::bench
