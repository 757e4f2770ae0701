// Steps 4-6 of the cycle (DESIGN.md section 4) for each batch row: the FieldSummary from the
// evolve kernel's block partials, the standardised features phi, the motors with Philox
// exploration noise, the reward learning of Wm and the eligibility, the normalised-LMS learning of
// Wp and the next prediction; then the row's output.
//
// Launch: one block of kFeatures (256) threads per batch row; thread j owns feature j. The dot
// products over the features are one warp per motor or sensor (lanes stride the features, a
// fixed shuffle tree sums), the element-wise updates one thread per feature, all in the order of
// cpu::CloseCycle and through the same model:: functions. Every sum has a fixed order, so the
// result is bit-reproducible and independent of the batch; it differs from the CPU engine's
// sequential sums only by rounding.
#include "gpu/cuda/device_reduce.cuh"
#include "gpu/cuda/launch.h"
#include "gpu/model/philox.h"
#include "gpu/model/readout.h"

namespace fieldbrain::cuda {
namespace {

constexpr int kCloseThreads = kFeatures;
constexpr int kCloseWarps = kCloseThreads / kWarp;
static_assert(kCloseThreads == kContentGroups * kPoolBlocks, "one thread per pooled feature");

__global__ void __launch_bounds__(kCloseThreads) CloseCycleKernel(const CycleArgs a) {
  const int row = blockIdx.x;
  if (row >= *a.count) return;  // uniform over the block, before any barrier

  __shared__ model::FieldSummary summary;
  __shared__ float phi[kFeatures];
  __shared__ float phi_prev[kFeatures];
  __shared__ float errors[kMaxSensors];
  __shared__ float motors[kMaxMotors];
  __shared__ float scratch[kCloseWarps];

  const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
  const FieldShape sh = a.shape;
  const EvolveTile& t = a.tile;
  const BatchInputRow& in = a.rows[row];
  const RobotParams& p = a.params[in.slot];
  RobotState& st = a.states[in.slot];
  const int motor_count = p.motor_count, sensor_count = p.sensor_count;

  // What this cycle reads of the state before it changes any of it.
  phi_prev[tid] = st.phi_prev[tid];
  if (tid < kMaxSensors) errors[tid] = a.errors[int64_t(row) * kMaxSensors + tid];
  const float reward = in.reward;
  const float explore = a.explore[row];
  const float advantage = reward - st.reward_baseline;
  const float inv_norm2 = model::inverse_norm2(st.phi_prev_norm2);
  const uint64_t cycle = st.cycle;

  // FieldSummary: pool entry (g, b) is thread g * 64 + b, summing the partials of the blocks of
  // its pool cell, x-slab by x-slab, then y-tile by y-tile.
  const float* partials = a.partials + int64_t(row) * t.blocks_per_robot * kPartialFloats;
  {
    const int g = tid / kPoolBlocks, b = tid % kPoolBlocks;
    const int px = b / (kPoolCells * kPoolCells), py = (b / kPoolCells) % kPoolCells, pz = b % kPoolCells;
    const int cell_x = sh.nx / kPoolCells, cell_tiles = t.tiles_y / kPoolCells;
    float sum = 0.0f;
    for (int x = px * cell_x; x < (px + 1) * cell_x; ++x)
      for (int tile = py * cell_tiles; tile < (py + 1) * cell_tiles; ++tile)
        sum += partials[(x * t.tiles_y + tile) * kPartialFloats + g * kPartialStride + pz];
    summary.pool[g][b] = sum;
  }
  // |A_g| and the three ramp sums of each group: one warp per value over all blocks.
  for (int v = warp; v < kContentGroups * 4; v += kCloseWarps) {
    const int g = v / 4, k = v % 4;
    float sum = 0.0f;
    for (int blk = lane; blk < t.blocks_per_robot; blk += kWarp)
      sum += partials[blk * kPartialFloats + g * kPartialStride + kPartialAbs + k];
    sum = WarpSum(sum);
    if (lane == 0) {
      if (k == 0)
        summary.abs_sum[g] = sum;
      else
        summary.ramp_sum[g][k - 1] = sum;
    }
  }
  __syncthreads();

  // Features: phi_j standardised over the P entries.
  const float raw = model::feature_raw((&summary.pool[0][0])[tid], sh);
  const float mean = model::feature_mean(BlockSum<kCloseThreads>(raw, scratch));
  const float inv_std = model::feature_inv_std(BlockSum<kCloseThreads>(model::feature_deviation2(raw, mean), scratch));
  const float f = model::feature_standardised(raw, mean, inv_std);
  phi[tid] = f;
  const float norm2 = BlockSum<kCloseThreads>(f * f, scratch);  // its barriers publish phi

  // Step 4: motors, from the old Wm.
  for (int k = warp; k < motor_count; k += kCloseWarps) {
    float dot = 0.0f;
    for (int j = lane; j < kFeatures; j += kWarp) dot += st.wm[k][j] * phi[j];
    dot = WarpSum(dot);
    if (lane == 0) {
      const int g = model::motor_group(k), axis = model::motor_axis(k);
      const float pull = model::field_pull(summary.ramp_sum[g][axis], summary.abs_sum[g], sh.voxels());
      const float xi = model::normal_draw(p.seed, model::Domain::kMotorNoise, cycle, uint32_t(k));
      motors[k] = model::motor_value(pull, dot, explore, xi);
    }
  }
  __syncthreads();

  // Step 5: the reward judges the previous action through the previous eligibility.
  for (int k = 0; k < motor_count; ++k) {
    if (p.learn_motors) st.wm[k][tid] = model::wm_next(st.wm[k][tid], advantage, st.elig[k][tid]);
    st.elig[k][tid] = model::elig_value(motors[k], st.motor_mean[k], f);
  }
  __syncthreads();  // every read of the old motor means done
  if (tid < motor_count) st.motor_mean[tid] = model::motor_mean_next(st.motor_mean[tid], motors[tid]);
  if (tid == 0) st.reward_baseline = model::baseline_next(st.reward_baseline, reward);

  // Step 6: this frame's error judges the prediction made from phi_(t-1); then predict anew.
  for (int i = warp; i < sensor_count; i += kCloseWarps) {
    const float e = errors[i];
    float dot = 0.0f;
    for (int j = lane; j < kFeatures; j += kWarp) {
      const float w = model::wp_next(st.wp[i][j], e, phi_prev[j], inv_norm2);
      st.wp[i][j] = w;
      dot += w * phi[j];
    }
    dot = WarpSum(dot);
    if (lane == 0) st.prediction[i] = model::prediction_value(dot);
  }
  __syncthreads();  // the new predictions visible to the whole block

  st.phi_prev[tid] = f;
  BatchOutputRow& o = a.outputs[row];
  if (tid < kMaxMotors) o.motors[tid] = tid < motor_count ? motors[tid] : 0.0f;
  if (tid < kMaxSensors) o.prediction[tid] = tid < sensor_count ? st.prediction[tid] : 0.0f;
  if (tid == 0) {
    st.phi_prev_norm2 = norm2;
    st.cycle = cycle + 1;
    o.confidence = st.confidence;
    o.error = st.last_error;
    o.cycle = cycle + 1;
  }
}

}  // namespace

cudaError_t LaunchCloseCycle(const CycleArgs& args, int rows, cudaStream_t stream) {
  CloseCycleKernel<<<unsigned(rows), kCloseThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace fieldbrain::cuda
