// Steps 4-6 of the cycle (docs/brain.md) for each batch row: the FieldSummary from the evolve
// kernel's block partials, the features phi, the driver's learning from reward and the motors it
// sends or the undo it holds (gpu/model/driver.h), the normalised-LMS learning of Wp and the next
// prediction; then the row's output.
//
// Launch: one block of kFeatures (256) threads per batch row; thread j owns field feature j and
// readout features j and j + kFeatures (gpu/model/robot_state.h has the layout), and driver
// feature j. The dot products are one warp per motor or sensor (lanes stride the features, a
// fixed shuffle tree sums), the element-wise updates by owner, all in the order of
// cpu::CloseCycle and through the same model:: functions. Every sum has a fixed order, so the
// result is bit-reproducible and independent of the batch; it differs from the CPU engine's
// sequential sums only by rounding.
#include "gpu/cuda/device_reduce.cuh"
#include "gpu/cuda/kernel_macros.h"
#include "gpu/cuda/launch.h"
#include "gpu/model/driver.h"
#include "gpu/model/philox.h"
#include "gpu/model/readout.h"

namespace fieldbrain::cuda {
namespace {

constexpr int kCloseThreads = kFeatures;
constexpr int kCloseWarps = kCloseThreads / kWarp;
static_assert(kCloseThreads == kContentGroups * kPoolBlocks, "one thread per pooled feature");

FB_KERNEL(CloseCycleKernel, kCloseThreads, const CycleArgs a) {
  const int row = blockIdx.x;
  if (row >= *a.count) return;  // uniform over the block, before any barrier

  FB_SHARED(model::FieldSummary, summary, );
  FB_SHARED(float, psi, [kReadoutFeatures]);
  FB_SHARED(float, psi_prev, [kReadoutFeatures]);
  FB_SHARED(float, errors, [kMaxSensors]);
  FB_SHARED(float, motors, [kMaxMotors]);
  FB_SHARED(float, frame_prev, [kMaxSensors]);
  FB_SHARED(float, driver_score, [kMaxMotors]);
  FB_SHARED(float, driver_bound, [kMaxMotors]);  // each motor's step back towards its bound
  FB_SHARED(float, driver_scalars, [2]);  // the actor's step and withdrawal's, this cycle
  FB_SHARED(float, scratch, [kCloseWarps]);

  const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
  const FieldShape sh = a.shape;
  const EvolveTile& t = a.tile;
  const BatchInputRow& in = a.rows[row];
  const RobotParams& p = a.params[in.slot];
  RobotState& st = a.states[in.slot];
  const int motor_count = p.motor_count, sensor_count = p.sensor_count;

  // What this cycle reads of the state before it changes any of it.
  for (int j = tid; j < kReadoutFeatures; j += kCloseThreads) psi_prev[j] = st.psi_prev[j];
  if (tid < kMaxSensors) {
    errors[tid] = a.errors[int64_t(row) * kMaxSensors + tid];
    frame_prev[tid] = model::frame_value(st.psi_prev[kFrameFeaturesAt + tid]);
  }
  const float reward = in.reward;
  const float inv_norm2 = model::inverse_norm2(st.psi_prev_norm2);
  const float scale_before = st.feature_scale;
  const uint64_t cycle = st.cycle;
  // The driver's undo, decided alike by every thread: one under way goes on, or one may start.
  const bool judged_held = st.undo_held != 0;  // this reward judges a held command
  const model::UndoStep undo =
      model::driver_undo_step(st.undo_left, st.undo_held, st.undo_since, st.reward_fast, p.seed, cycle);
  const bool undo_goes_on = undo.mode == model::UndoMode::kGoesOn;
  const bool undo_starts = undo.mode == model::UndoMode::kStarts;

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
  __syncthreads();

  // Features: phi_j over the slow feature scale.
  const float raw = model::feature_raw((&summary.pool[0][0])[tid], sh);
  const float mean = model::feature_mean(BlockSum<kCloseThreads>(raw, scratch));
  const float scale =
      model::feature_scale_next(scale_before, BlockSum<kCloseThreads>(model::feature_deviation2(raw, mean), scratch));
  const float f = model::feature_value(raw, mean, model::feature_inv_scale(scale));
  psi[tid] = f;
  float square = f * f;
  if (tid < kMaxSensors) {
    const bool used = tid < sensor_count;
    const float now = used ? model::frame_feature(in.sensors[tid]) : 0.0f;
    const float before = used ? psi_prev[kFrameFeaturesAt + tid] : 0.0f;
    psi[kFrameFeaturesAt + tid] = now;
    psi[kContextFeaturesAt + tid] = before;
    square += now * now + before * before;
  }
  const float norm2 = BlockSum<kCloseThreads>(square, scratch);  // its barriers publish psi

  if (tid == 0) st.feature_scale = scale;

  // Step 5, the driver (gpu/model/driver.h): thread j < kDriverFeatures owns driver feature j.
  // The critic's values come from the weights as they were; the critic learns from this reward
  // through the traces as they were, and so does the actor unless the command judged was a held
  // undo (thread 0 keeps the advantage's running square and mean, and publishes the actor's and
  // withdrawal's steps), a frustrated bad surprise withdrawing last cycle's motors along the
  // centred frame. Then an undo under way sends its held command again; otherwise each motor's
  // mean is one warp's dot product over the actor's new weights, an undo that starts sends its
  // negation and clears the traces, and the actor's own step has the traces take this cycle's
  // score and the weights the step back towards the pre-activation's bound.
  const bool driver_owner = tid < model::kDriverFeatures && model::driver_feature_used(tid, sensor_count);
  const float d = driver_owner ? model::driver_feature(tid, in.sensors) : 0.0f;
  const float d_prev = driver_owner ? model::driver_feature(tid, frame_prev) : 0.0f;
  const float driver_w = driver_owner ? st.driver_critic[tid] : 0.0f;
  const float v_now = BlockSum<kCloseThreads>(driver_w * d, scratch);
  const float v_prev = BlockSum<kCloseThreads>(driver_w * d_prev, scratch);
  const float driver_delta = model::driver_td_error(reward, v_now, v_prev);
  const bool driver_learns = cycle > 0 && p.learn_motors && !judged_held;
  const float frustration = model::frustration(st.reward_fast, st.reward_slow, st.reward_spread);
  if (tid == 0 && driver_learns) {
    const bool first = cycle == 1;
    const float advantage = model::driver_advantage(reward, v_now, v_prev);
    st.driver_advantage_square =
        model::driver_advantage_square_next(st.driver_advantage_square, advantage, st.driver_advantage_mean, first);
    st.driver_advantage_mean = model::driver_advantage_mean_next(st.driver_advantage_mean, advantage, first);
    const float scale = model::driver_advantage_scale(st.driver_advantage_square);
    driver_scalars[0] = model::driver_actor_step(advantage, st.driver_advantage_mean, scale, sensor_count);
    driver_scalars[1] = model::driver_withdraw_step(driver_delta, scale, frustration, sensor_count);
  }
  __syncthreads();  // the steps visible to the feature owners
  if (driver_owner) {
    if (cycle > 0) {
      st.driver_critic[tid] = model::driver_weight_next(
          driver_w, model::driver_step(model::kDriverCriticRate, driver_delta, sensor_count), st.driver_critic_trace[tid]);
      if (driver_learns) {
        const float along =
            model::driver_withdraw_feature(tid, frame_prev, st.sensor_mean, model::boredom(st.novelty, st.novelty_slow));
        for (int k = 0; k < motor_count; ++k) {
          const float w = model::driver_weight_next(st.driver_actor[k][tid], driver_scalars[0], st.driver_actor_trace[k][tid]);
          st.driver_actor[k][tid] = model::driver_weight_next(w, driver_scalars[1], st.motor_prev[k] * along);
        }
      }
    }
    st.driver_critic_trace[tid] = model::driver_trace_next(st.driver_critic_trace[tid], d);
  }
  __syncthreads();  // the actor's new weights visible to the warps that sum them
  if (undo_goes_on) {
    if (tid < motor_count) motors[tid] = st.motor_prev[tid];
  } else {
    for (int k = warp; k < motor_count; k += kCloseWarps) {
      float dot = 0.0f;
      for (int j = lane; j < model::kDriverFeatures; j += kWarp)
        if (model::driver_feature_used(j, sensor_count)) dot += st.driver_actor[k][j] * model::driver_feature(j, in.sensors);
      dot = WarpSum(dot);
      if (lane == 0) {
        const model::DriverPolicy policy = model::driver_policy(dot);
        if (undo_starts) {
          motors[k] = model::driver_undo_command(policy.mean);
        } else {
          const float eps = model::normal_draw(p.seed, model::Domain::kDriverNoise, cycle, uint32_t(k));
          const float spread = model::driver_spread(frustration);
          driver_score[k] = model::driver_score(policy, eps, spread);
          driver_bound[k] = p.learn_motors ? model::driver_bound_step(dot, sensor_count) : 0.0f;
          motors[k] = model::driver_motor(policy.mean, eps, spread);
        }
      }
    }
  }
  __syncthreads();  // the scores, bound steps and motors sent visible to the block
  if (driver_owner && !undo_goes_on)
    for (int k = 0; k < motor_count; ++k) {
      if (undo_starts) {
        st.driver_actor_trace[k][tid] = 0.0f;
      } else {
        st.driver_actor_trace[k][tid] = model::driver_trace_next(st.driver_actor_trace[k][tid], driver_score[k] * d);
        st.driver_actor[k][tid] = model::driver_weight_next(st.driver_actor[k][tid], driver_bound[k], d);
      }
    }

  // Step 6: this frame's error judges the prediction made from psi_(t-1); then predict anew.
  for (int i = warp; i < sensor_count; i += kCloseWarps) {
    const float e = errors[i];
    float dot = 0.0f;
    for (int j = lane; j < kReadoutFeatures; j += kWarp) {
      if (!model::readout_feature_used(j, sensor_count)) continue;
      const float w = model::wp_next(st.wp[i][j], e, psi_prev[j], inv_norm2);
      st.wp[i][j] = w;
      dot += w * psi[j];
    }
    dot = WarpSum(dot);
    if (lane == 0) st.prediction[i] = model::prediction_value(dot);
  }
  __syncthreads();  // the new predictions visible to the whole block

  for (int j = tid; j < kReadoutFeatures; j += kCloseThreads)
    if (model::readout_feature_used(j, sensor_count)) st.psi_prev[j] = psi[j];
  if (tid < motor_count) st.motor_prev[tid] = motors[tid];
  BatchOutputRow& o = a.outputs[row];
  if (tid < kMaxMotors) o.motors[tid] = tid < motor_count ? motors[tid] : 0.0f;
  if (tid < kMaxSensors) o.prediction[tid] = tid < sensor_count ? st.prediction[tid] : 0.0f;
  if (tid == 0) {
    st.undo_left = undo.left;
    st.undo_held = undo.held;
    st.undo_since = undo.since;
    st.psi_prev_norm2 = norm2;
    st.cycle = cycle + 1;
    o.confidence = st.confidence;
    o.error = st.last_error;
    o.cycle = cycle + 1;
  }
}

}  // namespace

cudaError_t LaunchCloseCycle(const CycleArgs& args, int rows, cudaStream_t stream) {
  FB_LAUNCH(CloseCycleKernel, unsigned(rows), kCloseThreads, 0, stream)(args);
  return cudaGetLastError();
}

}  // namespace fieldbrain::cuda
