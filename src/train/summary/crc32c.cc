#include "train/summary/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define COHORT_CRC32C_X86 1
#endif

namespace cohort::train::crc32c {
namespace {

// The reflected Castagnoli polynomial.
constexpr uint32_t kPolynomial = 0x82f63b78u;

// kTables[0] is the byte-at-a-time table; kTables[k][b] is the CRC of byte b followed by k zero
// bytes, so that eight table look-ups, independent of each other, advance the CRC by 8 bytes.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables tables{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kPolynomial : 0u);
    tables[0][i] = crc;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (size_t k = 1; k < tables.size(); ++k) {
      const uint32_t previous = tables[k - 1][i];
      tables[k][i] = tables[0][previous & 0xffu] ^ (previous >> 8);
    }
  }
  return tables;
}

constexpr Tables kTables = MakeTables();

uint64_t LoadLittleEndian64(const unsigned char* bytes) {
  uint64_t word = 0;
  for (int i = 7; i >= 0; --i) word = (word << 8) | bytes[i];
  return word;
}

#ifdef COHORT_CRC32C_X86
__attribute__((target("sse4.2"))) uint32_t ExtendWithInstruction(uint32_t crc,
                                                                 const unsigned char* bytes,
                                                                 size_t n) {
  uint64_t state = ~crc;
#if defined(__x86_64__)
  for (; n >= 8; n -= 8, bytes += 8) {
    uint64_t word;
    std::memcpy(&word, bytes, sizeof(word));  // x86 is little-endian, as the CRC wants
    state = _mm_crc32_u64(state, word);
  }
#endif
  auto narrow = static_cast<uint32_t>(state);
  for (; n > 0; --n, ++bytes) narrow = _mm_crc32_u8(narrow, *bytes);
  return ~narrow;
}

bool CpuHasCrcInstruction() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}
#endif

}  // namespace

uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint32_t state = ~crc;
  for (; n >= 8; n -= 8, bytes += 8) {
    const uint64_t word = LoadLittleEndian64(bytes) ^ state;
    state = kTables[7][word & 0xffu] ^ kTables[6][(word >> 8) & 0xffu] ^
            kTables[5][(word >> 16) & 0xffu] ^ kTables[4][(word >> 24) & 0xffu] ^
            kTables[3][(word >> 32) & 0xffu] ^ kTables[2][(word >> 40) & 0xffu] ^
            kTables[1][(word >> 48) & 0xffu] ^ kTables[0][word >> 56];
  }
  for (; n > 0; --n, ++bytes) state = kTables[0][(state ^ *bytes) & 0xffu] ^ (state >> 8);
  return ~state;
}

bool HasHardwareCrc() {
#ifdef COHORT_CRC32C_X86
  static const bool has = CpuHasCrcInstruction();
  return has;
#else
  return false;
#endif
}

uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n) {
#ifdef COHORT_CRC32C_X86
  if (HasHardwareCrc()) {
    return ExtendWithInstruction(crc, static_cast<const unsigned char*>(data), n);
  }
#endif
  return ExtendPortable(crc, data, n);
}

uint32_t Extend(uint32_t crc, const void* data, size_t n) { return ExtendHardware(crc, data, n); }

}  // namespace cohort::train::crc32c
