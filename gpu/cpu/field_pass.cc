#include "gpu/cpu/field_pass.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "gpu/model/field_math.h"

namespace fieldbrain::cpu {
namespace {

// Terms of SlabScratch, block_ floats each: 4 group means of F_t, memory coupling per r (4), lam,
// k, eta per r (4 each), activity sums per r (4 each of |F|, F, F^2, quiet count), A_g of the new
// field (4), the memory channels' sum.
constexpr int kGroupMean = 0, kCoupling = 4, kLam = 8, kRate = 12, kEta = 16;
constexpr int kActAbs = 20, kActSum = 24, kActSq = 28, kActQuiet = 32, kNewGroup = 36, kMemSum = 40;
constexpr int kTerms = 41;
constexpr int kMaxNear = 32;  // sensors whose imprint reaches one column (at most 25 distinct)
// Voxels per block: a block's terms (kTerms x kBlockVoxels floats, 21 KiB) fit in L1 beside the
// rows the stencil reads.
constexpr int kBlockVoxels = 128;

// Rows per block: the largest divisor of ny whose rows hold at most kBlockVoxels voxels (one row
// where a row alone is longer).
int BlockRows(const FieldShape& sh) {
  int rows = 1;
  for (int r = 1; r <= sh.ny; ++r)
    if (sh.ny % r == 0 && r * sh.nz <= kBlockVoxels) rows = r;
  return rows;
}

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

// F' of one z-row. `c` points one past the start of a copy of the row with a replicated voxel at
// each end (PadRow), so the loop has no border cases and runs at full vector width; ym .. xp are
// the rows around it, their indices already clamped at the field's borders.
void CoreRow(const float* __restrict c, const float* __restrict ym, const float* __restrict yp,
             const float* __restrict xm, const float* __restrict xp, const float* __restrict lam,
             const float* __restrict rate, float* __restrict core, int Z) {
  for (int z = 0; z < Z; ++z)
    core[z] = model::evolve_core(c[z], model::laplacian7(c[z], xm[z], xp[z], ym[z], yp[z], c[z - 1], c[z + 1]),
                                 lam[z], rate[z]);
}

void PadRow(const float* __restrict src, int Z, float* __restrict padded) {
  padded[0] = src[0];
  for (int z = 0; z < Z; ++z) padded[z + 1] = src[z];
  padded[Z + 1] = src[Z - 1];
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
    : rows_(BlockRows(shape)),
      block_(rows_ * shape.nz),
      terms_(size_t(kTerms) * block_),
      core_(block_),
      padded_(shape.nz + 2),
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

// One slab's pass, block by block of y rows. Every per-voxel sum keeps the order of channels (and
// of y, then z, for the pooled sums) that model:: defines, so the result does not depend on the
// block size.
class SlabPass {
 public:
  SlabPass(const SlabJob& job, int x, SlabScratch& s, model::FieldSummary& partial)
      : job_(job), sh_(*job.shape), p_(*job.params), s_(s), partial_(partial), x_(x),
        xm_(std::max(x - 1, 0)), xp_(std::min(x + 1, job.shape->nx - 1)) {}

  void Run() {
    FindNearSensors();
    if (job_.pattern_active) InterpolatePatternX();
    for (int y0 = 0; y0 < sh_.ny; y0 += s_.rows_) Block(y0);
    WriteMemoryPlane();
  }

 private:
  const float* In(int ch, int x, int y) const { return job_.field_in + sh_.index(ch, x, y, 0); }
  float* Out(int ch, int y) const { return job_.field_out + sh_.index(ch, x_, y, 0); }
  float* Term(int i) const { return s_.term(i); }

  // Sensors whose imprint window reaches each column (x, y) of this slab, in sensor order.
  void FindNearSensors() {
    for (int y = 0; y < sh_.ny; ++y) {
      int n = 0;
      for (int i = 0; i < p_.sensor_count && n < kMaxNear; ++i)
        if (std::abs(p_.site[i][0] - x_) <= model::kImprintRadius && std::abs(p_.site[i][1] - y) <= model::kImprintRadius)
          s_.near_[size_t(y) * kMaxNear + n++] = i;
      s_.near_count_[y] = n;
    }
  }

  // The recalled pattern at this slab's x, per memory channel: pattern_sample's x lerp of the
  // z-upsampled columns.
  void InterpolatePatternX() {
    const model::PatternAxis ax = model::pattern_axis(x_, sh_.nx / 4);
    const int plane = (sh_.ny / 4) * sh_.nz;
    for (int j = 0; j < sh_.memory(); ++j) {
      const float* pz = job_.pattern_z + size_t(j) * (sh_.nx / 4) * plane;
      LerpRun(pz + ax.i0 * plane, pz + ax.i1 * plane, ax.w, s_.pattern_x_.data() + size_t(j) * plane, plane);
    }
  }

  void Block(int y0) {
    const int B = s_.block_, q = sh_.quarter(), gs = sh_.group_size();
    std::fill(Term(kGroupMean), Term(kGroupMean + kContentGroups), 0.0f);
    for (int r = 0; r < q; ++r)
      for (int t : {kActAbs, kActSum, kActSq, kActQuiet}) std::fill(Term(t + r), Term(t + r) + B, 0.0f);
    std::fill(Term(kNewGroup), Term(kNewGroup + kContentGroups), 0.0f);
    std::fill(Term(kMemSum), Term(kMemSum) + B, 0.0f);

    // The per-voxel rates, from the dynamics channels and the memory channels' mean.
    for (int ch = sh_.memory_begin(); ch < sh_.dynamics_begin(); ++ch) AddInto(In(ch, x_, y0), Term(kMemSum), B);
    for (int r = 0; r < q; ++r)
      VoxelRates(In(sh_.dyn_channel(0, r), x_, y0), In(sh_.dyn_channel(1, r), x_, y0),
                 In(sh_.dyn_channel(2, r), x_, y0), In(sh_.dyn_channel(3, r), x_, y0), Term(kMemSum),
                 1.0f / float(sh_.memory()), Term(kLam + r), Term(kRate + r), Term(kEta + r), Term(kCoupling + r), B);

    // Content: F' plus the imprint and the coupling; the activity and group sums of F_t and the
    // group sums of F_t+1 gathered on the way.
    for (int ch = 0; ch < sh_.content(); ++ch) {
      const int r = ch % q, g = ch / gs;
      Core(ch, y0, r);
      for (int i = 0; i < s_.rows_; ++i) {
        const int o = i * sh_.nz;
        ContentRow(s_.core_.data() + o, Imprint(ch, y0 + i, Term(kEta + r) + o), Term(kCoupling + r) + o,
                   Out(ch, y0 + i), sh_.nz);
      }
      AccumulateActivity(In(ch, x_, y0), Term(kGroupMean + g), Term(kActAbs + r), Term(kActSum + r),
                         Term(kActSq + r), Term(kActQuiet + r), B);
      AddInto(Out(ch, y0), Term(kNewGroup + g), B);
    }
    for (int g = 0; g < kContentGroups; ++g) Scale(Term(kGroupMean + g), 1.0f / float(gs), B);

    // Memory channels: F', the group mean, the recalled pattern; their coarse sums on the way.
    for (int j = 0; j < sh_.memory(); ++j) {
      const int ch = sh_.content() + j;
      Core(ch, y0, ch % q);
      for (int i = 0; i < s_.rows_; ++i) {
        const int y = y0 + i, o = i * sh_.nz;
        float* dst = Out(ch, y);
        const float* gm = Term(kGroupMean + j % kContentGroups) + o;
        if (job_.pattern_active) {
          // pattern_sample along the row: the y lerp of this slab's two nearest coarse rows.
          const float* px = s_.pattern_x_.data() + size_t(j) * (sh_.ny / 4) * sh_.nz;
          const model::PatternAxis ay = model::pattern_axis(y, sh_.ny / 4);
          LerpRun(px + ay.i0 * sh_.nz, px + ay.i1 * sh_.nz, ay.w, s_.pattern_row_.data(), sh_.nz);
          MemoryRowWithPattern(s_.core_.data() + o, gm, s_.pattern_row_.data(), dst, sh_.nz);
        } else {
          MemoryRow(s_.core_.data() + o, gm, dst, sh_.nz);
        }
        // coarse_memory_value's z columns: this row added to its coarse y cell's (y rows in order).
        float* columns = s_.memory_columns_.data() + (size_t(j) * (sh_.ny / 4) + size_t(y / 4)) * sh_.nz;
        if (y % 4 == 0) std::fill(columns, columns + sh_.nz, 0.0f);
        AddInto(dst, columns, sh_.nz);
      }
    }

    // Dynamics channels: D <- 0.95 D + 0.05 U(local activity).
    const int per_r = sh_.content() / q;
    for (int d = 0; d < sh_.dynamics(); ++d) {
      const int r = d % q, ch = sh_.dynamics_begin() + d;
      const float *f = In(ch, x_, y0), *a_abs = Term(kActAbs + r), *a_sum = Term(kActSum + r),
                  *a_sq = Term(kActSq + r), *a_quiet = Term(kActQuiet + r);
      float* dst = Out(ch, y0);
      switch (d / q) {
        case 0: DynamicsPlane<0>(f, a_abs, a_sum, a_sq, a_quiet, per_r, dst, B); break;
        case 1: DynamicsPlane<1>(f, a_abs, a_sum, a_sq, a_quiet, per_r, dst, B); break;
        case 2: DynamicsPlane<2>(f, a_abs, a_sum, a_sq, a_quiet, per_r, dst, B); break;
        case 3: DynamicsPlane<3>(f, a_abs, a_sum, a_sq, a_quiet, per_r, dst, B); break;
      }
    }

    PoolNewGroups(y0);
  }

  // F' of channel ch over the block's rows into core_, with the rates of its r.
  void Core(int ch, int y0, int r) {
    const int Y = sh_.ny, Z = sh_.nz;
    float* padded = s_.padded_.data();
    for (int i = 0; i < s_.rows_; ++i) {
      const int y = y0 + i, o = i * Z;
      PadRow(In(ch, x_, y), Z, padded);
      CoreRow(padded + 1, In(ch, x_, std::max(y - 1, 0)), In(ch, x_, std::min(y + 1, Y - 1)), In(ch, xm_, y),
              In(ch, xp_, y), Term(kLam + r) + o, Term(kRate + r) + o, s_.core_.data() + o, Z);
    }
  }

  // The imprint of content channel ch along row y (zero where no sensor reaches it): each near
  // sensor's share of S and of E, added per voxel in sensor order, then imprint_term with the
  // voxel's eta. A sensor reaches at most 2 kImprintRadius + 1 voxels of a row.
  const float* Imprint(int ch, int y, const float* eta) {
    const int Z = sh_.nz, near_count = s_.near_count_[y];
    if (near_count == 0) return s_.zeros_.data();
    float* s_field = s_.s_field_.data();
    float* e_field = s_.e_field_.data();
    unsigned char* touched = s_.touched_.data();
    std::fill(s_field, s_field + Z, 0.0f);
    std::fill(e_field, e_field + Z, 0.0f);
    std::fill(touched, touched + Z, 0);
    const int* near = &s_.near_[size_t(y) * kMaxNear];
    for (int k = 0; k < near_count; ++k) {
      const int i = near[k];
      const int plane_l1 = std::abs(p_.site[i][0] - x_) + std::abs(p_.site[i][1] - y);
      const float mix = p_.mix[i][ch], sensor = job_.sensors[i], error = job_.errors[i];
      const int zc = p_.site[i][2];
      for (int z = std::max(zc - model::kImprintRadius, 0); z <= std::min(zc + model::kImprintRadius, Z - 1); ++z) {
        const float decay = s_.decay_[plane_l1 + std::abs(zc - z)];
        s_field[z] += model::imprint_share(mix, sensor, decay);
        e_field[z] += model::imprint_share(mix, error, decay);
        touched[z] = 1;
      }
    }
    float* imprint = s_.imprint_.data();
    for (int z = 0; z < Z; ++z) imprint[z] = touched[z] ? model::imprint_term(s_field[z], e_field[z], eta[z]) : 0.0f;
    return imprint;
  }

  // This block's share of the summary of F_t+1: each group's A_g pooled, added voxel by voxel in
  // y, then z order (the order model::pool_block's sums always took), four groups at a time.
  void PoolNewGroups(int y0) {
    const int Z = sh_.nz, cell_z = Z / kPoolCells;
    const float inv_gs = 1.0f / float(sh_.group_size());
    for (int i = 0; i < s_.rows_; ++i) {
      const int base = model::pool_block(x_, y0 + i, 0, sh_);
      for (int c = 0; c < kPoolCells; ++c) {
        float acc[kContentGroups];
        for (int g = 0; g < kContentGroups; ++g) acc[g] = partial_.pool[g][base + c];
        for (int z = c * cell_z; z < (c + 1) * cell_z; ++z)
          for (int g = 0; g < kContentGroups; ++g) acc[g] += Term(kNewGroup + g)[i * Z + z] * inv_gs;
        for (int g = 0; g < kContentGroups; ++g) partial_.pool[g][base + c] = acc[g];
      }
    }
  }

  // The slab's memory plane: each coarse cell's four z columns added (coarse_memory_value's order).
  void WriteMemoryPlane() {
    const int Z = sh_.nz;
    for (int c = 0; c < sh_.memory() * (sh_.ny / 4); ++c) {
      const float* columns = s_.memory_columns_.data() + size_t(c) * Z;
      float* cells = job_.memory_plane + size_t(c) * (Z / 4);
      for (int k = 0; k < Z / 4; ++k)
        cells[k] = columns[4 * k] + columns[4 * k + 1] + columns[4 * k + 2] + columns[4 * k + 3];
    }
  }

  const SlabJob& job_;
  const FieldShape& sh_;
  const RobotParams& p_;
  SlabScratch& s_;
  model::FieldSummary& partial_;
  const int x_, xm_, xp_;
};

void EvolveSlab(const SlabJob& job, int x, SlabScratch& s, model::FieldSummary& partial) {
  SlabPass(job, x, s, partial).Run();
}

}  // namespace fieldbrain::cpu
