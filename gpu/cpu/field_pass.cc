#include "gpu/cpu/field_pass.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "gpu/model/field_math.h"

namespace fieldbrain::cpu {
namespace {

// Planes of SlabScratch: 4 group means, memory coupling per r (4), lam, k, eta per r (4 each),
// activity sums per r (4 each of |F|, F, F^2, quiet count), A_g of the new field (4).
constexpr int kGroupMean = 0, kCoupling = 4, kLam = 8, kRate = 12, kEta = 16;
constexpr int kActAbs = 20, kActSum = 24, kActSq = 28, kActQuiet = 32, kNewGroup = 36;
constexpr int kPlanes = 40;
constexpr int kMaxNear = 32;  // sensors whose imprint reaches one column (at most 25 distinct)

}  // namespace

SlabScratch::SlabScratch(const FieldShape& shape)
    : plane_(shape.ny * shape.nz),
      planes_(size_t(kPlanes) * plane_),
      row_(shape.nz),
      imprint_(shape.nz),
      near_(size_t(shape.ny) * kMaxNear),
      near_count_(shape.ny) {}

void EvolveSlab(const SlabJob& job, int x, SlabScratch& s, model::FieldSummary& partial) {
  using namespace model;
  const FieldShape& sh = *job.shape;
  const RobotParams& p = *job.params;
  const int Y = sh.ny, Z = sh.nz, YZ = Y * Z;
  const int content = sh.content(), memory = sh.memory(), gs = sh.group_size(), q = sh.quarter();
  const float* __restrict F = job.field_in;
  float* __restrict out = job.field_out;
  auto slab = [&](const float* base, int c, int xx) { return base + sh.index(c, xx, 0, 0); };
  std::fill(s.planes_.begin(), s.planes_.end(), 0.0f);

  // Cross-channel terms of F_t at this slab: group means, memory mean, local activity per r.
  for (int ch = 0; ch < content; ++ch) {
    const float* __restrict f = slab(F, ch, x);
    float* __restrict gm = s.plane(kGroupMean + ch / gs);
    const int r = ch % q;
    float* __restrict a_abs = s.plane(kActAbs + r);
    float* __restrict a_sum = s.plane(kActSum + r);
    float* __restrict a_sq = s.plane(kActSq + r);
    float* __restrict a_quiet = s.plane(kActQuiet + r);
    for (int v = 0; v < YZ; ++v) {
      gm[v] += f[v];
      a_abs[v] += fabsf(f[v]);
      a_sum[v] += f[v];
      a_sq[v] += f[v] * f[v];
      a_quiet[v] += is_quiet(f[v]) ? 1.0f : 0.0f;
    }
  }
  float* __restrict mem_mean = s.plane(kNewGroup);  // borrowed until the reduction below
  for (int ch = content; ch < content + memory; ++ch) {
    const float* __restrict f = slab(F, ch, x);
    for (int v = 0; v < YZ; ++v) mem_mean[v] += f[v];
  }
  const float inv_gs = 1.0f / float(gs), inv_mem = 1.0f / float(memory);
  for (int g = 0; g < kContentGroups; ++g) {
    float* __restrict gm = s.plane(kGroupMean + g);
    for (int v = 0; v < YZ; ++v) gm[v] *= inv_gs;
  }
  for (int r = 0; r < q; ++r) {
    const float* __restrict d_ret = slab(F, sh.dyn_channel(0, r), x);
    const float* __restrict d_dif = slab(F, sh.dyn_channel(1, r), x);
    const float* __restrict d_cou = slab(F, sh.dyn_channel(2, r), x);
    const float* __restrict d_pla = slab(F, sh.dyn_channel(3, r), x);
    float* __restrict lam = s.plane(kLam + r);
    float* __restrict rate = s.plane(kRate + r);
    float* __restrict eta = s.plane(kEta + r);
    float* __restrict cou = s.plane(kCoupling + r);
    for (int v = 0; v < YZ; ++v) {
      lam[v] = retention_rate(d_ret[v]);
      rate[v] = diffusion_rate(d_dif[v]);
      eta[v] = plasticity_gain(d_pla[v]);
      cou[v] = memory_coupling(d_cou[v], mem_mean[v] * inv_mem);
    }
  }

  // Sensors whose imprint window reaches each column (x, y) of this slab, in sensor order.
  for (int y = 0; y < Y; ++y) {
    int n = 0;
    for (int i = 0; i < p.sensor_count && n < kMaxNear; ++i)
      if (std::abs(p.site[i][0] - x) <= kImprintRadius && std::abs(p.site[i][1] - y) <= kImprintRadius)
        s.near_[size_t(y) * kMaxNear + n++] = i;
    s.near_count_[y] = n;
  }

  // Content and memory channels.
  const int xm = std::max(x - 1, 0), xp = std::min(x + 1, sh.nx - 1);
  float* __restrict core = s.row_.data();
  float* __restrict imprint = s.imprint_.data();
  for (int ch = 0; ch < content + memory; ++ch) {
    const int r = ch % q;
    const float* __restrict lam = s.plane(kLam + r);
    const float* __restrict rate = s.plane(kRate + r);
    const float* __restrict c_slab = slab(F, ch, x);
    const float* __restrict xm_slab = slab(F, ch, xm);
    const float* __restrict xp_slab = slab(F, ch, xp);
    for (int y = 0; y < Y; ++y) {
      const int o = y * Z;
      const float* __restrict c = c_slab + o;
      const float* __restrict ym = c_slab + std::max(y - 1, 0) * Z;
      const float* __restrict yp = c_slab + std::min(y + 1, Y - 1) * Z;
      const float* __restrict xmr = xm_slab + o;
      const float* __restrict xpr = xp_slab + o;
      core[0] = evolve_core(c[0], laplacian7(c[0], xmr[0], xpr[0], ym[0], yp[0], c[0], c[1]), lam[o], rate[o]);
      for (int z = 1; z < Z - 1; ++z)
        core[z] = evolve_core(c[z], laplacian7(c[z], xmr[z], xpr[z], ym[z], yp[z], c[z - 1], c[z + 1]),
                              lam[o + z], rate[o + z]);
      core[Z - 1] = evolve_core(c[Z - 1],
                                laplacian7(c[Z - 1], xmr[Z - 1], xpr[Z - 1], ym[Z - 1], yp[Z - 1], c[Z - 2], c[Z - 1]),
                                lam[o + Z - 1], rate[o + Z - 1]);
      float* __restrict dst = out + sh.index(ch, x, y, 0);
      if (ch < content) {
        std::fill(imprint, imprint + Z, 0.0f);
        const int* near = &s.near_[size_t(y) * kMaxNear];
        for (int z = 0; z < Z && s.near_count_[y] > 0; ++z) {
          float s_field = 0.0f, e_field = 0.0f;
          bool touched = false;
          for (int k = 0; k < s.near_count_[y]; ++k) {
            const int i = near[k];
            const int dz = std::abs(p.site[i][2] - z);
            if (dz > kImprintRadius) continue;
            const float decay = imprint_decay(std::abs(p.site[i][0] - x) + std::abs(p.site[i][1] - y) + dz);
            s_field += imprint_share(p.mix[i][ch], job.sensors[i], decay);
            e_field += imprint_share(p.mix[i][ch], job.errors[i], decay);
            touched = true;
          }
          if (touched) imprint[z] = imprint_term(s_field, e_field, s.plane(kEta + r)[o + z]);
        }
        const float* __restrict cou = s.plane(kCoupling + r) + o;
        for (int z = 0; z < Z; ++z) dst[z] = content_next(core[z], imprint[z], cou[z]);
      } else {
        const int j = ch - content;
        const float* __restrict gm = s.plane(kGroupMean + j % kContentGroups) + o;
        if (job.pattern_active) {
          const float* pat = job.pattern + size_t(j) * sh.coarse_voxels();
          for (int z = 0; z < Z; ++z) dst[z] = memory_next(core[z], gm[z], pattern_sample(pat, sh, x, y, z));
        } else {
          for (int z = 0; z < Z; ++z) dst[z] = memory_next(core[z], gm[z], 0.0f);
        }
      }
    }
  }

  // Dynamics channels: D <- 0.95 D + 0.05 U(local activity).
  const int per_r = content / q;
  for (int d = 0; d < sh.dynamics(); ++d) {
    const int quarter = d / q, r = d % q;
    const float* __restrict f = slab(F, sh.dynamics_begin() + d, x);
    float* __restrict dst = out + sh.index(sh.dynamics_begin() + d, x, 0, 0);
    const float* __restrict a_abs = s.plane(kActAbs + r);
    const float* __restrict a_sum = s.plane(kActSum + r);
    const float* __restrict a_sq = s.plane(kActSq + r);
    const float* __restrict a_quiet = s.plane(kActQuiet + r);
    for (int v = 0; v < YZ; ++v)
      dst[v] = dynamics_next(f[v], dynamics_target(quarter, local_activity(a_abs[v], a_sum[v], a_sq[v], a_quiet[v], per_r)));
  }

  // This slab's share of the summary of F_t+1: A_g pooled, |A_g| and ramp-weighted sums.
  std::fill(s.plane(kNewGroup), s.plane(kNewGroup) + kContentGroups * YZ, 0.0f);
  for (int ch = 0; ch < content; ++ch) {
    const float* __restrict f = slab(out, ch, x);
    float* __restrict a = s.plane(kNewGroup + ch / gs);
    for (int v = 0; v < YZ; ++v) a[v] += f[v];
  }
  const float rx = ramp(x, sh.nx);
  for (int g = 0; g < kContentGroups; ++g) {
    const float* __restrict a = s.plane(kNewGroup + g);
    float total = 0.0f, abs_total = 0.0f, ry_sum = 0.0f, rz_sum = 0.0f;
    for (int y = 0; y < Y; ++y) {
      const float ry = ramp(y, Y);
      float row_total = 0.0f;
      for (int z = 0; z < Z; ++z) {
        const float av = a[y * Z + z] * inv_gs;
        partial.pool[g][pool_block(x, y, z, sh)] += av;
        abs_total += fabsf(av);
        row_total += av;
        rz_sum += ramp(z, Z) * av;
      }
      total += row_total;
      ry_sum += ry * row_total;
    }
    partial.abs_sum[g] += abs_total;
    partial.ramp_sum[g][0] += rx * total;
    partial.ramp_sum[g][1] += ry_sum;
    partial.ramp_sum[g][2] += rz_sum;
  }
}

}  // namespace fieldbrain::cpu
