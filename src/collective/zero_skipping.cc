#include "collective/zero_skipping.h"

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

namespace cohort::collective {
namespace {

// Where an encode collects its bitmap until it knows where the kept words end, and where an
// expand keeps the bitmap while the words overwrite it. A message's bitmap is at most 1/32 of it.
std::vector<uint8_t>& BitmapBuffer(size_t count) {
  thread_local std::vector<uint8_t> bitmap;
  // Two spare bytes: the wide kernel reads and writes the bitmap 16 bits at a time.
  if (bitmap.size() < ZeroSkippingBitmapBytes(count) + 2) {
    bitmap.resize(ZeroSkippingBitmapBytes(count) + 2);
  }
  return bitmap;
}

// Appends the bitmap after the kept words; 0 when the result would not be shorter.
size_t Finish(const std::vector<uint8_t>& bitmap, size_t kept, size_t count, uint8_t* out) {
  const size_t encoded = 4 * kept + ZeroSkippingBitmapBytes(count);
  if (encoded >= 4 * count) return 0;
  std::memcpy(out + 4 * kept, bitmap.data(), ZeroSkippingBitmapBytes(count));
  return encoded;
}

size_t EncodeBaseline(const uint32_t* words, size_t count, uint8_t* out) {
  std::vector<uint8_t>& bitmap = BitmapBuffer(count);
  const size_t give_up_at = 4 * count - ZeroSkippingBitmapBytes(count);
  size_t kept = 0;
  for (size_t start = 0; start < count; start += 8) {
    const size_t end = std::min(start + 8, count);
    uint8_t bits = 0;
    for (size_t i = start; i < end; ++i) {
      // Written unconditionally and overwritten unless kept: no branch on the data.
      std::memcpy(out + 4 * kept, &words[i], 4);
      const bool keep = words[i] != 0;
      bits |= static_cast<uint8_t>(keep) << (i - start);
      kept += keep;
    }
    bitmap[start / 8] = bits;
    if (4 * kept >= give_up_at) return 0;
  }
  return Finish(bitmap, kept, count, out);
}

__attribute__((target("avx512f,popcnt"))) size_t EncodeAvx512(const uint32_t* words, size_t count,
                                                              uint8_t* out) {
  std::vector<uint8_t>& bitmap = BitmapBuffer(count);
  const size_t give_up_at = 4 * count - ZeroSkippingBitmapBytes(count);
  size_t kept = 0;
  for (size_t start = 0; start < count; start += 16) {
    const __mmask16 present = count - start >= 16
                                  ? __mmask16{0xFFFF}
                                  : static_cast<__mmask16>((1u << (count - start)) - 1);
    const __m512i values = _mm512_maskz_loadu_epi32(present, words + start);
    const __mmask16 keep = _mm512_mask_test_epi32_mask(present, values, values);
    // A full 64-byte store at the end of the kept words: the caller's slack takes the excess.
    _mm512_storeu_si512(out + 4 * kept, _mm512_maskz_compress_epi32(keep, values));
    const uint16_t bits = keep;
    std::memcpy(bitmap.data() + start / 8, &bits, 2);
    kept += std::popcount(bits);
    if (4 * kept >= give_up_at) return 0;
  }
  return Finish(bitmap, kept, count, out);
}

// Checks that `encoded_bytes` can encode `count` words, and copies the bitmap aside. Returns the
// number of kept words.
StatusOr<size_t> ReadBitmap(const uint8_t* buffer, size_t encoded_bytes, size_t count,
                            std::vector<uint8_t>& bitmap) {
  const size_t bitmap_bytes = ZeroSkippingBitmapBytes(count);
  auto invalid = [&](const std::string& why) {
    return Status::InvalidArgument("a zero-skipping message of " + std::to_string(encoded_bytes) +
                                   " bytes for " + std::to_string(count) + " words " + why);
  };
  if (encoded_bytes >= 4 * count) return invalid("is not shorter than the words themselves");
  if (encoded_bytes < bitmap_bytes || (encoded_bytes - bitmap_bytes) % 4 != 0) {
    return invalid("does not end in a bitmap of " + std::to_string(bitmap_bytes) + " bytes");
  }
  const size_t kept = (encoded_bytes - bitmap_bytes) / 4;
  std::memcpy(bitmap.data(), buffer + 4 * kept, bitmap_bytes);
  bitmap[bitmap_bytes] = bitmap[bitmap_bytes + 1] = 0;
  if (count % 8 != 0 && (bitmap[bitmap_bytes - 1] >> (count % 8)) != 0) {
    return invalid("marks words past its end");
  }
  // Counted 64 bits at a time: without the POPCNT instruction (baseline x86-64), a count per
  // byte would cost more than the whole expansion.
  size_t marked = 0;
  size_t i = 0;
  for (; i + 8 <= bitmap_bytes; i += 8) {
    uint64_t eight;
    std::memcpy(&eight, bitmap.data() + i, 8);
    marked += std::popcount(eight);
  }
  for (; i < bitmap_bytes; ++i) marked += std::popcount(bitmap[i]);
  if (marked != kept) {
    return invalid("marks " + std::to_string(marked) + " words but carries " +
                   std::to_string(kept));
  }
  return kept;
}

// From the last word to the first: word i's source is at most i, so every source is read before
// anything overwrites it.
Status ExpandBaseline(uint8_t* buffer, size_t encoded_bytes, size_t count) {
  std::vector<uint8_t>& bitmap = BitmapBuffer(count);
  auto kept = ReadBitmap(buffer, encoded_bytes, count, bitmap);
  if (!kept.ok()) return kept.status();
  size_t source = *kept;
  for (size_t byte = ZeroSkippingBitmapBytes(count); byte-- > 0;) {
    const size_t start = byte * 8;
    const size_t words = std::min<size_t>(8, count - start);
    const uint8_t bits = bitmap[byte];
    // Zeros come in runs (a dead input's whole column), so whole bytes of the bitmap are common.
    if (bits == 0) {
      std::memset(buffer + 4 * start, 0, 4 * words);
    } else if (bits == 0xFF) {
      source -= 8;
      std::memmove(buffer + 4 * start, buffer + 4 * source, 32);
    } else {
      for (size_t i = start + words; i-- > start;) {
        uint32_t word = 0;
        if ((bits >> (i - start)) & 1) std::memcpy(&word, buffer + 4 * --source, 4);
        std::memcpy(buffer + 4 * i, &word, 4);
      }
    }
  }
  return Status::OK();
}

// The kept words are copied aside first, so that the expansion can run forwards with its loads
// and stores in different buffers: expanding in place, backwards, stalled on loads of bytes a
// masked store had just written (five times slower).
__attribute__((target("avx512f,popcnt"))) Status ExpandAvx512(uint8_t* buffer, size_t encoded_bytes,
                                                              size_t count) {
  std::vector<uint8_t>& bitmap = BitmapBuffer(count);
  auto kept = ReadBitmap(buffer, encoded_bytes, count, bitmap);
  if (!kept.ok()) return kept.status();
  thread_local std::vector<uint32_t> packed;
  if (packed.size() < *kept) packed.resize(*kept);
  if (*kept > 0) std::memcpy(packed.data(), buffer, 4 * *kept);
  size_t source = 0;
  for (size_t start = 0; start < count; start += 16) {
    uint16_t bits;
    std::memcpy(&bits, bitmap.data() + start / 8, 2);
    const __mmask16 present = count - start >= 16
                                  ? __mmask16{0xFFFF}
                                  : static_cast<__mmask16>((1u << (count - start)) - 1);
    bits &= present;
    const int kept_here = std::popcount(bits);
    const __m512i values = _mm512_maskz_loadu_epi32(
        static_cast<__mmask16>((uint32_t{1} << kept_here) - 1), packed.data() + source);
    _mm512_mask_storeu_epi32(buffer + 4 * start, present, _mm512_maskz_expand_epi32(bits, values));
    source += kept_here;
  }
  return Status::OK();
}

bool HostRunsAvx512() {
  static const bool runs = __builtin_cpu_supports("avx512f");
  return runs;
}

ZeroSkippingKernel BestKernel() {
  return HostRunsAvx512() ? ZeroSkippingKernel::kAvx512 : ZeroSkippingKernel::kBaseline;
}

}  // namespace

bool ZeroSkippingLooksWorthwhile(const uint32_t* words, size_t count) {
  if (count == 0) return false;
  const size_t samples = std::min<size_t>(count, 4096);
  const size_t stride = count / samples;
  size_t zeros = 0;
  for (size_t i = 0; i < samples; ++i) zeros += words[i * stride] == 0;
  return zeros * 8 >= samples;
}

std::vector<ZeroSkippingKernel> ZeroSkippingKernelsThisHostRuns() {
  if (HostRunsAvx512()) return {ZeroSkippingKernel::kAvx512, ZeroSkippingKernel::kBaseline};
  return {ZeroSkippingKernel::kBaseline};
}

size_t EncodeZeroSkippingWith(ZeroSkippingKernel kernel, const uint32_t* words, size_t count,
                              uint8_t* out) {
  if (count == 0) return 0;
  return kernel == ZeroSkippingKernel::kAvx512 ? EncodeAvx512(words, count, out)
                                               : EncodeBaseline(words, count, out);
}

Status ExpandZeroSkippingInPlaceWith(ZeroSkippingKernel kernel, uint8_t* buffer,
                                     size_t encoded_bytes, size_t count) {
  if (count == 0) return Status::InvalidArgument("a zero-skipping message for 0 words");
  return kernel == ZeroSkippingKernel::kAvx512 ? ExpandAvx512(buffer, encoded_bytes, count)
                                               : ExpandBaseline(buffer, encoded_bytes, count);
}

size_t EncodeZeroSkipping(const uint32_t* words, size_t count, uint8_t* out) {
  return EncodeZeroSkippingWith(BestKernel(), words, count, out);
}

Status ExpandZeroSkippingInPlace(uint8_t* buffer, size_t encoded_bytes, size_t count) {
  return ExpandZeroSkippingInPlaceWith(BestKernel(), buffer, encoded_bytes, count);
}

}  // namespace cohort::collective
