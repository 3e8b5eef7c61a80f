// RingAllGather: every rank's block travels once around the ring.
//
// In step s a rank sends block (rank - s) to its right neighbour and receives block (rank - s - 1)
// from its left, straight into the output buffer; a received segment is forwarded as soon as it
// has arrived. Each rank sends and receives (n-1)/n of the output, the minimum.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "collective/operation.h"

namespace cohort::collective {

class RingAllGather {
 public:
  // `output` holds size() blocks of `block_bytes`; this rank's block is already in place.
  RingAllGather(const OperationContext& context, void* output, size_t block_bytes,
                size_t segment_bytes);
  Status Run();

 private:
  const OperationContext& context_;
  uint8_t* const output_;
  const size_t block_bytes_;
  const size_t segment_bytes_;
};

}  // namespace cohort::collective
