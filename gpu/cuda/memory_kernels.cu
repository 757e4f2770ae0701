// The pattern memory between step 1 and the evolve pass (gpu/model/memory_math.h has every rule;
// the CPU engine's MemoryStep in gpu/cpu/robot_steps.cc is the reference order):
//   MemoryKeyKernel      one block per row: the write decision and the written entry's key and
//                        bookkeeping, this frame's context key, the recall.
//   MemoryPatternKernel  one block per (memory channel, row): the written entry's coarse pattern
//                        pooled from F_t, then the recalled pattern P for the evolve pass.
// The key sums follow model::key_dot's order (a warp: lanes stride the bins, WarpSum folds them),
// so keys, cosines and every write and recall decision have the CPU engine's bits.
#include "gpu/cuda/device_reduce.cuh"
#include "gpu/cuda/kernel_macros.h"
#include "gpu/cuda/launch.h"
#include "gpu/model/memory_math.h"

namespace fieldbrain::cuda {
namespace {

constexpr int kMemoryThreads = 128;
constexpr int kMemoryWarps = kMemoryThreads / kWarp;

static_assert(model::kKeyLanes == kWarp, "a key sum is one warp");

// cos[j] <- cos(key, bank.key[j]) for every entry (0 for unused ones); a warp per entry.
__device__ void EntryCosines(const float (*key)[2], const MemoryBank& bank, float* cos) {
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  for (int j = warp; j < kMemoryEntries; j += kMemoryWarps) {
    const float dot = WarpSum(bank.used[j] ? model::key_dot_lane(key, bank.key[j], lane) : 0.0f);
    if (lane == 0) cos[j] = model::key_cosine(dot);
  }
}

FB_KERNEL(MemoryKeyKernel, kMemoryThreads, const CycleArgs a) {
  const int row = blockIdx.x;
  if (row >= *a.count) return;
  const BatchInputRow& in = a.rows[row];
  const RobotParams& p = a.params[in.slot];
  RobotState& st = a.states[in.slot];
  MemoryBank& bank = a.banks[in.slot];
  FB_SHARED(float, key, [kKeyBins][2]);
  FB_SHARED(float, cos, [kMemoryEntries]);
  FB_SHARED(float, inv_norm, );
  FB_SHARED(float, valence, );
  FB_SHARED(int, entry, );
  const int t = threadIdx.x;

  if (t == 0) {
    st.memory_written = -1;
    valence = model::memory_write_valence(st, in.reward);
  }
  __syncthreads();
  if (valence != 0.0f) {  // block-uniform
    for (int k = t; k < kKeyBins; k += kMemoryThreads) {
      key[k][0] = st.key_prev[k][0];
      key[k][1] = st.key_prev[k][1];
    }
    __syncthreads();
    EntryCosines(key, bank, cos);
    __syncthreads();
    if (t == 0) {
      entry = model::memory_pick_entry(bank, cos);
      model::memory_note_write(bank, st, entry, valence);
    }
    __syncthreads();
    for (int k = t; k < kKeyBins; k += kMemoryThreads) {
      bank.key[entry][k][0] = key[k][0];
      bank.key[entry][k][1] = key[k][1];
    }
    __syncthreads();
  }

  for (int k = t; k < kKeyBins; k += kMemoryThreads) {
    const hrr::Cf q = model::key_bin(p, in.sensors, k);
    key[k][0] = q.re;
    key[k][1] = q.im;
  }
  __syncthreads();
  if (t < kWarp) {  // warp 0: |q|^2 in key_dot's order
    const float dot = WarpSum(model::key_dot_lane(key, key, t));
    if (t == 0) inv_norm = model::key_inverse_norm(dot);
  }
  __syncthreads();
  const float inv = inv_norm;
  for (int k = t; k < kKeyBins; k += kMemoryThreads) {
    key[k][0] *= inv;
    key[k][1] *= inv;
    st.key_prev[k][0] = key[k][0];
    st.key_prev[k][1] = key[k][1];
  }
  __syncthreads();
  EntryCosines(key, bank, cos);
  __syncthreads();
  if (t == 0) model::memory_recall(bank, cos, st);
}

FB_KERNEL(MemoryPatternKernel, kMemoryThreads, const CycleArgs a) {
  const int row = blockIdx.y;
  if (row >= *a.count) return;
  const int slot = a.rows[row].slot;
  const RobotState& st = a.states[slot];
  const MemoryBank& bank = a.banks[slot];
  const FieldShape sh = a.shape;
  const int j = blockIdx.x;
  const int cells = sh.coarse_voxels();
  const int64_t pattern_floats = int64_t(sh.memory()) * cells;
  float* stored = a.memory_patterns + int64_t(slot) * a.memory_patterns_stride;
  // Each thread writes, then reads back, only its own cells: no barrier needed between the two.
  if (st.memory_written >= 0) {
    const float* field = reinterpret_cast<const float*>(a.pool + a.field_in[row]);
    float* dst = stored + st.memory_written * pattern_floats + int64_t(j) * cells;
    for (int cell = threadIdx.x; cell < cells; cell += kMemoryThreads)
      dst[cell] = model::coarse_memory_value(field, sh, j, cell);
  }
  if (!st.pattern_active) return;
  float* recalled = a.patterns + int64_t(slot) * a.pattern_stride + int64_t(j) * cells;
  for (int cell = threadIdx.x; cell < cells; cell += kMemoryThreads)
    recalled[cell] = model::recalled_pattern_value(bank, st, stored, pattern_floats, int64_t(j) * cells + cell);
}

}  // namespace

cudaError_t LaunchMemory(const CycleArgs& args, int rows, cudaStream_t stream) {
  FB_LAUNCH(MemoryKeyKernel, unsigned(rows), kMemoryThreads, 0, stream)(args);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  const dim3 grid(unsigned(args.shape.memory()), unsigned(rows));
  FB_LAUNCH(MemoryPatternKernel, grid, kMemoryThreads, 0, stream)(args);
  return cudaGetLastError();
}

}  // namespace fieldbrain::cuda
