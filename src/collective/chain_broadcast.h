// ChainBroadcast: the root's buffer flows down a chain of ranks, segment by segment.
//
// The chain is the ring starting at the root: root -> root+1 -> ... -> root-1. Each rank receives
// segments straight into its buffer and forwards each one as soon as it has arrived, so for a
// large buffer every link of the chain is busy at once and the time approaches that of a single
// transfer, whatever the number of ranks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "collective/operation.h"

namespace cohort::collective {

class ChainBroadcast {
 public:
  ChainBroadcast(const OperationContext& context, void* data, size_t bytes, int root,
                 size_t segment_bytes);
  Status Run();

 private:
  const OperationContext& context_;
  uint8_t* const data_;
  const size_t bytes_;
  const int root_;
  const size_t segment_bytes_;
};

}  // namespace cohort::collective
