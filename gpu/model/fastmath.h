// exp, tanh and sigmoid for the field math, written out so that the CPU engine's loops vectorise
// (no libm calls in the hot loop) and the CPU and CUDA engines evaluate the same formula.
// Error below 3e-7 (exp relative, sigmoid absolute) and 3.1e-7 (tanh, absolute and relative)
// over all finite inputs.
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

// tanh(x) = x P(x^2) / Q(x^2), P of degree 6 and Q of degree 3 with P(0) = Q(0) = 1: the fit of
// least maximum error on |x| <= 9 (1.3e-8 in exact arithmetic, 3.1e-7 evaluated in floats, absolute
// and relative alike). kTanhSaturation is the smallest float where the fit gives exactly 1; below
// it the fit stays under 1 (beyond it the fit grows without bound). Odd by construction. 14
// operations and no integer work: the field pass takes one per value, and this form measured ~10 %
// less time per cycle than 1 - 2 / (e^2x + 1) through fast_exp, which also lost relative precision
// near 0 (docs/decisions.md, "A rational tanh").
inline constexpr float kTanhSaturation = 8.00936604f;

// The fit itself, for callers whose argument is within +-kTanhSaturation by construction (or NaN),
// and who say why where they call it: the clamp's compares and masked moves were ~10 % of the
// default field's cycle when the evolve core took them (docs/decisions.md, "The evolve core's
// tanh without a clamp").
FB_HD float tanh_within_saturation(float x) {
  const float s = x * x;
  float p = -8.5220554e-14f;
  p = mul_add(p, s, 5.28761132e-11f);
  p = mul_add(p, s, -2.02385397e-08f);
  p = mul_add(p, s, 1.11562167e-05f);
  p = mul_add(p, s, 0.00310406135f);
  p = mul_add(p, s, 0.130840838f);
  p = mul_add(p, s, 1.0f);
  float q = 0.000254634331f;
  q = mul_add(q, s, 0.0244955309f);
  q = mul_add(q, s, 0.464174122f);
  q = mul_add(q, s, 1.0f);
  return x * p / q;
}

// tanh on |x| <= kFieldTanhRange, the field's own bound: x P(x^2) / Q(x^2) with P and Q of degree
// 2, the fit of least maximum error there (7e-9 exact; 1.8e-7 absolute and 2.3e-7 relative in
// floats, every float checked). 7 operations where the wide fit takes 12: the evolve core and the
// memory mean, whose arguments the field's bound keeps in range (field_math.h), take this one.
// Beyond the range it is not tanh.
inline constexpr float kFieldTanhRange = 1.5f;
FB_HD float tanh_within_field_range(float x) {
  const float s = x * x;
  const float p = mul_add(mul_add(0.00100423477f, s, 0.110259481f), s, 1.0f);
  const float q = mul_add(mul_add(0.0155357784f, s, 0.443592697f), s, 1.0f);
  return x * p / q;
}

// tanh of any float: |tanh| <= 1, and +-1 exactly from +-kTanhSaturation on.
FB_HD float fast_tanh(float x) { return tanh_within_saturation(clampf(x, -kTanhSaturation, kTanhSaturation)); }

FB_HD float fast_sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }

}  // namespace fieldbrain::model
