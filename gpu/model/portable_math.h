// sin, cos, log and atan2 written out in float adds, multiplies and IEEE divisions, so the CPU
// and the CUDA engines compute them with the same operations in the same order and get the same
// bits (libm on the host and CUDA's cosf on the device differ by an ulp or two, enough to flip a
// threshold such as "same context: cos > 0.95"). That holds under the project's contraction
// policy (docs/decisions.md, "Parity by construction"): no multiply-add is fused on either side.
//
// Accuracy (tests/brain/portable_math_test.cc): sin and cos within 2e-7 absolute for
// |x| <= 1e4 (the brain's angles stay within 6 pi), log within 2e-7 relative on normal floats,
// atan2 within 3e-7 absolute. Outside those ranges the results are less accurate but still the
// same on both engines.
#pragma once

#include <cstdint>

#include "gpu/model/fastmath.h"
#include "gpu/model/hd.h"

namespace fieldbrain::model {

struct SinCos {
  float sin;
  float cos;
};

// x = n pi/2 + r with |r| <= pi/4: n from the 1.5 * 2^23 rounding of fast_exp, r with pi/2 in
// three parts (Cody-Waite: the first two have short mantissas, so n times them is exact for
// |n| < 2^15); then minimax polynomials on r (Cephes' sinf/cosf) and the quadrant.
FB_HD SinCos sin_cos(float x) {
  const float shifted = x * 0.636619772f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  const int32_t quadrant = (float_to_bits(shifted) - 0x4B400000) & 3;
  const float r = ((x - n * 1.5703125f) - n * 4.83751297e-4f) - n * 7.54978995e-8f;
  const float r2 = r * r;
  float s = -1.9515295891e-4f;
  s = s * r2 + 8.3321608736e-3f;
  s = s * r2 - 1.6666654611e-1f;
  s = r + r * r2 * s;
  float c = 2.443315711809948e-5f;
  c = c * r2 - 1.388731625493765e-3f;
  c = c * r2 + 4.166664568298827e-2f;
  c = (1.0f - 0.5f * r2) + r2 * r2 * c;
  // Quadrant 0: (s, c); 1: (c, -s); 2: (-s, -c); 3: (-c, s). Written as selects, not a switch,
  // so that a loop of sin_cos vectorises on the CPU.
  const bool odd = (quadrant & 1) != 0;
  const float sin_r = odd ? c : s, cos_r = odd ? s : c;
  return SinCos{(quadrant & 2) != 0 ? -sin_r : sin_r, ((quadrant + 1) & 2) != 0 ? -cos_r : cos_r};
}

// Natural log of a positive normal float: x = m 2^e with m in [sqrt(1/2), sqrt(2)), then
// log(m) = f - f^2/2 + f^3 P(f) for f = m - 1 (Cephes' logf) and e ln 2 with ln 2 in two parts.
// 0 gives -inf and a negative x or NaN gives NaN, as logf does; subnormals are not met here
// (Box-Muller's u >= 2^-24, HRR bins >= 1e-24).
FB_HD float fast_log(float x) {
  if (!(x > 0.0f)) return x == 0.0f ? -bits_to_float(0x7F800000) : bits_to_float(0x7FC00000);
  if (x > 3.40282347e+38f) return x;  // +inf
  const int32_t bits = float_to_bits(x);
  int32_t e = ((bits >> 23) & 0xFF) - 127;
  float m = bits_to_float((bits & 0x007FFFFF) | 0x3F800000);  // [1, 2)
  if (m > 1.41421356f) {
    m *= 0.5f;
    ++e;
  }
  const float f = m - 1.0f;
  const float f2 = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  const float fe = float(e);
  const float log_m = (f - 0.5f * f2) + f * f2 * p;
  return (log_m - fe * 2.12194440e-4f) + fe * 0.693359375f;
}

// atan(t) for t in [0, 1]: reduced to |u| <= tan(pi/8) around 0 or pi/4, then Cephes' atanf
// polynomial.
FB_HD float atan_unit(float t) {
  float base = 0.0f;
  float u = t;
  if (t > 0.414213562f) {
    base = 0.785398163f;
    u = (t - 1.0f) / (t + 1.0f);
  }
  const float u2 = u * u;
  float p = 8.05374449538e-2f;
  p = p * u2 - 1.38776856032e-1f;
  p = p * u2 + 1.99777106478e-1f;
  p = p * u2 - 3.33329491539e-1f;
  return base + (u + u * u2 * p);
}

// The angle of (x, y) in [-pi, pi], as atan2f(y, x) for finite arguments (0 for (0, 0)).
FB_HD float fast_atan2(float y, float x) {
  const float ay = fabsf(y), ax = fabsf(x);
  if (ax == 0.0f && ay == 0.0f) return copysignf(float_to_bits(x) < 0 ? 3.14159265f : 0.0f, y);  // -0 counts as negative
  const bool steep = ay > ax;
  float a = atan_unit(steep ? ax / ay : ay / ax);
  if (steep) a = 1.57079633f - a;
  if (float_to_bits(x) < 0) a = 3.14159265f - a;
  return copysignf(a, y);
}

}  // namespace fieldbrain::model
