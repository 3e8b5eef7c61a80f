#include "train/compute_threads.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <dlfcn.h>
#include <malloc.h>

#include <cstdlib>
#include <fstream>

namespace cohort::train {

void KeepFreedMemory() {
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, 32 << 20);
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

Status SetComputeThreads(int threads) {
  if (threads < 1) return Status::InvalidArgument("threads must be at least 1");
  KeepFreedMemory();
  // Flush-to-zero and denormals-are-zero, as TensorFlow's executor threads run: late in training
  // Adam's second moments of tiny gradients become subnormal, and arithmetic on them is many times
  // slower (docs/performance.md, "subnormal numbers"). Threads created after this call (libtorch's
  // pools, Cohort's own) inherit the setting. First, since libtorch refuses a second thread count.
  at::globalContext().setFlushDenormal(true);
  try {
    at::set_num_threads(threads);
    at::set_num_interop_threads(threads);
  } catch (const c10::Error& error) {
    return Status::FailedPrecondition(std::string("cannot set libtorch's thread counts: ") +
                                      error.what_without_backtrace());
  }
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    set(threads);
  }
  return Status::OK();
}

BlasLibrary BlasFromMaps(std::istream& maps) {
  std::string line;
  BlasLibrary found;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.find("/libblas.so") == std::string::npos) continue;
    found.path = path;
    if (path.find("openblas") != std::string::npos) {
      found.kind = BlasKind::kOpenBlas;
    } else if (path.find("/blas/libblas.so") != std::string::npos) {
      found.kind = BlasKind::kReference;  // Debian's libblas3 installs it in .../blas/
    } else {
      found.kind = BlasKind::kOther;
    }
    break;
  }
  return found;
}

BlasLibrary DetectBlas() {
  std::ifstream maps("/proc/self/maps");
  return BlasFromMaps(maps);
}

std::string BlasWarning(const BlasLibrary& blas) {
  if (blas.kind != BlasKind::kReference) return "";
  return "warning: libtorch is using the reference BLAS (" + blas.path +
         "), about 20x slower than OpenBLAS for dense layers. Install libopenblas0-pthread and run "
         "update-alternatives --set libblas.so.3-$(gcc -print-multiarch) "
         "/usr/lib/$(gcc -print-multiarch)/openblas-pthread/libblas.so.3 (scripts/setup.sh does "
         "both).";
}

}  // namespace cohort::train
