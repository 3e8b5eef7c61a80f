// DisseminationBarrier: no rank leaves before every rank has arrived, in ceil(log2 n) rounds.
//
// In round k a rank tells the rank 2^k to its right that it has arrived and waits for the word
// from the rank 2^k to its left (Hensgen, Finkel and Manber, 1988). After the last round each rank
// has heard, directly or through others, from every rank.
#pragma once

#include "base/status.h"
#include "collective/operation.h"

namespace cohort::collective {

class DisseminationBarrier {
 public:
  explicit DisseminationBarrier(const OperationContext& context) : context_(context) {}
  Status Run();

 private:
  const OperationContext& context_;
};

}  // namespace cohort::collective
