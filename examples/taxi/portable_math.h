// Portable math: exp, log, tanh and the logistic sigmoid with the same result on every machine.
//
// The taxi generator promises the same bytes for the same seed everywhere. IEEE-754 makes +, -, *,
// / and sqrt correctly rounded, so they agree across machines, but the C library's exp and log
// only promise "close": glibc, musl and macOS may differ in the last bit, and a last-bit
// difference can move a sample across a rounding boundary or a Bernoulli threshold. These
// versions use only the correctly rounded operations plus frexp/ldexp (exact), so their results
// are a function of the input alone. They are accurate to a few units in the last place, which is
// far more than sampling needs; they are not meant for hot loops elsewhere.
//
// (This relies on the compiler not contracting a * b + c into a fused multiply-add, which GCC and
// Clang do not do in ISO C++ mode, -std=c++20, the mode the build uses.)
#pragma once

namespace cohort::taxi {

double PortableExp(double x);  // e^x; 0 below -745, +infinity above 709.78
double PortableLog(double x);  // natural log, x > 0; -infinity at 0, NaN below
double PortableTanh(double x);
double PortableSigmoid(double x);  // 1 / (1 + e^-x)

}  // namespace cohort::taxi
