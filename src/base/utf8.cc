#include "base/utf8.h"

namespace cohort {

size_t Utf8SequenceLength(std::string_view text, size_t position) {
  if (position >= text.size()) return 0;
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data()) + position;
  const size_t available = text.size() - position;
  const unsigned char lead = bytes[0];
  if (lead < 0x80) return 1;
  size_t length;
  unsigned char second_low = 0x80, second_high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_low = 0xA0;   // overlong
    if (lead == 0xED) second_high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_low = 0x90;   // overlong
    if (lead == 0xF4) second_high = 0x8F;  // past U+10FFFF
  } else {
    return 0;  // a continuation byte, an overlong 2-byte lead (C0, C1) or F5..FF
  }
  if (available < length) return 0;
  if (bytes[1] < second_low || bytes[1] > second_high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (bytes[i] < 0x80 || bytes[i] > 0xBF) return 0;
  }
  return length;
}

bool IsValidUtf8(std::string_view text) {
  size_t position = 0;
  while (position < text.size()) {
    if (static_cast<unsigned char>(text[position]) < 0x80) {
      ++position;
      continue;
    }
    const size_t length = Utf8SequenceLength(text, position);
    if (length == 0) return false;
    position += length;
  }
  return true;
}

}  // namespace cohort
