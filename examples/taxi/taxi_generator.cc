#include "taxi_generator.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "portable_math.h"
#include "taxi_tip_rule.h"

namespace cohort::taxi {
namespace {

// splitmix64: expands a seed into xoshiro's state (the seeding its authors recommend).
uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// xoshiro256** (Blackman and Vigna), with the few distributions the generator needs, each
// defined here so that its output depends on nothing but the state.
class RandomStream {
 public:
  explicit RandomStream(uint64_t seed) {
    for (uint64_t& word : state_) word = SplitMix64(seed);
  }

  uint64_t Next() {
    const uint64_t result = RotateLeft(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = RotateLeft(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1), 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  double Uniform(double low, double high) { return low + (high - low) * Uniform(); }
  bool Bernoulli(double probability) { return Uniform() < probability; }

  // Standard normal by Marsaglia's polar method (no trigonometry needed).
  double Normal() {
    double u, v, s;
    do {
      u = 2 * Uniform() - 1;
      v = 2 * Uniform() - 1;
      s = u * u + v * v;
    } while (s >= 1 || s == 0);
    return u * std::sqrt(-2 * PortableLog(s) / s);
  }

  // e^(ln(median) + sigma N(0, 1)).
  double LogNormal(double median, double sigma) { return median * PortableExp(sigma * Normal()); }

  // An index drawn with probability proportional to its weight.
  size_t Choose(std::span<const double> weights) {
    double total = 0;
    for (double weight : weights) total += weight;
    double target = Uniform() * total;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (target < weights[i]) return i;
      target -= weights[i];
    }
    return weights.size() - 1;
  }

 private:
  static uint64_t RotateLeft(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state_[4];
};

struct CommunityArea {
  const char* name;
  double latitude, longitude;
  double pickup_weight;  // share of pickups in percent, roughly as in the real data
};

// Index = community area number - 1. Centroids are approximate (to about a quarter mile).
// Downtown (Near North Side, Loop), the Near West Side and O'Hare take most pickups.
constexpr CommunityArea kCommunityAreas[kCommunityAreaCount] = {
    {"Rogers Park", 42.0095, -87.6768, 0.4},
    {"West Ridge", 41.9999, -87.6925, 0.3},
    {"Uptown", 41.9665, -87.6533, 1.5},
    {"Lincoln Square", 41.9697, -87.6885, 0.5},
    {"North Center", 41.9483, -87.6880, 0.6},
    {"Lake View", 41.9436, -87.6546, 4.5},
    {"Lincoln Park", 41.9214, -87.6513, 4.0},
    {"Near North Side", 41.9003, -87.6340, 30.0},
    {"Edison Park", 42.0072, -87.8132, 0.05},
    {"Norwood Park", 41.9859, -87.8064, 0.08},
    {"Jefferson Park", 41.9707, -87.7637, 0.1},
    {"Forest Glen", 41.9928, -87.7511, 0.05},
    {"North Park", 41.9836, -87.7288, 0.08},
    {"Albany Park", 41.9683, -87.7230, 0.15},
    {"Portage Park", 41.9586, -87.7653, 0.12},
    {"Irving Park", 41.9530, -87.7360, 0.2},
    {"Dunning", 41.9475, -87.8067, 0.06},
    {"Montclare", 41.9261, -87.8004, 0.04},
    {"Belmont Cragin", 41.9317, -87.7688, 0.1},
    {"Hermosa", 41.9217, -87.7339, 0.06},
    {"Avondale", 41.9390, -87.7112, 0.2},
    {"Logan Square", 41.9231, -87.6994, 1.2},
    {"Humboldt Park", 41.9029, -87.7211, 0.3},
    {"West Town", 41.8961, -87.6762, 2.5},
    {"Austin", 41.8947, -87.7655, 0.3},
    {"West Garfield Park", 41.8806, -87.7296, 0.1},
    {"East Garfield Park", 41.8806, -87.7030, 0.15},
    {"Near West Side", 41.8796, -87.6660, 8.0},
    {"North Lawndale", 41.8600, -87.7181, 0.12},
    {"South Lawndale", 41.8442, -87.7137, 0.1},
    {"Lower West Side", 41.8527, -87.6662, 0.3},
    {"Loop", 41.8815, -87.6290, 20.0},
    {"Near South Side", 41.8567, -87.6206, 3.5},
    {"Armour Square", 41.8390, -87.6331, 0.2},
    {"Douglas", 41.8350, -87.6180, 0.3},
    {"Oakland", 41.8235, -87.6036, 0.08},
    {"Fuller Park", 41.8091, -87.6324, 0.03},
    {"Grand Boulevard", 41.8126, -87.6175, 0.2},
    {"Kenwood", 41.8090, -87.5959, 0.2},
    {"Washington Park", 41.7930, -87.6181, 0.08},
    {"Hyde Park", 41.7943, -87.5907, 0.8},
    {"Woodlawn", 41.7790, -87.5993, 0.15},
    {"South Shore", 41.7628, -87.5756, 0.2},
    {"Chatham", 41.7409, -87.6122, 0.15},
    {"Avalon Park", 41.7451, -87.5862, 0.05},
    {"South Chicago", 41.7396, -87.5542, 0.08},
    {"Burnside", 41.7280, -87.5970, 0.02},
    {"Calumet Heights", 41.7290, -87.5796, 0.04},
    {"Roseland", 41.7063, -87.6236, 0.1},
    {"Pullman", 41.7002, -87.6047, 0.03},
    {"South Deering", 41.6919, -87.5642, 0.03},
    {"East Side", 41.7083, -87.5331, 0.03},
    {"West Pullman", 41.6779, -87.6357, 0.05},
    {"Riverdale", 41.6592, -87.6051, 0.02},
    {"Hegewisch", 41.6604, -87.5470, 0.02},
    {"Garfield Ridge", 41.7961, -87.7699, 2.0},  // Midway airport
    {"Archer Heights", 41.8114, -87.7262, 0.04},
    {"Brighton Park", 41.8189, -87.6986, 0.06},
    {"McKinley Park", 41.8317, -87.6738, 0.05},
    {"Bridgeport", 41.8380, -87.6479, 0.2},
    {"New City", 41.8071, -87.6566, 0.08},
    {"West Elsdon", 41.7936, -87.7244, 0.03},
    {"Gage Park", 41.7951, -87.6958, 0.04},
    {"Clearing", 41.7790, -87.7694, 0.05},
    {"West Lawn", 41.7731, -87.7227, 0.04},
    {"Chicago Lawn", 41.7752, -87.6964, 0.08},
    {"West Englewood", 41.7781, -87.6664, 0.06},
    {"Englewood", 41.7796, -87.6448, 0.08},
    {"Greater Grand Crossing", 41.7630, -87.6147, 0.1},
    {"Ashburn", 41.7475, -87.7105, 0.05},
    {"Auburn Gresham", 41.7434, -87.6563, 0.08},
    {"Beverly", 41.7147, -87.6762, 0.05},
    {"Washington Heights", 41.7168, -87.6527, 0.05},
    {"Mount Greenwood", 41.6946, -87.7133, 0.03},
    {"Morgan Park", 41.6899, -87.6669, 0.04},
    {"O'Hare", 41.9766, -87.9051, 5.0},
    {"Edgewater", 41.9867, -87.6634, 1.0},
};

constexpr int kOHare = 76;
constexpr int kMidway = 56;  // Garfield Ridge

struct Share {
  const char* name;
  double weight;
};

constexpr Share kPaymentTypes[] = {
    {"Credit Card", 52.0}, {"Cash", 40.0},     {"Mobile", 3.0},  {"Prcard", 2.5},
    {"Unknown", 1.5},      {"No Charge", 0.7}, {"Dispute", 0.3},
};

constexpr Share kCompanies[] = {
    {"Taxi Affiliation Services", 18},
    {"Flash Cab", 12},
    {"Dispatch Taxi Affiliation", 8},
    {"Yellow Cab", 8},
    {"Chicago Carriage Cab Corp", 6},
    {"City Service", 6},
    {"Sun Taxi", 5},
    {"Medallion Leasin", 4},
    {"Blue Ribbon Taxi Association Inc.", 4},
    {"Choice Taxi Association", 4},
    {"Taxicab Insurance Agency, LLC", 4},
    {"Star North Management LLC", 3},
    {"Globe Taxi", 3},
    {"Top Cab Affiliation", 3},
    {"Northwest Management LLC", 3},
    {"KOAM Taxi Association", 2},
    {"Chicago Medallion Management", 2},
    {"Checker Taxi Affiliation", 2},
    {"5 Star Taxi", 1.5},
    {"Sam's \"Lucky\" Cab, Inc.", 1},
};

// Trips per hour of the day (0 ... 23): quiet before dawn, busiest in the early evening.
constexpr double kHourWeights[24] = {3.5, 2.6, 1.9, 1.3, 1.0, 1.0, 1.6, 3.0, 4.5, 5.0, 4.8, 4.9,
                                     5.3, 5.4, 5.5, 5.7, 6.0, 6.4, 6.6, 6.0, 5.2, 4.6, 4.3, 4.0};
// Sunday ... Saturday: Fridays busiest.
constexpr double kDayWeights[7] = {12, 13, 14, 14.5, 15, 16, 15.5};
// January ... December: winter a little quieter.
constexpr double kMonthWeights[12] = {7.4, 7.6, 8.6, 8.8, 9.0, 9.0, 8.4, 8.5, 8.4, 8.6, 8.0, 7.7};

constexpr double kOutsideCityPickup = 0.03;   // pickup outside Chicago: no area, no coordinates
constexpr double kOutsideCityDropoff = 0.05;  // likewise for the dropoff
constexpr double kSameAreaTrip = 0.15;        // short trips inside one area
constexpr double kMissingCompany = 0.08;
constexpr double kNegotiatedFare = 0.05;  // flat or negotiated fares, off the meter

// Chicago's meter: $3.25 flag fall, $2.25 a mile, 20 cents per 36 seconds.
double MeteredFare(double miles, int64_t seconds) {
  return 3.25 + 2.25 * miles + 0.20 * static_cast<double>(seconds / 36);
}

// Rounds to a multiple of 1 / scale exactly as parsing the printed decimal would: the integer
// divided by the scale is the correctly rounded double of that decimal.
double RoundTo(double value, double scale) { return std::nearbyint(value * scale) / scale; }

std::span<const double> Weights(std::span<const Share> shares, std::vector<double>& storage) {
  storage.clear();
  for (const Share& share : shares) storage.push_back(share.weight);
  return storage;
}

class TripSampler {
 public:
  explicit TripSampler(uint64_t stream_seed) : random_(stream_seed) {
    for (const CommunityArea& area : kCommunityAreas) area_weights_.push_back(area.pickup_weight);
    // Dropoffs spread out a little more than pickups: 96% popularity, 4% uniform.
    double total = 0;
    for (double weight : area_weights_) total += weight;
    for (double weight : area_weights_) {
      dropoff_weights_.push_back(0.96 * weight / total + 0.04 / kCommunityAreaCount);
    }
    Weights(kPaymentTypes, payment_weights_);
    Weights(kCompanies, company_weights_);
  }

  TaxiTrip Sample() {
    TaxiTrip trip;
    trip.trip_start_month = 1 + static_cast<int>(random_.Choose(kMonthWeights));
    trip.trip_start_day = 1 + static_cast<int>(random_.Choose(kDayWeights));
    trip.trip_start_hour = static_cast<int>(random_.Choose(kHourWeights));

    if (!random_.Bernoulli(kOutsideCityPickup)) {
      trip.pickup_community_area = 1 + static_cast<int>(random_.Choose(area_weights_));
    }
    if (!random_.Bernoulli(kOutsideCityDropoff)) {
      trip.dropoff_community_area = trip.pickup_community_area && random_.Bernoulli(kSameAreaTrip)
                                        ? *trip.pickup_community_area
                                        : 1 + static_cast<int>(random_.Choose(dropoff_weights_));
    }
    PlaceInArea(trip.pickup_community_area, trip.pickup_latitude, trip.pickup_longitude);
    PlaceInArea(trip.dropoff_community_area, trip.dropoff_latitude, trip.dropoff_longitude);

    trip.trip_miles = RoundTo(std::max(0.1, SampleMiles(trip)), 100);
    trip.trip_seconds = SampleSeconds(trip);
    double fare = MeteredFare(trip.trip_miles, trip.trip_seconds);
    if (random_.Bernoulli(kNegotiatedFare)) fare *= random_.LogNormal(1.0, 0.3);
    trip.fare = RoundTo(std::max(3.25, fare), 100);

    trip.payment_type = kPaymentTypes[random_.Choose(payment_weights_)].name;
    if (!random_.Bernoulli(kMissingCompany)) {
      trip.company = kCompanies[random_.Choose(company_weights_)].name;
    }

    const bool big_tipper = random_.Bernoulli(TrueTipProbability(trip));
    trip.tips = SampleTips(trip, big_tipper);
    return trip;
  }

 private:
  // A point around the area's centroid (sd about half a mile), in micro-degrees as written.
  void PlaceInArea(const std::optional<int>& area, std::optional<double>& latitude,
                   std::optional<double>& longitude) {
    if (!area) return;
    const CommunityArea& centroid = kCommunityAreas[*area - 1];
    latitude = RoundTo(centroid.latitude + 0.007 * random_.Normal(), 1e6);
    longitude = RoundTo(centroid.longitude + 0.009 * random_.Normal(), 1e6);
  }

  double SampleMiles(const TaxiTrip& trip) {
    if (!trip.pickup_latitude || !trip.dropoff_latitude) {
      return random_.LogNormal(9.0, 0.5);  // to or from the suburbs
    }
    // Degrees to miles at Chicago's latitude; streets make a trip about 1.3x the straight line.
    const double north = (*trip.dropoff_latitude - *trip.pickup_latitude) * 69.05;
    const double east = (*trip.dropoff_longitude - *trip.pickup_longitude) * 51.45;
    return std::sqrt(north * north + east * east) * random_.LogNormal(1.3, 0.15) + 0.2;
  }

  int64_t SampleSeconds(const TaxiTrip& trip) {
    const int hour = trip.trip_start_hour;
    double miles_per_hour = 14;
    if (hour >= 22 || hour <= 5) miles_per_hour = 21;
    if ((hour >= 7 && hour <= 9) || (hour >= 16 && hour <= 18)) miles_per_hour = 10;
    const auto is_airport = [](const std::optional<int>& area) {
      return area && (*area == kOHare || *area == kMidway);
    };
    if (is_airport(trip.pickup_community_area) || is_airport(trip.dropoff_community_area) ||
        !trip.pickup_community_area || !trip.dropoff_community_area) {
      miles_per_hour *= 1.5;  // expressways
    }
    miles_per_hour *= random_.LogNormal(1.0, 0.3);
    return std::max<int64_t>(
        60, static_cast<int64_t>(std::nearbyint(trip.trip_miles / miles_per_hour * 3600 + 45)));
  }

  // Tips in whole cents, well clear of the 20% line on either side so that printing and parsing
  // can never move a trip across it.
  double SampleTips(const TaxiTrip& trip, bool big_tipper) {
    const double fare_cents = std::nearbyint(trip.fare * 100);
    double cents = 0;
    if (big_tipper) {
      cents = std::floor(fare_cents * random_.Uniform(0.21, 0.32)) + 1;
    } else if (IsCardLikePayment(trip.payment_type) && random_.Bernoulli(0.3)) {
      cents = std::floor(fare_cents * random_.Uniform(0.05, 0.18));  // a small tip
    }
    return cents / 100;
  }

  RandomStream random_;
  std::vector<double> area_weights_, dropoff_weights_, payment_weights_, company_weights_;
};

}  // namespace

std::vector<TaxiTrip> GenerateTaxiTrips(uint64_t seed, TaxiSplit split, int64_t count) {
  // Distinct, fixed stream per split: the eval trips never depend on how many train trips exist.
  uint64_t mix =
      seed ^ (split == TaxiSplit::kTrain ? 0x747261696e000000ull : 0x6576616c00000000ull);
  TripSampler sampler(SplitMix64(mix));
  std::vector<TaxiTrip> trips;
  trips.reserve(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (int64_t i = 0; i < count; ++i) trips.push_back(sampler.Sample());
  return trips;
}

const std::vector<std::string>& TaxiCompanyNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> result;
    for (const Share& company : kCompanies) result.push_back(company.name);
    return result;
  }();
  return names;
}

LatitudeLongitude CommunityAreaCentroid(int community_area) {
  const CommunityArea& area =
      kCommunityAreas[std::clamp(community_area, 1, kCommunityAreaCount) - 1];
  return {area.latitude, area.longitude};
}

}  // namespace cohort::taxi
