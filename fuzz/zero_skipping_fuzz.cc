// Fuzzes the expansion of zero-skipping messages (collective/zero_skipping.h), which a rank does to
// bytes a peer sent. The first two input bytes give the word count (1 to 4096), the rest is the
// message. Nothing may crash or read or write out of bounds; every kernel must accept and refuse
// the same messages and expand the accepted ones to the same words; and encoding what expanded
// must expand to the same words again.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "collective/zero_skipping.h"

using namespace cohort::collective;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t count = 1 + ((static_cast<size_t>(data[0]) << 8 | data[1]) % 4096);
  const uint8_t* message = data + 2;
  const size_t message_bytes = size - 2;
  if (message_bytes > 4 * count) return 0;  // the ring's receive refuses longer frames first

  std::vector<std::vector<uint8_t>> results;
  bool first = true, accepted = false;
  for (ZeroSkippingKernel kernel : ZeroSkippingKernelsThisHostRuns()) {
    std::vector<uint8_t> buffer(4 * count, 0xCD);
    if (message_bytes > 0) std::memcpy(buffer.data(), message, message_bytes);
    const bool ok = ExpandZeroSkippingInPlaceWith(kernel, buffer.data(), message_bytes, count).ok();
    if (first) accepted = ok;
    if (ok != accepted) __builtin_trap();
    first = false;
    if (ok) results.push_back(std::move(buffer));
  }
  for (const std::vector<uint8_t>& result : results) {
    if (result != results.front()) __builtin_trap();
  }
  if (results.empty()) return 0;

  std::vector<uint32_t> words(count);
  std::memcpy(words.data(), results.front().data(), 4 * count);
  std::vector<uint8_t> encoded(4 * count + kZeroSkippingSlackBytes);
  const size_t encoded_bytes = EncodeZeroSkipping(words.data(), count, encoded.data());
  if (encoded_bytes == 0) return 0;  // not shorter: sent as plain words
  encoded.resize(4 * count);
  if (!ExpandZeroSkippingInPlace(encoded.data(), encoded_bytes, count).ok() ||
      std::memcmp(encoded.data(), words.data(), 4 * count) != 0) {
    __builtin_trap();
  }
  return 0;
}
