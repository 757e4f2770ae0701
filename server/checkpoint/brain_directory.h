// BrainDirectory: where each robot's brain is, as far as this daemon's checkpoints go, and which
// of the robot's brains is the real one (its generation, checkpoint_format.h).
//
// A robot's brain is in a slot (live or kept: the engine holds it, and copies of it are written),
// being saved (its slot was released and its final copy is on its way to disk), on disk (the file
// is the newest copy this daemon knows), or discarded (`fresh`: its file was deleted, and no copy
// of that brain may land any more). Every change of place is one event through Apply, whose
// switches name every place and every event. The generation only ever rises: a new brain raises
// it above every one seen here and on disk, a resumed brain keeps its own, Discard moves it on.
//
// Not thread-safe: the Checkpointer calls it under its lock.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fieldbrain::server {

enum class BrainPlace { kInSlot, kSaving, kOnDisk, kDiscarded };
enum class BrainEvent {
  kBound,      // a brain of the robot was made or restored in a slot
  kReleased,   // its slot was freed; its final copy may still be on its way
  kSettled,    // nothing of it is on its way to disk any more
  kGaveWay,    // a newer file replaces the kept copy (another daemon ran the robot on)
  kDiscarded,  // `fresh`: the file is deleted, the generation moves on
};

// The place after `event` (`copy_on_its_way`: for kReleased, whether a copy is still queued or
// being written).
BrainPlace NextPlace(BrainPlace place, BrainEvent event, bool copy_on_its_way);
const char* BrainPlaceName(BrainPlace place);

class BrainDirectory {
 public:
  struct Robot {
    BrainPlace place = BrainPlace::kOnDisk;
    uint64_t generation = 0;
    std::array<uint8_t, 32> token_sha256{};  // of the brain bound last
    // The cycle this daemon last wrote of the robot's brain: an unchanged brain is not written
    // again (a kept copy that expires must not overwrite the file of a daemon the robot moved to).
    std::optional<uint64_t> written_cycle;
  };

  explicit BrainDirectory(int slots);

  // `slot` holds `robot_id`'s brain of `generation`, resumable with the token of this SHA-256.
  void Bind(int slot, const std::string& robot_id, const std::array<uint8_t, 32>& token_sha256, uint64_t generation);
  // `slot` was freed.
  void Released(int slot, bool copy_on_its_way);
  // The robot has nothing on its way to disk any more (its last write done or dropped).
  void Settled(const std::string& robot_id);
  // The robot's kept copy gives way to a newer file: unbound, its copies not written.
  void GaveWay(const std::string& robot_id);
  // `fresh`: unbound, discarded, the generation above `on_disk_generation` and every one seen.
  void Discard(const std::string& robot_id, uint64_t on_disk_generation);
  // The generation of a new brain of the robot: above every one seen here and `on_disk_generation`.
  uint64_t NewGeneration(const std::string& robot_id, uint64_t on_disk_generation);
  // A copy of the robot's brain at `cycle` reached its file.
  void Written(const std::string& robot_id, uint64_t cycle);

  // The robot whose brain `slot` holds, or nullptr.
  const std::string* RobotIn(int slot) const;
  // The robot's record, or nullptr for a robot this daemon has not seen.
  const Robot* Find(const std::string& robot_id) const;
  // Whether the robot's brain is on its way to disk or still in a slot (a Hello of a robot the
  // sessions no longer hold then waits: its file is not the newest copy yet).
  bool Unsettled(const std::string& robot_id) const;

 private:
  Robot& Apply(const std::string& robot_id, BrainEvent event, bool copy_on_its_way = false);
  void UnbindAll(const std::string& robot_id);

  std::vector<std::optional<std::string>> slots_;  // slot -> robot id
  std::map<std::string, Robot> robots_;            // every robot seen since start: an id and a record
};

}  // namespace fieldbrain::server
