// `sprintrt first-run [--dir DIR] [--force]`: a first set-up that works
// wherever the user stands. It writes a two-segment corpus and the options
// of one sprint-sim child (this installation's own sprint-sim, found beside
// this program), both with absolute paths, and prints the `doctor` command
// that checks them, quoted for a shell. An installed package has no repository to run the
// README's example files from; this gives it the same first run.

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <system_error>

#include <nlohmann/json.hpp>

#include "tools/sprintrt/commands.hpp"
#include "tools/sprintrt/output_directory.hpp"
#include "tools/sprintrt/shell_quote.hpp"
#include "tools/sprintrt/sibling_program.hpp"

namespace sprintrt::cli {

namespace {

namespace fs = std::filesystem;

struct first_run_options {
  std::string dir = "sprintrt-first-run";
  bool force = false;
};

/// The corpus: one segment per line, its name, a TAB, its labels (1..9; 0
/// is CTC's blank, so 10 classes hold them).
constexpr const char* corpus_text = "first/seg-1\t3 1 4 1 5\nfirst/seg-2\t9 2 6\n";

/// The segment and shape the printed `doctor` command computes.
constexpr const char* doctor_segment = "--segment first/seg-1 --frames 20 --dim 10";

int fail(const std::string& what) {
  std::cerr << "sprintrt first-run: " << what << "\n";
  return 1;
}

/// Writes `text` to `path`; false (after saying why) if it cannot.
bool write_file(const fs::path& path, const std::string& text) {
  std::ofstream out{path};
  out << text;
  out.close();
  if (!out) {
    fail("cannot write '" + path.string() + "'");
    return false;
  }
  return true;
}

int run_first_run(const first_run_options& opts, const std::string& program) {
  auto sprint_sim = find_sprint_sim();
  if (sprint_sim.empty())
    return fail("cannot find sprint-sim beside this program (an installation keeps both in one "
                "directory, a build tree in tools/sprintrt and tools/sprint-sim)");
  if (auto err = make_output_directory(opts.dir))
    return fail(render(err));
  std::error_code ec;
  auto dir = fs::absolute(opts.dir, ec).lexically_normal();
  if (ec)
    return fail("cannot resolve '" + opts.dir + "': " + ec.message());
  auto corpus = dir / "corpus.txt";
  auto options = dir / "sprint-sim.json";
  if (!opts.force)
    for (const auto& path : {corpus, options})
      if (fs::exists(path, ec))
        return fail("'" + path.string() +
                    "' exists; --force overwrites it, --dir writes elsewhere");
  // sprintConfigStr as a list: a path with spaces stays one argument; a
  // literal `$` in a list item is written `$$`.
  auto corpus_argument = "--*.corpus=" + corpus.string();
  for (size_t at = corpus_argument.find('$'); at != std::string::npos;
       at = corpus_argument.find('$', at + 2))
    corpus_argument.insert(at, 1, '$');
  nlohmann::ordered_json json{{"sprintExecPath", sprint_sim},
                              {"sprintConfigStr", {corpus_argument, "--*.topology=ctc"}},
                              {"numInstances", 1}};
  if (!write_file(corpus, corpus_text) || !write_file(options, json.dump(2) + "\n"))
    return 1;
  auto shown = (fs::path{opts.dir} / "sprint-sim.json").string();
  std::cout << "wrote " << corpus.string() << ": a corpus of 2 segments\n"
            << "wrote " << options.string() << ": one child of " << sprint_sim << "\n"
            << "check it (one child, one segment on uniform posteriors, each step timed):\n"
            << "  " << shell_quote(program) << " doctor --config " << shell_quote(shown) << " "
            << doctor_segment << "\n";
  return 0;
}

} // namespace

void add_first_run_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<first_run_options>();
  auto* cmd = app.add_subcommand(
      "first-run", "Write a corpus and options for this installation's sprint-sim, to check "
                   "with doctor");
  cmd->add_option("--dir", opts->dir, "Directory to write corpus.txt and sprint-sim.json into")
      ->capture_default_str();
  cmd->add_flag("--force", opts->force, "Overwrite the two files if they exist");
  cmd->callback([&app, &exit_code, opts] { exit_code = run_first_run(*opts, app.get_name()); });
}

} // namespace sprintrt::cli
