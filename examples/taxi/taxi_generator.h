// A seeded generator of Chicago-taxi-shaped trips with a known tipping rule.
//
// The real Chicago Taxi Trips data set is too large to ship and its best achievable AUC is
// unknown, so a trained model could only be compared with other models. These trips have the
// real data set's shape (the 77 community areas with their approximate centroids, fares from
// Chicago's meter rates, payment types and companies in realistic shares, busier evenings and
// Fridays, pickups and dropoffs outside the city with no area and no coordinates) and a label
// drawn from the documented rule in taxi_tip_rule.h, so the Bayes ceiling is known exactly.
//
// Determinism: the same seed gives the same trips, byte for byte, on every machine. Sampling
// uses its own xoshiro256** generator (std:: distributions are implementation-defined) and
// portable_math.h instead of the C library's exp and log. Each split has its own stream derived
// from the seed, so the eval split (and with it the ceiling) does not change with the train size.
//
// Values are rounded as the CSV files write them (cents, hundredths of a mile, whole seconds,
// micro-degrees) before the label is drawn, so a trip read back from a file is equal to the trip
// generated, and TrueTipProbability gives the same value for both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "taxi_trip.h"

namespace cohort::taxi {

enum class TaxiSplit { kTrain, kEval };

std::vector<TaxiTrip> GenerateTaxiTrips(uint64_t seed, TaxiSplit split, int64_t count);

// The generator's companies, most common first: real Chicago taxi companies, plus one invented
// name with a comma and double quotes so that the files exercise CSV quoting.
const std::vector<std::string>& TaxiCompanyNames();

// The approximate centroid of a community area (1 ... 77).
struct LatitudeLongitude {
  double latitude = 0;
  double longitude = 0;
};
LatitudeLongitude CommunityAreaCentroid(int community_area);

}  // namespace cohort::taxi
