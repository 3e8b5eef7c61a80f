// Zero skipping: a lossless encoding of 32-bit words that leaves out the words whose bits are all
// zero, for the ring's messages.
//
// Gradients are often full of exact zeros: a fully connected layer behind a ReLU gets a zero
// gradient column for every input feature that was zero for the whole batch, so that nearly half
// of the flagship CNN's 11 MB gradient is +0.0. Sent as they are, those zeros cost as much wire
// time as the rest; encoded, a message carries only the other words and one bit per word.
//
// Layout of an encoded message of `count` words: the words that are not zero, in order, then a
// bitmap of ceil(count / 8) bytes whose bit i % 8 of byte i / 8 is set when word i was kept. Words
// are compared by their bits, so -0.0 and NaNs are kept: expanding restores every word exactly.
// An encoding is only used when it is shorter than the words themselves, so a receiver that knows
// the count tells the two apart by the size alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"

namespace cohort::collective {

// Bytes an encode may write past its result: the output needs this much room beyond 4 * count.
inline constexpr size_t kZeroSkippingSlackBytes = 64;

inline size_t ZeroSkippingBitmapBytes(size_t count) { return (count + 7) / 8; }

// Whether an evenly spread sample of `words` holds enough zeros (one in eight) for the encoding to
// be worth its pass over the data. Reads at most a few thousand words.
bool ZeroSkippingLooksWorthwhile(const uint32_t* words, size_t count);

// Encodes `words` into `out`, which has room for 4 * count + kZeroSkippingSlackBytes bytes.
// Returns the encoded size, or 0 when it would not be shorter than 4 * count bytes (the contents
// of `out` are then unspecified).
size_t EncodeZeroSkipping(const uint32_t* words, size_t count, uint8_t* out);

// Expands the `encoded_bytes` at the start of `buffer` (room for `count` words) into the `count`
// words they encode, in place. InvalidArgument, naming what is wrong, when those bytes are not an
// encoding of `count` words (the buffer's contents are then unspecified).
Status ExpandZeroSkippingInPlace(uint8_t* buffer, size_t encoded_bytes, size_t count);

// The instruction sets the codec runs with: AVX-512 (F) or plain C++.
enum class ZeroSkippingKernel { kAvx512, kBaseline };
// The kernels this CPU can execute, widest first; baseline is always among them.
std::vector<ZeroSkippingKernel> ZeroSkippingKernelsThisHostRuns();
// The functions above with a given kernel, for tests.
size_t EncodeZeroSkippingWith(ZeroSkippingKernel kernel, const uint32_t* words, size_t count,
                              uint8_t* out);
Status ExpandZeroSkippingInPlaceWith(ZeroSkippingKernel kernel, uint8_t* buffer,
                                     size_t encoded_bytes, size_t count);

}  // namespace cohort::collective
