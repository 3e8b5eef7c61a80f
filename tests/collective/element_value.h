// The value of one element of a buffer of any collective data type, as a double: how the
// collective tests compare results with their serial references.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "collective/data_type.h"

namespace cohort::collective {

inline double ElementValue(DataType type, const uint8_t* bytes, size_t i) {
  const uint8_t* at = bytes + i * SizeOf(type);
  switch (type) {
    case DataType::kFloat32: {
      float v;
      std::memcpy(&v, at, 4);
      return v;
    }
    case DataType::kFloat64: {
      double v;
      std::memcpy(&v, at, 8);
      return v;
    }
    case DataType::kInt32: {
      int32_t v;
      std::memcpy(&v, at, 4);
      return v;
    }
    case DataType::kInt64: {
      int64_t v;
      std::memcpy(&v, at, 8);
      return static_cast<double>(v);
    }
    case DataType::kBFloat16: {
      uint16_t v;
      std::memcpy(&v, at, 2);
      return BFloat16ToFloat(v);
    }
    case DataType::kFloat16: {
      uint16_t v;
      std::memcpy(&v, at, 2);
      return Float16ToFloat(v);
    }
  }
  return 0;
}

}  // namespace cohort::collective
