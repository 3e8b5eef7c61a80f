// Compute threads and the BLAS library: making several workers share one machine without
// oversubscribing it, and noticing when the math runs on the slow reference BLAS.
//
// libtorch's dense layers call whatever libblas.so.3 the Debian alternatives point to. OpenBLAS is
// about 20x faster than the reference BLAS on the classic CNN; scripts/setup.sh pins the
// alternative to OpenBLAS, and DetectBlas tells at run time which library was actually loaded.
#pragma once

#include <istream>
#include <string>

#include "base/status.h"

namespace cohort::train {

// Sets libtorch's intra-op and inter-op thread counts and OpenBLAS's thread count to `threads`,
// makes the calling thread (and every thread it starts afterwards) flush subnormal floats to
// zero, and keeps freed tensor memory in the process (KeepFreedMemory).
// Must run before the first tensor operation: libtorch fixes its inter-op pool on first use.
// OpenBLAS reads OPENBLAS_NUM_THREADS when it is loaded, before main, so its count is set through
// openblas_set_num_threads, looked up at run time because the reference BLAS lacks it.
Status SetComputeThreads(int threads);

// glibc's malloc hands every freed block of 128 KiB or more back to the kernel (munmap, or a trim
// of the heap), so each training step faults its large tensors (the classic CNN's 11 MB of
// gradients, the optimizer's temporaries) back in page by page, zeroed by the kernel: about 8,000
// minor faults a step, which doubled the step time of a one-worker run. This raises the mmap
// threshold to 32 MiB and the trim threshold to 1 GiB, so freed blocks are reused. Where the
// environment sets MALLOC_MMAP_THRESHOLD_ or MALLOC_TRIM_THRESHOLD_ (glibc's own knobs) that
// setting stays as the user chose.
void KeepFreedMemory();

enum class BlasKind { kOpenBlas, kReference, kOther, kNotLoaded };

struct BlasLibrary {
  BlasKind kind = BlasKind::kNotLoaded;
  std::string path;  // the file mapped into this process, e.g. .../openblas-pthread/libblas.so.3
};

// Which libblas.so.3 this process has mapped, from /proc/self/maps.
BlasLibrary DetectBlas();

// The same, from text in /proc/<pid>/maps's format: the first libblas.so mapping decides.
BlasLibrary BlasFromMaps(std::istream& maps);

// A warning for people when the reference BLAS is in use, or "" when it is not.
std::string BlasWarning(const BlasLibrary& blas);

}  // namespace cohort::train
