#include "tools/sprintrt/python_reading.hpp"

#include "config/sprint_args.hpp"

namespace sprintrt::cli {

namespace {

/// Whether `text` would be split into other than one word by a shell-like
/// split (white space, quotes or backslashes in it).
bool splits(const std::string& text) {
  auto words = config::split_shell_words(text);
  if (!words || words->size() != 1)
    return true;
  const auto& word = words->front();
  return word.size() != 1 || word[0].kind != word_piece::literal || word[0].text != text;
}

} // namespace

std::vector<std::string> python_reading_differences(const sprint_options& opts,
                                                    const config::env_lookup& lookup,
                                                    const std::optional<std::string>& raw) {
  std::vector<std::string> lines;
  if (raw && raw->find("${") != std::string::npos)
    lines.push_back("sprintConfigStr uses ${NAME}: RETURNN's Python does not know that form (an "
                    "argument starting with ${ is read as the variable named {NAME}, anything "
                    "else keeps it literally)");
  for (const auto& word : opts.sprint_config) {
    auto shown = "'" + config::display_word(word) + "'";
    bool has_variable = false;
    for (const auto& piece : word)
      has_variable |= piece.kind == word_piece::variable;
    if (word.size() == 1 && has_variable) {
      // Exactly $NAME: Python splits the value again, here it stays one.
      auto value = lookup(word[0].text);
      if (value && splits(*value))
        lines.push_back("argument " + shown + ": " + word[0].text + " is '" + *value +
                        "'; the JSON options pass it as one argument, RETURNN's Python splits it "
                        "like a shell into several");
      continue;
    }
    if (has_variable) {
      lines.push_back("argument " + shown +
                      ": the JSON options expand the variable in it; RETURNN's Python replaces "
                      "only an argument that is exactly $NAME and would " +
                      (word[0].kind == word_piece::variable
                           ? std::string{"read it as a variable of that whole name"}
                           : std::string{"pass it with the $ as it is"}));
      continue;
    }
    if (!word.empty() && !word[0].text.empty() && word[0].text[0] == '$')
      lines.push_back("argument " + shown +
                      ": the JSON options pass it as it is; RETURNN's Python reads an argument "
                      "starting with $ as an environment variable");
  }
  return lines;
}

} // namespace sprintrt::cli
