#include "kube/client/base64.h"

namespace cohort::kube {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int DigitValue(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::string EncodeBase64(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t group =
        (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(group >> shift) & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t group = uint8_t(bytes[i]) << 16;
    if (rest == 2) group |= uint8_t(bytes[i + 1]) << 8;
    out += kAlphabet[(group >> 18) & 63];
    out += kAlphabet[(group >> 12) & 63];
    out += rest == 2 ? kAlphabet[(group >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

StatusOr<std::string> DecodeBase64(std::string_view text, const std::string& what) {
  std::string digits;
  digits.reserve(text.size());
  size_t padding = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n' || c == '\r' || c == ' ' || c == '\t') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding > 0 || DigitValue(c) < 0) {
      return Status::InvalidArgument(what + " is not base64: unexpected character at offset " +
                                     std::to_string(i));
    }
    digits += c;
  }
  if (padding > 2 || (padding > 0 && (digits.size() + padding) % 4 != 0) ||
      digits.size() % 4 == 1) {
    return Status::InvalidArgument(what + " is not base64: its length is not a whole number of " +
                                   "4-character groups");
  }
  std::string out;
  out.reserve(digits.size() * 3 / 4);
  uint32_t group = 0;
  int bits = 0;
  for (char c : digits) {
    group = (group << 6) | uint32_t(DigitValue(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((group >> bits) & 0xff);
    }
  }
  return out;
}

}  // namespace cohort::kube
