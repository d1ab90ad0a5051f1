#include "tools/sprintrt/sibling_program.hpp"

#include <filesystem>
#include <system_error>

namespace sprintrt::cli {

namespace fs = std::filesystem;

std::string find_sprint_sim() {
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    return {};
  for (auto candidate : {self.parent_path() / "sprint-sim",
                         self.parent_path().parent_path() / "sprint-sim" / "sprint-sim"})
    if (fs::exists(candidate, ec))
      return candidate.string();
  return {};
}

} // namespace sprintrt::cli
