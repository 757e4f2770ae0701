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

// Clamp written with comparisons: compilers turn it into min/max vector instructions, which
// fminf/fmaxf (with their NaN rules) block on the CPU.
FB_HD float clampf(float v, float lo, float hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

// e^x for x in [-87, 87] (clamped outside), relative error < 3e-7. n = round(x log2 e) comes from
// adding 1.5 * 2^23, which leaves the integer in the low mantissa bits (unlike floorf or a
// float-to-int conversion this vectorises on the CPU); y = x - n ln 2 with ln 2 split in two
// (Cody-Waite) so y keeps its precision; e^y by a degree-6 Taylor polynomial on |y| <= 0.35.
FB_HD float fast_exp(float x) {
  x = clampf(x, -87.0f, 87.0f);
  const float shifted = x * 1.44269504f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  const int32_t ni = float_to_bits(shifted) - 0x4B400000;
  const float y = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.0f / 720.0f;
  p = p * y + 1.0f / 120.0f;
  p = p * y + 1.0f / 24.0f;
  p = p * y + 1.0f / 6.0f;
  p = p * y + 0.5f;
  p = p * y + 1.0f;
  p = p * y + 1.0f;
  return p * bits_to_float((ni + 127) << 23);
}

FB_HD float fast_tanh(float x) {
  const float t = fast_exp(-2.0f * fabsf(x));
  return copysignf((1.0f - t) / (1.0f + t), x);
}

FB_HD float fast_sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }

}  // namespace fieldbrain::model
