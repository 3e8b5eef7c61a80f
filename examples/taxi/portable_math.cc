#include "portable_math.h"

#include <cmath>
#include <limits>

namespace cohort::taxi {
namespace {

// ln 2 split so that k * kLn2High is exact for |k| < 2^11 (Cody and Waite's reduction).
constexpr double kLn2High = 6.93147180369123816490e-01;
constexpr double kLn2Low = 1.90821492927058770002e-10;
constexpr double kInverseLn2 = 1.44269504088896338700e+00;

}  // namespace

double PortableExp(double x) {
  if (std::isnan(x)) return x;
  if (x > 709.78) return std::numeric_limits<double>::infinity();
  if (x < -745.2) return 0;
  // x = k ln2 + r with |r| <= ln2 / 2, so e^x = 2^k e^r and the Taylor series of e^r converges to
  // below 1e-17 relative within 14 terms.
  const double k = std::floor(x * kInverseLn2 + 0.5);
  const double r = (x - k * kLn2High) - k * kLn2Low;
  double term = 1, sum = 1;
  for (int n = 1; n <= 14; ++n) {
    term = term * r / n;
    sum += term;
  }
  // Two steps so that 2^k for k near -1074 does not underflow before the multiplication.
  const int exponent = static_cast<int>(k);
  return std::ldexp(std::ldexp(sum, exponent / 2), exponent - exponent / 2);
}

double PortableLog(double x) {
  if (std::isnan(x) || x < 0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0) return -std::numeric_limits<double>::infinity();
  if (std::isinf(x)) return x;
  int exponent = 0;
  double mantissa = std::frexp(x, &exponent);  // x = mantissa 2^exponent, mantissa in [0.5, 1)
  if (mantissa < 0.70710678118654752440) {
    mantissa *= 2;
    --exponent;
  }
  // log m = 2 atanh(f) = 2 (f + f^3/3 + f^5/5 + ...) with f = (m - 1) / (m + 1), |f| <= 0.172.
  const double f = (mantissa - 1) / (mantissa + 1);
  const double f2 = f * f;
  double power = f, series = 0;
  for (int n = 1; n <= 23; n += 2) {
    series += power / n;
    power *= f2;
  }
  return exponent * kLn2High + (2 * series + exponent * kLn2Low);
}

double PortableTanh(double x) {
  if (x > 20) return 1;
  if (x < -20) return -1;
  const double e = PortableExp(2 * x);
  return (e - 1) / (e + 1);
}

double PortableSigmoid(double x) {
  if (x >= 0) return 1 / (1 + PortableExp(-x));
  const double e = PortableExp(x);  // stays accurate for large negative x
  return e / (1 + e);
}

}  // namespace cohort::taxi
