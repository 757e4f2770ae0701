// Holographic reduced representations in the frequency domain: every per-element formula of the
// HRR library (gpu/hrr) and of the brain's context keys (gpu/model/memory_math.h), once, for the
// CPU and the CUDA backends alike.
//
// A real vector a of even dimension D is kept as its half spectrum A = FFT(a), bins k = 0..D/2
// (unnormalised forward transform; a = IFFT(A) / D). Bins 0 and D/2 are real. Then
//   bind(a, b) = a (*) b (circular convolution)      <->  A_k B_k
//   unbind(c, a) = c (*) involution(a)               <->  C_k conj(A_k)
//   <a, b> = (1/D) sum_k w_k Re(A_k conj(B_k))        with w_k = 1 at 0 and D/2, else 2 (Parseval)
//   cyclic shift of a by s places                    <->  A_k exp(-2 pi i k s / D)
// A Gaussian vector with entries N(0, 1/D) has bins with E|A_k|^2 = 1 (bins 0 and D/2 real
// N(0, 1), the others with real and imaginary parts N(0, 1/2)); a unitary vector has |A_k| = 1,
// and here bins 0 and D/2 equal +1, so fractional powers stay real there. Both have norm ~1.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "gpu/model/hd.h"
#include "gpu/model/philox.h"
#include "gpu/model/portable_math.h"

namespace fieldbrain::hrr {

struct Cf {
  float re = 0.0f;
  float im = 0.0f;
};

inline constexpr float kPi = 3.14159265358979f;

FB_HD_CONST int Bins(int dim) { return dim / 2 + 1; }

FB_HD Cf cmul(Cf a, Cf b) { return Cf{a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
// a * conj(b)
FB_HD Cf cmul_conj(Cf a, Cf b) { return Cf{a.re * b.re + a.im * b.im, a.im * b.re - a.re * b.im}; }
FB_HD Cf cscale(Cf a, float s) { return Cf{a.re * s, a.im * s}; }
FB_HD Cf cadd(Cf a, Cf b) { return Cf{a.re + b.re, a.im + b.im}; }
FB_HD float cabs2(Cf a) { return a.re * a.re + a.im * a.im; }

// Get's factor: a raw vector is IFFT(A) / D, and both backends scale the transform's output by it
// (one order, so they round alike; scaling the spectrum first lost the low bits of tiny values).
FB_HD float GetScale(int dim) { return 1.0f / float(dim); }

// Bins below this squared magnitude count as zero for the exact inverse and the projection.
inline constexpr float kTinyBin2 = 1e-24f;

// 1 / A_k: the exact inverse, bin by bin (for a unitary vector it equals conj(A_k)). Meant for
// unitary or near-unitary keys: on a Gaussian vector small bins blow up, which is why unbind
// uses the involution. A zero bin stays zero.
FB_HD Cf cinverse(Cf a) {
  const float m2 = cabs2(a);
  if (m2 < kTinyBin2) return Cf{};
  const float inv = 1.0f / m2;
  return Cf{a.re * inv, -a.im * inv};
}

// A_k / |A_k|: the nearest unitary vector's bin. A zero bin becomes 1; the real bins become +-1.
FB_HD Cf cunit(Cf a) {
  const float m2 = cabs2(a);
  if (m2 < kTinyBin2) return Cf{1.0f, 0.0f};
  const float inv = 1.0f / sqrtf(m2);
  return Cf{a.re * inv, a.im * inv};
}

// Parseval weight of bin k of `bins` (even D): the real bins 0 and D/2 once, the others twice.
FB_HD float parseval_weight(int k, int bins) { return (k == 0 || k == bins - 1) ? 1.0f : 2.0f; }

// Bin k's share of D <a, b>: sum it over k and divide by D for the dot product.
FB_HD float dot_term(Cf a, Cf b, int k, int bins) {
  return parseval_weight(k, bins) * (a.re * b.re + a.im * b.im);
}

// cos(a, b) from the sum of dot_term over the bins and the squared norms |a|^2, |b|^2; 0 when
// either norm is 0. The norms' square roots are taken apart: the product na nb underflows to 0
// for norms below ~6e-12 (values of 1e-13 at D = 1024), which made such a cosine Inf.
FB_HD float cosine(float dot_sum, float na, float nb, int dim) {
  if (na <= 0.0f || nb <= 0.0f) return 0.0f;
  return dot_sum / float(dim) / (sqrtf(na) * sqrtf(nb));
}

// The factor that scales a sum of squared norm n2 to norm 1: 1 for a zero sum, which stays zero.
// Where n2 overflowed float (the sum's bins reach 2^56 to 2^64, by how many there are) it is NaN,
// not 1 / sqrt(inf) = 0: the result is then marked not finite rather than silently made zero.
FB_HD float unit_scale(float n2) {
  if (!(n2 > 0.0f)) return 1.0f;
  if (n2 > FLT_MAX) return nanf("");
  return 1.0f / sqrtf(n2);
}

// exp(-2 pi i k s / D): bin k of a cyclic shift by s places. (k s) mod D is formed in integers,
// so the angle keeps its precision for any shift.
FB_HD Cf shift_phase(int k, int shift, int dim) {
  int64_t m = (int64_t(k) * int64_t(shift)) % dim;
  if (m < 0) m += dim;
  const model::SinCos e = model::sin_cos(-2.0f * kPi * float(m) / float(dim));
  return Cf{e.cos, e.sin};
}

// A_k^v: magnitude to the power v, phase times v (principal phase in (-pi, pi]). Meant for
// unitary bases, for which it is the fractional binding base^v; base^1 = base, base^0 = identity,
// base^-1 = inverse. On a real bin with a negative value the result is |A|^v cos(pi v), its real
// part (our unitary vectors have +1 there, so this does not arise for them).
FB_HD Cf cpow(Cf a, float v, bool real_bin) {
  const float m2 = cabs2(a);
  if (m2 < kTinyBin2) return v == 0.0f ? Cf{1.0f, 0.0f} : Cf{};
  // |A|^v = e^(v/2 log |A|^2). fast_exp's range is +-87: beyond it the bin is out of float's range
  // (~e^88.7) or nearly so, and it becomes Inf, which the result checks refuse as not finite, or 0.
  const float log_mag = 0.5f * v * model::fast_log(m2);
  const float mag = log_mag > 87.0f ? model::bits_to_float(0x7F800000) : log_mag < -87.0f ? 0.0f : model::fast_exp(log_mag);
  if (real_bin) return Cf{a.re >= 0.0f ? mag : mag * model::sin_cos(kPi * v).cos, 0.0f};
  const model::SinCos e = model::sin_cos(v * model::fast_atan2(a.im, a.re));
  return Cf{mag * e.cos, mag * e.sin};
}

// Bin k of vector `index` of the Gaussian N(0, 1/D) stream of `seed`.
FB_HD Cf gaussian_bin(uint64_t seed, uint64_t index, int k, int bins) {
  using model::Domain;
  if (k == 0 || k == bins - 1) return Cf{model::normal_draw(seed, Domain::kHrrVector, index, 2u * uint32_t(k)), 0.0f};
  constexpr float kHalf = 0.70710678f;  // each part N(0, 1/2)
  return Cf{kHalf * model::normal_draw(seed, Domain::kHrrVector, index, 2u * uint32_t(k)),
            kHalf * model::normal_draw(seed, Domain::kHrrVector, index, 2u * uint32_t(k) + 1u)};
}

// A phase uniform in (-pi, pi] from 32 random bits.
FB_HD float phase_of_bits(uint32_t bits) { return kPi * (2.0f * model::uniform_open0(bits) - 1.0f); }

// Bin k of vector `index` of the unitary stream of `seed`: exp(i phi), phi uniform; +1 at the real
// bins. (Its own Philox counters: word k of the stream, distinct from the Gaussian stream's.)
FB_HD Cf unitary_bin(uint64_t seed, uint64_t index, int k, int bins) {
  if (k == 0 || k == bins - 1) return Cf{1.0f, 0.0f};
  const float phi = phase_of_bits(model::uniform_bits(seed, model::Domain::kHrrVector, index, 0x80000000u | uint32_t(k)));
  const model::SinCos e = model::sin_cos(phi);
  return Cf{e.cos, e.sin};
}

}  // namespace fieldbrain::hrr
