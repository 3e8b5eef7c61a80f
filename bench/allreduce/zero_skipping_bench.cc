// zero_skipping_bench: what zero skipping (src/collective/zero_skipping.h) costs per ring segment,
// beside the cheapest thing a segment can cost, one memcpy of it, in the same run.
//
// For each kernel this CPU runs (AVX-512, plain C++) and two layouts of 47% +0.0 words (in runs of
// 49, as a ReLU leaves whole input columns dead; and scattered at random), times encoding a
// 256 KiB segment, expanding it in place, and the sample that decides whether to encode, over
// --rounds blocks of --repetitions; prints µs min / median / max and the median as a multiple of a
// memcpy of the segment. The last line:
//   zero skipping: encode + expand (best kernel, runs) = X.X memcpys of the segment
//
//   ./build/bench/allreduce/zero_skipping_bench [--repetitions=2000] [--rounds=10]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "collective/zero_skipping.h"

namespace {

using cohort::collective::ZeroSkippingKernel;
using Clock = std::chrono::steady_clock;

constexpr size_t kWords = 65536;  // a 256 KiB segment, the ring's default
constexpr double kZeroFraction = 0.47;

struct Spread {
  double min, median, max;
};

// µs per call of `body`, over `rounds` blocks of `repetitions` calls; `before` runs untimed.
Spread Time(int rounds, int repetitions, const std::function<void()>& before,
            const std::function<void()>& body) {
  std::vector<double> per_call;
  for (int round = 0; round < rounds; ++round) {
    double total = 0;
    for (int i = 0; i < repetitions; ++i) {
      before();
      const auto start = Clock::now();
      body();
      total += std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    }
    per_call.push_back(total / repetitions);
  }
  std::sort(per_call.begin(), per_call.end());
  return {per_call.front(), per_call[per_call.size() / 2], per_call.back()};
}

std::vector<uint32_t> Segment(bool in_runs) {
  std::mt19937 random(7);
  std::vector<uint32_t> words(kWords);
  for (size_t i = 0; i < kWords; ++i) {
    const uint32_t draw = in_runs ? static_cast<uint32_t>(i / 49 * 2654435761u) : random();
    words[i] = draw % 1000 < kZeroFraction * 1000 ? 0 : (random() | 1);
  }
  return words;
}

// "--name=N" with N in 1..1000000 into *value; false when `arg` is not "--name=...".
bool ParseFlag(const std::string& arg, const std::string& name, int* value) {
  const std::string prefix = name + "=";
  if (arg.compare(0, prefix.size(), prefix) != 0) return false;
  *value = std::atoi(arg.c_str() + prefix.size());
  if (*value < 1 || *value > 1000000) {
    std::fprintf(stderr, "zero_skipping_bench: %s must be 1 to 1000000, got %s\n", name.c_str(),
                 arg.c_str() + prefix.size());
    std::exit(2);
  }
  return true;
}

volatile bool sink;  // keeps the timed sample from being optimised away

}  // namespace

int main(int argc, char** argv) {
  int repetitions = 2000, rounds = 10;
  for (int i = 1; i < argc; ++i) {
    if (!ParseFlag(argv[i], "--repetitions", &repetitions) &&
        !ParseFlag(argv[i], "--rounds", &rounds)) {
      std::fprintf(stderr,
                   "zero_skipping_bench: unknown argument %s (--repetitions=N --rounds=N)\n",
                   argv[i]);
      return 2;
    }
  }
  std::printf(
      "# zero_skipping_bench: a %zu KiB segment, %.0f%% zero words; %d rounds of %d; µs "
      "min / median / max; x memcpy: the median over a memcpy of the segment's median\n",
      kWords * 4 / 1024, kZeroFraction * 100, rounds, repetitions);
  std::vector<uint8_t> buffer(4 * kWords + cohort::collective::kZeroSkippingSlackBytes);
  std::vector<uint8_t> copy(4 * kWords);
  double best_total = 0;
  for (bool in_runs : {true, false}) {
    const std::vector<uint32_t> words = Segment(in_runs);
    const Spread memcpy_time = Time(
        rounds, repetitions, [] {}, [&] { std::memcpy(copy.data(), words.data(), 4 * kWords); });
    std::printf("%-22s memcpy of the segment %8.2f %8.2f %8.2f\n",
                in_runs ? "zeros in runs of 49:" : "zeros scattered:", memcpy_time.min,
                memcpy_time.median, memcpy_time.max);
    const Spread sample_time = Time(
        rounds, repetitions, [] {},
        [&] { sink = cohort::collective::ZeroSkippingLooksWorthwhile(words.data(), kWords); });
    std::printf("  sample                            %8.2f %8.2f %8.2f  %5.2f x memcpy\n",
                sample_time.min, sample_time.median, sample_time.max,
                sample_time.median / memcpy_time.median);
    for (ZeroSkippingKernel kernel : cohort::collective::ZeroSkippingKernelsThisHostRuns()) {
      const char* name = kernel == ZeroSkippingKernel::kAvx512 ? "avx512" : "baseline";
      size_t encoded = 0;
      const Spread encode_time = Time(
          rounds, repetitions, [] {},
          [&] {
            encoded = cohort::collective::EncodeZeroSkippingWith(kernel, words.data(), kWords,
                                                                 buffer.data());
          });
      if (encoded == 0) {
        std::fprintf(stderr, "zero_skipping_bench: the segment did not encode shorter\n");
        return 1;
      }
      const std::vector<uint8_t> encoding(buffer.begin(), buffer.begin() + encoded);
      bool expanded = true;
      const Spread expand_time = Time(
          rounds, repetitions, [&] { std::memcpy(buffer.data(), encoding.data(), encoded); },
          [&] {
            expanded = expanded && cohort::collective::ExpandZeroSkippingInPlaceWith(
                                       kernel, buffer.data(), encoded, kWords)
                                       .ok();
          });
      if (!expanded || std::memcmp(buffer.data(), words.data(), 4 * kWords) != 0) {
        std::fprintf(stderr, "zero_skipping_bench: %s did not expand to the segment\n", name);
        return 1;
      }
      std::printf("  %-8s encode (%3.0f%% of the bytes) %8.2f %8.2f %8.2f  %5.2f x memcpy\n", name,
                  100.0 * encoded / (4 * kWords), encode_time.min, encode_time.median,
                  encode_time.max, encode_time.median / memcpy_time.median);
      std::printf("  %-8s expand                    %8.2f %8.2f %8.2f  %5.2f x memcpy\n", name,
                  expand_time.min, expand_time.median, expand_time.max,
                  expand_time.median / memcpy_time.median);
      if (in_runs && kernel == cohort::collective::ZeroSkippingKernelsThisHostRuns().front()) {
        best_total = (encode_time.median + expand_time.median) / memcpy_time.median;
      }
    }
  }
  std::printf("zero skipping: encode + expand (best kernel, runs) = %.1f memcpys of the segment\n",
              best_total);
  return 0;
}
