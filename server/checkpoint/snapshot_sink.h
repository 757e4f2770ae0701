// SnapshotSink: where the engine thread hands copies of brains for checkpoints
// (checkpointer.h). The scheduler calls it after a batch (every N cycles of a robot), before a
// slot is released, and at shutdown; the sink must only take the copy and return: no I/O, no
// hashing, nothing that could delay a cycle.
#pragma once

#include "gpu/engine.h"

namespace fieldbrain::server {

class SnapshotSink {
 public:
  virtual ~SnapshotSink() = default;
  // Engine thread. Whether `slot` holds a brain whose checkpoints are kept.
  virtual bool Wants(int slot) const = 0;
  // Engine thread. A buffer (allocated at start) to copy `slot`'s brain into, or nullptr when the
  // sink does not want it or has no buffer free (its writer is behind; the scheduler asks again
  // after the slot's next cycle).
  virtual BrainSnapshot* Claim(int slot) = 0;
  // Engine thread. The buffer from Claim, now holding `slot`'s brain (copied = true) or not.
  virtual void Take(int slot, BrainSnapshot* buffer, bool copied) = 0;
  // Engine thread. `slot` has been freed: it holds no robot's brain until the next Bind.
  virtual void Released(int slot) = 0;
};

}  // namespace fieldbrain::server
