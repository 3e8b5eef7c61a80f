// Reduction kernels: the arithmetic of all-reduce, one element-wise pass over plain buffers.
//
// The kernels are written once as plain loops over fixed-size blocks, which compilers vectorise,
// and compiled three times: for AVX-512, for AVX2 (with F16C for float16 conversions) and for
// baseline x86-64. The widest one the CPU supports is picked once, at the first call; ReduceWith
// runs a named one, so that tests can check every kernel the host executes. Reduction runs on
// data that has just arrived from the network and is still in cache, so its speed is the speed of
// the cache, and vector width matters.
#pragma once

#include <cstddef>
#include <vector>

#include "collective/data_type.h"

namespace cohort::collective {

// accumulator[i] = op(accumulator[i], input[i]) for i in [0, count). kAverage adds, like kSum:
// the division happens once, on the final sum (DivideInPlace). 16-bit floats are widened to
// float32, combined and rounded back to nearest even. min and max return the accumulator's value
// when a comparison involves NaN.
void ReduceInto(DataType type, ReduceOp op, void* accumulator, const void* input, size_t count);

// data[i] /= divisor for i in [0, count): the last step of an average. Integers round toward
// zero.
void DivideInPlace(DataType type, void* data, size_t count, int divisor);

// The instruction set the kernels run with: "avx512", "avx2" or "baseline".
const char* ReductionKernelName();

// One compilation of the kernels: AVX-512 (F, BW, VL, with F16C), AVX2 (with FMA and F16C), or
// baseline x86-64.
enum class ReductionKernel { kAvx512, kAvx2, kBaseline };

// The kernels this CPU can execute, widest first; baseline is always among them.
std::vector<ReductionKernel> ReductionKernelsThisHostRuns();

// "avx512", "avx2" or "baseline".
const char* ReductionKernelName(ReductionKernel kernel);

// ReduceInto with `kernel`, which must be one of ReductionKernelsThisHostRuns().
void ReduceWith(ReductionKernel kernel, DataType type, ReduceOp op, void* accumulator,
                const void* input, size_t count);

}  // namespace cohort::collective
