// What TLS explains about a remote pool's connection: a runtime made without
// or with other TLS files, unreadable files (checked before CAF's OpenSSL
// session would end the process on them), and the hint a failed connection
// gets on each end.

#include "actors/remote/remote_tls.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <caf/error.hpp>
#include <caf/sec.hpp>

#include "process/temp_directory.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/sprint_runtime.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

tls_files files_in(const std::string& dir) {
  return {dir + "/cert.pem", dir + "/key.pem", dir + "/ca.pem"};
}

} // namespace

TEST_CASE("without TLS asked for there is no TLS problem, whatever the runtime") {
  sprint_runtime plain;
  CHECK(tls_problem(plain.system(), {}).empty());
}

TEST_CASE("TLS asked of a runtime made without it names the files and the way out") {
  sprint_runtime plain;
  auto problem = tls_problem(plain.system(), files_in("/etc/sprintrt"));
  CHECK(contains(problem, "certificate '/etc/sprintrt/cert.pem', key '/etc/sprintrt/key.pem' and "
                          "CA '/etc/sprintrt/ca.pem'"));
  CHECK(contains(problem, "the runtime was made with no TLS"));
  CHECK(contains(problem, "runtime_settings_for(options)"));
}

TEST_CASE("TLS files other than the runtime's, or unreadable ones, are a problem") {
  auto dir = process::temp_directory::make("remote-tls-test");
  REQUIRE(dir);
  const auto tls = files_in(dir->path());
  sprint_runtime::settings settings;
  settings.tls = tls;
  sprint_runtime rt{settings};

  auto other = tls;
  other.ca = dir->path() + "/other-ca.pem";
  CHECK(contains(tls_problem(rt.system(), other), "but the runtime was made with other TLS files"));

  // The runtime's own files, none of them there yet: the first is named.
  auto missing = tls_problem(rt.system(), tls);
  CHECK(missing == "remoteTls: cannot read '" + tls.certificate + "': No such file or directory");
  for (const auto& file : {tls.certificate, tls.key})
    std::ofstream{file} << "not checked here, only readable\n";
  CHECK(tls_problem(rt.system(), tls) ==
        "remoteTls: cannot read '" + tls.ca + "': No such file or directory");
  std::ofstream{tls.ca} << "readable\n";
  CHECK(tls_problem(rt.system(), tls).empty());
}

TEST_CASE("a failed connection's hint says what each end most likely got wrong") {
  const auto handshake = caf::make_error(caf::sec::disconnect_during_handshake);
  const auto refused = caf::make_error(caf::sec::cannot_connect_to_node);
  auto with_tls = connect_failure_hint(files_in("/etc/sprintrt"), refused);
  CHECK(contains(with_tls, "does not trust the other's certificate"));
  CHECK(connect_failure_hint(files_in("/etc/sprintrt"), handshake) == with_tls);
  auto without = connect_failure_hint({}, handshake);
  CHECK(contains(without, "it most likely expects TLS"));
  CHECK(contains(without, "--insecure"));
  CHECK(connect_failure_hint({}, refused).empty());
}
