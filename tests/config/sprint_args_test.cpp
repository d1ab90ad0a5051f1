#include "config/sprint_args.hpp"

#include <catch2/catch.hpp>

#include "config/child_environment.hpp"

using sprintrt::sprint_options;
using namespace sprintrt::config;

namespace {

using strings = std::vector<std::string>;

sprint_options options(std::string_view json) {
  auto opts = sprintrt::parse_options(json);
  INFO(json);
  REQUIRE(opts);
  return *opts;
}

/// The source tree's child module directory, which has sprintrt_control.py.
const std::string control_dir = SPRINTRT_TEST_DATA "/../../python/child";

/// A fixed environment: CONF_DIR, LOG_DIR, A and SPRINTRT_CONTROL_DIR are
/// set, nothing else.
const env_lookup fixed_env = environment_lookup(
    {"CONF_DIR=/conf", "LOG_DIR=/var/log", "A=1", "EMPTY=", "SPRINTRT_CONTROL_DIR=" + control_dir});

/// The argv for fds 7 (c2p) and 4 (p2c) in the fixed environment.
strings args(std::string_view json) {
  auto argv = build_sprint_args(options(json), 7, 4, fixed_env);
  REQUIRE(argv);
  return *argv;
}

/// The error of building the argv in the fixed environment.
std::string args_error(std::string_view json) {
  auto argv = build_sprint_args(options(json), 7, 4, fixed_env);
  REQUIRE_FALSE(argv);
  CHECK(argv.error() == sprintrt::errc::spawn_failed);
  return sprintrt::render(argv.error());
}

const std::string default_config = "c2p_fd:7,p2c_fd:4,minPythonControlVersion:2";

/// The argv of options that differ from the defaults only in sprintConfigStr.
strings with_words(const strings& words) {
  strings result{"/opt/rasr/nn-trainer",
                 "--*.python-control-enabled=true",
                 "--*.pymod-path=" + control_dir,
                 "--*.pymod-name=sprintrt_control",
                 "--*.pymod-config=" + default_config,
                 "--*.python-segment-order=true",
                 "--*.python-segment-order-pymod-path=" + control_dir,
                 "--*.python-segment-order-pymod-name=sprintrt_control",
                 "--*.python-segment-order-config=" + default_config,
                 "--*.python-segment-order-allow-copy=false"};
  result.insert(result.end(), words.begin(), words.end());
  return result;
}

} // namespace

TEST_CASE("default options give the PythonControl and segment-order flags") {
  CHECK(args(R"({"sprintExecPath": "/opt/rasr/nn-trainer"})") == with_words({}));
}

TEST_CASE("usePythonSegmentOrder false drops the segment-order flags") {
  CHECK(args(R"({"sprintExecPath": "/opt/rasr/nn-trainer", "usePythonSegmentOrder": false,
                 "pymodPath": "/src/returnn", "pymodName": "SprintControl",
                 "sprintConfigStr": "--*.x=1"})") ==
        strings{"/opt/rasr/nn-trainer", "--*.python-control-enabled=true",
                "--*.pymod-path=/src/returnn", "--*.pymod-name=SprintControl",
                "--*.pymod-config=" + default_config, "--*.x=1"});
}

TEST_CASE("without pymodPath and pymodName both modules are sprintrt_control in its directory") {
  auto argv = args(R"({"sprintExecPath": "/s"})");
  REQUIRE(argv.size() == 10);
  CHECK(argv[2] == "--*.pymod-path=" + control_dir);
  CHECK(argv[3] == "--*.pymod-name=sprintrt_control");
  CHECK(argv[6] == "--*.python-segment-order-pymod-path=" + control_dir);
  CHECK(argv[7] == "--*.python-segment-order-pymod-name=sprintrt_control");
}

TEST_CASE("pymodPath alone is a RETURNN checkout: RETURNN's module in it") {
  auto argv = args(R"({"sprintExecPath": "/s", "pymodPath": "/src/returnn"})");
  REQUIRE(argv.size() == 10);
  CHECK(argv[2] == "--*.pymod-path=/src/returnn");
  CHECK(argv[3] == "--*.pymod-name=returnn.sprint.control");
  CHECK(argv[7] == "--*.python-segment-order-pymod-name=returnn.sprint.control");
}

TEST_CASE("a SPRINTRT_CONTROL_DIR without the module is an error naming it") {
  const auto lookup = environment_lookup({"SPRINTRT_CONTROL_DIR=/nonexistent/dir"});
  auto argv = build_sprint_args(options(R"({"sprintExecPath": "/s"})"), 7, 4, lookup);
  REQUIRE_FALSE(argv);
  CHECK(argv.error() == sprintrt::errc::spawn_failed);
  CHECK_THAT(sprintrt::render(argv.error()),
             Catch::Contains("SPRINTRT_CONTROL_DIR is '/nonexistent/dir', which has no "
                             "sprintrt_control.py"));
}

TEST_CASE("pymodPath and pymodName go to both modules") {
  auto argv = args(R"({"sprintExecPath": "/s", "pymodPath": "/src/returnn",
                       "pymodName": "SprintControl"})");
  REQUIRE(argv.size() == 10);
  CHECK(argv[2] == "--*.pymod-path=/src/returnn");
  CHECK(argv[3] == "--*.pymod-name=SprintControl");
  CHECK(argv[6] == "--*.python-segment-order-pymod-path=/src/returnn");
  CHECK(argv[7] == "--*.python-segment-order-pymod-name=SprintControl");
}

TEST_CASE("sprintControlConfig items follow in key order, rendered like Python") {
  const auto opts = options(R"({"sprintExecPath": "/s", "minPythonControlVersion": 3,
    "sprintControlConfig": {"zeta": 1.5, "alpha": true, "mid": "x:y", "count": 3,
                            "off": false, "big": 1e16, "small": 0.00001, "neg": -2,
                            "whole": 2.0}})");
  const std::string config = "c2p_fd:11,p2c_fd:12,minPythonControlVersion:3,alpha:True,"
                             "big:1e+16,count:3,mid:x:y,neg:-2,off:False,small:1e-05,"
                             "whole:2.0,zeta:1.5";
  CHECK(pymod_config_string(opts, 11, 12) == config);
  const auto built = build_sprint_args(opts, 11, 12, fixed_env);
  REQUIRE(built);
  const auto& argv = *built;
  REQUIRE(argv.size() == 10);
  CHECK(argv[4] == "--*.pymod-config=" + config);
  CHECK(argv[8] == "--*.python-segment-order-config=" + config);
}

TEST_CASE("the shared region is offered to sprintrt's own module only, unless it is off") {
  CHECK(offers_shared_memory(options(R"({"sprintExecPath": "/s"})")));
  CHECK(offers_shared_memory(options(R"({"sprintExecPath": "/s",
                                         "pymodName": "sprintrt_control"})")));
  CHECK(offers_shared_memory(options(R"({"sprintExecPath": "/s", "pymodPath": "/mine",
                                         "pymodName": "sprintrt_control"})")));
  CHECK_FALSE(
      offers_shared_memory(options(R"({"sprintExecPath": "/s", "pymodPath": "/returnn"})")));
  CHECK_FALSE(offers_shared_memory(options(R"({"sprintExecPath": "/s",
                                               "pymodName": "returnn.sprint.control"})")));
  CHECK_FALSE(offers_shared_memory(options(R"({"sprintExecPath": "/s", "sharedMemory": "off"})")));
}

TEST_CASE("an offered region is the last pymod config item, in both configs; else unchanged") {
  const auto opts = options(R"({"sprintExecPath": "/s", "sprintControlConfig": {"z": 1}})");
  const std::string plain = "c2p_fd:7,p2c_fd:4,minPythonControlVersion:2,z:1";
  CHECK(pymod_config_string(opts, 7, 4) == plain);
  CHECK(pymod_config_string(opts, 7, 4, 5) == plain + ",sprintrtSharedMemoryFd:5");
  const auto offered = build_sprint_args(opts, 7, 4, fixed_env, 5);
  REQUIRE(offered);
  CHECK((*offered)[4] == "--*.pymod-config=" + plain + ",sprintrtSharedMemoryFd:5");
  CHECK((*offered)[8] == "--*.python-segment-order-config=" + plain + ",sprintrtSharedMemoryFd:5");
  // Without an offer the command line is what it always was, byte for byte.
  const auto plain_args = build_sprint_args(opts, 7, 4, fixed_env);
  REQUIRE(plain_args);
  CHECK((*plain_args)[4] == "--*.pymod-config=" + plain);
}

TEST_CASE("floats are rendered as Python's str(float)") {
  CHECK(python_float_text(0.1) == "0.1");
  CHECK(python_float_text(123.456) == "123.456");
  CHECK(python_float_text(2.0) == "2.0");
  CHECK(python_float_text(12345.678e3) == "12345678.0");
  CHECK(python_float_text(1e15) == "1000000000000000.0");
  CHECK(python_float_text(1e16) == "1e+16");
  CHECK(python_float_text(1.5e16) == "1.5e+16");
  CHECK(python_float_text(0.0001) == "0.0001");
  CHECK(python_float_text(0.00001) == "1e-05");
  CHECK(python_float_text(1.5e-7) == "1.5e-07");
  CHECK(python_float_text(1e100) == "1e+100");
  CHECK(python_float_text(2.5e-300) == "2.5e-300");
  CHECK(python_float_text(-0.5) == "-0.5");
  CHECK(python_float_text(0.0) == "0.0");
  CHECK(python_float_text(-0.0) == "-0.0");
  CHECK(python_float_text(1.0 / 3) == "0.3333333333333333");
}

TEST_CASE("a sprintConfigStr string is split and expanded word by word") {
  CHECK(args(R"({"sprintExecPath": "/opt/rasr/nn-trainer", "sprintConfigStr":
    "--config=${CONF_DIR}/train.config '--*.corpus=$CONF_DIR' \"--*.log-file=$LOG_DIR/sprint log.txt\" --*.a=b\\ c \\\n --*.n=\"\""})") ==
        with_words({"--config=/conf/train.config", "--*.corpus=$CONF_DIR",
                    "--*.log-file=/var/log/sprint log.txt", "--*.a=b c", "--*.n="}));
}

TEST_CASE("a sprintConfigStr list gives one argument per element") {
  CHECK(args(R"({"sprintExecPath": "/opt/rasr/nn-trainer", "sprintConfigStr":
    ["--config=$CONF_DIR/x.config", "with space 'quoted'", "$$literal", ""]})") ==
        with_words({"--config=/conf/x.config", "with space 'quoted'", "$literal", ""}));
}

TEST_CASE("${VAR} delimits a name inside a word, $VAR takes the longest name") {
  CHECK(args(R"({"sprintExecPath": "/opt/rasr/nn-trainer",
                 "sprintConfigStr": "--x=pre${A}post"})") == with_words({"--x=pre1post"}));
  CHECK_THAT(args_error(R"({"sprintExecPath": "/opt/rasr/nn-trainer",
                            "sprintConfigStr": "--y=pre$Apost"})"),
             Catch::Contains("environment variable Apost is not set (in '--y=pre$Apost')"));
}

TEST_CASE("empty variables expand to empty arguments, which are kept") {
  CHECK(args(R"({"sprintExecPath": "/opt/rasr/nn-trainer",
                 "sprintConfigStr": "${EMPTY} --z=$EMPTY."})") == with_words({"", "--z=."}));
}

TEST_CASE("an unset variable is an error naming it and its argument") {
  auto one = args_error(R"({"sprintExecPath": "/opt/rasr/nn-trainer",
                            "sprintConfigStr": "--*.corpus=$CORPUS --a=$A"})");
  CHECK_THAT(one, Catch::Contains("sprintConfigStr: environment variable CORPUS is not set (in "
                                  "'--*.corpus=$CORPUS')"));
  CHECK_THAT(one, !Catch::Contains("variable A "));
  auto two = args_error(R"({"sprintExecPath": "/opt/rasr/nn-trainer",
                            "sprintConfigStr": ["$NOPE", "--x=${OTHER}y"]})");
  CHECK_THAT(two, Catch::Contains("environment variable NOPE is not set (in '$NOPE'); "
                                  "environment variable OTHER is not set (in '--x=${OTHER}y')"));
}

TEST_CASE("variables the options set or unset expand as the child sees them") {
  const auto opts = options(R"({"sprintExecPath": "/opt/rasr/nn-trainer",
    "sprintConfigStr": "--*.corpus.file=$CORPUS --user=$USER",
    "env": {"set": {"CORPUS": "/data/corpus.txt"}, "unset": ["HOME"]}})");
  const auto control = "SPRINTRT_CONTROL_DIR=" + control_dir;
  const char* const parent[] = {"HOME=/home/u", "CORPUS=/old", "USER=u", control.c_str(), nullptr};
  const auto lookup = environment_lookup(child_environment(opts.env, parent));
  auto argv = build_sprint_args(opts, 7, 4, lookup);
  REQUIRE(argv);
  CHECK(*argv == with_words({"--*.corpus.file=/data/corpus.txt", "--user=u"}));
  // A variable the options unset is unset for the child too.
  auto home = options(R"({"sprintExecPath": "/opt/rasr/nn-trainer",
    "sprintConfigStr": "--home=$HOME", "env": {"unset": ["HOME"]}})");
  auto refused =
      build_sprint_args(home, 7, 4, environment_lookup(child_environment(home.env, parent)));
  REQUIRE_FALSE(refused);
  CHECK_THAT(sprintrt::render(refused.error()),
             Catch::Contains("environment variable HOME is not set (in '--home=$HOME')"));
}

TEST_CASE("expand_sprint_config gives the expanded sprintConfigStr words alone") {
  const auto opts = options(R"({"sprintExecPath": "/opt/rasr/nn-trainer",
    "sprintConfigStr": "--config=${CONF_DIR}/x.config '--q=$A' --a=$A"})");
  CHECK(*expand_sprint_config(opts, fixed_env) ==
        std::vector<std::string>{"--config=/conf/x.config", "--q=$A", "--a=1"});
}
