// CRC-32C (Castagnoli), the checksum of TFRecord framing, and TensorFlow's masking of it.
//
// A record stores masked CRCs rather than raw ones because computing the CRC of a string that
// itself contains embedded CRCs is problematic; the mask rotates and offsets the value so the
// stored bytes are not a CRC of anything nearby. Known vector: Value("123456789") == 0xE3069283.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cohort::train::crc32c {

// Returns the CRC-32C of data[0, n) continued from `crc`, the CRC of the bytes before them
// (0 for the first chunk), so Extend(Extend(0, a), b) == Value(a + b).
uint32_t Extend(uint32_t crc, const void* data, size_t n);

inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view data) { return Value(data.data(), data.size()); }

// The masked form stored in TFRecord files: rotate right by 15 bits, add 0xa282ead8.
inline uint32_t Mask(uint32_t crc) {
  constexpr uint32_t kMaskDelta = 0xa282ead8u;
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}

// The inverse of Mask.
inline uint32_t Unmask(uint32_t masked) {
  constexpr uint32_t kMaskDelta = 0xa282ead8u;
  uint32_t rotated = masked - kMaskDelta;
  return (rotated >> 17) | (rotated << 15);
}

}  // namespace cohort::train::crc32c
