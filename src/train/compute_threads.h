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
// and makes the calling thread (and every thread it starts afterwards) flush subnormal floats to
// zero.
// Must run before the first tensor operation: libtorch fixes its inter-op pool on first use.
// OpenBLAS reads OPENBLAS_NUM_THREADS when it is loaded, before main, so its count is set through
// openblas_set_num_threads, looked up at run time because the reference BLAS lacks it.
Status SetComputeThreads(int threads);

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
