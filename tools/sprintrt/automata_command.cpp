// `sprintrt automata`: the merged automata of a list of segments, written as
// .npy files in the layout RETURNN's SprintAlignmentAutomataOp returns.

#include <iostream>

#include <nlohmann/json.hpp>

#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tools/sprintrt/batch_files.hpp"
#include "tools/sprintrt/commands.hpp"
#include "tools/sprintrt/interrupt.hpp"
#include "tools/sprintrt/npy_file.hpp"
#include "tools/sprintrt/output_directory.hpp"
#include "tools/sprintrt/progress_bar.hpp"

namespace sprintrt::cli {

namespace {

struct automata_options {
  std::string config;
  std::string tags;
  std::string out_dir;
  bool json_output = false;
};

int fail(const std::string& what) {
  std::cerr << "sprintrt automata: " << what << "\n";
  return 1;
}

int interrupted(const interrupt_guard& guard) {
  std::cerr << "sprintrt automata: interrupted; no output written\n";
  return guard.exit_status();
}

int run(const automata_options& cli) {
  interrupt_guard guard;
  auto opts = load_options(cli.config);
  if (!opts)
    return fail(render(opts.error()));
  auto tags = read_tags(cli.tags);
  if (!tags)
    return fail(render(tags.error()));
  // Before any Sprint work: a directory we cannot make is known at once.
  if (auto err = make_output_directory(cli.out_dir))
    return fail(render(err));
  size_t batch_size = tags->size();
  sprint_runtime rt{runtime_settings_for(*opts)};
  pool_client client{rt, *opts};
  progress_bar bar{"automata", batch_size, "segments"};
  caf::expected<batch_automata> merged = make_error(errc::cancelled, "not computed");
  {
    progress_poller poller{bar, [&client] {
                             auto stats = client.stats();
                             return stats ? stats->fsa_exports : 0;
                           }};
    merged = client.automata(*tags, guard.token());
  }
  if (guard.interrupted())
    return interrupted(guard);
  if (!merged)
    return fail(render(merged.error()));
  size_t edges_shape[] = {4, merged->num_edges()};
  size_t weights_shape[] = {merged->num_edges()};
  size_t states_shape[] = {2, batch_size};
  // Each file appears whole or not at all (write_npy renames a complete
  // temporary file); a signal while writing removes the ones written.
  auto dir = cli.out_dir + "/";
  std::vector<std::string> written;
  auto error = cli::write_npy<uint32_t>(dir + "edges.npy", edges_shape, merged->edges);
  if (!error) {
    written.push_back(dir + "edges.npy");
    error = cli::write_npy<float>(dir + "weights.npy", weights_shape, merged->weights);
  }
  if (!error) {
    written.push_back(dir + "weights.npy");
    error = cli::write_npy<uint32_t>(dir + "start_end_states.npy", states_shape,
                                     merged->start_end_states);
  }
  if (!error)
    written.push_back(dir + "start_end_states.npy");
  if (guard.interrupted()) {
    remove_outputs(written);
    return interrupted(guard);
  }
  if (error)
    return fail(render(error));
  if (cli.json_output) {
    nlohmann::json summary{
        {"batch_size", batch_size},
        {"num_edges", merged->num_edges()},
        {"num_states", batch_size == 0 ? 0 : merged->start_end_states.back() + 1},
        {"out_dir", cli.out_dir}};
    std::cout << summary.dump(2) << "\n";
  } else {
    std::cout << "merged the automata of " << batch_size << " segments (" << merged->num_edges()
              << " edges) into " << cli.out_dir << "/{edges,weights,start_end_states}.npy\n";
  }
  return 0;
}

} // namespace

void add_automata_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<automata_options>();
  auto* cmd =
      app.add_subcommand("automata", "Export and merge the FSAs of segments into .npy files");
  cmd->add_option("--config", opts->config, "Options JSON file (RETURNN's sprint_opts)")
      ->required();
  cmd->add_option("--tags", opts->tags, "Segment names, one per line")->required();
  cmd->add_option("--out-dir", opts->out_dir,
                  "Directory for edges.npy (uint32 [4, E]), weights.npy (float32 [E]), "
                  "start_end_states.npy (uint32 [2, B]); made with its parents if missing")
      ->required();
  cmd->add_flag("--json", opts->json_output, "Print a JSON summary");
  cmd->callback([opts, &exit_code] { exit_code = run(*opts); });
}

} // namespace sprintrt::cli
