#include "taxi_tip_rule.h"

#include <algorithm>
#include <cstdint>

#include "portable_math.h"

namespace cohort::taxi {
namespace {

// FNV-1a over the bytes, then the splitmix64 finaliser to spread FNV's weak low bits.
uint64_t HashName(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : text) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 0x100000001b3ull;
  }
  hash ^= hash >> 30;
  hash *= 0xbf58476d1ce4e5b9ull;
  hash ^= hash >> 27;
  hash *= 0x94d049bb133111ebull;
  hash ^= hash >> 31;
  return hash;
}

// U in [-1, 1], from the top 53 bits so that the value is an exact double.
double SignedUnit(std::string_view text) {
  return static_cast<double>(HashName(text) >> 11) * 0x1.0p-52 - 1.0;
}

}  // namespace

DayPeriod DayPeriodOfHour(int hour) {
  if (hour >= 22 || hour <= 5) return DayPeriod::kNight;
  if (hour <= 9) return DayPeriod::kMorning;
  if (hour <= 15) return DayPeriod::kMidday;
  return DayPeriod::kEvening;
}

const char* DayPeriodName(DayPeriod period) {
  switch (period) {
    case DayPeriod::kNight:
      return "night";
    case DayPeriod::kMorning:
      return "morning";
    case DayPeriod::kMidday:
      return "midday";
    case DayPeriod::kEvening:
      return "evening";
  }
  return "?";
}

bool IsCardLikePayment(std::string_view payment_type) {
  return payment_type == "Credit Card" || payment_type == "Mobile" || payment_type == "Prcard";
}

double PaymentTypeEffect(std::string_view payment_type) {
  if (payment_type == "Credit Card") return 1.1;
  if (payment_type == "Mobile") return 0.7;
  if (payment_type == "Prcard") return -0.6;
  if (payment_type == "Cash") return -4.5;
  if (payment_type == "Dispute") return -4.5;
  if (payment_type == "No Charge") return -5.5;
  return -1.8;  // "Unknown" and anything else
}

double CompanyEffect(std::string_view company) {
  return 0.35 * SignedUnit(std::string("company:") + std::string(company));
}

double CompanyCardEffect(std::string_view company) {
  return 1.6 * SignedUnit(std::string("company card:") + std::string(company));
}

double PickupAreaTimeEffect(int community_area, DayPeriod period) {
  return 1.6 *
         SignedUnit("area " + std::to_string(community_area) + " at " + DayPeriodName(period));
}

TipLogitTerms ComputeTipLogitTerms(const TaxiTrip& trip) {
  TipLogitTerms terms;
  terms.base = -0.8;
  terms.payment = PaymentTypeEffect(trip.payment_type);
  const bool card_like = IsCardLikePayment(trip.payment_type);
  if (trip.company) {
    terms.company = CompanyEffect(*trip.company);
    terms.company_payment = card_like ? CompanyCardEffect(*trip.company) : 0;
  } else {
    terms.company = -0.2;
    terms.company_payment = card_like ? -0.6 : 0;
  }
  if (trip.pickup_community_area) {
    terms.pickup_area_time =
        PickupAreaTimeEffect(*trip.pickup_community_area, DayPeriodOfHour(trip.trip_start_hour));
  } else {
    terms.missing_area = -0.5;
  }

  const double minutes = std::max(static_cast<double>(trip.trip_seconds) / 60, 1.0);
  const double miles = trip.trip_miles;
  const double miles_per_hour = miles / minutes * 60;
  const double fare_per_mile = trip.fare / std::max(miles, 0.1);
  const double log_duration = PortableLog(minutes / 18) / 0.6;
  terms.trip_shape = 1.2 * PortableExp(-log_duration * log_duration) - 0.6 -
                     1.0 * PortableExp(-miles / 0.7) - 1.2 * PortableExp(-miles_per_hour / 6) -
                     0.5 * std::clamp(PortableLog(fare_per_mile / 4), 0.0, 1.5);

  const int day = trip.trip_start_day, hour = trip.trip_start_hour;
  const bool friday_or_saturday_night = (day == 6 || day == 7) && (hour >= 21 || hour <= 2);
  terms.calendar = (friday_or_saturday_night ? 0.4 : 0.0) +
                   (trip.trip_start_month == 12 ? 0.3 : 0.0) +
                   (trip.trip_start_month <= 2 ? -0.2 : 0.0);
  return terms;
}

double TrueTipProbability(const TaxiTrip& trip) {
  return PortableSigmoid(ComputeTipLogitTerms(trip).Sum());
}

std::string DescribeTipRule() {
  return "P(tips > 0.2 x fare) = sigmoid(logit); logit = -0.8 + payment type effect (Credit "
         "Card +1.1, Mobile +0.7, Prcard -0.6, Unknown -1.8, Cash -4.5, Dispute -4.5, No Charge "
         "-5.5) + 0.35 U(company) + [card-like payment] 1.6 U'(company) + 1.6 U(pickup area, "
         "period of day: night 22-5, morning 6-9, midday 10-15, evening 16-21) + 1.2 "
         "exp(-(ln(minutes / 18) / 0.6)^2) - 0.6 - 1.0 exp(-miles / 0.7) - 1.2 exp(-mph / 6) - 0.5 "
         "clamp(ln(fare per mile / 4), 0, 1.5) + 0.4 [Friday/Saturday 21-2 h] + 0.3 [December] "
         "- 0.2 [January, February]; missing company: -0.2 and -0.6 on card-like payments; "
         "missing pickup area: -0.5 and no area x period term. U are fixed hashes in [-1, 1] "
         "(see examples/taxi/taxi_tip_rule.h); the label is a Bernoulli draw from P.";
}

}  // namespace cohort::taxi
