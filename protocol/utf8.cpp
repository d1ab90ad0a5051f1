#include "protocol/utf8.hpp"

#include <cstdint>

namespace sprintrt::protocol {

namespace {

/// Decodes the code point starting at `i`, advancing `i`; -1 if malformed.
int32_t next_code_point(std::string_view text, size_t& i) noexcept {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  uint8_t lead = byte(i);
  if (lead < 0x80) {
    ++i;
    return lead;
  }
  size_t length;
  int32_t cp;
  int32_t min;
  if ((lead & 0xe0) == 0xc0) {
    length = 2, cp = lead & 0x1f, min = 0x80;
  } else if ((lead & 0xf0) == 0xe0) {
    length = 3, cp = lead & 0x0f, min = 0x800;
  } else if ((lead & 0xf8) == 0xf0) {
    length = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    return -1;
  }
  if (text.size() - i < length)
    return -1;
  for (size_t k = 1; k < length; ++k) {
    uint8_t cont = byte(i + k);
    if ((cont & 0xc0) != 0x80)
      return -1;
    cp = (cp << 6) | (cont & 0x3f);
  }
  if (cp < min || cp > 0x10ffff)
    return -1;
  i += length;
  return cp;
}

} // namespace

bool is_valid_utf8(std::string_view text) noexcept {
  for (size_t i = 0; i < text.size();)
    if (next_code_point(text, i) < 0)
      return false;
  return true;
}

std::string python_decodable(std::string text) {
  if (!is_valid_utf8(text))
    for (auto& c : text)
      if (static_cast<unsigned char>(c) >= 0x80)
        c = '?';
  return text;
}

std::optional<std::vector<std::byte>> utf8_to_latin1(std::string_view text) {
  std::vector<std::byte> result;
  result.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    int32_t cp = next_code_point(text, i);
    if (cp < 0 || cp > 0xff)
      return std::nullopt;
    result.push_back(static_cast<std::byte>(cp));
  }
  return result;
}

std::string escape_for_log(std::string_view bytes) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const size_t start = i;
    const int32_t cp = next_code_point(bytes, i);
    if (cp == '\\') {
      out += "\\\\";
      continue;
    }
    // C0 and C1 controls (ESC, CSI, ...) and DEL, but tab and newline.
    const bool control = cp < 0x20 || (cp >= 0x7f && cp < 0xa0);
    if (cp >= 0 && (!control || cp == '\t' || cp == '\n')) {
      out.append(bytes.substr(start, i - start));
      continue;
    }
    // A control character's bytes, or one byte of a malformed sequence (the
    // next one starts after it).
    if (cp < 0)
      i = start + 1;
    for (size_t k = start; k < i; ++k) {
      const auto b = static_cast<uint8_t>(bytes[k]);
      out += "\\x";
      out += hex[b >> 4];
      out += hex[b & 0xf];
    }
  }
  return out;
}

} // namespace sprintrt::protocol
