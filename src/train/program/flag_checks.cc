#include "train/program/flag_checks.h"

#include <torch/version.h>

#include <cctype>
#include <cmath>
#include <cstdio>

#include "base/object_url.h"
#include "base/storage.h"
#include "base/version.h"
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

CLI::Validator FileSystemPath() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const size_t separator = text.find("://");
        if (separator == std::string::npos || separator == 0) return "";
        const std::string scheme = text.substr(0, separator);
        if (!std::isalpha(static_cast<unsigned char>(scheme[0]))) return "";
        for (char c : scheme) {
          if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
            return "";
          }
        }
        return "\"" + text + "\" is a URL (" + scheme + "://), and " + CurrentProgram().name +
               " reads and writes only file system paths (it would take the URL for a directory "
               "named \"" +
               scheme +
               ":\"); mount the storage on this machine (a volume, or a FUSE "
               "mount of the bucket) and give the mounted path, e.g. /mnt/" +
               scheme + "/" + text.substr(separator + 3);
      },
      "PATH");
}

CLI::Validator FileSystemPathOrStorageUrl() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (!IsStorageUrl(text)) return "";
        StatusOr<Storage*> storage = StorageFor(text);
        return storage.ok() ? "" : storage.status().message();
      },
      "PATH|URL");
}

std::optional<int> ParseCommandLine(CLI::App* app, int argc, char** argv) {
  app->set_version_flag("--version", VersionText(CurrentProgram().name, "libtorch " TORCH_VERSION));
  try {
    app->parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app->help().c_str());
    return kExitOk;
  } catch (const CLI::CallForVersion& version) {
    std::printf("%s\n", version.what());
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
