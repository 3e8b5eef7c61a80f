#include "collective/reduction.h"

// GCC 12 warns about the deliberately undefined pass-through operand inside its own AVX-512
// conversion intrinsics (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

#include <cpuid.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace cohort::collective {
namespace {

// Elements per block: the inner loops have a constant trip count, which compilers vectorise even
// at -O2, and 64 elements fill a few vector registers at any width.
constexpr size_t kBlock = 64;

#define COHORT_INLINE inline __attribute__((always_inline))

template <ReduceOp kOp, typename T>
COHORT_INLINE T Combine(T a, T b) {
  if constexpr (kOp == ReduceOp::kMin) {
    return b < a ? b : a;
  } else if constexpr (kOp == ReduceOp::kMax) {
    return a < b ? b : a;
  } else if constexpr (std::is_integral_v<T>) {
    // Two's complement wrap-around, without the undefined behaviour of signed overflow.
    using Unsigned = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<Unsigned>(a) + static_cast<Unsigned>(b));
  } else {
    return a + b;
  }
}

template <ReduceOp kOp, typename T>
COHORT_INLINE void ReduceLoop(T* __restrict accumulator, const T* __restrict input, size_t count) {
  size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) {
      accumulator[i + j] = Combine<kOp>(accumulator[i + j], input[i + j]);
    }
  }
  for (; i < count; ++i) accumulator[i] = Combine<kOp>(accumulator[i], input[i]);
}

COHORT_INLINE float WidenBFloat16(uint16_t value) {
  uint32_t bits = static_cast<uint32_t>(value) << 16;
  float result;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
}

COHORT_INLINE uint16_t NarrowToBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  uint32_t quiet_nan = (bits >> 16) | 0x40u;
  return static_cast<uint16_t>((bits & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
}

template <ReduceOp kOp>
COHORT_INLINE void ReduceBFloat16(uint16_t* __restrict accumulator,
                                  const uint16_t* __restrict input, size_t count) {
  size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) {
      float sum = Combine<kOp>(WidenBFloat16(accumulator[i + j]), WidenBFloat16(input[i + j]));
      accumulator[i + j] = NarrowToBFloat16(sum);
    }
  }
  for (; i < count; ++i) {
    accumulator[i] =
        NarrowToBFloat16(Combine<kOp>(WidenBFloat16(accumulator[i]), WidenBFloat16(input[i])));
  }
}

template <ReduceOp kOp>
COHORT_INLINE void ReduceFloat16Scalar(uint16_t* accumulator, const uint16_t* input, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    accumulator[i] =
        FloatToFloat16(Combine<kOp>(Float16ToFloat(accumulator[i]), Float16ToFloat(input[i])));
  }
}

template <typename T>
COHORT_INLINE void DivideLoop(T* data, size_t count, int divisor) {
  if constexpr (std::is_integral_v<T>) {
    for (size_t i = 0; i < count; ++i) data[i] = static_cast<T>(data[i] / divisor);
  } else {
    const T scale = static_cast<T>(divisor);
    for (size_t i = 0; i < count; ++i) data[i] = data[i] / scale;
  }
}

// The float16 kernels need F16C conversions, so they exist once per instruction set.
template <ReduceOp kOp>
__attribute__((target("avx2,fma,f16c"))) void ReduceFloat16Avx2(uint16_t* accumulator,
                                                                const uint16_t* input,
                                                                size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256 a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(accumulator + i)));
    __m256 b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(input + i)));
    __m256 c;
    if constexpr (kOp == ReduceOp::kMin) {
      c = _mm256_min_ps(b, a);
    } else if constexpr (kOp == ReduceOp::kMax) {
      c = _mm256_max_ps(b, a);
    } else {
      c = _mm256_add_ps(a, b);
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(accumulator + i),
                     _mm256_cvtps_ph(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  ReduceFloat16Scalar<kOp>(accumulator + i, input + i, count - i);
}

template <ReduceOp kOp>
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) void ReduceFloat16Avx512(
    uint16_t* accumulator, const uint16_t* input, size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m512 a =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(accumulator + i)));
    __m512 b = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(input + i)));
    __m512 c;
    if constexpr (kOp == ReduceOp::kMin) {
      c = _mm512_min_ps(b, a);
    } else if constexpr (kOp == ReduceOp::kMax) {
      c = _mm512_max_ps(b, a);
    } else {
      c = _mm512_add_ps(a, b);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(accumulator + i),
                        _mm512_cvtps_ph(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  ReduceFloat16Scalar<kOp>(accumulator + i, input + i, count - i);
}

enum class Isa { kBaseline, kAvx2, kAvx512 };

template <Isa kIsa, ReduceOp kOp>
COHORT_INLINE void ReduceTyped(DataType type, void* accumulator, const void* input, size_t count) {
  switch (type) {
    case DataType::kFloat32:
      return ReduceLoop<kOp>(static_cast<float*>(accumulator), static_cast<const float*>(input),
                             count);
    case DataType::kFloat64:
      return ReduceLoop<kOp>(static_cast<double*>(accumulator), static_cast<const double*>(input),
                             count);
    case DataType::kInt32:
      return ReduceLoop<kOp>(static_cast<int32_t*>(accumulator), static_cast<const int32_t*>(input),
                             count);
    case DataType::kInt64:
      return ReduceLoop<kOp>(static_cast<int64_t*>(accumulator), static_cast<const int64_t*>(input),
                             count);
    case DataType::kBFloat16:
      return ReduceBFloat16<kOp>(static_cast<uint16_t*>(accumulator),
                                 static_cast<const uint16_t*>(input), count);
    case DataType::kFloat16: {
      auto* a = static_cast<uint16_t*>(accumulator);
      auto* b = static_cast<const uint16_t*>(input);
      if constexpr (kIsa == Isa::kAvx512) return ReduceFloat16Avx512<kOp>(a, b, count);
      if constexpr (kIsa == Isa::kAvx2) return ReduceFloat16Avx2<kOp>(a, b, count);
      return ReduceFloat16Scalar<kOp>(a, b, count);
    }
  }
}

template <Isa kIsa>
COHORT_INLINE void Reduce(DataType type, ReduceOp op, void* accumulator, const void* input,
                          size_t count) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      return ReduceTyped<kIsa, ReduceOp::kSum>(type, accumulator, input, count);
    case ReduceOp::kMin:
      return ReduceTyped<kIsa, ReduceOp::kMin>(type, accumulator, input, count);
    case ReduceOp::kMax:
      return ReduceTyped<kIsa, ReduceOp::kMax>(type, accumulator, input, count);
  }
}

void ReduceBaseline(DataType type, ReduceOp op, void* accumulator, const void* input,
                    size_t count) {
  Reduce<Isa::kBaseline>(type, op, accumulator, input, count);
}

__attribute__((target("avx2,fma,f16c"))) void ReduceAvx2(DataType type, ReduceOp op,
                                                         void* accumulator, const void* input,
                                                         size_t count) {
  Reduce<Isa::kAvx2>(type, op, accumulator, input, count);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) void ReduceAvx512(
    DataType type, ReduceOp op, void* accumulator, const void* input, size_t count) {
  Reduce<Isa::kAvx512>(type, op, accumulator, input, count);
}

using ReduceFunction = void (*)(DataType, ReduceOp, void*, const void*, size_t);

struct Kernels {
  ReduceFunction reduce;
  const char* name;
};

// F16C (CPUID leaf 1, ECX bit 29). Asked of CPUID directly: not every compiler's
// __builtin_cpu_supports knows it.
bool HasF16c() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
}

bool CanRun(ReductionKernel kernel) {
  __builtin_cpu_init();
  switch (kernel) {
    case ReductionKernel::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && HasF16c();
    case ReductionKernel::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && HasF16c();
    case ReductionKernel::kBaseline:
      return true;
  }
  return false;
}

ReduceFunction KernelFunction(ReductionKernel kernel) {
  switch (kernel) {
    case ReductionKernel::kAvx512:
      return ReduceAvx512;
    case ReductionKernel::kAvx2:
      return ReduceAvx2;
    case ReductionKernel::kBaseline:
      return ReduceBaseline;
  }
  return ReduceBaseline;
}

Kernels ChooseKernels() {
  const ReductionKernel widest = ReductionKernelsThisHostRuns().front();
  return {KernelFunction(widest), ReductionKernelName(widest)};
}

const Kernels& SelectedKernels() {
  static const Kernels kernels = ChooseKernels();
  return kernels;
}

}  // namespace

void ReduceInto(DataType type, ReduceOp op, void* accumulator, const void* input, size_t count) {
  if (count == 0) return;
  SelectedKernels().reduce(type, op, accumulator, input, count);
}

void DivideInPlace(DataType type, void* data, size_t count, int divisor) {
  if (divisor == 1 || count == 0) return;
  switch (type) {
    case DataType::kFloat32:
      return DivideLoop(static_cast<float*>(data), count, divisor);
    case DataType::kFloat64:
      return DivideLoop(static_cast<double*>(data), count, divisor);
    case DataType::kInt32:
      return DivideLoop(static_cast<int32_t*>(data), count, divisor);
    case DataType::kInt64:
      return DivideLoop(static_cast<int64_t*>(data), count, divisor);
    case DataType::kBFloat16: {
      auto* values = static_cast<uint16_t*>(data);
      for (size_t i = 0; i < count; ++i) {
        values[i] = NarrowToBFloat16(WidenBFloat16(values[i]) / static_cast<float>(divisor));
      }
      return;
    }
    case DataType::kFloat16: {
      auto* values = static_cast<uint16_t*>(data);
      for (size_t i = 0; i < count; ++i) {
        values[i] = FloatToFloat16(Float16ToFloat(values[i]) / static_cast<float>(divisor));
      }
      return;
    }
  }
}

const char* ReductionKernelName() { return SelectedKernels().name; }

std::vector<ReductionKernel> ReductionKernelsThisHostRuns() {
  std::vector<ReductionKernel> kernels;
  for (ReductionKernel kernel :
       {ReductionKernel::kAvx512, ReductionKernel::kAvx2, ReductionKernel::kBaseline}) {
    if (CanRun(kernel)) kernels.push_back(kernel);
  }
  return kernels;
}

const char* ReductionKernelName(ReductionKernel kernel) {
  switch (kernel) {
    case ReductionKernel::kAvx512:
      return "avx512";
    case ReductionKernel::kAvx2:
      return "avx2";
    case ReductionKernel::kBaseline:
      return "baseline";
  }
  return "baseline";
}

void ReduceWith(ReductionKernel kernel, DataType type, ReduceOp op, void* accumulator,
                const void* input, size_t count) {
  if (count == 0) return;
  KernelFunction(kernel)(type, op, accumulator, input, count);
}

}  // namespace cohort::collective
