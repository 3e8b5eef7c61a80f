// `cohort serve [FLAGS]` and `cohort ai-platform predict --model M [--version V]
// (--json-instances FILE | --json-request FILE)`: predictions, which run models in libtorch. Job
// control never links libtorch, so both run the program cohort-serve (apps/cohort-serve, the same
// flags), found beside this `cohort` (an installed /usr/bin/cohort-serve, or the build tree's
// apps/cohort-serve/cohort-serve), else on the PATH, and replace this process with it: its output
// and exit status are the command's.
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>

#include "apps/cohort/commands/command.h"
#include "apps/cohort/commands/commands.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;

constexpr char kServeProgram[] = "cohort-serve";

// Where cohort-serve is: beside this program, in the build tree's layout, or "" for the PATH.
std::string ServeProgram() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    for (const fs::path& candidate :
         {self.parent_path() / kServeProgram,
          self.parent_path().parent_path() / kServeProgram / kServeProgram}) {
      if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  return "";
}

int RunServe(const std::vector<std::string>& arguments) {
  const std::string program = ServeProgram();
  std::vector<std::string> words = {program.empty() ? kServeProgram : program};
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  std::cout.flush();
  execvp(argv[0], argv.data());
  return Fail(kExitError, std::string("cannot run ") + kServeProgram + ": " + std::strerror(errno) +
                              " (it is installed with cohort and built with the training runtime, "
                              "COHORT_WITH_TORCH)");
}

struct PredictFlags {
  std::string model;
  std::string version;
  std::string json_instances;
  std::string json_request;
  std::string format;
};

int Predict(const PredictFlags& flags) {
  std::vector<std::string> arguments = {"predict", "--model", flags.model};
  for (const auto& [flag, value] :
       {std::pair{"--version", &flags.version},
        std::pair{"--json-instances", &flags.json_instances},
        std::pair{"--json-request", &flags.json_request}, std::pair{"--format", &flags.format}}) {
    if (value->empty()) continue;
    arguments.push_back(flag);
    arguments.push_back(*value);
  }
  return RunServe(arguments);
}

}  // namespace

void AddServeCommand(CLI::App& app, int& exit_code) {
  CLI::App* serve = app.add_subcommand(
      "serve",
      "Serve the model registry's versions (or --model_path) over TensorFlow Serving's REST API "
      "(cohort-serve --help lists the flags)");
  serve->prefix_command();
  serve->set_help_flag();  // --help goes to cohort-serve, which knows the flags
  serve->callback([serve, &exit_code] { exit_code = RunServe(serve->remaining()); });
}

void AddAiPlatformPredictCommand(CLI::App* ai_platform, int& exit_code) {
  auto flags = std::make_shared<PredictFlags>();
  CLI::App* predict = ai_platform->add_subcommand(
      "predict", "Predict with a model's version, run here (as gcloud ai-platform predict)");
  predict->add_option("--model", flags->model, "the model")->required();
  predict->add_option("--version", flags->version, "the version (default: the model's default)");
  predict->add_option("--json-instances", flags->json_instances,
                      "a file of instances, one JSON value a line (- for standard input)");
  predict->add_option("--json-request", flags->json_request,
                      "a file holding a request body {\"instances\": [...]}");
  predict->add_option("--format", flags->format,
                      "json: the answer as JSON; default: a table of the predictions' keys");
  predict->footer(
      "At most 100 instances, as gcloud. Exit status: 0 predicted, 2 invalid input (flags, an "
      "instance the model cannot take), 3 other errors (no such model or version).");
  predict->callback([flags, &exit_code] { exit_code = Predict(*flags); });
}

}  // namespace cohort::cli
