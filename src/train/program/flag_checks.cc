#include "train/program/flag_checks.h"

#include <cmath>

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

}  // namespace cohort::train::program
