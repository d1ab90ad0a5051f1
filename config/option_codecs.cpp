#include "config/option_codecs.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "config/shell_words.hpp"
#include "config/sprint_args.hpp"
#include "config/wire_format.hpp"

namespace sprintrt::config {

namespace {

using json = nlohmann::json;

caf::error get_string(const option_field& f, std::string& out, bool non_empty) {
  if (!f.value.is_string() || (non_empty && f.value.get_ref<const std::string&>().empty()))
    return f.fail(non_empty ? "a non-empty string" : "a string");
  const auto& text = f.value.get_ref<const std::string&>();
  if (text.find('\0') != std::string::npos)
    return f.problem("must not contain a NUL character");
  out = text;
  return {};
}

/// Fails unless `f` is an object whose keys are all in `allowed`
/// (`expected` describes the object).
caf::error check_keys(const option_field& f, std::initializer_list<std::string_view> allowed,
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
caf::error each_element(const option_field& f, Visit visit) {
  for (size_t i = 0; i < f.value.size(); ++i)
    if (auto err = visit(f.child("[" + std::to_string(i) + "]", f.value[i])))
      return err;
  return {};
}

/// A `sprintControlConfig` value as Python's `"%s" % v` renders it.
caf::error get_python_str(const option_field& f, std::string& out) {
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
    out = python_float_text(v.get<double>());
  else
    return f.fail("a string, number or bool");
  return {};
}

caf::error check_variable_name(const option_field& f, const std::string& name) {
  if (name.empty() || name.find_first_of(std::string{"=\0", 2}) != std::string::npos)
    return f.problem("invalid variable name \"" + name + "\" (must be non-empty, without '=')");
  return {};
}

/// Reads "host:port" (the last ':' separates them, so "[::1]:7000" and
/// "::1:7000" name IPv6 hosts; brackets are dropped).
caf::error parse_host_port(const option_field& entry, remote_endpoint& endpoint) {
  std::string text;
  if (auto err = get_string(entry, text, false))
    return err;
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

caf::error parse_endpoint_object(const option_field& entry, remote_endpoint& endpoint) {
  if (auto err = check_keys(entry, {"host", "port"},
                            "\"host:port\" or an object with \"host\" and \"port\""))
    return err;
  for (const std::string key : {"host", "port"})
    if (!entry.value.contains(key))
      return entry.child("." + key, entry.value).missing();
  if (auto err = get_string(entry.child(".host", entry.value["host"]), endpoint.host, true))
    return err;
  uint64_t port = 0;
  if (auto err = read_count(entry.child(".port", entry.value["port"]), 1, 65535,
                            "an integer from 1 to 65535", port))
    return err;
  endpoint.port = static_cast<uint16_t>(port);
  return {};
}

} // namespace

caf::error invalid_options(std::string message) {
  return make_error(errc::invalid_options, std::move(message));
}

std::string shown(const json& value) {
  auto text = value.dump();
  constexpr size_t max_length = 60;
  if (text.size() > max_length)
    text = text.substr(0, max_length) + "...";
  return text;
}

std::string option_field::name() const {
  auto result = "option '" + path + "'";
  if (!via.empty())
    result += " (from 'config:" + via + "')";
  return result;
}

caf::error option_field::fail(const std::string& expected) const {
  return invalid_options(name() + " must be " + expected + ", got " + shown(value));
}

caf::error option_field::problem(const std::string& what) const {
  return invalid_options(name() + ": " + what);
}

caf::error option_field::missing() const {
  return invalid_options(name() + " is required");
}

option_field option_field::child(const std::string& suffix, const json& child_value) const {
  return option_field{path + suffix, via, child_value};
}

caf::error read_count(const option_field& f, uint64_t min, uint64_t max,
                      const std::string& expected, uint64_t& out) {
  uint64_t x = 0;
  if (f.value.is_number_unsigned())
    x = f.value.get<uint64_t>();
  else if (f.value.is_number_integer() && f.value.get<int64_t>() >= 0)
    x = static_cast<uint64_t>(f.value.get<int64_t>());
  else
    return f.fail(expected);
  if (x < min || x > max)
    return f.fail(expected);
  out = x;
  return {};
}

caf::error text_codec::read(const option_field& f, std::string& out) {
  return get_string(f, out, false);
}

caf::error non_empty_text_codec::read(const option_field& f, std::string& out) {
  return get_string(f, out, true);
}

json optional_name_codec::write(const std::string& x) {
  return x.empty() ? json(nullptr) : json(x);
}

caf::error flag_codec::read(const option_field& f, bool& out) {
  if (!f.value.is_boolean())
    return f.fail("true or false");
  out = f.value.get<bool>();
  return {};
}

caf::error seconds_codec::read(const option_field& f, std::chrono::milliseconds& out) {
  constexpr double max_seconds = 1e9;
  if (!f.value.is_number() || !(f.value.get<double>() > 0) || f.value.get<double>() > max_seconds)
    return f.fail("a number of seconds > 0 (at most 1e9)");
  // Whole microseconds first: 1.1 * 1000 is 1100.0000000000002, which must not become 1101 ms.
  const auto micros = std::llround(f.value.get<double>() * 1e6);
  out = std::chrono::milliseconds{std::max<long long>(1, (micros + 999) / 1000)};
  return {};
}

caf::error config_words_codec::read(const option_field& f, std::vector<config_word>& out) {
  if (f.value.is_string()) {
    std::string text;
    if (auto err = get_string(f, text, false))
      return err;
    auto words = split_shell_words(text);
    if (!words)
      return f.problem(error_message(words.error()));
    out = std::move(*words);
    return {};
  }
  if (!f.value.is_array())
    return f.fail("a string or a list of strings");
  out.clear();
  return each_element(f, [&](const option_field& element) {
    std::string word;
    if (auto err = get_string(element, word, false))
      return err;
    out.push_back(parse_word_with_variables(word));
    return caf::error{};
  });
}

json config_words_codec::write(const std::vector<config_word>& x) {
  json words = json::array();
  for (const auto& word : x)
    words.push_back(word_text(word));
  return words;
}

caf::error control_config_codec::read(const option_field& f,
                                      std::map<std::string, std::string>& out) {
  if (!f.value.is_object())
    return f.fail("an object");
  static constexpr std::array<std::string_view, 5> reserved = {
      "c2p_fd", "p2c_fd", "minPythonControlVersion", "EnableAutoNumpySharedMemPickling",
      protocol::shared_memory_config_key};
  for (const auto& item : f.value.items()) {
    const auto& key = item.key();
    if (key.empty() || key.find_first_of(",:") != std::string::npos)
      return f.problem("key '" + key + "' must be non-empty without ',' or ':'");
    // A key goes into a child's argument, which execve would cut at a NUL.
    if (key.find('\0') != std::string::npos)
      return f.problem("a key must not contain a NUL character");
    if (std::find(reserved.begin(), reserved.end(), key) != reserved.end())
      return f.problem("key '" + key + "' is set by sprintrt itself");
    std::string value;
    if (auto err = get_python_str(f.child("." + key, item.value()), value))
      return err;
    if (value.find(',') != std::string::npos)
      return f.child("." + key, item.value()).fail("a value without ','");
    out[key] = std::move(value);
  }
  return {};
}

std::string choice_text(const std::vector<std::string_view>& names) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0)
      text += i + 1 == names.size() ? " or " : ", ";
    text += '"' + std::string{names[i]} + '"';
  }
  return text;
}

caf::error environment_codec::read(const option_field& f, environment_changes& env) {
  if (auto err = check_keys(f, {"set", "unset"}, "an object with \"set\" and \"unset\""))
    return err;
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
    const auto read_name = [&](const option_field& element) {
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

json environment_codec::write(const environment_changes& x) {
  return {{"set", json(x.set)}, {"unset", json(x.unset)}};
}

caf::error remote_codec::read(const option_field& f, std::vector<remote_endpoint>& out) {
  if (!f.value.is_array())
    return f.fail("a list of \"host:port\" strings or {\"host\": ..., \"port\": ...} objects");
  return each_element(f, [&](const option_field& entry) {
    remote_endpoint endpoint;
    auto err = entry.value.is_string() ? parse_host_port(entry, endpoint)
                                       : parse_endpoint_object(entry, endpoint);
    if (!err)
      out.push_back(std::move(endpoint));
    return err;
  });
}

json remote_codec::write(const std::vector<remote_endpoint>& x) {
  json remote = json::array();
  for (const auto& endpoint : x)
    remote.push_back({{"host", endpoint.host}, {"port", endpoint.port}});
  return remote;
}

caf::error tls_codec::read(const option_field& f, tls_files& tls) {
  if (auto err = check_keys(f, {"certificate", "key", "ca"},
                            "an object with \"certificate\", \"key\" and \"ca\""))
    return err;
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

json tls_codec::write(const tls_files& x) {
  if (x.empty())
    return nullptr;
  return {{"certificate", x.certificate}, {"key", x.key}, {"ca", x.ca}};
}

caf::error child_output_codec::read(const option_field& f, child_output_mode& mode) {
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

json child_output_codec::write(const child_output_mode& x) {
  if (x.kind == child_output_mode::file)
    return {{"file", x.directory}};
  return x.kind == child_output_mode::log ? "log" : "inherit";
}

} // namespace sprintrt::config
