#include "protocol/pickle_repr.hpp"

#include <charconv>
#include <cmath>

namespace sprintrt::protocol {

namespace {

void append_float(std::string& out, double x) {
  if (std::isnan(x)) {
    out += "nan";
  } else if (std::isinf(x)) {
    out += x > 0 ? "inf" : "-inf";
  } else {
    char buf[32];
    auto res = std::to_chars(buf, buf + sizeof(buf), x);
    std::string_view text(buf, static_cast<size_t>(res.ptr - buf));
    out += text;
    // Python writes floats with a fraction or exponent: 3.0, not 3.
    if (text.find_first_of(".e") == std::string_view::npos)
      out += ".0";
  }
}

void append_quoted(std::string& out, std::string_view text, size_t budget) {
  out += '\'';
  size_t n = 0;
  for (char c : text) {
    if (n++ == budget) {
      out += "...";
      break;
    }
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[static_cast<unsigned char>(c) >> 4];
      out += hex[static_cast<unsigned char>(c) & 0xf];
    } else {
      out += c;
    }
  }
  out += '\'';
}

void append_repr(std::string& out, const value& x, size_t max_length) {
  if (out.size() > max_length)
    return;
  using kind = value::kind;
  switch (x.type()) {
  case kind::none:
    out += "None";
    break;
  case kind::boolean:
    out += x.as_bool() ? "True" : "False";
    break;
  case kind::integer:
    out += std::to_string(x.as_int());
    break;
  case kind::floating:
    append_float(out, x.as_float());
    break;
  case kind::str:
    append_quoted(out, x.as_str(), max_length);
    break;
  case kind::bytes:
    out += 'b';
    append_quoted(out, x.as_bytes().to_string(), max_length);
    break;
  case kind::tuple:
  case kind::list: {
    bool is_tuple = x.is(kind::tuple);
    const auto& xs = x.as_items();
    out += is_tuple ? '(' : '[';
    for (size_t i = 0; i < xs.size(); ++i) {
      if (i > 0)
        out += ", ";
      if (out.size() > max_length) {
        out += "...";
        break;
      }
      append_repr(out, xs[i], max_length);
    }
    if (is_tuple && xs.size() == 1)
      out += ',';
    out += is_tuple ? ')' : ']';
    break;
  }
  case kind::dict: {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : x.as_dict()) {
      if (!first)
        out += ", ";
      first = false;
      if (out.size() > max_length) {
        out += "...";
        break;
      }
      append_repr(out, k, max_length);
      out += ": ";
      append_repr(out, v, max_length);
    }
    out += '}';
    break;
  }
  case kind::ndarray: {
    const auto& a = x.as_ndarray();
    out += "ndarray(";
    out += to_string(a.type);
    out += ", [";
    for (size_t i = 0; i < a.shape.size(); ++i) {
      if (i > 0)
        out += ", ";
      out += std::to_string(a.shape[i]);
    }
    out += "])";
    break;
  }
  case kind::numpy_scalar: {
    const auto& s = x.as_numpy_scalar();
    out += "numpy.";
    out += to_string(s.type);
    out += '(';
    if (is_floating(s.type))
      append_float(out, s.to_double());
    else
      out += std::to_string(s.to_int());
    out += ')';
    break;
  }
  case kind::global:
    out += "<global ";
    out += to_string(x.as_global());
    out += '>';
    break;
  case kind::numpy_dtype:
    out += "dtype('";
    out += to_string(x.as_numpy_dtype().type);
    out += "')";
    break;
  }
}

} // namespace

std::string excerpt(byte_span bytes, size_t max_bytes) {
  std::string out = "b";
  append_quoted(out, {reinterpret_cast<const char*>(bytes.data()), bytes.size()}, max_bytes);
  if (bytes.size() > max_bytes)
    out += " (" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

std::string repr(const value& x, size_t max_length) {
  std::string out;
  append_repr(out, x, max_length);
  if (out.size() > max_length + 3) {
    out.resize(max_length);
    out += "...";
  }
  return out;
}

} // namespace sprintrt::protocol
