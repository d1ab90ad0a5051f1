#include "config/shell_words.hpp"

#include <algorithm>

namespace sprintrt::config {

namespace {

bool is_name_start(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/// Whether a backslash inside double quotes escapes `c` (POSIX).
bool escapable_in_double_quotes(char c) {
  return c == '"' || c == '\\' || c == '$' || c == '`' || c == '\n';
}

/// What stands at a `$`: nothing special, a variable, or a broken `${`.
struct variable_ref {
  enum status_type { none, ok, unterminated, bad_name };
  status_type status = none;
  /// The name (for `ok`) or the text between the braces (for `bad_name`).
  std::string_view name;
  /// The offset just after the reference.
  size_t end = 0;
};

variable_ref scan_variable(std::string_view text, size_t dollar) {
  variable_ref ref;
  const size_t start = dollar + 1;
  if (start < text.size() && text[start] == '{') {
    const size_t close = text.find('}', start + 1);
    if (close == std::string_view::npos) {
      ref.status = variable_ref::unterminated;
      return ref;
    }
    ref.name = text.substr(start + 1, close - start - 1);
    ref.status = is_variable_name(ref.name) ? variable_ref::ok : variable_ref::bad_name;
    ref.end = close + 1;
    return ref;
  }
  size_t end = start;
  if (end < text.size() && is_name_start(text[end])) {
    while (end < text.size() && is_name_char(text[end]))
      ++end;
    ref.status = variable_ref::ok;
    ref.name = text.substr(start, end - start);
    ref.end = end;
  }
  return ref;
}

/// Collects the pieces of one word in canonical form (literals merged, no
/// empty literals) and remembers whether the word exists at all (`''`).
class word_builder {
public:
  void literal(std::string_view text) {
    started_ = true;
    if (text.empty())
      return;
    if (!word_.empty() && word_.back().kind == word_piece::literal)
      word_.back().text += text;
    else
      word_.push_back(word_piece{word_piece::literal, std::string{text}});
  }

  void literal(char c) { literal(std::string_view{&c, 1}); }

  void variable(std::string_view name) {
    started_ = true;
    word_.push_back(word_piece{word_piece::variable, std::string{name}});
  }

  bool started() const { return started_; }

  config_word take() {
    started_ = false;
    config_word result;
    result.swap(word_);
    return result;
  }

private:
  config_word word_;
  bool started_ = false;
};

caf::error syntax_error(const std::string& what, size_t offset) {
  return make_error(errc::invalid_options, what + " at offset " + std::to_string(offset));
}

/// Handles the `$` at `pos` (outside single quotes) and advances `pos`.
caf::error take_dollar(std::string_view text, size_t& pos, word_builder& word) {
  const auto ref = scan_variable(text, pos);
  switch (ref.status) {
  case variable_ref::none:
    word.literal('$');
    ++pos;
    return {};
  case variable_ref::ok:
    word.variable(ref.name);
    pos = ref.end;
    return {};
  case variable_ref::unterminated:
    return syntax_error("unterminated ${ opened", pos);
  case variable_ref::bad_name:
    return syntax_error("invalid variable name '" + std::string{ref.name} + "' in ${...}", pos);
  }
  return {};
}

/// Takes the character after the backslash at `pos`. Backslash-newline is a
/// line continuation: it produces nothing, not even a word.
void take_escaped(std::string_view text, size_t& pos, word_builder& word) {
  if (text[pos + 1] != '\n')
    word.literal(text[pos + 1]);
  pos += 2;
}

/// Takes the `$` or ordinary character at `pos`.
caf::error take_plain(std::string_view text, size_t& pos, word_builder& word) {
  if (text[pos] == '$')
    return take_dollar(text, pos, word);
  word.literal(text[pos++]);
  return {};
}

/// Reads a double-quoted string whose opening quote is at `pos`; leaves `pos`
/// after the closing quote.
caf::error take_double_quoted(std::string_view text, size_t& pos, word_builder& word) {
  const size_t open = pos++;
  word.literal(std::string_view{}); // `""` alone is still an (empty) word
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == '"') {
      ++pos;
      return {};
    }
    if (c == '\\' && pos + 1 < text.size() && escapable_in_double_quotes(text[pos + 1]))
      take_escaped(text, pos, word);
    else if (auto err = take_plain(text, pos, word))
      return err;
  }
  return syntax_error("unterminated double quote opened", open);
}

} // namespace

bool is_variable_name(std::string_view name) {
  if (name.empty() || !is_name_start(name.front()))
    return false;
  for (const char c : name)
    if (!is_name_char(c))
      return false;
  return true;
}

caf::expected<std::vector<config_word>> split_shell_words(std::string_view text) {
  std::vector<config_word> words;
  word_builder word;
  size_t pos = 0;
  while (pos < text.size()) {
    const char c = text[pos];
    if (is_space(c)) {
      if (word.started())
        words.push_back(word.take());
      ++pos;
    } else if (c == '\\') {
      if (pos + 1 == text.size())
        return syntax_error("backslash at the end of the text", pos);
      take_escaped(text, pos, word);
    } else if (c == '\'') {
      const size_t close = text.find('\'', pos + 1);
      if (close == std::string_view::npos)
        return syntax_error("unterminated single quote opened", pos);
      word.literal(text.substr(pos + 1, close - pos - 1));
      pos = close + 1;
    } else if (c == '"') {
      if (auto err = take_double_quoted(text, pos, word))
        return err;
    } else if (auto err = take_plain(text, pos, word)) {
      return err;
    }
  }
  if (word.started())
    words.push_back(word.take());
  return words;
}

config_word parse_word_with_variables(std::string_view text) {
  word_builder word;
  size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] == '$') {
      if (pos + 1 < text.size() && text[pos + 1] == '$') {
        word.literal('$');
        pos += 2;
        continue;
      }
      const auto ref = scan_variable(text, pos);
      if (ref.status == variable_ref::ok) {
        word.variable(ref.name);
        pos = ref.end;
        continue;
      }
    }
    // A literal run: this character and everything up to the next `$`.
    const size_t next = std::min(text.find('$', pos + 1), text.size());
    word.literal(text.substr(pos, next - pos));
    pos = next;
  }
  return word.take();
}

std::string word_text(const config_word& word) {
  std::string result;
  for (const auto& piece : word) {
    if (piece.kind == word_piece::variable) {
      result += "${";
      result += piece.text;
      result += '}';
      continue;
    }
    for (const char c : piece.text) {
      if (c == '$')
        result += '$';
      result += c;
    }
  }
  return result;
}

std::string expand_word(const config_word& word, const env_lookup& lookup) {
  std::string result;
  for (const auto& piece : word) {
    if (piece.kind == word_piece::literal)
      result += piece.text;
    else if (auto value = lookup(piece.text))
      result += *value;
  }
  return result;
}

} // namespace sprintrt::config
