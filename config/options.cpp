#include "sprintrt/options.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "common/edit_distance.hpp"
#include "config/shell_words.hpp"
#include "config/sprint_args.hpp"
#include "config/wire_format.hpp"

namespace sprintrt {

namespace {

using json = nlohmann::json;

constexpr std::string_view config_prefix = "config:";

caf::error invalid(std::string message) {
  return make_error(errc::invalid_options, std::move(message));
}

/// A value for an error message: its JSON text, cut short when long.
std::string shown(const json& value) {
  auto text = value.dump();
  constexpr size_t max_length = 60;
  if (text.size() > max_length)
    text = text.substr(0, max_length) + "...";
  return text;
}

/// One value under validation: its path for messages ("remote[0].port") and
/// the `config:NAME` it was taken from, if any.
struct field {
  std::string path;
  std::string via;
  const json& value;

  std::string name() const {
    auto result = "option '" + path + "'";
    if (!via.empty())
      result += " (from 'config:" + via + "')";
    return result;
  }

  caf::error fail(const std::string& expected) const {
    return invalid(name() + " must be " + expected + ", got " + shown(value));
  }

  caf::error problem(const std::string& what) const { return invalid(name() + ": " + what); }

  caf::error missing() const { return invalid(name() + " is required"); }

  field child(const std::string& suffix, const json& child_value) const {
    return field{path + suffix, via, child_value};
  }
};

caf::error get_string(const field& f, std::string& out, bool non_empty) {
  if (!f.value.is_string() || (non_empty && f.value.get_ref<const std::string&>().empty()))
    return f.fail(non_empty ? "a non-empty string" : "a string");
  const auto& text = f.value.get_ref<const std::string&>();
  if (text.find('\0') != std::string::npos)
    return f.problem("must not contain a NUL character");
  out = text;
  return {};
}

caf::error get_bool(const field& f, bool& out) {
  if (!f.value.is_boolean())
    return f.fail("true or false");
  out = f.value.get<bool>();
  return {};
}

/// Reads an integer in [min, max] into `out`; `expected` describes the range.
template <class T>
caf::error get_count(const field& f, uint64_t min, uint64_t max, const char* expected, T& out) {
  uint64_t x = 0;
  if (f.value.is_number_unsigned())
    x = f.value.get<uint64_t>();
  else if (f.value.is_number_integer() && f.value.get<int64_t>() >= 0)
    x = static_cast<uint64_t>(f.value.get<int64_t>());
  else
    return f.fail(expected);
  if (x < min || x > max)
    return f.fail(expected);
  out = static_cast<T>(x);
  return {};
}

/// Reads a number of seconds, stored as milliseconds rounded up.
caf::error get_seconds(const field& f, std::chrono::milliseconds& out) {
  constexpr double max_seconds = 1e9;
  if (!f.value.is_number() || !(f.value.get<double>() > 0) || f.value.get<double>() > max_seconds)
    return f.fail("a number of seconds > 0 (at most 1e9)");
  // Whole microseconds first: 1.1 * 1000 is 1100.0000000000002, which must not become 1101 ms.
  const auto micros = std::llround(f.value.get<double>() * 1e6);
  out = std::chrono::milliseconds{std::max<long long>(1, (micros + 999) / 1000)};
  return {};
}

/// Fails unless `f` is an object whose keys are all in `allowed`
/// (`expected` describes the object).
caf::error check_keys(const field& f, std::initializer_list<std::string_view> allowed,
                      const char* expected) {
  if (!f.value.is_object())
    return f.fail(expected);
  for (const auto& item : f.value.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) != allowed.end())
      continue;
    std::string names;
    for (const auto name : allowed)
      names += (names.empty() ? "'" : ", '") + std::string{name} + "'";
    return f.problem("unknown key '" + item.key() + "' (allowed: " + names + ")");
  }
  return {};
}

/// Calls `visit` with the field of every element of the array `f`, stopping
/// at the first error.
template <class Visit>
caf::error each_element(const field& f, Visit visit) {
  for (size_t i = 0; i < f.value.size(); ++i)
    if (auto err = visit(f.child("[" + std::to_string(i) + "]", f.value[i])))
      return err;
  return {};
}

/// A `sprintControlConfig` value as Python's `"%s" % v` renders it.
caf::error get_python_str(const field& f, std::string& out) {
  const auto& v = f.value;
  if (v.is_string())
    return get_string(f, out, false);
  if (v.is_boolean())
    out = v.get<bool>() ? "True" : "False";
  else if (v.is_number_unsigned())
    out = std::to_string(v.get<uint64_t>());
  else if (v.is_number_integer())
    out = std::to_string(v.get<int64_t>());
  else if (v.is_number_float())
    out = config::python_float_text(v.get<double>());
  else
    return f.fail("a string, number or bool");
  return {};
}

caf::error parse_config_str(const field& f, sprint_options& opts) {
  if (f.value.is_string()) {
    auto words = config::split_shell_words(f.value.get_ref<const std::string&>());
    if (!words)
      return f.problem(error_message(words.error()));
    opts.sprint_config = std::move(*words);
  } else if (f.value.is_array()) {
    opts.sprint_config.clear();
    return each_element(f, [&](const field& element) {
      std::string word;
      if (auto err = get_string(element, word, false))
        return err;
      opts.sprint_config.push_back(config::parse_word_with_variables(word));
      return caf::error{};
    });
  } else {
    return f.fail("a string or a list of strings");
  }
  return {};
}

caf::error parse_control_config(const field& f, sprint_options& opts) {
  if (!f.value.is_object())
    return f.fail("an object");
  static constexpr std::array<std::string_view, 4> reserved = {
      "c2p_fd", "p2c_fd", "minPythonControlVersion", "EnableAutoNumpySharedMemPickling"};
  for (const auto& item : f.value.items()) {
    const auto& key = item.key();
    if (key.empty() || key.find_first_of(",:") != std::string::npos)
      return f.problem("key '" + key + "' must be non-empty without ',' or ':'");
    if (std::find(reserved.begin(), reserved.end(), key) != reserved.end())
      return f.problem("key '" + key + "' is set by sprintrt itself");
    std::string value;
    if (auto err = get_python_str(f.child("." + key, item.value()), value))
      return err;
    if (value.find(',') != std::string::npos)
      return f.child("." + key, item.value()).fail("a value without ','");
    opts.sprint_control_config[key] = std::move(value);
  }
  return {};
}

caf::error parse_framing(const field& f, sprint_options& opts) {
  if (f.value == "length_prefixed")
    opts.framing = pipe_framing::length_prefixed;
  else if (f.value == "raw")
    opts.framing = pipe_framing::raw;
  else
    return f.fail("\"length_prefixed\" or \"raw\"");
  return {};
}

caf::error check_variable_name(const field& f, const std::string& name) {
  if (name.empty() || name.find_first_of(std::string{"=\0", 2}) != std::string::npos)
    return f.problem("invalid variable name \"" + name + "\" (must be non-empty, without '=')");
  return {};
}

caf::error parse_env(const field& f, sprint_options& opts) {
  if (auto err = check_keys(f, {"set", "unset"}, "an object with \"set\" and \"unset\""))
    return err;
  auto& env = opts.env;
  if (auto set = f.value.find("set"); set != f.value.end() && !set->is_null()) {
    const auto set_field = f.child(".set", *set);
    if (!set->is_object())
      return set_field.fail("an object of variable names to strings");
    for (const auto& item : set->items()) {
      if (auto err = check_variable_name(set_field, item.key()))
        return err;
      if (auto err =
              get_string(f.child(".set." + item.key(), item.value()), env.set[item.key()], false))
        return err;
    }
  }
  if (auto unset = f.value.find("unset"); unset != f.value.end() && !unset->is_null()) {
    const auto unset_field = f.child(".unset", *unset);
    if (!unset->is_array())
      return unset_field.fail("a list of variable names");
    const auto read_name = [&](const field& element) {
      std::string name;
      if (auto err = get_string(element, name, false))
        return err;
      if (auto err = check_variable_name(unset_field, name))
        return err;
      if (env.set.count(name) != 0)
        return f.problem("variable '" + name + "' is both set and unset");
      env.unset.push_back(std::move(name));
      return caf::error{};
    };
    if (auto err = each_element(unset_field, read_name))
      return err;
  }
  // Canonical form: the order and repetition of unset names mean nothing.
  std::sort(env.unset.begin(), env.unset.end());
  env.unset.erase(std::unique(env.unset.begin(), env.unset.end()), env.unset.end());
  return {};
}

/// Reads "host:port" (the last ':' separates them, so "[::1]:7000" and
/// "::1:7000" name IPv6 hosts; brackets are dropped).
caf::error parse_host_port(const field& entry, remote_endpoint& endpoint) {
  const std::string text = entry.value.get<std::string>();
  auto colon = text.rfind(':');
  auto bad = [&] { return entry.fail("\"host:port\" with a port from 1 to 65535"); };
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    return bad();
  std::string host = text.substr(0, colon), port = text.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    return bad();
  auto number = std::stoul(port);
  if (number < 1 || number > 65535)
    return bad();
  endpoint.host = std::move(host);
  endpoint.port = static_cast<uint16_t>(number);
  return {};
}

caf::error parse_remote(const field& f, sprint_options& opts) {
  if (!f.value.is_array())
    return f.fail("a list of \"host:port\" strings or {\"host\": ..., \"port\": ...} objects");
  return each_element(f, [&](const field& entry) {
    remote_endpoint endpoint;
    if (entry.value.is_string()) {
      if (auto err = parse_host_port(entry, endpoint))
        return err;
      opts.remote.push_back(std::move(endpoint));
      return caf::error{};
    }
    if (auto err = check_keys(entry, {"host", "port"},
                              "\"host:port\" or an object with \"host\" and \"port\""))
      return err;
    for (const std::string key : {"host", "port"})
      if (!entry.value.contains(key))
        return entry.child("." + key, entry.value).missing();
    if (auto err = get_string(entry.child(".host", entry.value["host"]), endpoint.host, true))
      return err;
    if (auto err = get_count(entry.child(".port", entry.value["port"]), 1, 65535,
                             "an integer from 1 to 65535", endpoint.port))
      return err;
    opts.remote.push_back(std::move(endpoint));
    return caf::error{};
  });
}

caf::error parse_remote_tls(const field& f, sprint_options& opts) {
  if (auto err = check_keys(f, {"certificate", "key", "ca"},
                            "an object with \"certificate\", \"key\" and \"ca\""))
    return err;
  auto& tls = opts.remote_tls;
  std::pair<const char*, std::string*> members[] = {
      {"certificate", &tls.certificate}, {"key", &tls.key}, {"ca", &tls.ca}};
  for (auto [key, member] : members) {
    if (!f.value.contains(key))
      return f.child(std::string{"."} + key, f.value).missing();
    if (auto err = get_string(f.child(std::string{"."} + key, f.value[key]), *member, true))
      return err;
  }
  return {};
}

caf::error parse_child_output(const field& f, sprint_options& opts) {
  auto& mode = opts.child_output;
  if (f.value == "log" || f.value == "inherit") {
    mode = {f.value == "log" ? child_output_mode::log : child_output_mode::inherit, {}};
    return {};
  }
  constexpr auto expected = R"("log", "inherit" or {"file": "DIR"})";
  if (!f.value.is_object())
    return f.fail(expected);
  if (auto err = check_keys(f, {"file"}, expected))
    return err;
  if (!f.value.contains("file"))
    return f.child(".file", f.value).missing();
  mode.kind = child_output_mode::file;
  return get_string(f.child(".file", f.value["file"]), mode.directory, true);
}

/// One option: its JSON key and how its (non-null) value is read.
struct option_entry {
  std::string_view key;
  caf::error (*parse)(const field&, sprint_options&);
};

/// Readers of plain options, straight into their member of `sprint_options`.
template <std::string sprint_options::*Member, bool NonEmpty>
caf::error string_option(const field& f, sprint_options& opts) {
  return get_string(f, opts.*Member, NonEmpty);
}

template <class T, T sprint_options::*Member, uint64_t Min>
caf::error count_option(const field& f, sprint_options& opts) {
  const auto expected = "an integer >= " + std::to_string(Min);
  return get_count(f, Min, std::numeric_limits<T>::max(), expected.c_str(), opts.*Member);
}

template <std::chrono::milliseconds sprint_options::*Member>
caf::error seconds_option(const field& f, sprint_options& opts) {
  return get_seconds(f, opts.*Member);
}

caf::error parse_segment_order(const field& f, sprint_options& opts) {
  return get_bool(f, opts.use_python_segment_order);
}

/// Every option, in the order of the documentation.
constexpr std::array<option_entry, 18> option_table = {{
    {"sprintExecPath", string_option<&sprint_options::sprint_exec_path, true>},
    {"sprintConfigStr", parse_config_str},
    {"minPythonControlVersion", count_option<int, &sprint_options::min_python_control_version, 0>},
    {"sprintControlConfig", parse_control_config},
    {"usePythonSegmentOrder", parse_segment_order},
    {"numInstances", count_option<size_t, &sprint_options::num_instances, 0>},
    {"pymodPath", string_option<&sprint_options::pymod_path, false>},
    {"pymodName", string_option<&sprint_options::pymod_name, true>},
    {"framing", parse_framing},
    {"arrayGlobalModule", string_option<&sprint_options::array_global_module, true>},
    {"initTimeout", seconds_option<&sprint_options::init_timeout>},
    {"replyTimeout", seconds_option<&sprint_options::reply_timeout>},
    {"exitGrace", seconds_option<&sprint_options::exit_grace>},
    {"maxRetries", count_option<size_t, &sprint_options::max_retries, 0>},
    {"env", parse_env},
    {"remote", parse_remote},
    {"remoteTls", parse_remote_tls},
    {"childOutput", parse_child_output},
}};

/// Whether two characters are equal ignoring case (for key suggestions).
bool same_ignoring_case(char x, char y) {
  return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
}

caf::error unknown_key(const std::string& key) {
  std::string_view best;
  size_t best_distance = std::max<size_t>(2, key.size() / 4) + 1;
  for (const auto& entry : option_table) {
    const auto distance = edit_distance(std::string_view{key}, entry.key, same_ignoring_case);
    if (distance < best_distance) {
      best = entry.key;
      best_distance = distance;
    }
  }
  auto message = "unknown option '" + key + "'";
  if (!best.empty())
    message += " (did you mean '" + std::string{best} + "'?)";
  return invalid(std::move(message));
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
      return invalid("duplicate key '" + duplicate + "' in the options");
    return doc;
  } catch (const json::exception& e) {
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix.
    std::string what = e.what();
    const size_t prefix_end = what.find("] ");
    if (prefix_end != std::string::npos)
      what.erase(0, prefix_end + 2);
    return invalid("malformed JSON: " + what);
  }
}

caf::expected<sprint_options> options_from_document(const json& doc) {
  if (!doc.is_object())
    return invalid(std::string{"the options must be a JSON object, got "} + doc.type_name());
  // Pass 1: find each option's value, following `config:` references.
  std::vector<std::optional<field>> values;
  std::set<std::string> referenced;
  for (const auto& entry : option_table) {
    const std::string key{entry.key};
    const auto found = doc.find(key);
    if (found == doc.end()) {
      values.emplace_back();
      continue;
    }
    const auto target = reference_name(*found);
    if (!target) {
      values.emplace_back(field{key, "", *found});
      continue;
    }
    const auto resolved = doc.find(*target);
    if (resolved == doc.end())
      return invalid("option '" + key + "' refers to 'config:" + *target +
                     "', but the document has no top-level key '" + *target + "'");
    if (reference_name(*resolved))
      return invalid("option '" + key + "' refers to 'config:" + *target + "', which is " +
                     shown(*resolved) + ", another reference (config: references do not chain)");
    referenced.insert(*target);
    values.emplace_back(field{key, *target, *resolved});
  }
  // Pass 2: every other key must be an option or referenced.
  for (const auto& item : doc.items()) {
    const auto& key = item.key();
    const bool is_option = std::any_of(option_table.begin(), option_table.end(),
                                       [&](const option_entry& e) { return e.key == key; });
    if (!is_option && referenced.count(key) == 0)
      return unknown_key(key);
  }
  // Pass 3: validate; null means the default (except for the required path).
  if (!values.front())
    return invalid("option 'sprintExecPath' is required (the Sprint executable)");
  sprint_options opts;
  for (size_t i = 0; i < option_table.size(); ++i) {
    if (!values[i] || (i > 0 && values[i]->value.is_null()))
      continue;
    if (auto err = option_table[i].parse(*values[i], opts))
      return err;
  }
  if (opts.num_instances == 0 && opts.remote.empty())
    return invalid("option 'numInstances' must be at least 1 unless 'remote' names pools "
                   "on other machines, got 0");
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
  json words = json::array();
  for (const auto& word : opts.sprint_config)
    words.push_back(config::word_text(word));
  json remote = json::array();
  for (const auto& endpoint : opts.remote)
    remote.push_back({{"host", endpoint.host}, {"port", endpoint.port}});
  const auto seconds = [](std::chrono::milliseconds ms) { return ms.count() / 1000.0; };
  const auto& output = opts.child_output;
  const json child_output = output.kind == child_output_mode::file
                                ? json{{"file", output.directory}}
                                : json(output.kind == child_output_mode::log ? "log" : "inherit");
  const json doc = {
      {"sprintExecPath", opts.sprint_exec_path},
      {"sprintConfigStr", std::move(words)},
      {"minPythonControlVersion", opts.min_python_control_version},
      {"sprintControlConfig", json(opts.sprint_control_config)},
      {"usePythonSegmentOrder", opts.use_python_segment_order},
      {"numInstances", opts.num_instances},
      {"pymodPath", opts.pymod_path},
      // "" is not given: null, which reads back as the default.
      {"pymodName", opts.pymod_name.empty() ? json(nullptr) : json(opts.pymod_name)},
      {"framing", protocol::to_string(config::wire_framing(opts.framing))},
      {"arrayGlobalModule", opts.array_global_module},
      {"initTimeout", seconds(opts.init_timeout)},
      {"replyTimeout", seconds(opts.reply_timeout)},
      {"exitGrace", seconds(opts.exit_grace)},
      {"maxRetries", opts.max_retries},
      {"env", {{"set", json(opts.env.set)}, {"unset", json(opts.env.unset)}}},
      {"remote", std::move(remote)},
      {"remoteTls", opts.remote_tls.empty() ? json(nullptr)
                                            : json{{"certificate", opts.remote_tls.certificate},
                                                   {"key", opts.remote_tls.key},
                                                   {"ca", opts.remote_tls.ca}}},
      {"childOutput", child_output},
  };
  return doc.dump();
}

bool operator==(const sprint_options& x, const sprint_options& y) {
  return x.sprint_exec_path == y.sprint_exec_path && x.sprint_config == y.sprint_config &&
         x.min_python_control_version == y.min_python_control_version &&
         x.sprint_control_config == y.sprint_control_config &&
         x.use_python_segment_order == y.use_python_segment_order &&
         x.num_instances == y.num_instances && x.pymod_path == y.pymod_path &&
         x.pymod_name == y.pymod_name && x.framing == y.framing &&
         x.array_global_module == y.array_global_module && x.init_timeout == y.init_timeout &&
         x.reply_timeout == y.reply_timeout && x.exit_grace == y.exit_grace &&
         x.max_retries == y.max_retries && x.env == y.env && x.remote == y.remote &&
         x.remote_tls == y.remote_tls && x.child_output == y.child_output;
}

} // namespace sprintrt
