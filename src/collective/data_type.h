// Element types and reduction operators of collective operations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cohort::collective {

enum class DataType : uint8_t {
  kFloat32,
  kFloat64,
  kBFloat16,  // stored as uint16_t: the upper half of a float32
  kFloat16,   // stored as uint16_t: IEEE 754 binary16
  kInt32,
  kInt64,
};

enum class ReduceOp : uint8_t {
  kSum,      // integers wrap around on overflow, as two's complement does
  kAverage,  // the sum divided by the number of ranks; integer averages round toward zero
  kMin,
  kMax,
};

size_t SizeOf(DataType type);
// "float32", "float64", "bfloat16", "float16", "int32", "int64".
const char* Name(DataType type);
// "sum", "average", "min", "max".
const char* Name(ReduceOp op);

// Conversions for the 16-bit float types, rounding to nearest even like the hardware does.
float BFloat16ToFloat(uint16_t value);
uint16_t FloatToBFloat16(float value);
float Float16ToFloat(uint16_t value);
uint16_t FloatToFloat16(float value);

}  // namespace cohort::collective
