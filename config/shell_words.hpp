#pragma once

/// @file
/// Shell-like words: how `sprintConfigStr` becomes Sprint arguments.
///
/// A string is split like a POSIX shell splits the words of one command
/// (without running anything): white space (space, tab, newline, carriage
/// return, vertical tab, form feed) separates words; single quotes keep
/// everything literal; double quotes keep white space and single quotes
/// literal, allow the escapes `\"`, `\\`, `\$`, `` \` `` and backslash-newline
/// (a line continuation), and keep any other backslash; a backslash outside
/// quotes escapes the next character, and backslash-newline outside quotes is
/// removed (a line continuation). Outside single quotes `$NAME` and `${NAME}`
/// (NAME = `[A-Za-z_][A-Za-z0-9_]*`) become variable pieces, expanded when a
/// child starts; a `$` not followed by a name or `{` is literal. No other
/// shell syntax exists here: `#`, `~`, `*`, `|`, `;`, `<`, `>`, `(`, `)`,
/// `` ` `` and `$(` are ordinary characters (as in Python's `shlex.split`,
/// which RETURNN used).
///
/// Words are kept in a canonical form so that equal text gives equal words:
/// adjacent literal pieces are merged and empty literal pieces dropped, so
/// `''` is a word without pieces (the empty argument) and `a''b` equals `ab`.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sprintrt/error.hpp"
#include "sprintrt/options.hpp"

namespace sprintrt::config {

/// Looks up the value of an environment variable; `std::nullopt` if unset.
using env_lookup = std::function<std::optional<std::string>(const std::string&)>;

/// Splits `text` into words (see the file comment). Unbalanced quotes, a
/// backslash at the very end, an unterminated `${` and a `${...}` that does
/// not hold a valid name are `invalid_options` errors naming the 0-based byte
/// offset where the offending construct starts ("unterminated single quote
/// opened at offset 4").
caf::expected<std::vector<config_word>> split_shell_words(std::string_view text);

/// Parses one already separated argument (an element of a JSON list
/// `sprintConfigStr`): no splitting and no quotes, only `$NAME` and `${NAME}`
/// become variables, and `$$` stands for one literal `$` (so that every word
/// has a text form, see `word_text`). Anything else, including a `$` before a
/// non-name and a `${` without a valid name and `}`, is literal; this never
/// fails.
config_word parse_word_with_variables(std::string_view text);

/// Renders a word in the form `parse_word_with_variables` reads back to the
/// same word: literal `$` doubled, variables as `${NAME}`.
std::string word_text(const config_word& word);

/// Expands a word: literal pieces as they are, variables by `lookup`, where an
/// unset variable expands to the empty string (as in the shell). The result is
/// always exactly one argument, never split at white space, like `"$VAR"` in
/// bash; a word that is just an unset variable gives an empty argument.
std::string expand_word(const config_word& word, const env_lookup& lookup);

/// Returns whether `name` is a valid variable name for `$NAME`/`${NAME}`:
/// `[A-Za-z_][A-Za-z0-9_]*`.
bool is_variable_name(std::string_view name);

} // namespace sprintrt::config
