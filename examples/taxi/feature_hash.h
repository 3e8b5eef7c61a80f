// Deterministic feature hashing, for hashed and crossed categorical columns.
//
// A hashed column (tf.feature_column.categorical_column_with_hash_bucket) maps an open set of
// values, such as company names, onto a fixed number of buckets; a crossed column
// (crossed_column) hashes a combination of values, such as pickup area x hour, the same way. The
// bucket of a value must never change: a model trained today is served tomorrow, and workers
// must agree with each other. std::hash promises neither (it may differ between library versions
// and is allowed to be randomised), so the hash is spelled out here: FNV-1a over the value's
// bytes followed by the splitmix64 finaliser, whose mixing spreads FNV's weak low bits before
// the modulo. Crosses combine the parts' fingerprints in order (a x b differs from b x a).
//
// Bucket 0 of every hashed column is reserved for a missing value, so a missing company can
// never share a bucket with a real one; values land in buckets 1 ... buckets - 1.
#pragma once

#include <cstdint>
#include <string_view>

namespace cohort::taxi {

uint64_t FingerprintFeature(std::string_view value);
uint64_t FingerprintCross(uint64_t first, uint64_t second);

// The bucket of a present value: 1 + fingerprint mod (buckets - 1). Needs buckets >= 2.
int64_t HashBucket(uint64_t fingerprint, int64_t buckets);

inline constexpr int64_t kMissingBucket = 0;

}  // namespace cohort::taxi
