// What every collective algorithm needs to run one operation, and how it cuts buffers up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "net/connection_set.h"
#include "net/deadline.h"

namespace cohort::collective {

// One operation as the Communicator hands it to an algorithm.
struct OperationContext {
  // The transport's connections (net/connection_set.h); algorithms know nothing more of it.
  net::ConnectionSet* connections = nullptr;
  // Carried by every message of the operation; tasks that disagree on it are out of step.
  uint64_t tag = 0;
  // Starts every error: "all-reduce #12 (float32 x 1048576, sum)".
  std::string description;
  net::Deadline deadline = net::Deadline::Never();
};

// `count` elements cut into `parts` contiguous blocks whose sizes differ by at most one: the first
// count % parts blocks get the extra element. Blocks may be empty when count < parts.
class BlockPartition {
 public:
  BlockPartition(size_t count, int parts)
      : base_(count / static_cast<size_t>(parts)), extra_(count % static_cast<size_t>(parts)) {}

  size_t offset(int block) const {
    size_t b = static_cast<size_t>(block);
    return b * base_ + (b < extra_ ? b : extra_);
  }
  size_t size(int block) const { return base_ + (static_cast<size_t>(block) < extra_ ? 1 : 0); }

 private:
  size_t base_;
  size_t extra_;
};

// Segments of at most `segment_elements` that cover `elements` (0 for an empty block).
inline size_t SegmentCount(size_t elements, size_t segment_elements) {
  return (elements + segment_elements - 1) / segment_elements;
}

// How many elements fit in a segment of `segment_bytes` (at least one).
inline size_t SegmentElements(size_t segment_bytes, size_t element_size) {
  size_t elements = segment_bytes / element_size;
  return elements == 0 ? 1 : elements;
}

}  // namespace cohort::collective
