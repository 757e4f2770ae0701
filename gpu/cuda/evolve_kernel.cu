// The fused field pass of one cycle (DESIGN.md section 4, steps 2-3, and the first half of step
// 4's reduction): imprint + evolve F_t -> F_t+1, reading F_t once from DRAM and writing F_t+1
// once, then the block's share of the FieldSummary of F_t+1.
//
// Launch: grid (tiles_y, nx, rows), block tile.threads (= rows * nz/4), dynamic shared memory
// tile.smem_bytes (evolve_plan.h). One block per (batch row, x-slab, y-tile); one thread per 4
// consecutive z voxels, so every field access is a 16-byte float4 and a warp touches 512
// contiguous bytes. Default field: 128 blocks of 64 threads per robot, ~30 KiB shared memory.
//
// A block, in three phases (the math is model::, the same calls as gpu/cpu/field_pass.cc):
//   A. Cross-channel terms of F_t at its own voxels (all C channels, each read once): memory mean,
//      group means, per r = ch mod quarter the rates lam, k, eta and the memory coupling (kept in
//      shared memory), the local activity, and from it the dynamics channels of F_t+1 (written
//      here: they need no stencil).
//   B. Content and memory channels, one at a time: the channel's tile of the slab with a one-row
//      y halo goes through shared memory (double-buffered, the next channel's loads in flight
//      while this one computes; one barrier per channel), x +- 1 neighbours come from global
//      memory (L2: the neighbouring slabs' blocks run alongside). Content adds the imprint of the
//      sensors near each column, in sensor order, and the memory coupling; memory adds the group
//      means and the recalled pattern. Each thread adds its new content values into per-voxel
//      group sums A_g in shared memory.
//   C. The tile's share of the summary, deterministic: one thread per (group, row) sums a row in
//      z order, one thread per group sums the rows in y order, and writes kPartialFloats floats;
//      the close-cycle kernel adds the partials of a robot in a fixed order.
#include <mutex>

#include "gpu/cuda/kernel_macros.h"
#include "gpu/cuda/launch.h"
#include "gpu/model/field_math.h"
#include "gpu/model/readout.h"

namespace fieldbrain::cuda {
namespace {

using model::kImprintRadius;

struct Quad {
  float v[4];
};

__device__ __forceinline__ Quad LoadGlobal(const float* p) {
  const float4 t = __ldg(reinterpret_cast<const float4*>(p));
  return Quad{{t.x, t.y, t.z, t.w}};
}

__device__ __forceinline__ Quad LoadShared(const float* p) {
  const float4 t = *reinterpret_cast<const float4*>(p);
  return Quad{{t.x, t.y, t.z, t.w}};
}

__device__ __forceinline__ void Store(float* p, const Quad& q) {
  *reinterpret_cast<float4*>(p) = make_float4(q.v[0], q.v[1], q.v[2], q.v[3]);
}

__device__ __forceinline__ Quad Zero() { return Quad{{0.0f, 0.0f, 0.0f, 0.0f}}; }

// Tile loads per thread: (rows + 2) * quads over rows * quads threads, at most 3 (rows = 1).
constexpr int kMaxTileLoads = 3;

FB_KERNEL(EvolveKernel, kMaxEvolveThreads, const CycleArgs a) {
  const int row = blockIdx.z;
  if (row >= *a.count) return;  // uniform over the block, before any barrier

  const FieldShape sh = a.shape;
  const EvolveTile& t = a.tile;
  const EvolveSmem& s = t.smem;
  const int x = blockIdx.y, tile_y = blockIdx.x;
  const int y0 = tile_y * t.rows;
  const int tid = threadIdx.x;
  const int ty = tid / t.quads, quad = tid % t.quads;
  const int y = y0 + ty, z0 = 4 * quad;
  const int nz = sh.nz, V = t.rows * nz;
  const int v0 = ty * nz + z0;  // this thread's first voxel in the per-voxel shared arrays
  const int content = sh.content(), memory = sh.memory(), q = sh.quarter(), gs = sh.group_size();

  FB_DYNAMIC_SHARED(float4, smem_raw);
  float* smem = reinterpret_cast<float*>(smem_raw);
  float* rates = smem + s.rates;  // [kind][r][V]
  float* group_mean = smem + s.group_mean;
  float* new_group = smem + s.new_group;
  float* sensors = smem + s.sensors;
  float* errors = smem + s.errors;
  int* near = reinterpret_cast<int*>(smem + s.near);
  int* near_count = reinterpret_cast<int*>(smem + s.near_count);
  auto rate = [&](int kind, int r) { return rates + (kind * q + r) * V; };
  constexpr int kLam = 0, kDiff = 1, kEta = 2, kCoupling = 3;

  const BatchInputRow& in = a.rows[row];
  const int slot = in.slot;
  const RobotParams& p = a.params[slot];
  const float* F = reinterpret_cast<const float*>(a.pool + a.field_in[row]);
  float* out = reinterpret_cast<float*>(a.pool + a.field_out[row]);

  // The row's sensor values and errors, and per tile row the sensors whose imprint reaches the
  // column (x, y), in sensor order (the CPU engine's list, with its cap).
  for (int i = tid; i < p.sensor_count; i += t.threads) {
    sensors[i] = in.sensors[i];
    errors[i] = a.errors[int64_t(row) * kMaxSensors + i];
  }
  for (int r = tid; r < t.rows; r += t.threads) {
    int n = 0;
    for (int i = 0; i < p.sensor_count && n < kMaxNearSensors; ++i)
      if (abs(p.site[i][0] - x) <= kImprintRadius && abs(p.site[i][1] - (y0 + r)) <= kImprintRadius)
        near[r * kMaxNearSensors + n++] = i;
    near_count[r] = n;
  }

  // ---- Phase A: cross-channel terms of F_t at this thread's 4 voxels.
  auto voxel = [&](int c) { return sh.index(c, x, y, z0); };  // this thread's first voxel in channel c
  Quad mem_sum = Zero();
  for (int ch = content; ch < content + memory; ++ch) {
    const Quad f = LoadGlobal(F + voxel(ch));
#pragma unroll
    for (int e = 0; e < 4; ++e) mem_sum.v[e] += f.v[e];
  }
  for (int g = 0; g < kContentGroups; ++g) Store(group_mean + g * V + v0, Zero());
  const float inv_mem = 1.0f / float(memory), inv_gs = 1.0f / float(gs);
  const int per_r = content / q;
  for (int r = 0; r < q; ++r) {
    Quad a_abs = Zero(), a_sum = Zero(), a_sq = Zero(), a_quiet = Zero();
    for (int ch = r; ch < content; ch += q) {
      const Quad f = LoadGlobal(F + voxel(ch));
      float* gm = group_mean + (ch / gs) * V + v0;
      Quad m = LoadShared(gm);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        a_abs.v[e] += fabsf(f.v[e]);
        a_sum.v[e] += f.v[e];
        a_sq.v[e] += f.v[e] * f.v[e];
        a_quiet.v[e] += model::is_quiet(f.v[e]) ? 1.0f : 0.0f;
        m.v[e] += f.v[e];
      }
      Store(gm, m);
    }
    Quad d[kDynamicsQuarters];
#pragma unroll
    for (int quarter = 0; quarter < kDynamicsQuarters; ++quarter) d[quarter] = LoadGlobal(F + voxel(sh.dyn_channel(DynamicsQuarter(quarter), r)));
    Quad lam, diff, eta, coupling, d_next[kDynamicsQuarters];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      lam.v[e] = model::retention_rate(d[int(DynamicsQuarter::kRetention)].v[e]);
      diff.v[e] = model::diffusion_rate(d[int(DynamicsQuarter::kDiffusion)].v[e]);
      eta.v[e] = model::plasticity_gain(d[int(DynamicsQuarter::kPlasticity)].v[e]);
      coupling.v[e] = model::memory_coupling(d[int(DynamicsQuarter::kCoupling)].v[e], mem_sum.v[e] * inv_mem);
      const model::LocalActivity act =
          model::local_activity(a_abs.v[e], a_sum.v[e], a_sq.v[e], a_quiet.v[e], per_r);
#pragma unroll
      for (int quarter = 0; quarter < kDynamicsQuarters; ++quarter)
        d_next[quarter].v[e] = model::dynamics_next(d[quarter].v[e], model::dynamics_target(DynamicsQuarter(quarter), act));
    }
    Store(rate(kLam, r) + v0, lam);
    Store(rate(kDiff, r) + v0, diff);
    Store(rate(kEta, r) + v0, eta);
    Store(rate(kCoupling, r) + v0, coupling);
#pragma unroll
    for (int quarter = 0; quarter < kDynamicsQuarters; ++quarter) Store(out + voxel(sh.dyn_channel(DynamicsQuarter(quarter), r)), d_next[quarter]);
  }
  for (int g = 0; g < kContentGroups; ++g) {
    float* gm = group_mean + g * V + v0;
    Quad m = LoadShared(gm);
#pragma unroll
    for (int e = 0; e < 4; ++e) m.v[e] *= inv_gs;
    Store(gm, m);
    Store(new_group + g * V + v0, Zero());
  }

  // ---- Phase B: content and memory channels.
  const int tile_floats = (t.rows + 2) * nz;
  const int tile_quads = (t.rows + 2) * t.quads;
  const int xm = x > 0 ? x - 1 : 0, xp = x + 1 < sh.nx ? x + 1 : sh.nx - 1;
  const bool pattern_active = a.states[slot].pattern_active != 0;
  const float* pattern = a.patterns + int64_t(slot) * a.pattern_stride;
  Quad next_tile[kMaxTileLoads], next_xm, next_xp;
  auto prefetch = [&](int ch) {
#pragma unroll
    for (int j = 0; j < kMaxTileLoads; ++j) {
      const int k = tid + j * t.threads;
      if (k < tile_quads) {
        const int tr = k / t.quads, tq = k % t.quads;
        const int yy = min(max(y0 - 1 + tr, 0), sh.ny - 1);
        next_tile[j] = LoadGlobal(F + sh.index(ch, x, yy, 4 * tq));
      }
    }
    next_xm = LoadGlobal(F + sh.index(ch, xm, y, z0));
    next_xp = LoadGlobal(F + sh.index(ch, xp, y, z0));
  };
  prefetch(0);
  __syncthreads();  // sensors, near lists (and the phase A arrays) visible to the whole block

  const int* my_near = near + ty * kMaxNearSensors;
  const int my_near_count = near_count[ty];
  const int channels = content + memory;
  for (int ch = 0; ch < channels; ++ch) {
    float* buf = smem + s.tile + (ch & 1) * tile_floats;
#pragma unroll
    for (int j = 0; j < kMaxTileLoads; ++j) {
      const int k = tid + j * t.threads;
      if (k < tile_quads) Store(buf + 4 * k, next_tile[j]);
    }
    const Quad cxm = next_xm, cxp = next_xp;
    if (ch + 1 < channels) prefetch(ch + 1);
    __syncthreads();

    const float* crow = buf + (ty + 1) * nz;
    const Quad c = LoadShared(crow + z0);
    const Quad ym = LoadShared(crow - nz + z0);
    const Quad yp = LoadShared(crow + nz + z0);
    const float z_lo = z0 > 0 ? crow[z0 - 1] : c.v[0];
    const float z_hi = z0 + 4 < nz ? crow[z0 + 4] : c.v[3];
    const int r = ch % q;
    const float* lam = rate(kLam, r) + v0;
    const float* diff = rate(kDiff, r) + v0;
    Quad o;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float zm = e == 0 ? z_lo : c.v[e - 1];
      const float zp = e == 3 ? z_hi : c.v[e + 1];
      const float lap = model::laplacian7(c.v[e], cxm.v[e], cxp.v[e], ym.v[e], yp.v[e], zm, zp);
      o.v[e] = model::evolve_core(c.v[e], lap, lam[e], diff[e]);
    }
    if (ch < content) {
      float s_field[4] = {0.0f, 0.0f, 0.0f, 0.0f}, e_field[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      bool touched[4] = {false, false, false, false};
      for (int k = 0; k < my_near_count; ++k) {
        const int i = my_near[k];
        const int dxy = abs(p.site[i][0] - x) + abs(p.site[i][1] - y);
        const float mix = p.mix[i][ch];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int dz = abs(p.site[i][2] - (z0 + e));
          if (dz > kImprintRadius) continue;
          const float decay = model::imprint_decay(dxy + dz);
          s_field[e] += model::imprint_share(mix, sensors[i], decay);
          e_field[e] += model::imprint_share(mix, errors[i], decay);
          touched[e] = true;
        }
      }
      const float* eta = rate(kEta, r) + v0;
      const float* coupling = rate(kCoupling, r) + v0;
      float* ng = new_group + (ch / gs) * V + v0;
      Quad sum = LoadShared(ng);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float imprint = touched[e] ? model::imprint_term(s_field[e], e_field[e], eta[e]) : 0.0f;
        o.v[e] = model::content_next(o.v[e], imprint, coupling[e]);
        sum.v[e] += o.v[e];
      }
      Store(ng, sum);
    } else {
      const int j = ch - content;
      const float* gm = group_mean + (j % kContentGroups) * V + v0;
      const float* pat = pattern + int64_t(j) * sh.coarse_voxels();
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float recalled = pattern_active ? model::pattern_sample(pat, sh, x, y, z0 + e) : 0.0f;
        o.v[e] = model::memory_next(o.v[e], gm[e], recalled);
      }
    }
    Store(out + voxel(ch), o);
  }
  __syncthreads();  // every A_g sum of the tile complete

  // ---- Phase C: the tile's share of the summary of F_t+1.
  float* row_reduce = smem + s.row_reduce;  // [g][row][kRowReduceStride]
  for (int item = tid; item < kContentGroups * t.rows; item += t.threads) {
    const int g = item / t.rows, tr = item % t.rows, yy = y0 + tr;
    const float* a_row = new_group + g * V + tr * nz;
    float* rr = row_reduce + item * kRowReduceStride;
    for (int cell = 0; cell < kPoolCells; ++cell) rr[cell] = 0.0f;
    float cell_sum = 0.0f;
    int cell = 0;
    for (int z = 0; z < nz; ++z) {
      const int pz = model::pool_block(x, yy, z, sh) % kPoolCells;
      if (pz != cell) {
        rr[cell] = cell_sum;
        cell_sum = 0.0f;
        cell = pz;
      }
      cell_sum += a_row[z] * inv_gs;
    }
    rr[cell] = cell_sum;
  }
  __syncthreads();
  if (tid < kContentGroups) {
    const int g = tid;
    float pool[kPoolCells] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int tr = 0; tr < t.rows; ++tr) {
      const float* rr = row_reduce + (g * t.rows + tr) * kRowReduceStride;
#pragma unroll
      for (int cell = 0; cell < kPoolCells; ++cell) pool[cell] += rr[cell];
    }
    float* dst = a.partials +
                 ((int64_t(row) * t.blocks_per_robot + x * t.tiles_y + tile_y) * kPartialFloats + g * kPartialStride);
#pragma unroll
    for (int cell = 0; cell < kPoolCells; ++cell) dst[cell] = pool[cell];
  }
}

}  // namespace

cudaError_t PrepareEvolve(const EvolveTile& tile) {
  // Setting a smaller size for a second engine would make the first one's launches fail.
  static std::mutex mu;
  static int granted_bytes = 0;
  const std::lock_guard<std::mutex> lock(mu);
  if (tile.smem_bytes <= granted_bytes) return cudaSuccess;
  const cudaError_t e =
      cudaFuncSetAttribute(EvolveKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, tile.smem_bytes);
  if (e == cudaSuccess) granted_bytes = tile.smem_bytes;
  return e;
}

cudaError_t CheckKernelImage() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, EvolveKernel);
}

cudaError_t LaunchEvolve(const CycleArgs& args, int rows, cudaStream_t stream) {
  const dim3 grid(unsigned(args.tile.tiles_y), unsigned(args.shape.nx), unsigned(rows));
  FB_LAUNCH(EvolveKernel, grid, unsigned(args.tile.threads), size_t(args.tile.smem_bytes), stream)(args);
  return cudaGetLastError();
}

}  // namespace fieldbrain::cuda
