#include "taxi/taxi_features.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "taxi/feature_hash.h"
#include "taxi/taxi_generator.h"

namespace cohort::taxi {
namespace {

TaxiTrip DowntownTrip() {
  TaxiTrip trip;
  trip.trip_start_month = 5;
  trip.trip_start_day = 6;
  trip.trip_start_hour = 18;
  trip.trip_seconds = 780;
  trip.trip_miles = 2.3;
  trip.fare = 12.5;
  trip.payment_type = "Credit Card";
  trip.company = "Flash Cab";
  trip.pickup_community_area = 8;
  trip.dropoff_community_area = 32;
  trip.pickup_latitude = 41.9003;
  trip.pickup_longitude = -87.634;
  trip.dropoff_latitude = 41.8815;
  trip.dropoff_longitude = -87.629;
  trip.tips = 3;
  return trip;
}

TaxiFeatureBatch EncodeOne(const TaxiTrip& trip, const TaxiNumericStatistics& statistics) {
  TaxiFeatureBatch batch;
  TaxiFeatureEncoder(statistics).Encode(std::span<const TaxiTrip>(&trip, 1), &batch);
  return batch;
}

TaxiNumericStatistics UnitStatistics() {
  TaxiNumericStatistics statistics;
  statistics.standard_deviation.fill(1.0);
  return statistics;
}

int64_t WideColumnIndex(const std::string& name) {
  const auto& columns = TaxiWideColumns();
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == name) return static_cast<int64_t>(i);
  }
  ADD_FAILURE() << "no wide column " << name;
  return 0;
}

TEST(FeatureHashTest, GoldenValuesNeverChange) {
  // Saved models and running workers depend on these: a change here breaks every trained model.
  EXPECT_EQ(FingerprintFeature("Cash"), 7310108012223758110u);
  EXPECT_EQ(FingerprintCross(FingerprintFeature("8"), FingerprintFeature("18")),
            16493929995624844661u);
  EXPECT_NE(FingerprintCross(FingerprintFeature("18"), FingerprintFeature("8")),
            FingerprintCross(FingerprintFeature("8"), FingerprintFeature("18")));
  EXPECT_EQ(HashBucket(FingerprintFeature("Flash Cab"), 64), 3);
  for (uint64_t fingerprint : {uint64_t{0}, uint64_t{1}, ~uint64_t{0}}) {
    EXPECT_GE(HashBucket(fingerprint, 2), 1);  // bucket 0 stays free for missing values
    EXPECT_LE(HashBucket(fingerprint, 2), 1);
  }
}

TEST(TaxiFeaturesTest, WideColumnsTileOneIdSpace) {
  int64_t next = 0;
  for (const FeatureColumn& column : TaxiWideColumns()) {
    EXPECT_EQ(column.offset, next) << column.name;
    next += column.size;
  }
  EXPECT_EQ(TaxiWideIdSpace(), next);
  EXPECT_EQ(TaxiWideColumns().size(), 14u);
  EXPECT_EQ(TaxiEmbeddingColumns().size(), 7u);
  EXPECT_EQ(TaxiNumericFeatureNames().size(), 9u);
}

TEST(TaxiFeaturesTest, EncodesAKnownTripToKnownIds) {
  const TaxiFeatureBatch batch = EncodeOne(DowntownTrip(), UnitStatistics());
  ASSERT_EQ(batch.size, 1);
  const auto& wide = TaxiWideColumns();
  const auto local = [&](const std::string& name) {
    const int64_t column = WideColumnIndex(name);
    return batch.wide_ids[column] - wide[column].offset;
  };
  EXPECT_EQ(local("payment_type"), 1);  // "Credit Card" is the first known type
  EXPECT_EQ(local("company"), HashBucket(FingerprintFeature("Flash Cab"), 128));
  EXPECT_EQ(local("pickup_community_area"), 8);
  EXPECT_EQ(local("dropoff_community_area"), 32);
  EXPECT_EQ(local("trip_start_hour"), 18);
  EXPECT_EQ(local("trip_start_day"), 5);
  EXPECT_EQ(local("trip_start_month"), 4);
  EXPECT_EQ(local("trip_miles_bucket"), 3);  // 2 <= 2.3 < 3
  EXPECT_EQ(local("pickup_community_area_x_trip_start_hour"),
            HashBucket(FingerprintCross(FingerprintFeature("8"), FingerprintFeature("18")), 65536));
  EXPECT_EQ(
      batch.embedding_ids,
      (std::vector<int64_t>{1, HashBucket(FingerprintFeature("Flash Cab"), 128), 8, 32, 18, 5, 4}));
  EXPECT_FLOAT_EQ(batch.numeric[0], std::log1p(12.5));
  EXPECT_FLOAT_EQ(batch.numeric[2], std::log1p(780.0));
  EXPECT_FLOAT_EQ(batch.numeric[3], 41.9003f);
  EXPECT_EQ(batch.numeric[7], 0.0f);  // coordinates present
  EXPECT_EQ(batch.labels, std::vector<float>{1.0f});
}

TEST(TaxiFeaturesTest, MissingValuesGetTheirOwnBucketNotZeroes) {
  TaxiTrip trip = DowntownTrip();
  trip.company.reset();
  trip.pickup_community_area.reset();
  trip.pickup_latitude.reset();
  trip.pickup_longitude.reset();
  TaxiNumericStatistics statistics = UnitStatistics();
  statistics.mean[3] = 41.9;  // pickup_latitude
  const TaxiFeatureBatch batch = EncodeOne(trip, statistics);
  const auto& wide = TaxiWideColumns();
  for (const char* name :
       {"company", "pickup_community_area", "pickup_latitude_x_pickup_longitude"}) {
    const int64_t column = WideColumnIndex(name);
    EXPECT_EQ(batch.wide_ids[column], wide[column].offset + kMissingBucket) << name;
  }
  EXPECT_EQ(batch.embedding_ids[1], 0);  // company
  EXPECT_EQ(batch.embedding_ids[2], 0);  // pickup area
  EXPECT_EQ(batch.numeric[3], 0.0f);     // the mean, not (0 - 41.9)
  EXPECT_EQ(batch.numeric[7], 1.0f);     // pickup_coordinates_missing
  EXPECT_EQ(batch.numeric[8], 0.0f);

  // No present value shares the missing bucket: every generated company and area is nonzero.
  const auto trips = GenerateTaxiTrips(5, TaxiSplit::kTrain, 2000);
  TaxiFeatureBatch generated;
  TaxiFeatureEncoder(statistics).Encode(trips, &generated);
  const int64_t company = WideColumnIndex("company");
  for (int64_t row = 0; row < generated.size; ++row) {
    const bool missing = !trips[row].company.has_value();
    EXPECT_EQ(generated.wide_ids[row * wide.size() + company] == wide[company].offset, missing);
  }
}

TEST(TaxiFeaturesTest, PaymentTypesAndGeneratedCompaniesNeverShareABucket) {
  std::set<int64_t> payments, companies, crosses;
  TaxiTrip trip = DowntownTrip();
  for (const std::string& payment : TaxiPaymentTypes()) {
    trip.payment_type = payment;
    payments.insert(EncodeOne(trip, UnitStatistics()).wide_ids[0]);
    for (const std::string& company : TaxiCompanyNames()) {
      trip.company = company;
      const TaxiFeatureBatch batch = EncodeOne(trip, UnitStatistics());
      companies.insert(batch.wide_ids[1]);
      crosses.insert(batch.wide_ids[WideColumnIndex("company_x_payment_type")]);
    }
  }
  EXPECT_EQ(payments.size(), TaxiPaymentTypes().size());
  EXPECT_EQ(companies.size(), TaxiCompanyNames().size());
  EXPECT_EQ(crosses.size(), TaxiPaymentTypes().size() * TaxiCompanyNames().size());
  trip.payment_type = "Pcard";  // a type the vocabulary does not know
  EXPECT_EQ(EncodeOne(trip, UnitStatistics()).embedding_ids[0], 8);
}

TEST(TaxiFeaturesTest, StatisticsComeFromPresentValuesAndStandardiseTheSplit) {
  const auto trips = GenerateTaxiTrips(5, TaxiSplit::kTrain, 5000);
  auto statistics = ComputeTaxiNumericStatistics(trips);
  ASSERT_TRUE(statistics.ok()) << statistics.status().ToString();
  EXPECT_NEAR(statistics->mean[3], 41.89, 0.05);  // pickup latitude: Chicago, not the equator
  TaxiFeatureBatch batch;
  TaxiFeatureEncoder(*statistics).Encode(trips, &batch);
  for (int feature = 0; feature < kTaxiZScoredFeatureCount; ++feature) {
    double sum = 0, squares = 0, present = 0;
    for (int64_t row = 0; row < batch.size; ++row) {
      const double value = batch.numeric[row * 9 + feature];
      const bool missing = (feature >= 3 && feature <= 4 && !trips[row].pickup_latitude) ||
                           (feature >= 5 && !trips[row].dropoff_latitude);
      if (missing) continue;
      sum += value;
      squares += value * value;
      present += 1;
    }
    EXPECT_NEAR(sum / present, 0.0, 1e-4) << TaxiNumericFeatureNames()[feature];
    EXPECT_NEAR(squares / present, 1.0, 1e-3) << TaxiNumericFeatureNames()[feature];
  }
  for (int64_t id : batch.wide_ids) {
    ASSERT_GE(id, 0);
    ASSERT_LT(id, TaxiWideIdSpace());
  }
  for (int64_t row = 0; row < batch.size; ++row) {
    for (size_t column = 0; column < TaxiEmbeddingColumns().size(); ++column) {
      const int64_t id = batch.embedding_ids[row * TaxiEmbeddingColumns().size() + column];
      ASSERT_GE(id, 0);
      ASSERT_LT(id, TaxiEmbeddingColumns()[column].size);
    }
  }

  auto empty = ComputeTaxiNumericStatistics({});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "taxi features: no trip has a value for log1p_fare");
}

}  // namespace
}  // namespace cohort::taxi
