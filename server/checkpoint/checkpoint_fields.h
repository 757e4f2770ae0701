// Every field of a checkpointed brain, in file order, for checkpoint_format.cc: Encode and Decode
// both walk these lists, so the order is written once. A field added to RobotParams, RobotState or
// MemoryBank must be added here and the format version raised (docs/checkpoint-format.md).
#pragma once

#include "gpu/model/robot_state.h"

namespace fieldbrain::server::checkpoint_fields {

template <class V, class P>
void Params(V& v, P& p) {
  v(p.seed);
  v(p.sensor_count);
  v(p.motor_count);
  v(p.learn_motors);
  v(p.site);
  v(p.mix);
  v(p.key_role_phase);
  v(p.key_base_phase);
}

template <class V, class S>
void State(V& v, S& s) {
  v(s.cycle);
  v(s.confidence);
  v(s.psi_prev_norm2);
  v(s.last_error);
  v(s.pattern_active);
  v(s.reward_fast);
  v(s.reward_slow);
  v(s.reward_spread);
  v(s.novelty);
  v(s.novelty_slow);
  v(s.sensor_mean);
  v(s.feature_scale);
  v(s.psi_prev);
  v(s.motor_prev);
  v(s.prediction);
  v(s.wp);
  v(s.driver_advantage_square);
  v(s.driver_advantage_mean);
  v(s.driver_critic);
  v(s.driver_critic_trace);
  v(s.driver_actor);
  v(s.driver_actor_trace);
  v(s.key_prev);
  v(s.error_mean);
  v(s.memory_written);
  v(s.memory_recalled);
  v(s.recall_entry);
  v(s.recall_weight);
  v(s.memory_writes);
}

template <class V, class M>
void Memory(V& v, M& m) {
  v(m.key);
  v(m.valence);
  v(m.strength);
  v(m.used);
}

// Version 5 appended the driver's undo (gpu/model/driver.h) after the memory's patterns, so a
// version 4 file reads as it was written and its brain resumes with the undo idle.
template <class V, class S>
void DriverUndo(V& v, S& s) {
  v(s.undo_left);
  v(s.undo_held);
  v(s.undo_since);
}

}  // namespace fieldbrain::server::checkpoint_fields
