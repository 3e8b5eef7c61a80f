// TaxiExamples: the trips of one split as the parameter-server trainer reads them (an
// ExampleSource, train/parameter_server/parameter_server_model.h), encoded into TaxiBatches of
// features (taxi_features.h) for the wide & deep model.
//
//   TaxiExamples train(train_trips, encoder), eval(eval_trips, encoder);
//   TrainWithParameterServers(options, model, train, eval);
//
// It holds spans: the trips and the encoder must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "taxi/taxi_features.h"
#include "taxi/taxi_trip.h"
#include "train/parameter_server/parameter_server_model.h"

namespace cohort::taxi {

// A batch of trips' features, what WideDeepModel reads.
struct TaxiBatch : public train::EncodedBatch {
  int64_t size() const override { return features.size; }

  TaxiFeatureBatch features;
  std::vector<TaxiTrip> trips;  // the batch's trips, gathered for the encoder
};

class TaxiExamples : public train::ExampleSource {
 public:
  TaxiExamples(std::span<const TaxiTrip> trips, const TaxiFeatureEncoder& encoder)
      : trips_(trips), encoder_(&encoder) {}

  int64_t size() const override { return static_cast<int64_t>(trips_.size()); }
  std::unique_ptr<train::EncodedBatch> NewBatch() const override;
  // `batch` must be a TaxiBatch (from NewBatch).
  void Encode(std::span<const int64_t> indices, train::EncodedBatch* batch) const override;

 private:
  std::span<const TaxiTrip> trips_;
  const TaxiFeatureEncoder* encoder_;
};

}  // namespace cohort::taxi
