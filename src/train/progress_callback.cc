#include "train/progress_callback.h"

#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>

namespace cohort::train {
namespace {

std::string FormatDuration(double seconds) {
  const long total = static_cast<long>(seconds + 0.5);
  if (total < 60) return std::to_string(total) + "s";
  if (total < 3600) return std::to_string(total / 60) + "m" + std::to_string(total % 60) + "s";
  return std::to_string(total / 3600) + "h" + std::to_string(total % 3600 / 60) + "m";
}

std::string Bar(int64_t done, int64_t total) {
  constexpr int kWidth = 30;
  const int filled = total > 0 ? static_cast<int>(kWidth * done / total) : kWidth;
  std::string bar = "[";
  for (int i = 0; i < kWidth; ++i) bar += i < filled ? '=' : (i == filled ? '>' : '.');
  return bar + "]";
}

// "loss 0.3012 - accuracy 0.8912", each name after `prefix` ("val_" for the test split's).
std::string Figures(const std::string& prefix, double loss,
                    const std::map<std::string, double>& metrics) {
  char figure[160];
  std::snprintf(figure, sizeof(figure), "%sloss %.4f", prefix.c_str(), loss);
  std::string text = figure;
  for (const auto& [name, value] : metrics) {
    std::snprintf(figure, sizeof(figure), " - %s%s %.4f", prefix.c_str(), name.c_str(), value);
    text += figure;
  }
  return text;
}

}  // namespace

ProgressCallback ProgressCallback::ForStdout(std::chrono::milliseconds line_interval) {
  return ProgressCallback(stdout, ::isatty(STDOUT_FILENO) == 1, line_interval);
}

Status ProgressCallback::OnTrainBegin(const FitPlan& plan, TrainingState& state) {
  first_step_of_epoch_ = state.position().step;
  return Status::OK();
}

Status ProgressCallback::OnEpochBegin(const FitPlan& plan, int epoch) {
  epoch_start_ = now_();
  lines_.Restart();
  if (bar_) std::fprintf(out_, "Epoch %d/%d\n", epoch + 1, plan.epochs);
  std::fflush(out_);
  return Status::OK();
}

Status ProgressCallback::OnBatchEnd(const FitPlan& plan, TrainingState& state,
                                    const BatchLogs& logs) {
  const bool last = logs.position.step == plan.steps_per_epoch;
  if (!bar_) {
    // The epoch's own line follows its last step at once.
    if (last || !lines_.Ready()) return Status::OK();
  } else if (!redraws_.Ready() && !last) {
    return Status::OK();
  }
  const double elapsed = std::chrono::duration<double>(now_() - epoch_start_).count();
  const int64_t run = logs.position.step - first_step_of_epoch_;
  const double left =
      run > 0 ? elapsed / run * static_cast<double>(plan.steps_per_epoch - logs.position.step) : 0;
  if (!bar_) {
    std::fprintf(out_,
                 "epoch %d/%d step %lld/%lld (global %lld): %s - %.0f samples/s - step %.3f s "
                 "(all-reduce wait %.3f s) - ETA %s\n",
                 logs.position.epoch + 1, plan.epochs, static_cast<long long>(logs.position.step),
                 static_cast<long long>(plan.steps_per_epoch),
                 static_cast<long long>(logs.global_step),
                 Figures("", logs.loss, logs.metrics).c_str(), logs.samples_per_second,
                 logs.step_seconds, logs.allreduce_wait_seconds, FormatDuration(left).c_str());
    std::fflush(out_);
    return Status::OK();
  }
  std::fprintf(out_, "\r%6lld/%lld %s - ETA %s - %s - %.0f samples/s ",
               static_cast<long long>(logs.position.step),
               static_cast<long long>(plan.steps_per_epoch),
               Bar(logs.position.step, plan.steps_per_epoch).c_str(), FormatDuration(left).c_str(),
               Figures("", logs.loss, logs.metrics).c_str(), logs.samples_per_second);
  std::fflush(out_);
  return Status::OK();
}

Status ProgressCallback::OnEpochEnd(const FitPlan& plan, TrainingState& state,
                                    const EpochLogs& logs) {
  seconds_in_epochs_ += logs.seconds;
  ++epochs_finished_;
  first_step_of_epoch_ = 0;
  const double eta = seconds_in_epochs_ / epochs_finished_ * (plan.epochs - logs.epoch - 1);
  // An epoch resumed from a backup taken after its last step trains no step here: it has
  // evaluation results but no training figures to show.
  std::string training = "no steps left after the resume";
  char throughput[64] = "";
  if (logs.steps > 0) {
    training = Figures("", logs.loss, logs.metrics);
    std::snprintf(throughput, sizeof(throughput), " - %.0f samples/s", logs.samples_per_second);
  }
  const std::string validation = Figures("val_", logs.val_loss, logs.val_metrics);
  if (bar_) {
    std::fprintf(
        out_, "\r%6lld/%lld %s - %s - %s - %s%s\n", static_cast<long long>(plan.steps_per_epoch),
        static_cast<long long>(plan.steps_per_epoch),
        Bar(plan.steps_per_epoch, plan.steps_per_epoch).c_str(),
        FormatDuration(logs.seconds).c_str(), training.c_str(), validation.c_str(), throughput);
  } else {
    // An epoch resumed part-way ran only its remaining steps here: say so, not "100 steps" of 200.
    std::string steps = std::to_string(logs.steps) + " steps";
    if (logs.steps > 0 && logs.steps < plan.steps_per_epoch) {
      steps = std::to_string(logs.steps) + " of " + std::to_string(plan.steps_per_epoch) +
              " steps (resumed after step " + std::to_string(plan.steps_per_epoch - logs.steps) +
              ")";
    }
    std::fprintf(out_, "epoch %d/%d: %s in %.1f s - %s - %s%s - ETA %s\n", logs.epoch + 1,
                 plan.epochs, steps.c_str(), logs.seconds, training.c_str(), validation.c_str(),
                 throughput, FormatDuration(eta).c_str());
  }
  std::fflush(out_);
  return Status::OK();
}

}  // namespace cohort::train
