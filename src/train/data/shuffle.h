// Seeded shuffling: the sample order of one pass over a data set.
//
// The order must be identical on every worker (each takes its own slice of it) and reproducible
// after a restart (a resumed run must see the samples the interrupted one would have), so it is a
// pure function of (size, seed, pass) with a fully specified generator: mt19937_64 and Fisher-Yates
// with rejection sampling, not std::shuffle, whose algorithm differs between standard libraries.
#pragma once

#include <cstdint>
#include <vector>

namespace cohort::train {

// A permutation of [0, size) for pass number `pass` of a run seeded with `seed`. Different passes
// give independent orders; the same arguments always give the same order.
std::vector<int64_t> ShuffledOrder(int64_t size, uint64_t seed, int64_t pass);

}  // namespace cohort::train
