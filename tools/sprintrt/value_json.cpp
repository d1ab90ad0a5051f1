#include "tools/sprintrt/value_json.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/ndarray_access.hpp"

namespace sprintrt::cli {

// Every function here maps a protocol value; their names would repeat the prefix.
using namespace protocol;

nlohmann::json float_to_json(double x) {
  if (std::isnan(x))
    return "nan";
  if (std::isinf(x))
    return x > 0 ? "inf" : "-inf";
  return x;
}

namespace {

using json = nlohmann::json;

std::string to_hex(byte_span bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string result;
  result.reserve(bytes.size() * 2);
  for (auto b : bytes) {
    auto x = std::to_integer<unsigned>(b);
    result += digits[x >> 4];
    result += digits[x & 0xf];
  }
  return result;
}

json array_data_to_json(const ndarray& a) {
  json data = json::array();
  size_t n = a.num_elements();
  auto& items = data.get_ref<json::array_t&>();
  items.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    switch (a.type) {
    case dtype::float32:
      items.push_back(float_to_json(element<float>(a, i)));
      break;
    case dtype::float64:
      items.push_back(float_to_json(element<double>(a, i)));
      break;
    case dtype::int32:
      items.push_back(element<int32_t>(a, i));
      break;
    case dtype::uint32:
      items.push_back(element<uint32_t>(a, i));
      break;
    case dtype::int64:
      items.push_back(element<int64_t>(a, i));
      break;
    case dtype::uint8:
      items.push_back(element<uint8_t>(a, i));
      break;
    }
  }
  return data;
}

// -- from_json helpers ----------------------------------------------------------

caf::error bad(const std::string& what, const json& j) {
  return make_error(errc::invalid_input,
                    what + ": " + j.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::optional<double> json_to_float(const json& j) {
  if (j.is_number())
    return j.get<double>();
  if (j == "inf")
    return std::numeric_limits<double>::infinity();
  if (j == "-inf")
    return -std::numeric_limits<double>::infinity();
  if (j == "nan")
    return std::numeric_limits<double>::quiet_NaN();
  return std::nullopt;
}

std::optional<std::vector<std::byte>> from_hex(const std::string& text) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  };
  if (text.size() % 2 != 0)
    return std::nullopt;
  std::vector<std::byte> bytes;
  for (size_t i = 0; i < text.size(); i += 2) {
    int hi = digit(text[i]);
    int lo = digit(text[i + 1]);
    if (hi < 0 || lo < 0)
      return std::nullopt;
    bytes.push_back(static_cast<std::byte>(hi * 16 + lo));
  }
  return bytes;
}

/// Appends element `x` of `type` to `out` in little-endian order.
template <class T>
void append_element(std::vector<std::byte>& out, T x) {
  const auto* p = reinterpret_cast<const std::byte*>(&x);
  out.insert(out.end(), p, p + sizeof(T));
}

caf::error append_json_element(std::vector<std::byte>& out, dtype type, const json& j) {
  if (is_floating(type)) {
    auto x = json_to_float(j);
    if (!x)
      return bad("array element is not a number", j);
    if (type == dtype::float32)
      append_element(out, static_cast<float>(*x));
    else
      append_element(out, *x);
    return {};
  }
  if (!j.is_number_integer())
    return bad("array element is not an integer", j);
  switch (type) {
  case dtype::int32:
    append_element(out, j.get<int32_t>());
    break;
  case dtype::uint32:
    append_element(out, j.get<uint32_t>());
    break;
  case dtype::int64:
    append_element(out, j.get<int64_t>());
    break;
  default:
    append_element(out, j.get<uint8_t>());
    break;
  }
  return {};
}

caf::expected<value> ndarray_from_json(const json& spec) {
  if (!spec.is_object() || !spec.contains("dtype") || !spec.contains("shape") ||
      !spec["dtype"].is_string() || !spec["shape"].is_array())
    return bad("ndarray needs dtype and shape", spec);
  auto type = parse_dtype(spec["dtype"].get<std::string>());
  if (!type)
    return bad("unsupported dtype", spec["dtype"]);
  ndarray result;
  result.type = *type;
  for (const auto& extent : spec["shape"]) {
    if (!extent.is_number_unsigned())
      return bad("shape entries must be non-negative integers", spec["shape"]);
    result.shape.push_back(extent.get<size_t>());
  }
  size_t n = result.num_elements();
  std::vector<std::byte> bytes;
  bytes.reserve(n * item_size(*type));
  if (spec.value("arange", false)) {
    for (size_t i = 0; i < n; ++i)
      if (auto err = append_json_element(
              bytes, *type, is_floating(*type) ? json(static_cast<double>(i)) : json(i)))
        return err;
  } else {
    if (!spec.contains("data") || !spec["data"].is_array() || spec["data"].size() != n)
      return bad("ndarray data must be a list of " + std::to_string(n) + " numbers", spec);
    for (const auto& x : spec["data"])
      if (auto err = append_json_element(bytes, *type, x))
        return err;
  }
  result.data = bytes_ref::own(std::move(bytes));
  return value::array(std::move(result));
}

caf::expected<value::items> items_from_json(const json& list) {
  if (!list.is_array())
    return bad("expected a list", list);
  value::items xs;
  for (const auto& item : list) {
    auto x = from_json(item);
    if (!x)
      return x.error();
    xs.push_back(std::move(*x));
  }
  return xs;
}

} // namespace

json to_json(const value& x) {
  using kind = value::kind;
  switch (x.type()) {
  case kind::none:
    return {{"none", nullptr}};
  case kind::boolean:
    return {{"bool", x.as_bool()}};
  case kind::integer:
    return {{"int", x.as_int()}};
  case kind::floating:
    return {{"float", float_to_json(x.as_float())}};
  case kind::str:
    return {{"str", x.as_str()}};
  case kind::bytes:
    return {{"bytes_hex", to_hex(x.as_bytes().bytes())}};
  case kind::tuple:
  case kind::list: {
    json items = json::array();
    for (const auto& item : x.as_items())
      items.push_back(to_json(item));
    return {{x.is(kind::tuple) ? "tuple" : "list", std::move(items)}};
  }
  case kind::dict: {
    json pairs = json::array();
    for (const auto& [k, v] : x.as_dict())
      pairs.push_back(json::array({to_json(k), to_json(v)}));
    return {{"dict", std::move(pairs)}};
  }
  case kind::ndarray: {
    const auto& a = x.as_ndarray();
    return {{"ndarray",
             {{"dtype", to_string(a.type)}, {"shape", a.shape}, {"data", array_data_to_json(a)}}}};
  }
  case kind::numpy_scalar: {
    const auto& s = x.as_numpy_scalar();
    json v = is_floating(s.type) ? float_to_json(s.to_double()) : json(s.to_int());
    return {{"numpy_scalar", {{"dtype", to_string(s.type)}, {"value", std::move(v)}}}};
  }
  case kind::global:
    return {{"global", to_string(x.as_global())}};
  case kind::numpy_dtype:
    return {{"numpy_dtype", to_string(x.as_numpy_dtype().type)}};
  }
  return nullptr;
}

caf::expected<value> from_json(const json& j) {
  if (!j.is_object() || j.size() != 1)
    return bad("a typed value is an object with one key", j);
  auto first = j.begin();
  const std::string& key = first.key();
  const json& body = first.value();
  if (key == "none")
    return value{};
  if (key == "bool" && body.is_boolean())
    return value::boolean(body.get<bool>());
  if (key == "int" && body.is_number_integer())
    return value::integer(body.get<int64_t>());
  if (key == "float") {
    if (auto x = json_to_float(body))
      return value::floating(*x);
  }
  if (key == "str" && body.is_string())
    return value::str(body.get<std::string>());
  if (key == "bytes_hex" && body.is_string()) {
    if (auto bytes = from_hex(body.get<std::string>()))
      return value::bytes(bytes_ref::own(std::move(*bytes)));
  }
  if (key == "tuple" || key == "list") {
    auto xs = items_from_json(body);
    if (!xs)
      return xs.error();
    return key == "tuple" ? value::tuple(std::move(*xs)) : value::list(std::move(*xs));
  }
  if (key == "dict" && body.is_array()) {
    value::dict_items pairs;
    for (const auto& pair : body) {
      auto kv = items_from_json(pair);
      if (!kv)
        return kv.error();
      if (kv->size() != 2)
        return bad("dict entries are [key, value] pairs", pair);
      if (!(*kv)[0].is_scalar_key())
        return bad("dict keys must be None, bool, int, float, str or bytes", pair);
      pairs.emplace_back(std::move((*kv)[0]), std::move((*kv)[1]));
    }
    return value::dict(std::move(pairs));
  }
  if (key == "ndarray")
    return ndarray_from_json(body);
  if (key == "numpy_scalar" && body.is_object() && body.contains("dtype") &&
      body["dtype"].is_string() && body.contains("value")) {
    auto type = parse_dtype(body["dtype"].get<std::string>());
    if (!type)
      return bad("unsupported dtype", body["dtype"]);
    if (is_floating(*type)) {
      if (auto x = json_to_float(body["value"]))
        return value::scalar(numpy_scalar::of_float(*type, *x));
    } else if (body["value"].is_number_integer()) {
      return value::scalar(numpy_scalar::of_int(*type, body["value"].get<int64_t>()));
    }
  }
  return bad("not a typed value", j);
}

} // namespace sprintrt::cli
