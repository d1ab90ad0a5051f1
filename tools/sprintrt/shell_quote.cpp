#include "tools/sprintrt/shell_quote.hpp"

namespace sprintrt::cli {

std::string shell_quote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_of(" \t\n'\"\\$`*?[]{}()<>|;&#~") == std::string::npos)
    return arg;
  std::string quoted = "'";
  for (char c : arg)
    quoted += c == '\'' ? std::string{"'\\''"} : std::string{c};
  return quoted + "'";
}

} // namespace sprintrt::cli
