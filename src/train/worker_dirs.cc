#include "train/worker_dirs.h"

#include <filesystem>

namespace cohort::train {

std::string WriteDirPath(const std::string& dir, const FitPlan& plan) {
  if (plan.is_chief || plan.num_workers <= 1) return dir;
  return (std::filesystem::path(dir) / ("workertemp_" + std::to_string(plan.task_index))).string();
}

Status MakeDirectories(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return Status::IOError("cannot create directory " + dir + ": " + error.message());
  return Status::OK();
}

Status RemoveTempWriteDir(const std::string& dir, const FitPlan& plan) {
  const std::string write_dir = WriteDirPath(dir, plan);
  if (write_dir == dir) return Status::OK();
  std::error_code error;
  std::filesystem::remove_all(write_dir, error);
  if (error) return Status::IOError("cannot remove " + write_dir + ": " + error.message());
  return Status::OK();
}

}  // namespace cohort::train
