#include "kube/objects/quantity.h"

#include <cctype>
#include <utility>
#include <vector>

namespace cohort::kube {
namespace {

// 10^27 units in nano-units: the bound on any quantity or sum.
constexpr __int128 Pow10(int exponent) {
  __int128 value = 1;
  for (int i = 0; i < exponent; ++i) value *= 10;
  return value;
}
constexpr __int128 kLimitNano = Pow10(36);
constexpr __int128 kNanoPerUnit = Pow10(9);

struct Suffix {
  const char* text;
  int power_of_ten;   // decimal suffixes
  int power_of_1024;  // binary suffixes
};

// Longest first, so that "Ki" is found before "k"-like prefixes.
const std::vector<Suffix>& Suffixes() {
  static const std::vector<Suffix> suffixes = {
      {"Ki", 0, 1}, {"Mi", 0, 2}, {"Gi", 0, 3}, {"Ti", 0, 4}, {"Pi", 0, 5}, {"Ei", 0, 6},
      {"n", -9, 0}, {"u", -6, 0}, {"m", -3, 0}, {"k", 3, 0},  {"M", 6, 0},  {"G", 9, 0},
      {"T", 12, 0}, {"P", 15, 0}, {"E", 18, 0}, {"", 0, 0}};
  return suffixes;
}

std::string Int128ToString(__int128 value) {
  if (value == 0) return "0";
  std::string digits;
  while (value > 0) {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(value % 10)));
    value /= 10;
  }
  return digits;
}

Status Invalid(const std::string& text, const std::string& why) {
  return Status::InvalidArgument("quantity \"" + text + "\": " + why);
}

}  // namespace

StatusOr<Quantity> Quantity::Parse(const std::string& text) {
  if (text.empty()) return Invalid(text, "empty");
  if (text.size() > kMaxTextLength) {
    return Invalid(text.substr(0, 16) + "...",
                   "longer than " + std::to_string(kMaxTextLength) + " characters");
  }
  size_t position = 0;
  if (text[position] == '+') ++position;
  if (position < text.size() && text[position] == '-') return Invalid(text, "negative");
  // The number: digits with at most one decimal point.
  __int128 mantissa = 0;
  int fraction_digits = 0;
  bool seen_point = false, seen_digit = false;
  for (; position < text.size(); ++position) {
    char c = text[position];
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    seen_digit = true;
    if (mantissa >= kLimitNano) return Invalid(text, "too large");
    mantissa = mantissa * 10 + (c - '0');
    if (seen_point) ++fraction_digits;
  }
  if (!seen_digit) return Invalid(text, "no number");
  const std::string rest = text.substr(position);
  int power_of_ten = 0, power_of_1024 = 0;
  bool binary = false;
  if (!rest.empty() && (rest[0] == 'e' || rest[0] == 'E') && rest.size() > 1 &&
      (std::isdigit(static_cast<unsigned char>(rest[1])) || rest[1] == '-' || rest[1] == '+')) {
    size_t digits_at = (rest[1] == '-' || rest[1] == '+') ? 2 : 1;
    if (digits_at >= rest.size() || rest.size() - digits_at > 3) {
      return Invalid(text, "bad exponent " + rest);
    }
    for (size_t i = digits_at; i < rest.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(rest[i]))) {
        return Invalid(text, "bad exponent " + rest);
      }
    }
    power_of_ten = std::stoi(rest.substr(digits_at));
    if (rest[1] == '-') power_of_ten = -power_of_ten;
  } else {
    const Suffix* found = nullptr;
    for (const Suffix& suffix : Suffixes()) {
      if (rest == suffix.text) found = &suffix;
    }
    if (found == nullptr) return Invalid(text, "unknown suffix " + rest);
    power_of_ten = found->power_of_ten;
    power_of_1024 = found->power_of_1024;
    binary = power_of_1024 > 0;
  }
  // value in nano-units = mantissa * 10^(9 + power_of_ten - fraction_digits) * 1024^k,
  // rounded up below a nano-unit as Kubernetes rounds.
  int shift = 9 + power_of_ten - fraction_digits;
  if (shift > 36) return Invalid(text, "too large");
  __int128 value = mantissa;
  if (shift >= 0) {
    for (int i = 0; i < shift; ++i) {
      value *= 10;
      if (value >= kLimitNano) return Invalid(text, "too large");
    }
  } else {
    __int128 divisor = shift < -36 ? kLimitNano : Pow10(-shift);
    value = (value + divisor - 1) / divisor;
  }
  for (int i = 0; i < power_of_1024; ++i) {
    value *= 1024;
    if (value >= kLimitNano) return Invalid(text, "too large");
  }
  Quantity quantity;
  quantity.nano_ = value;
  quantity.binary_ = binary;
  quantity.format_set_ = value != 0;
  return quantity;
}

Status Quantity::Add(const Quantity& other) {
  if (nano_ + other.nano_ >= kLimitNano) {
    return Status::InvalidArgument("quantity sum " + ToString() + " + " + other.ToString() +
                                   " is too large");
  }
  if (!format_set_ && other.format_set_) {
    binary_ = other.binary_;
    format_set_ = true;
  }
  nano_ += other.nano_;
  return Status::OK();
}

std::string Quantity::ToString() const {
  if (nano_ % kNanoPerUnit == 0) {
    __int128 units = nano_ / kNanoPerUnit;
    if (units == 0) return "0";
    static const char* const kBinary[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    static const char* const kDecimal[] = {"", "k", "M", "G", "T", "P", "E"};
    const int base = binary_ ? 1024 : 1000;
    int power = 0;
    while (power < 6 && units % base == 0) {
      units /= base;
      ++power;
    }
    return Int128ToString(units) + (binary_ ? kBinary[power] : kDecimal[power]);
  }
  if (nano_ % Pow10(6) == 0) return Int128ToString(nano_ / Pow10(6)) + "m";
  if (nano_ % Pow10(3) == 0) return Int128ToString(nano_ / Pow10(3)) + "u";
  return Int128ToString(nano_) + "n";
}

}  // namespace cohort::kube
