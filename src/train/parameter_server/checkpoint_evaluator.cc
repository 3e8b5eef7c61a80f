#include "train/parameter_server/checkpoint_evaluator.h"

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/object_url.h"
#include "base/storage.h"
#include "ps/checkpoint.h"
#include "train/parameter_server/parameter_server_trainer.h"
#include "train/parameter_server/parameter_sources.h"
#include "train/summary/summary_run_writer.h"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;

}  // namespace

StatusOr<Evaluation> RunCheckpointEvaluator(const CheckpointEvaluatorOptions& options,
                                            const ParameterServerModel& model,
                                            const ExampleSource& eval) {
  const auto print = [&](const std::string& line) {
    if (options.print) options.print(line);
  };
  std::unique_ptr<SummaryRunWriter> summaries;
  if (!options.tensorboard_dir.empty()) {
    // An evaluation is rare: in a bucket, each one's figures are uploaded at once when a second
    // has passed since the last upload (summary_run_writer.h).
    SummaryRunOptions run_options;
    run_options.upload_every = std::chrono::seconds(1);
    auto writer =
        SummaryRunWriter::Create(JoinStoragePath(options.tensorboard_dir, "eval"), run_options);
    if (!writer.ok()) return writer.status();
    summaries = std::move(*writer);
  }
  // The last event file, closed (in a bucket: uploaded) when the evaluator ends.
  const auto finish = [&](const Evaluation& evaluation) -> StatusOr<Evaluation> {
    if (summaries) COHORT_RETURN_IF_ERROR(summaries->Close());
    return evaluation;
  };
  const std::string metrics_dir = options.checkpoint_dir + "/eval";
  if (!IsStorageUrl(metrics_dir)) {
    std::error_code error;
    fs::create_directories(metrics_dir, error);
    if (error) return Status::IOError("cannot create " + metrics_dir + ": " + error.message());
  }

  nlohmann::json history = nlohmann::json::array();
  int64_t last_evaluated = -1;
  Evaluation last;
  auto idle_since = std::chrono::steady_clock::now();
  while (true) {
    // Read before the scan: a stop requested from here on still sees the newest checkpoint.
    const bool stopping = options.stop_requested && options.stop_requested();
    const int64_t final_step = FinalCheckpointStep(options.checkpoint_dir, options.run_identity);
    if (final_step >= 0 && last_evaluated >= final_step) return finish(last);
    bool evaluated = false;
    for (const std::string& manifest : ps::ListManifests(options.checkpoint_dir)) {
      auto parameters = CheckpointParameters::Load(options.checkpoint_dir, manifest);
      if (!parameters.ok()) {
        // Not whole yet or damaged: the next newest one may be.
        continue;
      }
      const int64_t step = (*parameters)->global_step();
      if (step <= last_evaluated) break;
      auto evaluation = EvaluateModel(model, **parameters, eval, options.eval_batch);
      if (!evaluation.ok()) return evaluation.status();
      last = *evaluation;
      last_evaluated = step;
      evaluated = true;
      print("eval at global step " + std::to_string(step) + ": " + last.ToString());
      if (summaries) {
        std::vector<Scalar> scalars;
        for (const auto& [name, value] : last.metrics) {
          scalars.push_back({name, static_cast<float>(value)});
        }
        COHORT_RETURN_IF_ERROR(summaries->WriteScalars(step, scalars));
        COHORT_RETURN_IF_ERROR(summaries->Flush());
      }
      nlohmann::json figures = {{"global_step", step}};
      for (const auto& [name, value] : last.metrics) figures[name] = value;
      history.push_back(figures);
      nlohmann::json metrics = figures;
      metrics["examples"] = last.examples;
      metrics["checkpoint"] = manifest;
      metrics["history"] = history;
      COHORT_RETURN_IF_ERROR(
          WriteStorageFileAtomically(metrics_dir + "/metrics.json", metrics.dump(2) + "\n"));
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (evaluated) {
      idle_since = now;
      continue;
    }
    if (stopping) {
      if (last_evaluated < 0) {
        return Status::FailedPrecondition("evaluator: stopped before any whole checkpoint in " +
                                          options.checkpoint_dir);
      }
      print("evaluator: stopping after global step " + std::to_string(last_evaluated) +
            ", the newest whole checkpoint");
      return finish(last);
    }
    if (now - idle_since > options.idle_timeout) {
      return Status::DeadlineExceeded(
          "evaluator: no new checkpoint in " + options.checkpoint_dir + " for " +
          std::to_string(
              std::chrono::duration_cast<std::chrono::seconds>(options.idle_timeout).count()) +
          " s (last evaluated global step " + std::to_string(last_evaluated) +
          "); is the chief running?");
    }
    std::this_thread::sleep_for(options.poll_interval);
  }
}

}  // namespace cohort::train
