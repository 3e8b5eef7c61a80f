#include "taxi/taxi_examples.h"

namespace cohort::taxi {

std::unique_ptr<train::EncodedBatch> TaxiExamples::NewBatch() const {
  return std::make_unique<TaxiBatch>();
}

void TaxiExamples::Encode(std::span<const int64_t> indices, train::EncodedBatch* batch) const {
  auto* taxi_batch = static_cast<TaxiBatch*>(batch);
  taxi_batch->trips.clear();
  for (int64_t index : indices) taxi_batch->trips.push_back(trips_[static_cast<size_t>(index)]);
  encoder_->Encode(taxi_batch->trips, &taxi_batch->features);
}

}  // namespace cohort::taxi
