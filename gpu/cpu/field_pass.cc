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

// The loops below are small functions with __restrict parameters: that is where GCC trusts
// restrict, and it lets every one of them vectorise.

void AccumulateActivity(const float* __restrict f, float* __restrict group, float* __restrict a_abs,
                        float* __restrict a_sum, float* __restrict a_sq, float* __restrict a_quiet, int n) {
  for (int v = 0; v < n; ++v) {
    group[v] += f[v];
    a_abs[v] += fabsf(f[v]);
    a_sum[v] += f[v];
    a_sq[v] += f[v] * f[v];
    a_quiet[v] += model::is_quiet(f[v]) ? 1.0f : 0.0f;
  }
}

void AddInto(const float* __restrict f, float* __restrict acc, int n) {
  for (int v = 0; v < n; ++v) acc[v] += f[v];
}

void Scale(float* __restrict a, float k, int n) {
  for (int v = 0; v < n; ++v) a[v] *= k;
}

void VoxelRates(const float* __restrict d_ret, const float* __restrict d_dif, const float* __restrict d_cou,
                const float* __restrict d_pla, const float* __restrict mem_sum, float inv_mem,
                float* __restrict lam, float* __restrict rate, float* __restrict eta, float* __restrict cou, int n) {
  for (int v = 0; v < n; ++v) {
    lam[v] = model::retention_rate(d_ret[v]);
    rate[v] = model::diffusion_rate(d_dif[v]);
    eta[v] = model::plasticity_gain(d_pla[v]);
    cou[v] = model::memory_coupling(d_cou[v], mem_sum[v] * inv_mem);
  }
}

// F' of one z-row. `c` points into a padded plane (one replicated voxel on each side of z, one
// replicated row on each side of y, row pitch `pitch`), so the loop has no border cases and runs
// at full vector width.
void CoreRow(const float* __restrict c, int pitch, const float* __restrict xm, const float* __restrict xp,
             const float* __restrict lam, const float* __restrict rate, float* __restrict core, int Z) {
  for (int z = 0; z < Z; ++z)
    core[z] = model::evolve_core(
        c[z], model::laplacian7(c[z], xm[z], xp[z], c[z - pitch], c[z + pitch], c[z - 1], c[z + 1]), lam[z], rate[z]);
}

// Copies one channel's slab into a plane padded by one replicated voxel on every side.
void PadPlane(const float* __restrict src, int Y, int Z, float* __restrict padded) {
  const int pitch = Z + 2;
  for (int y = 0; y < Y; ++y) {
    float* row = padded + (y + 1) * pitch;
    const float* in = src + y * Z;
    row[0] = in[0];
    for (int z = 0; z < Z; ++z) row[z + 1] = in[z];
    row[Z + 1] = in[Z - 1];
  }
  for (int z = 0; z < pitch; ++z) {
    padded[z] = padded[pitch + z];
    padded[(Y + 1) * pitch + z] = padded[Y * pitch + z];
  }
}

void ContentRow(const float* __restrict core, const float* __restrict imprint, const float* __restrict cou,
                float* __restrict dst, int Z) {
  for (int z = 0; z < Z; ++z) dst[z] = model::content_next(core[z], imprint[z], cou[z]);
}

void MemoryRow(const float* __restrict core, const float* __restrict group_mean, float* __restrict dst, int Z) {
  for (int z = 0; z < Z; ++z) dst[z] = model::memory_next(core[z], group_mean[z], 0.0f);
}

// out[z] = lerp(a[z], b[z], w): the x and y lerps of pattern_sample over a run of values.
void LerpRun(const float* __restrict a, const float* __restrict b, float w, float* __restrict out, int n) {
  for (int i = 0; i < n; ++i) out[i] = model::pattern_lerp(a[i], b[i], w);
}

void MemoryRowWithPattern(const float* __restrict core, const float* __restrict group_mean,
                          const float* __restrict pattern, float* __restrict dst, int Z) {
  for (int z = 0; z < Z; ++z) dst[z] = model::memory_next(core[z], group_mean[z], pattern[z]);
}

// One dynamics channel of quarter Q over a slab; Q is a template argument so the quarter's
// branch folds away and the loop vectorises.
template <int Q>
void DynamicsPlane(const float* __restrict f, const float* __restrict a_abs, const float* __restrict a_sum,
                   const float* __restrict a_sq, const float* __restrict a_quiet, int per_r, float* __restrict dst,
                   int n) {
  for (int v = 0; v < n; ++v)
    dst[v] = model::dynamics_next(
        f[v], model::dynamics_target(Q, model::local_activity(a_abs[v], a_sum[v], a_sq[v], a_quiet[v], per_r)));
}

}  // namespace

SlabScratch::SlabScratch(const FieldShape& shape)
    : plane_(shape.ny * shape.nz),
      planes_(size_t(kPlanes) * plane_),
      row_(shape.nz),
      padded_(size_t(shape.ny + 2) * (shape.nz + 2)),
      imprint_(shape.nz),
      zeros_(shape.nz, 0.0f),
      s_field_(shape.nz),
      e_field_(shape.nz),
      touched_(shape.nz),
      pattern_x_(size_t(shape.memory()) * (shape.ny / 4) * shape.nz),
      pattern_row_(shape.nz),
      memory_columns_(size_t(shape.memory()) * (shape.ny / 4) * shape.nz),
      near_(size_t(shape.ny) * kMaxNear),
      near_count_(shape.ny) {
  for (int d = 0; d < int(decay_.size()); ++d) decay_[d] = model::imprint_decay(d);
}

void UpsamplePatternZ(const float* coarse, const FieldShape& sh, float* out) {
  const int cz = sh.nz / 4, Z = sh.nz;
  constexpr int kMaxZ = 1024;
  if (Z > kMaxZ) {  // fields this deep are not made in practice; the plain formula serves them
    const int columns = sh.memory() * (sh.nx / 4) * (sh.ny / 4);
    for (int c = 0; c < columns; ++c, out += Z)
      for (int z = 0; z < Z; ++z)
        out[z] = model::pattern_z(coarse + size_t(c / ((sh.nx / 4) * (sh.ny / 4))) * sh.coarse_voxels(), sh,
                                  (c / (sh.ny / 4)) % (sh.nx / 4), c % (sh.ny / 4), model::pattern_axis(z, cz));
    return;
  }
  int i0[kMaxZ], i1[kMaxZ];
  float w[kMaxZ];
  for (int z = 0; z < Z; ++z) {
    const model::PatternAxis a = model::pattern_axis(z, cz);
    i0[z] = a.i0;
    i1[z] = a.i1;
    w[z] = a.w;
  }
  // Every coarse (x, y) column of every channel, contiguous in `coarse`: model::pattern_z's lerp.
  const int columns = sh.memory() * (sh.nx / 4) * (sh.ny / 4);
  for (int c = 0; c < columns; ++c, out += Z) {
    const float* cell = coarse + size_t(c) * cz;
    for (int z = 0; z < Z; ++z) out[z] = model::pattern_lerp(cell[i0[z]], cell[i1[z]], w[z]);
  }
}

void PoolFromMemoryPlanes(const float* planes, const FieldShape& sh, float* pooled) {
  const int cx = sh.nx / 4, cy = sh.ny / 4, cz = sh.nz / 4;
  const int64_t plane_floats = MemoryPlaneFloats(sh);
  for (int j = 0; j < sh.memory(); ++j)
    for (int bx = 0; bx < cx; ++bx)
      for (int c = 0; c < cy * cz; ++c) {
        float sum = 0.0f;
        for (int dx = 0; dx < 4; ++dx) sum += planes[(4 * bx + dx) * plane_floats + int64_t(j) * cy * cz + c];
        pooled[(int64_t(j) * cx + bx) * cy * cz + c] = sum * (1.0f / 64.0f);
      }
}

// The imprint of content channel ch along row (x, y) (a row of zeros where no sensor reaches it):
// each near sensor's share of S and of E, added per voxel in sensor order (a sensor reaches at
// most 2 kImprintRadius + 1 voxels of a row), then imprint_term with the voxel's eta.
const float* RowImprint(const SlabJob& job, int x, int y, int ch, const float* eta, SlabScratch& s) {
  const RobotParams& p = *job.params;
  const int Z = job.shape->nz, near_count = s.near_count_[y];
  if (near_count == 0) return s.zeros_.data();
  float* s_field = s.s_field_.data();
  float* e_field = s.e_field_.data();
  unsigned char* touched = s.touched_.data();
  std::fill(s_field, s_field + Z, 0.0f);
  std::fill(e_field, e_field + Z, 0.0f);
  std::fill(touched, touched + Z, 0);
  const int* near = &s.near_[size_t(y) * kMaxNear];
  for (int k = 0; k < near_count; ++k) {
    const int i = near[k];
    const int plane_l1 = std::abs(p.site[i][0] - x) + std::abs(p.site[i][1] - y);
    const float mix = p.mix[i][ch], sensor = job.sensors[i], error = job.errors[i];
    const int zc = p.site[i][2];
    for (int z = std::max(zc - model::kImprintRadius, 0); z <= std::min(zc + model::kImprintRadius, Z - 1); ++z) {
      const float decay = s.decay_[plane_l1 + std::abs(zc - z)];
      s_field[z] += model::imprint_share(mix, sensor, decay);
      e_field[z] += model::imprint_share(mix, error, decay);
      touched[z] = 1;
    }
  }
  float* imprint = s.imprint_.data();
  for (int z = 0; z < Z; ++z) imprint[z] = touched[z] ? model::imprint_term(s_field[z], e_field[z], eta[z]) : 0.0f;
  return imprint;
}

void EvolveSlab(const SlabJob& job, int x, SlabScratch& s, model::FieldSummary& partial) {
  using namespace model;
  const FieldShape& sh = *job.shape;
  const RobotParams& p = *job.params;
  const int Y = sh.ny, Z = sh.nz, YZ = Y * Z;
  const int content = sh.content(), memory = sh.memory(), gs = sh.group_size(), q = sh.quarter();
  const float* F = job.field_in;
  float* out = job.field_out;
  auto slab = [&](const float* base, int c, int xx) { return base + sh.index(c, xx, 0, 0); };
  std::fill(s.planes_.begin(), s.planes_.end(), 0.0f);

  // Cross-channel terms of F_t at this slab: group means, memory mean, local activity per r.
  for (int ch = 0; ch < content; ++ch) {
    const int r = ch % q;
    AccumulateActivity(slab(F, ch, x), s.plane(kGroupMean + ch / gs), s.plane(kActAbs + r), s.plane(kActSum + r),
                       s.plane(kActSq + r), s.plane(kActQuiet + r), YZ);
  }
  float* mem_sum = s.plane(kNewGroup);  // borrowed until the reduction below
  for (int ch = content; ch < content + memory; ++ch) AddInto(slab(F, ch, x), mem_sum, YZ);
  const float inv_gs = 1.0f / float(gs), inv_mem = 1.0f / float(memory);
  for (int g = 0; g < kContentGroups; ++g) Scale(s.plane(kGroupMean + g), inv_gs, YZ);
  for (int r = 0; r < q; ++r)
    VoxelRates(slab(F, sh.dyn_channel(0, r), x), slab(F, sh.dyn_channel(1, r), x), slab(F, sh.dyn_channel(2, r), x),
               slab(F, sh.dyn_channel(3, r), x), mem_sum, inv_mem, s.plane(kLam + r), s.plane(kRate + r),
               s.plane(kEta + r), s.plane(kCoupling + r), YZ);

  // Sensors whose imprint window reaches each column (x, y) of this slab, in sensor order.
  for (int y = 0; y < Y; ++y) {
    int n = 0;
    for (int i = 0; i < p.sensor_count && n < kMaxNear; ++i)
      if (std::abs(p.site[i][0] - x) <= kImprintRadius && std::abs(p.site[i][1] - y) <= kImprintRadius)
        s.near_[size_t(y) * kMaxNear + n++] = i;
    s.near_count_[y] = n;
  }

  // The recalled pattern at this slab's x, per memory channel: pattern_sample's x lerp of the
  // z-upsampled columns.
  if (job.pattern_active) {
    const PatternAxis ax = pattern_axis(x, sh.nx / 4);
    const int cy = Y / 4, plane = cy * Z;
    for (int j = 0; j < memory; ++j) {
      const float* pz = job.pattern_z + size_t(j) * (sh.nx / 4) * plane;
      LerpRun(pz + ax.i0 * plane, pz + ax.i1 * plane, ax.w, s.pattern_x_.data() + size_t(j) * plane, plane);
    }
  }

  // Content and memory channels.
  const int xm = std::max(x - 1, 0), xp = std::min(x + 1, sh.nx - 1);
  float* core = s.row_.data();
  for (int ch = 0; ch < content + memory; ++ch) {
    const int r = ch % q;
    const float* lam = s.plane(kLam + r);
    const float* rate = s.plane(kRate + r);
    const float* xm_slab = slab(F, ch, xm);
    const float* xp_slab = slab(F, ch, xp);
    float* padded = s.padded_.data();
    PadPlane(slab(F, ch, x), Y, Z, padded);
    const int pitch = Z + 2;
    for (int y = 0; y < Y; ++y) {
      const int o = y * Z;
      CoreRow(padded + (y + 1) * pitch + 1, pitch, xm_slab + o, xp_slab + o, lam + o, rate + o, core, Z);
      float* dst = out + sh.index(ch, x, y, 0);
      if (ch < content) {
        ContentRow(core, RowImprint(job, x, y, ch, s.plane(kEta + r) + o, s), s.plane(kCoupling + r) + o, dst, Z);
      } else {
        const int j = ch - content;
        const float* gm = s.plane(kGroupMean + j % kContentGroups) + o;
        if (job.pattern_active) {
          // pattern_sample along the row: the y lerp of this slab's two nearest coarse rows.
          const float* px = s.pattern_x_.data() + size_t(j) * (Y / 4) * Z;
          const PatternAxis ay = pattern_axis(y, Y / 4);
          float* row = s.pattern_row_.data();
          LerpRun(px + ay.i0 * Z, px + ay.i1 * Z, ay.w, row, Z);
          MemoryRowWithPattern(core, gm, row, dst, Z);
        } else {
          MemoryRow(core, gm, dst, Z);
        }
        // coarse_memory_value's z columns: this row added to its coarse y cell's (y rows in order).
        float* columns = s.memory_columns_.data() + (size_t(j) * (Y / 4) + size_t(y / 4)) * Z;
        if (y % 4 == 0) std::fill(columns, columns + Z, 0.0f);
        AddInto(dst, columns, Z);
      }
    }
  }

  // The slab's memory plane: each coarse cell's four z columns added (coarse_memory_value's order).
  for (int c = 0; c < memory * (Y / 4); ++c) {
    const float* columns = s.memory_columns_.data() + size_t(c) * Z;
    float* cells = job.memory_plane + size_t(c) * (Z / 4);
    for (int k = 0; k < Z / 4; ++k)
      cells[k] = columns[4 * k] + columns[4 * k + 1] + columns[4 * k + 2] + columns[4 * k + 3];
  }

  // Dynamics channels: D <- 0.95 D + 0.05 U(local activity).
  const int per_r = content / q;
  for (int d = 0; d < sh.dynamics(); ++d) {
    const int r = d % q;
    const float* f = slab(F, sh.dynamics_begin() + d, x);
    float* dst = out + sh.index(sh.dynamics_begin() + d, x, 0, 0);
    const float *a_abs = s.plane(kActAbs + r), *a_sum = s.plane(kActSum + r), *a_sq = s.plane(kActSq + r),
                *a_quiet = s.plane(kActQuiet + r);
    switch (d / q) {
      case 0: DynamicsPlane<0>(f, a_abs, a_sum, a_sq, a_quiet, per_r, dst, YZ); break;
      case 1: DynamicsPlane<1>(f, a_abs, a_sum, a_sq, a_quiet, per_r, dst, YZ); break;
      case 2: DynamicsPlane<2>(f, a_abs, a_sum, a_sq, a_quiet, per_r, dst, YZ); break;
      default: DynamicsPlane<3>(f, a_abs, a_sum, a_sq, a_quiet, per_r, dst, YZ); break;
    }
  }

  // This slab's share of the summary of F_t+1: A_g pooled.
  std::fill(s.plane(kNewGroup), s.plane(kNewGroup) + kContentGroups * YZ, 0.0f);
  for (int ch = 0; ch < content; ++ch) AddInto(slab(out, ch, x), s.plane(kNewGroup + ch / gs), YZ);
  // Added voxel by voxel in y, then z order (each pool cell's sum as pool_block's loop took it).
  const int cell_z = Z / kPoolCells;
  for (int g = 0; g < kContentGroups; ++g) {
    const float* a = s.plane(kNewGroup + g);
    for (int y = 0; y < Y; ++y) {
      float* pool = &partial.pool[g][pool_block(x, y, 0, sh)];
      for (int c = 0; c < kPoolCells; ++c) {
        float acc = pool[c];
        for (int z = c * cell_z; z < (c + 1) * cell_z; ++z) acc += a[y * Z + z] * inv_gs;
        pool[c] = acc;
      }
    }
  }
}

}  // namespace fieldbrain::cpu
