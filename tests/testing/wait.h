// Waiting with a bound: how a test orders itself against other processes and threads.
//
// A test never sleeps for "long enough" to let something happen: it waits for the thing itself
// (a file a replica writes, a process that exits, a line in a log) and gives up after a bound
// that is generous on a busy machine, so that a slow run is slow instead of failing, and a hang
// fails instead of stalling:
//
//   ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(marker); }, 20s))
//       << "the replica never wrote " << marker;
#pragma once

#include <chrono>
#include <functional>

namespace cohort::testing {

// Polls `condition` every `poll` until it holds (true) or `timeout` has passed (false). The
// condition is checked once more at the end, so a condition that holds at the deadline counts.
bool WaitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
               std::chrono::milliseconds poll = std::chrono::milliseconds(10));

}  // namespace cohort::testing
