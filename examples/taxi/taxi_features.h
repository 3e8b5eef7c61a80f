// The feature encoding of the wide & deep taxi model, as plain arrays, batch by batch.
//
// DNNLinearCombinedClassifier feeds two models from one row. Its linear ("wide") part sees sparse
// categorical columns and crosses of them: each active bucket contributes one learned weight, so
// it memorises combinations such as "pickup in the Loop at 8 am". Its DNN ("deep") part sees
// dense embeddings of the categorical columns plus normalised numbers, so it generalises smooth
// effects such as "longer rides tip more". This file turns trips into both inputs without
// libtorch, so that it is testable alone and any trainer can wrap the arrays in tensors.
//
// Wide part: one id per column per trip, offset into one shared id space so that a single
// embedding-bag of width 1 (summing one weight per id) is the whole linear model. Hashed columns
// reserve bucket 0 for a missing value (feature_hash.h); identity columns (the community areas)
// use 0 for missing and the area number otherwise. Crosses are hashed as crossed_column does, a
// missing part taking part as the token "<missing>".
//
//   column                    kind                     buckets
//   payment_type              vocabulary (below)       9
//   company                   hashed                   128
//   pickup_community_area     identity, 0 = missing    78
//   dropoff_community_area    identity, 0 = missing    78
//   trip_start_hour           identity                 24
//   trip_start_day            identity (day - 1)       7
//   trip_start_month          identity (month - 1)     12
//   trip_miles_bucket         bucketized at 0.5, 1, 2, 3, 5, 8, 12, 18 miles   9
//   pickup x dropoff area     hashed cross             65536
//   pickup area x hour        hashed cross             65536
//   company x payment_type    hashed cross             16384
//   day x hour                hashed cross             4096
//   pickup lat x lon grid     hashed cross of 10 x 10 cells over the city, 0 = missing   4096
//   dropoff lat x lon grid    likewise                 4096
//
// The payment type, the strongest signal, uses its known vocabulary rather than a hash: seven
// values hashed into 16 or even 32 buckets already collide. Hash spaces are sized so that the
// generator's values rarely share a bucket (its 20 companies take 20 distinct buckets of 128;
// the crosses have a few hundred to six thousand combinations, mostly rare), since a shared
// bucket averages two different effects and costs AUC. About 200k wide weights in all.
//
// Deep part: one embedding id per categorical column (ids within the column's vocabulary):
//
//   payment_type  9: 0 = missing, 1 ... 7 the known types in TaxiPaymentTypes(), 8 = any other
//                 (the wide part uses the same ids)
//   company       128 (the wide part's hashed bucket)
//   pickup_community_area, dropoff_community_area  78;  trip_start_hour 24;
//   trip_start_day 7;  trip_start_month 12
//
// and nine numbers: log1p(fare), log1p(trip_miles), log1p(trip_seconds) (heavy-tailed, so logs;
// a difference of logs is also a log ratio such as fare per mile, which a linear layer can form),
// the four coordinates, each a z-score with the training split's mean and standard deviation; a
// missing coordinate becomes 0 (the mean) and the two indicators pickup_coordinates_missing and
// dropoff_coordinates_missing (0 or 1, not scaled) say so, so missing never looks like a place.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "status.h"
#include "taxi_trip.h"

namespace cohort::taxi {

struct FeatureColumn {
  std::string name;
  int64_t size = 0;    // buckets or vocabulary size
  int64_t offset = 0;  // wide part: where the column's ids start in the shared id space
};

const std::vector<FeatureColumn>& TaxiWideColumns();
int64_t TaxiWideIdSpace();  // the sum of the wide columns' sizes
const std::vector<FeatureColumn>& TaxiEmbeddingColumns();
const std::vector<std::string>& TaxiNumericFeatureNames();
const std::vector<std::string>& TaxiPaymentTypes();  // the deep vocabulary, ids 1 ... 7

// Mean and standard deviation of the z-scored numbers (the first seven numeric features), over
// the values present in the training split.
inline constexpr int kTaxiZScoredFeatureCount = 7;
struct TaxiNumericStatistics {
  std::array<double, kTaxiZScoredFeatureCount> mean{};
  std::array<double, kTaxiZScoredFeatureCount> standard_deviation{};
};

// Fails on an empty split or when a feature is missing from every trip.
StatusOr<TaxiNumericStatistics> ComputeTaxiNumericStatistics(std::span<const TaxiTrip> trips);

struct TaxiFeatureBatch {
  int64_t size = 0;
  std::vector<int64_t> wide_ids;       // size x TaxiWideColumns().size(), in [0, WideIdSpace)
  std::vector<int64_t> embedding_ids;  // size x TaxiEmbeddingColumns().size(), per column
  std::vector<float> numeric;          // size x TaxiNumericFeatureNames().size()
  std::vector<float> labels;           // size; 1 = big tipper (tips > 0.2 x fare)
};

class TaxiFeatureEncoder {
 public:
  explicit TaxiFeatureEncoder(const TaxiNumericStatistics& statistics) : statistics_(statistics) {}

  // Replaces `batch` with the encoding of `trips`, row-major, reusing its storage.
  void Encode(std::span<const TaxiTrip> trips, TaxiFeatureBatch* batch) const;

 private:
  void EncodeWide(const TaxiTrip& trip, int64_t* ids) const;
  void EncodeEmbedding(const TaxiTrip& trip, int64_t* ids) const;
  void EncodeNumeric(const TaxiTrip& trip, float* values) const;

  TaxiNumericStatistics statistics_;
};

}  // namespace cohort::taxi
