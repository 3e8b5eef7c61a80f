// The ground-truth tipping rule of the synthetic taxi data: P(big tipper | trip features).
//
// The generator draws every trip's label from this probability, so the best any model can do is
// to rank trips by it: the AUC of TrueTipProbability on the eval split is the Bayes ceiling, and
// a trained model's AUC is judged against that number rather than against a guess. A model sees
// exactly what the rule sees, because the rule reads only columns written to the CSV files, and
// reads them after rounding to the precision written there.
//
// P(big tipper) = sigmoid(logit), and the logit is a sum of terms chosen so that a wide & deep
// model needs both of its parts (each is kept separate in TipLogitTerms so that tests can measure
// what each part is worth):
//
//   payment          main effect of the payment type, by far the largest, as in the real data
//                    where cash trips almost never record a tip: Credit Card +1.1, Mobile +0.7,
//                    Prcard -0.6, Unknown -1.8, Cash -4.5, Dispute -4.5, No Charge -5.5, any
//                    other -1.8. The linear part learns it from one categorical column.
//   company          a small main effect per company, 0.35 x U(company), U in [-1, 1] a fixed
//                    hash of the name (below); -0.2 when the company is missing.
//   company_payment  a cross: for card-like payments (Credit Card, Mobile, Prcard) each
//                    company's card terminal adds 1.6 x U'(company) (some prompt for a tip, some
//                    do not); -0.6 when the company is missing. For other payments 0.
//   pickup_area_time a cross: each pickup community area has its own effect per period of the
//                    day, 1.6 x U(area, period), with the periods night (22-5 h), morning (6-9),
//                    midday (10-15) and evening (16-21). 0 when the pickup area is missing. The
//                    linear part's pickup x hour cross captures it; additive effects cannot.
//   trip_shape       smooth nonlinear effects of the numeric columns, for the DNN:
//                      +1.2 exp(-(ln(minutes / 18) / 0.6)^2) - 0.6   rides around 18 minutes
//                                                    tip most, short and very long ones less
//                      -1.0 exp(-miles / 0.7)               short hops tip less
//                      -1.2 exp(-mph / 6)                   crawling through traffic tips less
//                      -0.5 clamp(ln(fare per mile / 4), 0, 1.5)  expensive miles tip less
//                    with minutes = max(trip_seconds / 60, 1), mph = miles / minutes x 60 and
//                    fare per mile = fare / max(miles, 0.1).
//   calendar         +0.4 on Friday and Saturday nights (21-2 h), +0.3 in December, -0.2 in
//                    January and February.
//   missing_area     -0.5 when the pickup community area is missing (trips from outside the
//                    city, mostly flat fares).
//   base             -0.8.
//
// U(...) is a fixed hash of its arguments mapped to [-1, 1] (FNV-1a then the splitmix64
// finaliser): the same for every seed, so every data set shares one rule, and ground_truth.json
// lists the resulting per-company and per-area values. All arithmetic uses portable_math.h, so
// the probability is bit-identical on every machine.
#pragma once

#include <string>
#include <string_view>

#include "taxi_trip.h"

namespace cohort::taxi {

struct TipLogitTerms {
  double base = 0;
  double payment = 0;
  double company = 0;
  double company_payment = 0;
  double pickup_area_time = 0;
  double trip_shape = 0;
  double calendar = 0;
  double missing_area = 0;

  double Sum() const {
    return base + payment + company + company_payment + pickup_area_time + trip_shape + calendar +
           missing_area;
  }
};

// The periods of the day that pickup_area_time distinguishes.
enum class DayPeriod { kNight = 0, kMorning = 1, kMidday = 2, kEvening = 3 };
inline constexpr int kDayPeriodCount = 4;
DayPeriod DayPeriodOfHour(int hour);
const char* DayPeriodName(DayPeriod period);

TipLogitTerms ComputeTipLogitTerms(const TaxiTrip& trip);

// sigmoid(ComputeTipLogitTerms(trip).Sum()).
double TrueTipProbability(const TaxiTrip& trip);

// The rule's tables, for ground_truth.json and for tests.
double PaymentTypeEffect(std::string_view payment_type);
double CompanyEffect(std::string_view company);
double CompanyCardEffect(std::string_view company);
double PickupAreaTimeEffect(int community_area, DayPeriod period);
bool IsCardLikePayment(std::string_view payment_type);

// The comment above in a few lines of plain text.
std::string DescribeTipRule();

}  // namespace cohort::taxi
