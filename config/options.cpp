#include "sprintrt/options.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "common/edit_distance.hpp"
#include "config/option_table.hpp"

namespace sprintrt {

namespace {

using json = nlohmann::json;
using config::invalid_options;
using config::option_field;
using config::shown;

constexpr std::string_view config_prefix = "config:";

/// Whether two characters are equal ignoring case (for key suggestions).
bool same_ignoring_case(char x, char y) {
  return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
}

caf::error unknown_key(const std::string& key) {
  std::string_view best;
  size_t best_distance = std::max<size_t>(2, key.size() / 4) + 1;
  for (const auto& option : config::option_table()) {
    const auto distance = edit_distance(std::string_view{key}, option.key, same_ignoring_case);
    if (distance < best_distance) {
      best = option.key;
      best_distance = distance;
    }
  }
  auto message = "unknown option '" + key + "'";
  if (!best.empty())
    message += " (did you mean '" + std::string{best} + "'?)";
  return invalid_options(std::move(message));
}

/// The NAME of a `config:NAME` string, if `value` is one.
std::optional<std::string> reference_name(const json& value) {
  if (!value.is_string())
    return std::nullopt;
  const auto& text = value.get_ref<const std::string&>();
  if (text.compare(0, config_prefix.size(), config_prefix) != 0)
    return std::nullopt;
  return text.substr(config_prefix.size());
}

/// Parses JSON text; duplicate keys in any object are an error.
caf::expected<json> parse_document(std::string_view text) {
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  const json::parser_callback_t track_keys = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      open_objects.pop_back();
    } else if (event == json::parse_event_t::key && duplicate.empty() &&
               !open_objects.back().insert(parsed.get<std::string>()).second) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  try {
    auto doc = json::parse(text.begin(), text.end(), track_keys);
    if (!duplicate.empty())
      return invalid_options("duplicate key '" + duplicate + "' in the options");
    return doc;
  } catch (const json::exception& e) {
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix.
    std::string what = e.what();
    const size_t prefix_end = what.find("] ");
    if (prefix_end != std::string::npos)
      what.erase(0, prefix_end + 2);
    return invalid_options("malformed JSON: " + what);
  }
}

caf::expected<sprint_options> options_from_document(const json& doc) {
  if (!doc.is_object())
    return invalid_options(std::string{"the options must be a JSON object, got "} +
                           doc.type_name());
  const auto table = config::option_table();
  // Pass 1: find each option's value, following `config:` references.
  std::vector<std::optional<option_field>> values;
  std::set<std::string> referenced;
  for (const auto& option : table) {
    const std::string key{option.key};
    const auto found = doc.find(key);
    if (found == doc.end()) {
      values.emplace_back();
      continue;
    }
    const auto target = reference_name(*found);
    if (!target) {
      values.emplace_back(option_field{key, "", *found});
      continue;
    }
    const auto resolved = doc.find(*target);
    if (resolved == doc.end())
      return invalid_options("option '" + key + "' refers to 'config:" + *target +
                             "', but the document has no top-level key '" + *target + "'");
    if (reference_name(*resolved))
      return invalid_options("option '" + key + "' refers to 'config:" + *target + "', which is " +
                             shown(*resolved) +
                             ", another reference (config: references do not chain)");
    referenced.insert(*target);
    values.emplace_back(option_field{key, *target, *resolved});
  }
  // Pass 2: every other key must be an option or referenced.
  for (const auto& item : doc.items()) {
    const auto& key = item.key();
    const bool is_option = std::any_of(table.begin(), table.end(),
                                       [&](const auto& option) { return option.key == key; });
    if (!is_option && referenced.count(key) == 0)
      return unknown_key(key);
  }
  // Pass 3: validate; null means the default of an optional option.
  for (size_t i = 0; i < table.size(); ++i)
    if (table[i].required() && !values[i])
      return invalid_options("option '" + std::string{table[i].key} + "' is required (" +
                             std::string{table[i].required_what} + ")");
  sprint_options opts;
  for (size_t i = 0; i < table.size(); ++i) {
    if (!values[i] || (!table[i].required() && values[i]->value.is_null()))
      continue;
    if (auto err = table[i].read(*values[i], opts))
      return err;
  }
  if (opts.num_instances == 0 && opts.remote.empty())
    return invalid_options("option 'numInstances' must be at least 1 unless 'remote' names "
                           "pools on other machines, got 0");
  return opts;
}

} // namespace

caf::expected<sprint_options> parse_options(std::string_view json_text) {
  auto doc = parse_document(json_text);
  if (!doc)
    return doc.error();
  return options_from_document(*doc);
}

caf::expected<sprint_options> load_options(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return make_error(errc::io_error, "cannot read options file '" + path + "': is a directory");
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return make_error(errc::io_error,
                      "cannot read options file '" + path + "': " + std::strerror(errno));
  const std::string text{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  if (in.bad())
    return make_error(errc::io_error, "cannot read options file '" + path + "'");
  auto opts = parse_options(text);
  if (!opts)
    return make_error(errc::invalid_options,
                      "options file '" + path + "': " + error_message(opts.error()));
  return opts;
}

std::string to_json_string(const sprint_options& opts) {
  return config::options_json(opts, config::option_selection::all).dump();
}

bool operator==(const sprint_options& x, const sprint_options& y) {
  const auto table = config::option_table();
  return std::all_of(table.begin(), table.end(),
                     [&](const auto& option) { return option.equal(x, y); });
}

} // namespace sprintrt
