#include "train/gradient_compression.h"

namespace cohort::train {

StatusOr<GradientCompression> ParseGradientCompression(const std::string& name) {
  if (name == "none") return GradientCompression::kNone;
  if (name == "bf16") return GradientCompression::kBFloat16;
  if (name == "fp16") return GradientCompression::kFloat16;
  return Status::InvalidArgument("gradient compression: expected none, bf16 or fp16, got \"" +
                                 name.substr(0, 64) + "\"");
}

const char* Name(GradientCompression compression) {
  switch (compression) {
    case GradientCompression::kNone:
      return "none";
    case GradientCompression::kBFloat16:
      return "bf16";
    case GradientCompression::kFloat16:
      return "fp16";
  }
  return "unknown";
}

std::optional<collective::DataType> WireType(GradientCompression compression) {
  switch (compression) {
    case GradientCompression::kNone:
      return std::nullopt;
    case GradientCompression::kBFloat16:
      return collective::DataType::kBFloat16;
    case GradientCompression::kFloat16:
      return collective::DataType::kFloat16;
  }
  return std::nullopt;
}

}  // namespace cohort::train
