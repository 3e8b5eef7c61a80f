// Checks for a training program's command-line flags: CLI11 validators whose messages name what
// the flag expects and the value given, e.g. "--epochs: expected a positive integer, got \"abc\""
// (CLI11's own range checks print the whole range of a double for a non-number), and the parsing
// that prints --help or names a bad flag with the program's exit codes (process.h).
//
//   app.add_option("--epochs", flags.epochs, "number of epochs")->check(IntegerAtLeast(1));
//   app.add_option("--learning_rate", flags.learning_rate, "learning rate")->check(PositiveReal());
//   app.add_option("--saved_model_path", flags.saved_model_path, "...")->check(FileSystemPath());
//   if (std::optional<int> exit_code = ParseCommandLine(&app, argc, argv)) return *exit_code;
//   if (std::optional<int> exit_code = CheckEvaluateFlags(flags.evaluate, flags.model_path)) {
//     return *exit_code;
//   }
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>

namespace cohort::train::program {

// An integer of at least `minimum`: "a positive integer" for 1, "an integer >= N" otherwise.
CLI::Validator IntegerAtLeast(long long minimum);

// A finite real number for which `accept` holds; `expectation` says which ("a positive number"),
// `type_name` is what CLI11's help shows for the value ("POSITIVE").
CLI::Validator Real(std::function<bool(double)> accept, const std::string& expectation,
                    const std::string& type_name);

// A real number above 0.
CLI::Validator PositiveReal();

// A number of seconds of at least 3: a peer timeout must leave room for 3 heartbeats
// (net::TransportOptions, 1 s apart).
CLI::Validator AtLeastThreeSeconds();

// A path on a file system this process can open: a storage URL ("gs://bucket/model",
// "s3://b/c", "hdfs://nn/x", any scheme://) is refused, saying to mount the storage and give the
// mounted path, instead of being taken for a relative directory named "gs:".
CLI::Validator FileSystemPath();

// A file system path, or an object storage URL that base/storage.h serves (s3://bucket/prefix,
// gs://bucket/prefix): a malformed URL, a scheme it does not serve, or a scheme without settings
// (no credentials, a bad endpoint: docs/storage.md) is refused here, before training starts.
CLI::Validator FileSystemPathOrStorageUrl();

// Parses the command line into `app`'s options, with a --version flag added (base/version.h: the
// program's name, Cohort's version, the compiler and libtorch). Returns an exit code when the
// program should stop here: kExitOk after printing the help or the version on stdout, kExitUsage
// after a bad flag, named on stderr
// ("<program>: error: <what is wrong>" and "Run <program> --help for usage.").
std::optional<int> ParseCommandLine(CLI::App* app, int argc, char** argv);

// --evaluate (evaluate the saved model at --model_path) and --model_path go together: returns
// kExitUsage, saying which is missing, when one is given without the other.
std::optional<int> CheckEvaluateFlags(bool evaluate, const std::string& model_path);

}  // namespace cohort::train::program
