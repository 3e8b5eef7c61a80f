// The taxi data set on disk: train.csv, eval.csv and ground_truth.json in one directory.
//
// ground_truth.json records what a trained model is judged against: the seed and sizes, the
// rule (taxi_tip_rule.h) in words and as tables, the share of big tippers in each split, and the
// ceiling AUC, the exact AUC of the true probability on the eval split (the best any model can
// reach, since the labels are Bernoulli draws from that probability). For example:
//
//   {"generator_version": 1, "seed": 42, "train_trips": 200000, "eval_trips": 50000,
//    "ceiling_auc": 0.917..., "train_big_tipper_rate": 0.304..., "eval_big_tipper_rate": 0.300...,
//    "rule": "P(tips > 0.2 x fare) = sigmoid(logit); ...", "payment_type_effect": {...},
//    "company_effect": {...}, "company_card_effect": {...}, "pickup_area_time_effect": {...}}
//
// Every file is written atomically (temporary name, fsync, rename), and ground_truth.json last, so
// its presence means the CSV files are complete. EnsureTaxiDataset lets every replica of a job
// call it at start-up: the first to take the directory's lock generates, the others wait for the
// lock and then find the data set there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "status.h"
#include "taxi_trip.h"

namespace cohort::taxi {

inline constexpr char kTaxiTrainFile[] = "train.csv";
inline constexpr char kTaxiEvalFile[] = "eval.csv";
inline constexpr char kTaxiGroundTruthFile[] = "ground_truth.json";

// Bumped whenever the generator or the rule changes what a seed produces.
inline constexpr int kTaxiGeneratorVersion = 1;

struct TaxiDatasetOptions {
  uint64_t seed = 42;
  // About 25 MB of CSV together; a few epochs of wide & deep over them take minutes on 2 cores.
  int64_t train_trips = 200'000;
  int64_t eval_trips = 50'000;
};

struct TaxiGroundTruth {
  int generator_version = kTaxiGeneratorVersion;
  uint64_t seed = 0;
  int64_t train_trips = 0;
  int64_t eval_trips = 0;
  double ceiling_auc = 0;
  double train_big_tipper_rate = 0;
  double eval_big_tipper_rate = 0;
  std::string rule;
};

// The AUC of TrueTipProbability against the big-tipper labels of `trips`.
StatusOr<double> TaxiCeilingAuc(const std::vector<TaxiTrip>& trips);

// The whole CSV file (header and rows) for `trips`.
std::string FormatTaxiCsv(const std::vector<TaxiTrip>& trips);

// Generates the data set into `dir` (created if needed), replacing any files there.
StatusOr<TaxiGroundTruth> WriteTaxiDataset(const std::string& dir,
                                           const TaxiDatasetOptions& options);

// Generates the data set into `dir` unless it is already there; safe to call from several
// processes or threads at once. A data set there with another seed, size or generator version is
// an error (FailedPrecondition), not silently replaced: a job's replicas must share one.
StatusOr<TaxiGroundTruth> EnsureTaxiDataset(const std::string& dir,
                                            const TaxiDatasetOptions& options);

// Reads `dir`/ground_truth.json.
StatusOr<TaxiGroundTruth> ReadTaxiGroundTruth(const std::string& dir);

}  // namespace cohort::taxi
