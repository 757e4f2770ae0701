// SnapshotSink: where the engine thread hands copies of brains for checkpoints
// (checkpointer.h). The scheduler calls it after a batch (every N cycles of a robot), before a
// slot is released, and at shutdown; the sink must only take the copy and return: no I/O, no
// hashing, nothing that could delay a cycle.
#pragma once

#include "gpu/engine.h"

namespace fieldbrain::server {

enum class SnapshotReason {
  kPeriodic,  // every --checkpoint_every_cycles cycles of the robot
  kReleased,  // the slot is about to be freed (disconnect, idle expiry, eviction)
  kShutdown,  // the daemon is stopping
};

class SnapshotSink {
 public:
  virtual ~SnapshotSink() = default;
  // Engine thread. Whether `slot` holds a brain whose checkpoints are kept.
  virtual bool Wants(int slot) const = 0;
  // Engine thread. A copy of `slot`'s brain, taken now.
  virtual void Take(int slot, BrainSnapshot snapshot, SnapshotReason reason) = 0;
};

}  // namespace fieldbrain::server
