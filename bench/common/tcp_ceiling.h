// The ceiling that the benchmarks compare with: one TCP stream over loopback, sender and
// receiver in separate processes, measured in the same run as what it bounds.
#pragma once

#include <cstddef>

namespace cohort::bench {

// Bytes per second of one stream from a buffer of `buffer_bytes` in one process into a buffer of
// the same size in another, over `total_bytes` (after a first buffer that only starts the stream).
// Small buffers stay in cache; large ones do not, as a large collective's or push's do not.
// 0 when the stream cannot be set up.
double MeasureTcpCeiling(size_t buffer_bytes, size_t total_bytes);

}  // namespace cohort::bench
