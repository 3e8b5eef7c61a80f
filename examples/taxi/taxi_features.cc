#include "taxi_features.h"

#include <algorithm>
#include <cmath>

#include "feature_hash.h"

namespace cohort::taxi {
namespace {

// Wide columns, in TaxiWideColumns() order.
enum WideColumn {
  kWidePayment,
  kWideCompany,
  kWidePickupArea,
  kWideDropoffArea,
  kWideHour,
  kWideDay,
  kWideMonth,
  kWideMilesBucket,
  kWidePickupDropoff,
  kWidePickupHour,
  kWideCompanyPayment,
  kWideDayHour,
  kWidePickupGrid,
  kWideDropoffGrid,
  kWideColumnCount,
};

enum EmbeddingColumn {
  kDeepPayment,
  kDeepCompany,
  kDeepPickupArea,
  kDeepDropoffArea,
  kDeepHour,
  kDeepDay,
  kDeepMonth,
  kEmbeddingColumnCount,
};

constexpr int kNumericFeatureCount = kTaxiZScoredFeatureCount + 2;
constexpr double kMilesBoundaries[] = {0.5, 1, 2, 3, 5, 8, 12, 18};
// The 10 x 10 grid spans the city's extent (a little beyond the community areas' centroids).
constexpr double kGridSouth = 41.64, kGridNorth = 42.03, kGridWest = -87.94, kGridEast = -87.52;
constexpr int kGridCells = 10;

const char kMissingToken[] = "<missing>";

std::vector<FeatureColumn> WithOffsets(std::vector<FeatureColumn> columns) {
  int64_t offset = 0;
  for (FeatureColumn& column : columns) {
    column.offset = offset;
    offset += column.size;
  }
  return columns;
}

uint64_t Fingerprint(const std::optional<int>& value) {
  return FingerprintFeature(value ? std::to_string(*value) : kMissingToken);
}

uint64_t Fingerprint(const std::optional<std::string>& value) {
  return FingerprintFeature(value ? *value : kMissingToken);
}

int64_t HashedOrMissing(const std::optional<std::string>& value, int64_t buckets) {
  return value ? HashBucket(FingerprintFeature(*value), buckets) : kMissingBucket;
}

int GridIndex(double value, double low, double high) {
  const int cell = static_cast<int>(std::floor((value - low) / (high - low) * kGridCells));
  return std::clamp(cell, 0, kGridCells - 1);
}

// The grid cell "row:column" of a point, hashed; missing when the coordinates are.
int64_t GridBucket(const std::optional<double>& latitude, const std::optional<double>& longitude,
                   int64_t buckets) {
  if (!latitude || !longitude) return kMissingBucket;
  const int row = GridIndex(*latitude, kGridSouth, kGridNorth);
  const int column = GridIndex(*longitude, kGridWest, kGridEast);
  return HashBucket(FingerprintCross(FingerprintFeature(std::to_string(row)),
                                     FingerprintFeature(std::to_string(column))),
                    buckets);
}

// 0 = missing, 1 ... 7 = TaxiPaymentTypes(), 8 = any other type.
int64_t PaymentTypeId(const std::string& payment_type) {
  if (payment_type.empty()) return 0;
  const std::vector<std::string>& types = TaxiPaymentTypes();
  const auto known = std::find(types.begin(), types.end(), payment_type);
  return known == types.end() ? static_cast<int64_t>(types.size()) + 1
                              : 1 + (known - types.begin());
}

int64_t MilesBucket(double miles) {
  int64_t bucket = 0;
  for (double boundary : kMilesBoundaries) bucket += miles >= boundary ? 1 : 0;
  return bucket;
}

// The z-scored values of a trip, in TaxiNumericFeatureNames() order, before scaling.
std::array<std::optional<double>, kTaxiZScoredFeatureCount> RawNumbers(const TaxiTrip& trip) {
  return {std::log1p(trip.fare),
          std::log1p(trip.trip_miles),
          std::log1p(static_cast<double>(trip.trip_seconds)),
          trip.pickup_latitude,
          trip.pickup_longitude,
          trip.dropoff_latitude,
          trip.dropoff_longitude};
}

}  // namespace

const std::vector<FeatureColumn>& TaxiWideColumns() {
  static const std::vector<FeatureColumn> columns = WithOffsets({
      {"payment_type", static_cast<int64_t>(TaxiPaymentTypes().size()) + 2},
      {"company", 128},
      {"pickup_community_area", kCommunityAreaCount + 1},
      {"dropoff_community_area", kCommunityAreaCount + 1},
      {"trip_start_hour", 24},
      {"trip_start_day", 7},
      {"trip_start_month", 12},
      {"trip_miles_bucket", std::size(kMilesBoundaries) + 1},
      {"pickup_community_area_x_dropoff_community_area", 65536},
      {"pickup_community_area_x_trip_start_hour", 65536},
      {"company_x_payment_type", 16384},
      {"trip_start_day_x_trip_start_hour", 4096},
      {"pickup_latitude_x_pickup_longitude", 4096},
      {"dropoff_latitude_x_dropoff_longitude", 4096},
  });
  return columns;
}

int64_t TaxiWideIdSpace() {
  const FeatureColumn& last = TaxiWideColumns().back();
  return last.offset + last.size;
}

const std::vector<FeatureColumn>& TaxiEmbeddingColumns() {
  static const std::vector<FeatureColumn> columns = {
      {"payment_type", static_cast<int64_t>(TaxiPaymentTypes().size()) + 2},
      {"company", TaxiWideColumns()[kWideCompany].size},
      {"pickup_community_area", kCommunityAreaCount + 1},
      {"dropoff_community_area", kCommunityAreaCount + 1},
      {"trip_start_hour", 24},
      {"trip_start_day", 7},
      {"trip_start_month", 12},
  };
  return columns;
}

const std::vector<std::string>& TaxiNumericFeatureNames() {
  static const std::vector<std::string> names = {
      "log1p_fare",        "log1p_trip_miles",           "log1p_trip_seconds",
      "pickup_latitude",   "pickup_longitude",           "dropoff_latitude",
      "dropoff_longitude", "pickup_coordinates_missing", "dropoff_coordinates_missing"};
  return names;
}

const std::vector<std::string>& TaxiPaymentTypes() {
  static const std::vector<std::string> types = {"Credit Card", "Cash",      "Mobile", "Prcard",
                                                 "Unknown",     "No Charge", "Dispute"};
  return types;
}

StatusOr<TaxiNumericStatistics> ComputeTaxiNumericStatistics(std::span<const TaxiTrip> trips) {
  // Welford's running mean and variance: one pass, no catastrophic cancellation.
  std::array<double, kTaxiZScoredFeatureCount> count{}, mean{}, squares{};
  for (const TaxiTrip& trip : trips) {
    const auto values = RawNumbers(trip);
    for (int i = 0; i < kTaxiZScoredFeatureCount; ++i) {
      if (!values[i]) continue;
      count[i] += 1;
      const double delta = *values[i] - mean[i];
      mean[i] += delta / count[i];
      squares[i] += delta * (*values[i] - mean[i]);
    }
  }
  TaxiNumericStatistics statistics;
  for (int i = 0; i < kTaxiZScoredFeatureCount; ++i) {
    if (count[i] == 0) {
      return Status::InvalidArgument("taxi features: no trip has a value for " +
                                     TaxiNumericFeatureNames()[i]);
    }
    statistics.mean[i] = mean[i];
    const double deviation = std::sqrt(squares[i] / count[i]);
    // A constant feature carries no information; dividing by 1 keeps it at 0 instead of NaN.
    statistics.standard_deviation[i] = deviation > 1e-12 ? deviation : 1.0;
  }
  return statistics;
}

void TaxiFeatureEncoder::Encode(std::span<const TaxiTrip> trips, TaxiFeatureBatch* batch) const {
  const auto size = static_cast<int64_t>(trips.size());
  batch->size = size;
  batch->wide_ids.resize(size * kWideColumnCount);
  batch->embedding_ids.resize(size * kEmbeddingColumnCount);
  batch->numeric.resize(size * kNumericFeatureCount);
  batch->labels.resize(size);
  for (int64_t row = 0; row < size; ++row) {
    const TaxiTrip& trip = trips[row];
    EncodeWide(trip, &batch->wide_ids[row * kWideColumnCount]);
    EncodeEmbedding(trip, &batch->embedding_ids[row * kEmbeddingColumnCount]);
    EncodeNumeric(trip, &batch->numeric[row * kNumericFeatureCount]);
    batch->labels[row] = IsBigTipper(trip) ? 1.0f : 0.0f;
  }
}

void TaxiFeatureEncoder::EncodeWide(const TaxiTrip& trip, int64_t* ids) const {
  const std::vector<FeatureColumn>& columns = TaxiWideColumns();
  const auto size = [&](WideColumn column) { return columns[column].size; };
  const uint64_t payment = FingerprintFeature(trip.payment_type);
  const uint64_t company = Fingerprint(trip.company);
  const uint64_t pickup = Fingerprint(trip.pickup_community_area);
  const uint64_t hour = FingerprintFeature(std::to_string(trip.trip_start_hour));

  int64_t local[kWideColumnCount];
  local[kWidePayment] = PaymentTypeId(trip.payment_type);
  local[kWideCompany] = HashedOrMissing(trip.company, size(kWideCompany));
  local[kWidePickupArea] = trip.pickup_community_area.value_or(0);
  local[kWideDropoffArea] = trip.dropoff_community_area.value_or(0);
  local[kWideHour] = trip.trip_start_hour;
  local[kWideDay] = trip.trip_start_day - 1;
  local[kWideMonth] = trip.trip_start_month - 1;
  local[kWideMilesBucket] = MilesBucket(trip.trip_miles);
  local[kWidePickupDropoff] = HashBucket(
      FingerprintCross(pickup, Fingerprint(trip.dropoff_community_area)), size(kWidePickupDropoff));
  local[kWidePickupHour] = HashBucket(FingerprintCross(pickup, hour), size(kWidePickupHour));
  local[kWideCompanyPayment] =
      HashBucket(FingerprintCross(company, payment), size(kWideCompanyPayment));
  local[kWideDayHour] =
      HashBucket(FingerprintCross(FingerprintFeature(std::to_string(trip.trip_start_day)), hour),
                 size(kWideDayHour));
  local[kWidePickupGrid] =
      GridBucket(trip.pickup_latitude, trip.pickup_longitude, size(kWidePickupGrid));
  local[kWideDropoffGrid] =
      GridBucket(trip.dropoff_latitude, trip.dropoff_longitude, size(kWideDropoffGrid));
  for (int column = 0; column < kWideColumnCount; ++column) {
    ids[column] = columns[column].offset + local[column];
  }
}

void TaxiFeatureEncoder::EncodeEmbedding(const TaxiTrip& trip, int64_t* ids) const {
  ids[kDeepPayment] = PaymentTypeId(trip.payment_type);
  ids[kDeepCompany] = HashedOrMissing(trip.company, TaxiEmbeddingColumns()[kDeepCompany].size);
  ids[kDeepPickupArea] = trip.pickup_community_area.value_or(0);
  ids[kDeepDropoffArea] = trip.dropoff_community_area.value_or(0);
  ids[kDeepHour] = trip.trip_start_hour;
  ids[kDeepDay] = trip.trip_start_day - 1;
  ids[kDeepMonth] = trip.trip_start_month - 1;
}

void TaxiFeatureEncoder::EncodeNumeric(const TaxiTrip& trip, float* values) const {
  const auto raw = RawNumbers(trip);
  for (int i = 0; i < kTaxiZScoredFeatureCount; ++i) {
    values[i] = raw[i] ? static_cast<float>((*raw[i] - statistics_.mean[i]) /
                                            statistics_.standard_deviation[i])
                       : 0.0f;
  }
  values[kTaxiZScoredFeatureCount] = trip.pickup_latitude && trip.pickup_longitude ? 0.0f : 1.0f;
  values[kTaxiZScoredFeatureCount + 1] =
      trip.dropoff_latitude && trip.dropoff_longitude ? 0.0f : 1.0f;
}

}  // namespace cohort::taxi
