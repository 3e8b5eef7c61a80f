// WideDeepNet: the wide & deep taxi tip classifier (DNNLinearCombinedClassifier) as a plain
// torch::nn::Module, and TaxiTrips, the taxi trips as a cohort::BatchSource, for taxi-train, which
// trains it with the public API's ParameterServer strategy (include/cohort/parameter_server.h).
//
//   wide:  logit_wide = wide_bias + sum over the row's wide ids of wide_weights[id]
//          one torch::nn::Embedding of width 1 over the shared id space of the wide columns and
//          their crosses (taxi_features.h): on the parameter servers a sparse table, of which a
//          step pulls and pushes only the rows its batch uses; trained with FTRL
//          (ParameterServerOptions::optimizer_for["wide_"]), as the estimator's linear part is.
//   deep:  x = [<column>_embedding[id] for each categorical column] ++ the numeric features
//          -> 100 -> 70 -> 50 -> 25 (ReLU) -> 1 = logit_deep; one Embedding per column (sparse
//          tables too), Glorot-uniform kernels and zero biases; trained with Adagrad.
//   logit = logit_wide + logit_deep, the big-tip logit of each row ([N]).
//
// A batch's inputs are one float tensor [N, wide columns + embedding columns + numeric features]:
// the ids (all below 2^24, so exact as floats) then the numbers, as TaxiTrips encodes them; the
// targets are the 0/1 big-tip labels, float [N].
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cohort/data.h"
#include "taxi/taxi_features.h"
#include "taxi/taxi_trip.h"

namespace cohort::taxi {

inline constexpr char kWideDeepModelName[] = "wide_deep";
// The prefix of the wide part's parameters, for ParameterServerOptions::optimizer_for.
inline constexpr char kWidePart[] = "wide_";

struct WideDeepNetConfig {
  int64_t embedding_width = 8;
  std::vector<int64_t> hidden_units = {100, 70, 50, 25};
};

struct WideDeepNetImpl : torch::nn::Module {
  explicit WideDeepNetImpl(const WideDeepNetConfig& config = {});
  // inputs as TaxiTrips encodes them; returns the big-tip logits [N].
  torch::Tensor forward(const torch::Tensor& inputs);

  torch::nn::Embedding wide_weights{nullptr};
  torch::Tensor wide_bias;
  std::vector<torch::nn::Embedding> column_embeddings;
  torch::nn::Sequential layers{nullptr};
};
TORCH_MODULE(WideDeepNet);

// The trips of one split, encoded batch by batch with `encoder`. Holds a span: the trips and the
// encoder must outlive it.
class TaxiTrips : public BatchSource {
 public:
  TaxiTrips(std::span<const TaxiTrip> trips, const TaxiFeatureEncoder& encoder)
      : trips_(trips), encoder_(&encoder) {}
  int64_t size() const override { return static_cast<int64_t>(trips_.size()); }
  Batch Get(const std::vector<int64_t>& indices) const override;

 private:
  std::span<const TaxiTrip> trips_;
  const TaxiFeatureEncoder* encoder_;
};

// The area under the ROC curve of `scores` against 0/1 `labels` (ties count half); 0.5 when one
// class is absent.
double BinaryAuc(const torch::Tensor& scores, const torch::Tensor& labels);

}  // namespace cohort::taxi
