// How the dashboard keeps its memory bounded while it builds large answers.
//
// An answer of a million points takes tens of megabytes while it is built (the points, then their
// JSON text) and frees them once it is sent. glibc keeps freed memory in the arena of the thread
// that freed it, the server answers from a pool of threads, and by default each thread may get an
// arena of its own whose free top (up to 64 MiB, as glibc raises its thresholds after large
// frees) is never handed back: twenty large requests raised the server to 750 MB with a scalar
// cache of 256 MiB. So:
//   - LimitRetainedMemory(), once, before the server's threads start: two arenas at most, large
//     blocks (32 MiB and more) mapped apart, and a heap's free top above 4 MiB handed back; where
//     the environment sets glibc's own knob (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_,
//     MALLOC_TRIM_THRESHOLD_) that one stays as the user chose;
//   - ReturnFreedMemory() after an answer that used more than kReturnFreedMemoryAfterBytes hands
//     the free pages within the heaps back too (glibc's malloc_trim; cheap next to building such
//     an answer).
// Neither does anything where the C library is not glibc.
#pragma once

#include <cstddef>

namespace cohort::ui {

inline constexpr size_t kReturnFreedMemoryAfterBytes = size_t{8} << 20;

void LimitRetainedMemory();
void ReturnFreedMemory();

}  // namespace cohort::ui
