// FieldPool: where every robot's brain lives, and which slots are in use.
//
// One block, allocated once at start (host memory for the CPU engine, device memory for the CUDA
// engine), holds all field buffers, recalled patterns, RobotParams, RobotStates, MemoryBanks and
// the memory entries' stored patterns. The pool
// only lays the block out and does the bookkeeping; the engines own the memory.
//
// A cycle reads a robot's field and writes a new one. Instead of two buffers per robot the pool
// keeps one per robot plus one spare per batch row: row i writes spare i, and after the batch the
// robot's old buffer becomes spare i. That saves (max_robots - max_batch) fields of memory.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpu/model/field_shape.h"
#include "gpu/model/robot_state.h"

namespace fieldbrain {

class FieldPool {
 public:
  // guard_bytes > 0 leaves a gap of at least that many bytes after every field buffer, pattern and
  // memory-pattern region and after each array (the emulation build poisons them: a brain's
  // overrun then faults instead of writing into its neighbour).
  FieldPool(const FieldShape& shape, int capacity, int max_batch, int64_t guard_bytes = 0);

  const FieldShape& shape() const { return shape_; }
  int capacity() const { return capacity_; }
  int max_batch() const { return max_batch_; }
  int active() const { return active_; }
  int64_t bytes() const { return bytes_; }

  // Byte offsets into the block (each 256-byte aligned).
  int64_t field_offset(int buffer) const { return fields_at_ + buffer * (field_bytes_ + guard_); }
  int64_t pattern_offset(int slot) const { return patterns_at_ + slot * pattern_stride(); }
  int64_t params_offset(int slot) const { return params_at_ + slot * int64_t(sizeof(RobotParams)); }
  int64_t state_offset(int slot) const { return states_at_ + slot * int64_t(sizeof(RobotState)); }
  int64_t memory_offset(int slot) const { return memories_at_ + slot * int64_t(sizeof(MemoryBank)); }
  // The slot's kMemoryEntries stored patterns, each pattern_floats() values.
  int64_t memory_patterns_offset(int slot) const { return memory_patterns_at_ + slot * memory_patterns_stride(); }
  int64_t field_bytes() const { return field_bytes_; }
  int64_t pattern_bytes() const { return pattern_bytes_; }
  int64_t pattern_floats() const { return int64_t(shape_.memory()) * shape_.coarse_voxels(); }
  int64_t memory_patterns_bytes() const { return memory_patterns_bytes_; }
  // Bytes from one slot's pattern (memory patterns) to the next: the region and its guard.
  int64_t pattern_stride() const { return pattern_bytes_ + guard_; }
  int64_t memory_patterns_stride() const { return memory_patterns_bytes_ + guard_; }
  // The parts of the block nothing may touch, as (offset, bytes): the guards and the padding
  // between arrays (not the padding at the end of each 256-byte-aligned region).
  std::vector<std::pair<int64_t, int64_t>> Gaps() const;

  // Lowest free slot; RESOURCE_EXHAUSTED when none is free.
  absl::StatusOr<int> Acquire();
  // False (and nothing changes) when the slot is out of range or already free.
  bool Release(int slot);
  bool live(int slot) const { return slot >= 0 && slot < capacity_ && live_[slot]; }

  // The field buffer holding the slot's current field, and the one batch row i writes into.
  int current_buffer(int slot) const { return buffer_of_[slot]; }
  int spare_buffer(int row) const { return spare_[row]; }

  // Checks rows before a batch: 1 <= n <= max_batch, every slot live and used once.
  absl::Status ValidateBatch(std::span<const BatchInputRow> rows);
  // After a batch: each row's written buffer becomes its robot's field.
  void CommitBatch(std::span<const BatchInputRow> rows);

 private:
  FieldShape shape_;
  int capacity_, max_batch_;
  int64_t guard_;
  int64_t field_bytes_, pattern_bytes_, memory_patterns_bytes_;
  int64_t fields_at_, patterns_at_, params_at_, states_at_, memories_at_, memory_patterns_at_, bytes_;
  int active_ = 0;
  std::vector<uint8_t> live_;
  std::vector<int> buffer_of_;
  std::vector<int> spare_;
  std::vector<uint64_t> seen_in_batch_;  // batch stamp per slot, for the duplicate check
  uint64_t batch_stamp_ = 0;
};

}  // namespace fieldbrain
