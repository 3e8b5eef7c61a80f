// mpi_allreduce_bench: Open MPI's MPI_Allreduce, timed as allreduce_bench times Cohort's, so
// that allreduce_bench --mode=same-host can put the two side by side. Run under mpirun (the
// benchmark does: shared memory only, --mca pml ob1 --mca btl self,vader).
//
// For each size it checks one float32 sum (in place, MPI_IN_PLACE), agrees on a number of
// iterations that fills --min-time, then times --rounds blocks of them; the slowest rank's time
// per operation of each block is printed by rank 0 as "@ open-mpi BYTES SECONDS".
//
//   mpirun -np N mpi_allreduce_bench [--min-bytes=1024] [--max-bytes=67108864] [--factor=4]
//                                    [--min-time=0.05] [--rounds=1]
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  size_t min_bytes = 1024;
  size_t max_bytes = 64u << 20;
  size_t factor = 4;
  double min_time = 0.05;
  int rounds = 1;
};

bool ParseOptions(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    auto value = [&](const char* name) -> const char* {
      const size_t length = std::strlen(name);
      return argument.compare(0, length, name) == 0 ? argv[i] + length : nullptr;
    };
    if (const char* v = value("--min-bytes=")) {
      options->min_bytes = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--max-bytes=")) {
      options->max_bytes = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--factor=")) {
      options->factor = std::max<size_t>(2, std::strtoull(v, nullptr, 10));
    } else if (const char* v = value("--min-time=")) {
      options->min_time = std::atof(v);
    } else if (const char* v = value("--rounds=")) {
      options->rounds = std::clamp(std::atoi(v), 1, 1000);
    } else {
      std::fprintf(stderr, "mpi_allreduce_bench: unknown argument %s\n", argv[i]);
      return false;
    }
  }
  if (options->min_bytes < sizeof(float) || options->min_bytes > options->max_bytes ||
      options->max_bytes > (size_t{1} << 31)) {
    std::fprintf(stderr, "mpi_allreduce_bench: need 4 <= --min-bytes <= --max-bytes <= 2 GiB\n");
    return false;
  }
  return true;
}

int Run(const Options& options) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (rank == 0) std::printf("# open-mpi ranks %d\n", ranks);
  std::vector<float> data(options.max_bytes / sizeof(float));
  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= options.factor) {
    const int count = static_cast<int>(bytes / sizeof(float));
    auto run_once = [&] {
      MPI_Allreduce(MPI_IN_PLACE, data.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    };
    std::fill_n(data.data(), count, static_cast<float>(rank + 1));
    run_once();
    const float expected = static_cast<float>(ranks * (ranks + 1) / 2);
    for (int i = 0; i < count; i += 97) {
      if (data[i] != expected) {
        std::fprintf(stderr, "mpi_allreduce_bench: wrong sum %g at %d (expected %g)\n", data[i], i,
                     expected);
        return 1;
      }
    }
    std::fill_n(data.data(), count, -0.0f);  // what allreduce_bench times (dense, stays finite)
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    run_once();
    const double once = MPI_Wtime() - start;
    int64_t iterations = std::clamp<int64_t>(
        static_cast<int64_t>(options.min_time / std::max(once, 1e-7)), 1, 10000);
    MPI_Allreduce(MPI_IN_PLACE, &iterations, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    for (int round = 0; round < options.rounds; ++round) {
      MPI_Barrier(MPI_COMM_WORLD);
      start = MPI_Wtime();
      for (int64_t i = 0; i < iterations; ++i) run_once();
      double elapsed = MPI_Wtime() - start;
      MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (rank == 0) {
        std::printf("@ open-mpi %zu %.9g\n", bytes, elapsed / static_cast<double>(iterations));
      }
    }
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Options options;
  const int code = ParseOptions(argc, argv, &options) ? Run(options) : 2;
  MPI_Finalize();
  return code;
}
