#include "tools/sprintrt/npy_header.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace sprintrt::cli {

using protocol::dtype;

std::string escape_for_message(std::string_view bytes) {
  std::string text;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      text += static_cast<char>(c);
    } else {
      const char* hex = "0123456789abcdef";
      text += c == '\\' ? std::string{"\\\\"} : std::string{"\\x"} + hex[c >> 4] + hex[c & 15];
    }
  }
  return text;
}

namespace {

/// A strict parser of the Python dict literal that NumPy writes as the header:
/// exactly the keys 'descr' (a string), 'fortran_order' (True or False) and
/// 'shape' (a tuple of non-negative ints), strings in single or double quotes
/// without escapes, optional trailing commas, white space between tokens.
class header_parser {
public:
  explicit header_parser(std::string_view text) : text_(text) {}

  /// Parses the whole header into `fields`; on failure returns false and sets
  /// `error()`.
  bool parse(npy_header& fields) {
    const char* names[3] = {"descr", "fortran_order", "shape"};
    bool seen[3] = {false, false, false};
    if (!expect('{', "the header to start with '{'"))
      return false;
    while (skip_space() != '}') {
      std::string key;
      if (!string_literal(key, "a quoted key or '}'") || !expect(':', "':' after the key"))
        return false;
      auto index = std::find(names, names + 3, key) - names;
      if (index == 3)
        return fail("unexpected key '" + escape_for_message(key) + "'");
      if (seen[index])
        return fail("key '" + key + "' appears twice");
      seen[index] = true;
      if (!(index == 0   ? descr(fields.descr)
            : index == 1 ? boolean(fields.fortran_order)
                         : shape(fields.shape)))
        return false;
      if (skip_space() != ',')
        break;
      ++pos_;
    }
    if (!expect('}', "',' or '}' after a value"))
      return false;
    if (skip_space() != end)
      return fail("unexpected text after the closing '}'");
    for (int i = 0; i < 3; ++i)
      if (!seen[i])
        return fail("the key '" + std::string{names[i]} + "' is missing");
    return true;
  }

  /// The reason the last `parse()` failed.
  const std::string& error() const noexcept { return error_; }

private:
  static constexpr int end = -1;

  /// Skips white space; returns the next character or `end`.
  int skip_space() {
    while (pos_ < text_.size() &&
           std::string_view{" \t\n\r"}.find(text_[pos_]) != std::string_view::npos)
      ++pos_;
    return pos_ < text_.size() ? static_cast<unsigned char>(text_[pos_]) : end;
  }

  bool fail(std::string what) {
    error_ = std::move(what);
    return false;
  }

  /// Fails with "expected <what> at offset N, found <the next character>".
  bool fail_at(const std::string& what) {
    int c = skip_space();
    return fail("expected " + what + " at offset " + std::to_string(pos_) + ", found " +
                (c == end ? std::string{"the end of the header"}
                          : "'" + escape_for_message(text_.substr(pos_, 1)) + "'"));
  }

  bool expect(char c, const char* what) {
    if (skip_space() != c)
      return fail_at(what);
    ++pos_;
    return true;
  }

  bool string_literal(std::string& out, const char* what) {
    int quote = skip_space();
    if (quote != '\'' && quote != '"')
      return fail_at(what);
    size_t close = text_.find(static_cast<char>(quote), pos_ + 1);
    size_t backslash = text_.find('\\', pos_ + 1);
    if (close == std::string_view::npos)
      return fail("the string at offset " + std::to_string(pos_) + " has no closing quote");
    if (backslash < close)
      return fail("escape sequences in strings are not supported (offset " +
                  std::to_string(backslash) + ")");
    out = std::string{text_.substr(pos_ + 1, close - pos_ - 1)};
    pos_ = close + 1;
    return true;
  }

  bool descr(std::string& out) {
    if (skip_space() == '[')
      return fail("structured dtypes (a list as 'descr') are not supported");
    return string_literal(out, "a string as the value of 'descr'");
  }

  bool boolean(bool& out) {
    skip_space();
    for (bool value : {false, true}) {
      std::string_view word = value ? "True" : "False";
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        out = value;
        return true;
      }
    }
    return fail_at("True or False as the value of 'fortran_order'");
  }

  bool shape(std::vector<size_t>& out) {
    if (!expect('(', "a tuple such as (3, 4) as the value of 'shape'"))
      return false;
    bool comma = false;
    while (skip_space() != ')') {
      if (!out.empty() && !comma)
        return fail_at("',' or ')' in the shape");
      if (!integer(out.emplace_back()))
        return false;
      comma = skip_space() == ',';
      pos_ += comma;
    }
    ++pos_;
    if (out.size() == 1 && !comma)
      return fail("the shape (" + std::to_string(out[0]) + ") is an int, not a tuple (a 1-tuple " +
                  "is written (" + std::to_string(out[0]) + ",))");
    return true;
  }

  bool integer(size_t& out) {
    int c = skip_space();
    if (c == '-')
      return fail("the shape has a negative dimension at offset " + std::to_string(pos_));
    if (c < '0' || c > '9')
      return fail_at("a dimension (a non-negative integer) in the shape");
    size_t start = pos_;
    bool overflow = false;
    for (; pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9'; ++pos_) {
      size_t digit = static_cast<size_t>(text_[pos_] - '0');
      overflow = overflow || out > (SIZE_MAX - digit) / 10;
      out = out * 10 + digit;
    }
    if (overflow)
      return fail("the shape dimension " + std::string{text_.substr(start, pos_ - start)} +
                  " does not fit in 64 bits");
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

} // namespace

bool parse_npy_header(std::string_view text, npy_header& out, std::string& error) {
  header_parser parser{text};
  if (parser.parse(out))
    return true;
  error = parser.error();
  return false;
}

std::optional<dtype> npy_descr_type(const std::string& descr, std::string& error) {
  std::optional<dtype> type;
  if (descr.size() == 3 && std::string_view{"<=|>"}.find(descr[0]) != std::string_view::npos)
    type = protocol::parse_dtype(std::string_view{descr}.substr(1));
  if (!type) {
    error = "unsupported dtype '" + escape_for_message(descr) +
            "' (supported: <f4, <f8, <i4, <u4, <i8, |u1)";
    if (descr.size() >= 2 && descr[1] == 'O')
      error += "; object arrays hold pickled Python objects";
    return std::nullopt;
  }
  const size_t size = protocol::item_size(*type);
  if (descr[0] == '>' && size > 1)
    error = "big-endian dtype '" + descr + "' is not supported; convert with array.astype('<" +
            descr.substr(1) + "')";
  else if (descr[0] == '|' && size > 1)
    error = "dtype '" + descr + "' has no byte order ('|'), but its elements have " +
            std::to_string(size) + " bytes";
  else
    return type;
  return std::nullopt;
}

} // namespace sprintrt::cli
