// SnapshotSink: where the engine thread hands copies of brains for checkpoints
// (checkpointer.h). The scheduler calls it after a batch's answers are delivered (every N cycles
// of a robot), before a slot is released, and at shutdown; the sink must only take the copy and
// return: no I/O, no hashing, nothing that could delay a cycle.
#pragma once

#include "absl/time/time.h"
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
  // Engine thread. Claim, waiting until `deadline` for the writer to free a buffer: for a brain's
  // final state, which has no next cycle to wait for. nullptr when none came free by then or the
  // sink no longer wants the slot.
  virtual BrainSnapshot* ClaimBefore(int slot, absl::Time deadline) = 0;
  // Engine thread. Whether the sink already has `slot`'s brain as of `cycle` (written, or waiting
  // to be): a final copy of an unchanged brain needs no buffer.
  virtual bool Holds(int slot, uint64_t cycle) const = 0;
  // Engine thread. The buffer from Claim, now holding `slot`'s brain (copied = true) or not.
  virtual void Take(int slot, BrainSnapshot* buffer, bool copied) = 0;
  // Engine thread. `slot` has been freed: it holds no robot's brain until the next Bind.
  virtual void Released(int slot) = 0;
};

}  // namespace fieldbrain::server
