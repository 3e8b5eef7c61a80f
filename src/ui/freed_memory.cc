#include "ui/freed_memory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdlib>

namespace cohort::ui {

void LimitRetainedMemory() {
#if defined(__GLIBC__)
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
  // Setting either threshold stops glibc from moving both: both are set.
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, 32 << 20);
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, 4 << 20);
#endif
}

void ReturnFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace cohort::ui
