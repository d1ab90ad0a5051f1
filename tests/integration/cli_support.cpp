#include "tests/integration/cli_support.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sprintrt::test {

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace

command_result run_cli(const std::string& dir, const std::string& args) {
  auto out = dir + "/cli.out";
  auto err = dir + "/cli.err";
  auto command = std::string{SPRINTRT_CLI_PATH} + " " + args + " >" + out + " 2>" + err;
  int raw = std::system(command.c_str());
  command_result result;
  result.out = slurp(out);
  result.err = slurp(err);
  result.status = raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return result;
}

} // namespace sprintrt::test
