// Lower-case hexadecimal text of bytes: how secrets and digests are written where people and
// files read them.
#pragma once

#include <string>
#include <string_view>

namespace cohort {

inline std::string HexEncode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (unsigned char byte : bytes) {
    text += kDigits[byte >> 4];
    text += kDigits[byte & 0xf];
  }
  return text;
}

}  // namespace cohort
