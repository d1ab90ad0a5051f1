#include "config/sprint_args.hpp"

#include "config/control_module.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <utility>

namespace sprintrt::config {

std::string python_float_text(double value) {
  std::array<char, 64> buffer{};
  const auto end = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                 std::chars_format::scientific)
                       .ptr;
  std::string_view text{buffer.data(), static_cast<size_t>(end - buffer.data())};
  std::string result;
  if (text.front() == '-') {
    result += '-';
    text.remove_prefix(1);
  }
  const size_t e = text.find('e');
  std::string digits{text.substr(0, e)};
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exponent = std::stoi(std::string{text.substr(e + 1)});
  if (exponent < -4 || exponent >= 16) {
    result += digits.front();
    if (digits.size() > 1)
      result += "." + digits.substr(1);
    const auto magnitude = std::to_string(std::abs(exponent));
    result += std::string{"e"} + (exponent < 0 ? '-' : '+') + (magnitude.size() < 2 ? "0" : "") +
              magnitude;
  } else if (exponent < 0) {
    result += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  } else {
    const auto int_digits = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_digits)
      result += digits + std::string(int_digits - digits.size(), '0') + ".0";
    else
      result += digits.substr(0, int_digits) + "." + digits.substr(int_digits);
  }
  return result;
}

bool offers_shared_memory(const sprint_options& opts) {
  if (opts.shared_memory == shared_memory_mode::off)
    return false;
  // As choose_pymod decides: no name is ours unless a path alone names
  // RETURNN's module.
  if (opts.pymod_name.empty())
    return opts.pymod_path.empty();
  return opts.pymod_name == control_module_name;
}

std::string pymod_config_string(const sprint_options& opts, int c2p_fd, int p2c_fd,
                                int shared_memory_fd) {
  std::string result =
      "c2p_fd:" + std::to_string(c2p_fd) + ",p2c_fd:" + std::to_string(p2c_fd) +
      ",minPythonControlVersion:" + std::to_string(opts.min_python_control_version);
  for (const auto& [key, value] : opts.sprint_control_config)
    result += "," + key + ":" + value;
  if (shared_memory_fd >= 0)
    result += "," + std::string{protocol::shared_memory_config_key} + ":" +
              std::to_string(shared_memory_fd);
  return result;
}

caf::expected<std::vector<std::string>> build_sprint_args(const sprint_options& opts, int c2p_fd,
                                                          int p2c_fd, const env_lookup& lookup,
                                                          int shared_memory_fd) {
  auto words = expand_sprint_config(opts, lookup);
  if (!words)
    return std::move(words.error());
  auto pymod = choose_pymod(opts, lookup);
  if (!pymod)
    return std::move(pymod.error());
  const auto config = pymod_config_string(opts, c2p_fd, p2c_fd, shared_memory_fd);
  std::vector<std::string> args{
      opts.sprint_exec_path,           "--*.python-control-enabled=true",
      "--*.pymod-path=" + pymod->path, "--*.pymod-name=" + pymod->name,
      "--*.pymod-config=" + config,
  };
  if (opts.use_python_segment_order) {
    args.push_back("--*.python-segment-order=true");
    args.push_back("--*.python-segment-order-pymod-path=" + pymod->path);
    args.push_back("--*.python-segment-order-pymod-name=" + pymod->name);
    args.push_back("--*.python-segment-order-config=" + config);
    args.push_back("--*.python-segment-order-allow-copy=false");
  }
  for (auto& word : *words)
    args.push_back(std::move(word));
  return args;
}

std::string display_word(const config_word& word) {
  std::string text;
  for (size_t i = 0; i < word.size(); ++i) {
    const auto& piece = word[i];
    if (piece.kind == word_piece::literal) {
      text += piece.text;
      continue;
    }
    // Braces only where the next text would read as part of the name.
    const bool braces = i + 1 < word.size() && word[i + 1].kind == word_piece::literal &&
                        is_variable_name("a" + word[i + 1].text.substr(0, 1));
    text += braces ? "${" + piece.text + "}" : "$" + piece.text;
  }
  return text;
}

caf::expected<std::vector<std::string>> expand_sprint_config(const sprint_options& opts,
                                                             const env_lookup& lookup) {
  std::vector<std::string> words;
  words.reserve(opts.sprint_config.size());
  std::string unset;
  for (const auto& word : opts.sprint_config) {
    for (const auto& piece : word)
      if (piece.kind == word_piece::variable && !lookup(piece.text))
        unset += std::string{unset.empty() ? "" : "; "} + "environment variable " + piece.text +
                 " is not set (in '" + display_word(word) + "')";
    words.push_back(expand_word(word, lookup));
  }
  // A silently empty corpus path or feature cache name makes a Sprint that
  // fails far from the cause, if it fails at all.
  if (!unset.empty())
    return make_error(errc::spawn_failed,
                      "sprintConfigStr: " + unset +
                          " (set it for the trainer, or in the options' env.set; a literal $ is "
                          "written \\$ or in single quotes)");
  return words;
}

} // namespace sprintrt::config
