// CRC-32C (Castagnoli), the checksum of TFRecord framing, and TensorFlow's masking of it.
//
// A record stores masked CRCs rather than raw ones because computing the CRC of a string that
// itself contains embedded CRCs is problematic; the mask rotates and offsets the value so the
// stored bytes are not a CRC of anything nearby. Known vector: Value("123456789") == 0xE3069283.
//
// Extend uses the CPU's CRC32 instruction (SSE 4.2) where the processor has it, found at run time,
// and a portable table-driven version (slice-by-8, 8 bytes per step) elsewhere: a reader of a
// million-point event file checks two CRCs per record, and byte-at-a-time tables made that the
// largest cost of the read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cohort::train::crc32c {

// Returns the CRC-32C of data[0, n) continued from `crc`, the CRC of the bytes before them
// (0 for the first chunk), so Extend(Extend(0, a), b) == Value(a + b).
uint32_t Extend(uint32_t crc, const void* data, size_t n);

inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

// The two implementations Extend chooses between, for tests that hold them to the same results:
// ExtendPortable runs anywhere; ExtendHardware only where HasHardwareCrc() (it calls the portable
// one elsewhere).
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n);
uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n);
bool HasHardwareCrc();

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
