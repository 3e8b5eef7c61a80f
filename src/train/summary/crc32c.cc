#include "train/summary/crc32c.h"

#include <array>

namespace cohort::train::crc32c {
namespace {

// The reflected Castagnoli polynomial.
constexpr uint32_t kPolynomial = 0x82f63b78u;

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kPolynomial : 0u);
    table[i] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

}  // namespace

// Byte at a time: event files carry a few hundred bytes per record, so a faster variant would not
// show up in any profile.
uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint32_t state = ~crc;
  for (size_t i = 0; i < n; ++i) state = kTable[(state ^ bytes[i]) & 0xffu] ^ (state >> 8);
  return ~state;
}

}  // namespace cohort::train::crc32c
