#include "criterion/denominator.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <utility>

namespace sprintrt::criterion {

namespace {

/// One hypothesis line, where it came from.
struct listed_hypothesis {
  hypothesis value;
  size_t line = 0;
};

std::string_view trim(std::string_view text) {
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  while (!text.empty() && blank(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && blank(text.back()))
    text.remove_suffix(1);
  return text;
}

std::optional<double> parse_cost(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+')
    text.remove_prefix(1);
  double x = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(x))
    return std::nullopt;
  return x;
}

/// Reads the hypotheses of `path`, per segment in file order, checking each
/// line against the corpus and the topology.
caf::expected<std::map<std::string, std::vector<listed_hypothesis>, std::less<>>>
read_hypotheses(const std::string& path, const corpus& segments,
                const topology& automaton_topology) {
  std::ifstream in{path};
  if (!in)
    return make_error(errc::io_error, "cannot open denominator file '" + path + "'");
  std::map<std::string, std::vector<listed_hypothesis>, std::less<>> result;
  std::string text;
  for (size_t number = 1; std::getline(in, text); ++number) {
    const auto where = "denominator file '" + path + "' line " + std::to_string(number) + ": ";
    std::string_view line{text};
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (trim(line).empty() || line.front() == '#')
      continue;
    const auto tab = line.find('\t');
    if (tab == std::string_view::npos || tab == 0)
      return make_error(errc::invalid_input, where + "expected NAME<TAB>labels[<TAB>cost], got '" +
                                                 std::string{line} + "'");
    const std::string name{line.substr(0, tab)};
    auto rest = line.substr(tab + 1);
    const auto second_tab = rest.find('\t');
    listed_hypothesis listed;
    listed.line = number;
    if (second_tab != std::string_view::npos) {
      const auto cost = parse_cost(rest.substr(second_tab + 1));
      if (!cost)
        return make_error(errc::invalid_input,
                          where + "the cost '" + std::string{rest.substr(second_tab + 1)} +
                              "' of segment '" + name + "' is not a finite number");
      listed.value.cost = *cost;
      rest = rest.substr(0, second_tab);
    }
    const auto owner = "the hypothesis of segment '" + name + "'";
    if (auto problem = append_labels(rest, owner, listed.value.labels); !problem.empty())
      return make_error(errc::invalid_input, where + problem);
    if (!segments.contains(name))
      return make_error(errc::invalid_input, where + "segment '" + name +
                                                 "' is not in the corpus '" + segments.source() +
                                                 "'");
    if (auto err = automaton_topology.check_labels(where + owner, listed.value.labels))
      return err;
    auto& listed_here = result[name];
    for (const auto& earlier : listed_here)
      if (earlier.value.labels == listed.value.labels)
        return make_error(errc::invalid_input,
                          where + "segment '" + name + "' lists the sequence '" +
                              std::string{trim(rest)} + "' again (first on line " +
                              std::to_string(earlier.line) + ")");
    listed_here.push_back(std::move(listed));
  }
  if (in.bad())
    return make_error(errc::io_error, "cannot read denominator file '" + path + "'");
  return result;
}

} // namespace

size_t denominator::add_graph(wfsa graph) {
  max_emissions_.push_back(max_emission(graph));
  layouts_.push_back(lay_out(graph));
  graphs_.push_back(std::move(graph));
  return graphs_.size() - 1;
}

caf::expected<denominator> denominator::from_file(const std::string& path, const corpus& segments,
                                                  const topology& automaton_topology,
                                                  double lm_scale) {
  auto listed = read_hypotheses(path, segments, automaton_topology);
  if (!listed)
    return listed.error();
  denominator result;
  size_t num_lines = 0;
  for (const auto& name : segments.segment_names()) {
    const auto reference = *segments.labels(name);
    std::vector<hypothesis> hypotheses;
    entry segment;
    bool reference_listed = false;
    if (auto found = listed->find(name); found != listed->end())
      for (const auto& h : found->second) {
        ++num_lines;
        if (std::equal(h.value.labels.begin(), h.value.labels.end(), reference.begin(),
                       reference.end())) {
          reference_listed = true;
          segment.reference_cost = lm_scale * h.value.cost;
        }
        hypotheses.push_back(h.value);
      }
    if (!reference_listed)
      hypotheses.push_back({std::vector<uint32_t>(reference.begin(), reference.end()), 0.0});
    const auto owner = "segment '" + name + "'";
    if (auto err = automaton_topology.check_labels(owner, reference)) {
      segment.graph = std::move(err);
    } else {
      auto graph = automaton_topology.expand(owner + "'s hypotheses",
                                             hypotheses_acceptor(hypotheses, lm_scale));
      if (graph)
        segment.graph = result.add_graph(std::move(*graph));
      else
        segment.graph = std::move(graph.error());
    }
    result.segments_.emplace(name, std::move(segment));
  }
  result.description_ = "hypotheses of '" + path + "' (" + std::to_string(num_lines) +
                        " lines for " + std::to_string(listed->size()) + " segments)";
  return result;
}

caf::expected<denominator> denominator::from_label_lm(const corpus& segments,
                                                      const topology& automaton_topology,
                                                      const label_lm_options& options,
                                                      double lm_scale) {
  auto lm = label_lm::estimate(segments, options);
  if (!lm)
    return lm.error();
  auto graph = automaton_topology.expand("label-lm", lm->acceptor(lm_scale));
  if (!graph)
    return graph.error();
  denominator result;
  const size_t index = result.add_graph(std::move(*graph));
  for (const auto& name : segments.segment_names()) {
    const auto reference = *segments.labels(name);
    entry segment;
    segment.reference_cost = lm_scale * lm->cost(reference);
    if (auto err = automaton_topology.check_labels("segment '" + name + "'", reference))
      segment.graph = std::move(err);
    else
      segment.graph = index;
    result.segments_.emplace(name, std::move(segment));
  }
  char smoothing[32];
  std::snprintf(smoothing, sizeof(smoothing), "%g", options.smoothing);
  result.description_ = "label " + std::to_string(options.order) + "-gram over " +
                        std::to_string(lm->vocabulary().size()) + " labels (add-" + smoothing +
                        " smoothing)";
  return result;
}

caf::expected<denominator> denominator::make(const denominator_options& options,
                                             const corpus& segments,
                                             const topology& automaton_topology, double lm_scale) {
  if (options.is_label_lm())
    return from_label_lm(segments, automaton_topology, options.lm, lm_scale);
  return from_file(options.source, segments, automaton_topology, lm_scale);
}

caf::expected<denominator::segment_view> denominator::lookup(std::string_view segment) const {
  auto found = segments_.find(segment);
  if (found == segments_.end())
    return make_error(errc::unknown_segment, "unknown segment '" + std::string{segment} +
                                                 "': it has no denominator, not being in the "
                                                 "corpus");
  if (auto* err = std::get_if<caf::error>(&found->second.graph))
    return *err;
  const size_t index = std::get<size_t>(found->second.graph);
  return segment_view{&graphs_[index], max_emissions_[index], &layouts_[index],
                      found->second.reference_cost};
}

} // namespace sprintrt::criterion
