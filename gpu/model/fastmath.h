// exp, tanh and sigmoid for the field math, written out so that the CPU engine's loops vectorise
// (no libm calls in the hot loop) and the CPU and CUDA engines evaluate the same formula.
// Absolute error below 3e-7 for tanh and sigmoid over all finite inputs.
#pragma once

#include <cmath>
#include <cstdint>
#if !defined(__CUDA_ARCH__)
#include <bit>
#endif

#include "gpu/model/hd.h"

namespace fieldbrain::model {

FB_HD float bits_to_float(int32_t bits) {
#if defined(__CUDA_ARCH__)
  return __int_as_float(bits);
#else
  return std::bit_cast<float>(bits);
#endif
}

FB_HD int32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_int(f);
#else
  return std::bit_cast<int32_t>(f);
#endif
}

// a * b + c rounded once (IEEE fused multiply-add), on every engine alike: an FFMA on the card, the
// FMA instruction where the host build targets one (x86-64-v3 or -march=native on x86, always on
// aarch64), the C library's exact fmaf elsewhere (slow: docs/decisions.md, "Fused multiply-adds").
// Written out where the math is a multiply-add; the compilers never fuse on their own.
FB_HD float mul_add(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return fmaf(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// Clamp written with comparisons: compilers turn it into min/max vector instructions, which
// fminf/fmaxf (with their NaN rules) block on the CPU.
FB_HD float clampf(float v, float lo, float hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

// e^x for x in [-87, 87] (the caller clamps), relative error < 3e-7. n = round(x log2 e) comes
// from adding 1.5 * 2^23, which leaves the integer in the low mantissa bits (unlike floorf or a
// float-to-int conversion this vectorises on the CPU); y = x - n ln 2 with ln 2 split in two
// (Cody-Waite) so y keeps its precision; e^y by a degree-6 Taylor polynomial on |y| <= 0.35,
// Horner's steps each one fused multiply-add.
FB_HD float exp_in_range(float x) {
  const float shifted = mul_add(x, 1.44269504f, 12582912.0f);
  const float n = shifted - 12582912.0f;
  const int32_t ni = float_to_bits(shifted) - 0x4B400000;
  const float y = mul_add(n, 2.12194440e-4f, mul_add(n, -0.693359375f, x));
  float p = 1.0f / 720.0f;
  p = mul_add(p, y, 1.0f / 120.0f);
  p = mul_add(p, y, 1.0f / 24.0f);
  p = mul_add(p, y, 1.0f / 6.0f);
  p = mul_add(p, y, 0.5f);
  p = mul_add(p, y, 1.0f);
  p = mul_add(p, y, 1.0f);
  return p * bits_to_float((ni + 127) << 23);
}

FB_HD float fast_exp(float x) { return exp_in_range(clampf(x, -87.0f, 87.0f)); }

FB_HD float fast_tanh(float x) {
  const float a = -2.0f * fabsf(x);  // never above 0, so only the lower clamp can act
  const float t = exp_in_range(a < -87.0f ? -87.0f : a);
  return copysignf((1.0f - t) / (1.0f + t), x);
}

FB_HD float fast_sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }

}  // namespace fieldbrain::model
