#include "train/program/flag_checks.h"

#include <cmath>
#include <cstdio>

#include "train/program/process.h"

namespace cohort::train::program {

CLI::Validator IntegerAtLeast(long long minimum) {
  const std::string expectation =
      minimum == 1 ? "a positive integer" : "an integer >= " + std::to_string(minimum);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        size_t used = 0;
        long long value = 0;
        try {
          value = std::stoll(text, &used);
        } catch (...) {
          used = 0;
        }
        if (used == 0 || used != text.size() || value < minimum) {
          return "expected " + expectation + ", got \"" + text + "\"";
        }
        return "";
      },
      minimum == 1 ? "POSITIVE" : "INT>=" + std::to_string(minimum));
}

CLI::Validator Real(std::function<bool(double)> accept, const std::string& expectation,
                    const std::string& type_name) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        size_t used = 0;
        double value = 0;
        try {
          value = std::stod(text, &used);
        } catch (...) {
          used = 0;
        }
        if (used == 0 || used != text.size() || !std::isfinite(value) || !accept(value)) {
          return "expected " + expectation + ", got \"" + text + "\"";
        }
        return "";
      },
      type_name);
}

CLI::Validator PositiveReal() {
  return Real([](double value) { return value > 0; }, "a positive number", "POSITIVE");
}

CLI::Validator AtLeastThreeSeconds() {
  return Real([](double value) { return value >= 3; }, "a number of seconds >= 3", "SECONDS>=3");
}

std::optional<int> ParseCommandLine(CLI::App* app, int argc, char** argv) {
  try {
    app->parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app->help().c_str());
    return kExitOk;
  } catch (const CLI::ParseError& error) {
    PrintError(std::string(error.what()) + "\nRun " + CurrentProgram().name + " --help for usage.");
    return kExitUsage;
  }
  return std::nullopt;
}

std::optional<int> CheckEvaluateFlags(bool evaluate, const std::string& model_path) {
  if (evaluate && model_path.empty()) {
    PrintError("--evaluate needs --model_path DIR");
    return kExitUsage;
  }
  if (!evaluate && !model_path.empty()) {
    PrintError("--model_path is only used with --evaluate (to save a model: --saved_model_path)");
    return kExitUsage;
  }
  return std::nullopt;
}

}  // namespace cohort::train::program
