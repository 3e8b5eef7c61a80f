// Fuzzes the spec layer end to end: any bytes go through ParseJob, ApplyDefaults,
// ValidateJob, LocalRunWarnings, ToJson and ToYaml without crashing or throwing (the parser
// refuses deep nesting and alias bombs itself), and whatever parses survives both ways Cohort
// writes a job back out: the saved JSON read by JobFromJson, and the `get -o yaml` text read by
// ParseJob, each giving the same normalised JSON again.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "job/defaults.h"
#include "job/spec_parser.h"
#include "job/spec_writer.h"
#include "job/validation.h"

namespace {

using cohort::StatusOr;
using cohort::job::Job;

[[noreturn]] void Fail(const std::string& what, const std::string& input,
                       const std::string& written) {
  std::fprintf(stderr, "spec_parser_fuzz: %s\ninput:\n%s\nwritten:\n%s\n", what.c_str(),
               input.c_str(), written.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> warnings;
  StatusOr<Job> parsed = cohort::job::ParseJob(input, "fuzz.yaml", &warnings);
  if (!parsed.ok()) return 0;
  Job job = std::move(parsed).value();
  cohort::job::ApplyDefaults(job);
  cohort::job::ValidationErrors(job);
  cohort::job::LocalRunWarnings(job);

  const nlohmann::json written = cohort::job::ToJson(job);
  // Throws on invalid UTF-8, which the parser must have refused.
  const std::string json_text = written.dump();

  StatusOr<Job> from_json = cohort::job::JobFromJson(written);
  if (!from_json.ok()) Fail("JobFromJson: " + from_json.status().ToString(), input, json_text);
  if (cohort::job::ToJson(*from_json) != written) {
    Fail("the JSON round trip changed the job", input, json_text);
  }

  const std::string yaml = cohort::job::ToYaml(written);
  StatusOr<Job> from_yaml = cohort::job::ParseJob(yaml, "written.yaml");
  if (!from_yaml.ok()) Fail("ParseJob(ToYaml): " + from_yaml.status().ToString(), input, yaml);
  cohort::job::ApplyDefaults(*from_yaml);
  if (cohort::job::ToJson(*from_yaml) != written) {
    Fail("the YAML round trip changed the job", input, yaml);
  }
  return 0;
}
