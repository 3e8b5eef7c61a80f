#include "feature_hash.h"

namespace cohort::taxi {
namespace {

uint64_t Finalize(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t FingerprintFeature(std::string_view value) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a 64-bit offset basis
  for (char c : value) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 0x100000001b3ull;  // FNV prime
  }
  return Finalize(hash);
}

uint64_t FingerprintCross(uint64_t first, uint64_t second) {
  // Order-sensitive: the second part is rotated and offset before the mix.
  return Finalize(first ^ (((second << 21) | (second >> 43)) + 0x9e3779b97f4a7c15ull));
}

int64_t HashBucket(uint64_t fingerprint, int64_t buckets) {
  return 1 + static_cast<int64_t>(fingerprint % static_cast<uint64_t>(buckets - 1));
}

}  // namespace cohort::taxi
