#include "train/data/shuffle.h"

#include <numeric>
#include <random>

namespace cohort::train {
namespace {

// SplitMix64's finaliser: spreads (seed, pass) over the whole 64-bit seed space, so neighbouring
// seeds and passes do not start the generator in related states.
uint64_t Mix(uint64_t value) {
  value += 0x9e3779b97f4a7c15ull;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

// A uniform integer in [0, bound], without the modulo bias of `rng() % (bound + 1)`.
uint64_t UniformUpTo(std::mt19937_64& rng, uint64_t bound) {
  if (bound == UINT64_MAX) return rng();
  const uint64_t range = bound + 1;
  const uint64_t limit = UINT64_MAX - (UINT64_MAX % range);
  uint64_t draw;
  do {
    draw = rng();
  } while (draw >= limit);
  return draw % range;
}

}  // namespace

std::vector<int64_t> ShuffledOrder(int64_t size, uint64_t seed, int64_t pass) {
  std::vector<int64_t> order(static_cast<size_t>(size));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::mt19937_64 rng(Mix(Mix(seed) ^ static_cast<uint64_t>(pass)));
  for (int64_t i = size - 1; i > 0; --i) {
    std::swap(order[i], order[UniformUpTo(rng, static_cast<uint64_t>(i))]);
  }
  return order;
}

}  // namespace cohort::train
