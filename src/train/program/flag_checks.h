// Checks for a training program's command-line flags, as CLI11 validators whose messages name
// what the flag expects and the value given, e.g.
// "--epochs: expected a positive integer, got \"abc\"" (CLI11's own range checks print the whole
// range of a double for a non-number).
//
//   app.add_option("--epochs", flags.epochs, "number of epochs")->check(IntegerAtLeast(1));
//   app.add_option("--learning_rate", flags.learning_rate, "learning rate")->check(PositiveReal());
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
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

}  // namespace cohort::train::program
