#include "config/child_environment.hpp"

#include <map>
#include <memory>

namespace sprintrt::config {

namespace {

using variable_map = std::map<std::string, std::string, std::less<>>;

/// Adds a "NAME=value" entry unless it has no `=` or its name is present.
void add_entry(variable_map& vars, std::string_view entry) {
  const size_t eq = entry.find('=');
  if (eq == std::string_view::npos)
    return;
  auto name = entry.substr(0, eq);
  if (vars.find(name) == vars.end())
    vars.emplace(std::string{name}, std::string{entry.substr(eq + 1)});
}

} // namespace

std::vector<std::string> child_environment(const environment_changes& changes,
                                           const char* const* parent_environ) {
  variable_map vars;
  if (parent_environ != nullptr)
    for (auto entry = parent_environ; *entry != nullptr; ++entry)
      add_entry(vars, *entry);
  for (const auto& name : changes.unset)
    vars.erase(name);
  for (const auto& [name, value] : changes.set)
    vars[name] = value;
  std::vector<std::string> result;
  result.reserve(vars.size());
  for (const auto& [name, value] : vars)
    result.push_back(name + "=" + value);
  return result;
}

env_lookup environment_lookup(const std::vector<std::string>& env) {
  auto vars = std::make_shared<variable_map>();
  for (const auto& entry : env)
    add_entry(*vars, entry);
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto i = vars->find(name);
    if (i == vars->end())
      return std::nullopt;
    return i->second;
  };
}

} // namespace sprintrt::config
