// GradientCompression: how gradients travel in the all-reduce, as Horovod's --fp16-allreduce and
// compression options do.
//
// With kBFloat16 or kFloat16 each gradient bucket is rounded to 16 bits (nearest even) before its
// sum across workers, summed in that type by the collective (collective/data_type.h), and widened
// back to float32 before it is averaged and handed to the optimizer: half the bytes on the wire,
// at the cost of 16-bit precision in the averaged gradient. bfloat16 keeps float32's range (8
// exponent bits, 8 significant bits); float16 has 11 significant bits but overflows past 65504
// and flushes magnitudes below about 6e-8 to zero. The weights and the optimizer stay float32.
//
//   auto compression = ParseGradientCompression(flag);   // "none", "bf16" or "fp16"
//   if (!compression.ok()) ... compression.status() names the value and the accepted ones
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "collective/data_type.h"

namespace cohort::train {

enum class GradientCompression {
  kNone,      // float32 on the wire
  kBFloat16,  // "bf16"
  kFloat16,   // "fp16"
};

// "none", "bf16" or "fp16"; anything else is InvalidArgument naming the value and those three
// (at most 64 characters of it).
StatusOr<GradientCompression> ParseGradientCompression(const std::string& name);
// The flag's spelling: "none", "bf16", "fp16".
const char* Name(GradientCompression compression);
// The collective's element type for the compressed gradient; none for kNone.
std::optional<collective::DataType> WireType(GradientCompression compression);

}  // namespace cohort::train
