#include "job/restart_state_machine.h"

#include <algorithm>
#include <utility>

namespace cohort::job {
namespace {

int BoundedCount(int count) { return std::clamp(count, 0, kMaxRecordedRestarts); }

}  // namespace

std::chrono::seconds RestartBackoff(int restart_count) {
  constexpr int kMaximumSeconds = 60;
  int seconds = 1;
  for (int doubling = 0; doubling < restart_count && seconds < kMaximumSeconds; ++doubling) {
    seconds *= 2;
  }
  return std::chrono::seconds(std::min(seconds, kMaximumSeconds));
}

RestartStateMachine RestartStateMachine::Resume(RestartRecord record) {
  record.restarts = BoundedCount(record.restarts);
  record.group_restarts = std::min(BoundedCount(record.group_restarts), record.restarts);
  if (!record.restart_after) record.replaces.clear();
  record.generation = BoundedCount(record.generation);
  return RestartStateMachine(std::move(record));
}

bool RestartStateMachine::RestartDecided(bool group_restart, Time now, std::string replaces) {
  if (waiting()) return false;
  record_.restart_after = now + RestartBackoff(record_.restarts);
  record_.restarts = std::min(record_.restarts + 1, kMaxRecordedRestarts);
  record_.group_restarts =
      std::min(record_.group_restarts + (group_restart ? 1 : 0), record_.restarts);
  record_.replaces = std::move(replaces);
  return true;
}

void RestartStateMachine::Restarted() {
  record_.restart_after.reset();
  record_.replaces.clear();
}

void RestartStateMachine::RunStarted(int generation) {
  Restarted();
  record_.generation = BoundedCount(generation);
}

int GroupGenerations::RestartDecided(bool group_restart) {
  if (!group_restart) current_ = std::min(current_ + 1, kMaxRecordedRestarts);
  return current_;
}

}  // namespace cohort::job
