// TaxiTrip: one row of the Chicago Taxi Trips data set, as the TFX taxi example used it.
//
// The City of Chicago publishes every taxi trip (the "Taxi Trips" data set, also on BigQuery as
// bigquery-public-data.chicago_taxi_trips). TFX's taxi pipeline and the AI Platform wide & deep
// sample train on a handful of its columns; this record holds those columns under their original
// names, except the census tracts and the start timestamp, which the wide & deep model never used
// beyond the month, hour and weekday already split out here.
//
// Missing values are real: trips that start or end outside Chicago have no community area and no
// coordinates, and some trips name no company. They are std::nullopt here, never 0, so that a
// missing community area cannot be mistaken for a real one and a missing latitude cannot drag a
// mean towards the equator.
//
// The label is TFX's: a trip is a "big tipper" when tips > 0.2 x fare (taxi_utils.py in the TFX
// example computes exactly that from the `tips` and `fare` columns). Keeping `tips` in dollars
// rather than a 0/1 column keeps the files shaped like the real data set.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cohort::taxi {

struct TaxiTrip {
  int trip_start_month = 1;  // 1 = January ... 12 = December
  int trip_start_hour = 0;   // 0 ... 23, local time
  int trip_start_day = 1;    // weekday as BigQuery's DAYOFWEEK: 1 = Sunday ... 7 = Saturday
  int64_t trip_seconds = 0;
  double trip_miles = 0;
  double fare = 0;           // dollars, without tips, tolls and extras
  std::string payment_type;  // "Credit Card", "Cash", "Mobile", "Prcard", ...
  std::optional<std::string> company;
  std::optional<int> pickup_community_area;  // 1 ... 77
  std::optional<int> dropoff_community_area;
  std::optional<double> pickup_latitude;
  std::optional<double> pickup_longitude;
  std::optional<double> dropoff_latitude;
  std::optional<double> dropoff_longitude;
  double tips = 0;  // dollars

  bool operator==(const TaxiTrip&) const = default;
};

// The binary label: tips above 20% of the fare (TFX's `tips > fare * 0.2`).
inline bool IsBigTipper(const TaxiTrip& trip) { return trip.tips > 0.2 * trip.fare; }

// Chicago's 77 community areas are numbered 1 (Rogers Park) to 77 (Edgewater).
inline constexpr int kCommunityAreaCount = 77;

}  // namespace cohort::taxi
