// MemorySpace: one named space of the Memory service. An HrrSpace whose slots hold the stored
// vectors, the ids that name them (chosen here: 1, 2, 3... never reused, so a deleted id stays
// unknown rather than naming a later vector), the free slots, and each stored vector's SHA-256.
//
// Free slots always hold the zero vector (a new HrrSpace is zeroed, deleted and abandoned slots
// are zeroed again), so the library's cleanup over every slot never returns one. Memory thread
// only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gpu/hrr/hrr_space.h"
#include "server/memory/memory_arena.h"
#include "server/memory/vector_digest.h"

namespace fieldbrain::server::memory {

// Host scratch for digests, shared by every space (the Memory thread runs one request at a time).
struct DigestScratch {
  std::unique_ptr<VectorDigester> digester;
  std::vector<hrr::Cf> spectra;
};

class MemorySpace {
 public:
  // Makes the space's HrrSpace on `backend` ("cpu" or "cuda"). Library calls take at most
  // min(capacity, request_vectors) entries (request_vectors: what one request may name or make at
  // this dimension), which keeps a small space's work areas no larger than its vectors.
  // RESOURCE_EXHAUSTED (nothing taken) when the arena lacks room for all it needs.
  static absl::StatusOr<std::unique_ptr<MemorySpace>> Create(std::string name, int dim, int capacity,
                                                             int request_vectors, const std::string& backend,
                                                             MemoryArena& arena);
  MemorySpace(const MemorySpace&) = delete;
  MemorySpace& operator=(const MemorySpace&) = delete;

  const std::string& name() const { return name_; }
  int dim() const { return hrr_->dim(); }
  int bins() const { return hrr_->bins(); }
  int capacity() const { return hrr_->capacity(); }
  int max_batch() const { return hrr_->config().max_batch; }                    // entries per library call
  int64_t size() const { return int64_t(capacity()) - int64_t(free_.size()); }  // vectors stored
  // One past the highest slot that ever held a vector: every vector lies below it, so a cleanup
  // over the whole space scans [0, scan_end()) rather than the whole capacity (free slots are
  // taken lowest first, so this stays near size() unless the space was fuller once).
  int scan_end() const { return scan_end_; }
  int64_t bytes() const { return storage_.bytes() + budget_.bytes(); }  // of the arena
  hrr::HrrSpace& hrr() { return *hrr_; }

  // slots[i] <- the slot of ids[i]. NOT_FOUND naming the first unknown id, as "<what>[i]".
  absl::Status Resolve(absl::string_view what, std::span<const uint64_t> ids, std::vector<int32_t>& slots) const;
  // The id stored in `slot`, 0 when the slot is free.
  uint64_t IdOf(int32_t slot) const { return slot_ids_[size_t(slot)]; }

  // Stores n new vectors, all or none. RESOURCE_EXHAUSTED when fewer than n slots are free;
  // otherwise `fill` writes n free slots, each gets its digest and a new id (appended to `ids`,
  // in slot order). INVALID_ARGUMENT naming "result i" when a vector `fill` made has a bin beyond
  // the range of stored vectors (hrr::CheckBins: an operation overflowed). When fill, that check
  // or a digest fails the slots are zeroed and stay free.
  absl::Status Store(int n, absl::FunctionRef<absl::Status(std::span<const int32_t> slots)> fill,
                     DigestScratch& scratch, std::vector<uint64_t>& ids);
  // Deletes the vectors in `slots` (resolved, distinct): zeroed, freed, their ids unknown.
  absl::Status Erase(std::span<const int32_t> slots);
  // DATA_LOSS naming the first vector of `slots` whose stored spectrum no longer matches its
  // digest.
  absl::Status Verify(std::span<const int32_t> slots, DigestScratch& scratch);

 private:
  friend class MemorySpaceTestPeer;  // tests: corrupts a stored vector

  MemorySpace(std::string name, MemoryArena::Lease storage, MemoryArena::Lease budget,
              std::unique_ptr<hrr::HrrSpace> hrr);
  // digests[i] <- the SHA-256 of slots[i]'s spectrum; with `check_range`, each spectrum must first
  // pass hrr::CheckBins.
  absl::Status Digests(std::span<const int32_t> slots, DigestScratch& scratch, std::vector<Digest>& digests,
                       bool check_range);

  const std::string name_;
  // The leases outlive the HrrSpace (declared first, destroyed last): it holds the storage.
  MemoryArena::Lease storage_;  // the vectors, in the host block (empty: the space allocated them)
  MemoryArena::Lease budget_;   // every other byte the space takes
  std::unique_ptr<hrr::HrrSpace> hrr_;
  std::vector<uint64_t> slot_ids_;                // per slot; 0 = free
  std::vector<Digest> digests_;                   // per slot, valid while it holds a vector
  absl::flat_hash_map<uint64_t, int32_t> slots_;  // id -> slot
  std::vector<int32_t> free_;                     // free slots; the back is taken first
  std::vector<Digest> new_digests_;               // Store's scratch
  uint64_t next_id_ = 1;
  int scan_end_ = 0;
};

}  // namespace fieldbrain::server::memory
