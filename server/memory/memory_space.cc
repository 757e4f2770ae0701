#include "server/memory/memory_space.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gpu/hrr/hrr_checks.h"
#include "server/memory/memory_limits.h"

namespace fieldbrain::server::memory {
namespace {

// `fn` over consecutive pieces of `slots` of at most `piece` entries (library calls take at most
// max_batch entries).
template <typename Fn>
absl::Status InPieces(std::span<const int32_t> slots, int piece, Fn fn) {
  for (size_t begin = 0; begin < slots.size(); begin += size_t(piece)) {
    const size_t n = std::min(size_t(piece), slots.size() - begin);
    if (absl::Status s = fn(slots.subspan(begin, n), begin); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<MemorySpace>> MemorySpace::Create(std::string name, int dim, int capacity,
                                                                 int request_vectors, const std::string& backend,
                                                                 MemoryArena& arena) {
  const hrr::HrrConfig config{dim, capacity, std::max(1, std::min(capacity, request_vectors))};
  const int64_t index_bytes = int64_t(capacity) * kIndexBytesPerSlot;
  auto refuse = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat("space '", name, "' (dimension ", dim, ", capacity ", capacity,
                                               ") does not fit: ", s.message()));
  };
  // The part known before the HrrSpace exists is taken first, so a space that cannot fit is
  // refused before anything is allocated for it.
  MemoryArena::Lease storage;
  MemoryArena::Lease known;
  hrr::HrrStorage where;
  if (arena.host()) {
    absl::StatusOr<MemoryArena::Lease> region = arena.TakeRegion(hrr::StorageBytes(config));
    if (!region.ok()) return refuse(region.status());
    storage = *std::move(region);
    where = hrr::HrrStorage{storage.data(), storage.bytes()};
  }
  {
    absl::StatusOr<MemoryArena::Lease> lease =
        arena.TakeBudget(index_bytes + (arena.host() ? 0 : hrr::StorageBytes(config)));
    if (!lease.ok()) return refuse(lease.status());
    known = *std::move(lease);
  }
  absl::StatusOr<std::unique_ptr<hrr::HrrSpace>> hrr = hrr::MakeHrrSpace(backend, config, where);
  if (!hrr.ok()) return refuse(hrr.status());
  // Now the whole figure: the index and what the space allocated itself (its vectors unless they
  // are in the host block, its work areas).
  known = MemoryArena::Lease();
  absl::StatusOr<MemoryArena::Lease> budget = arena.TakeBudget(index_bytes + (*hrr)->bytes());
  if (!budget.ok()) return refuse(budget.status());
  return std::unique_ptr<MemorySpace>(
      new MemorySpace(std::move(name), std::move(storage), *std::move(budget), *std::move(hrr)));
}

MemorySpace::MemorySpace(std::string name, MemoryArena::Lease storage, MemoryArena::Lease budget,
                         std::unique_ptr<hrr::HrrSpace> hrr)
    : name_(std::move(name)), storage_(std::move(storage)), budget_(std::move(budget)), hrr_(std::move(hrr)) {
  const int capacity = hrr_->capacity();
  slot_ids_.assign(size_t(capacity), 0);
  digests_.resize(size_t(capacity));
  slots_.reserve(size_t(capacity));
  free_.reserve(size_t(capacity));
  for (int slot = capacity - 1; slot >= 0; --slot) free_.push_back(slot);  // slot 0 is taken first
}

absl::Status MemorySpace::Resolve(absl::string_view what, std::span<const uint64_t> ids,
                                  std::vector<int32_t>& slots) const {
  slots.resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto it = slots_.find(ids[i]);
    if (it == slots_.end()) {
      return absl::NotFoundError(
          absl::StrCat(what, "[", i, "] = ", ids[i], ": no vector with this id in space '", name_, "'"));
    }
    slots[i] = it->second;
  }
  return absl::OkStatus();
}

absl::Status MemorySpace::Store(int n, absl::FunctionRef<absl::Status(std::span<const int32_t> slots)> fill,
                                DigestScratch& scratch, std::vector<uint64_t>& ids) {
  if (n > int(free_.size())) {
    return absl::ResourceExhaustedError(absl::StrCat("space '", name_, "' has room for ", free_.size(),
                                                     " more vectors (capacity ", capacity(), "); this call stores ", n,
                                                     ": delete some, or use a larger space"));
  }
  const std::span<const int32_t> slots(free_.data() + free_.size() - size_t(n), size_t(n));
  absl::Status s = fill(slots);
  // The results are checked on the copy the digests are taken from: the same on both backends, and
  // no extra read of device memory.
  if (s.ok()) s = Digests(slots, scratch, new_digests_, /*check_range=*/true);
  if (!s.ok()) {
    // Free slots must stay zero vectors: cleanup over the whole space skips only those.
    InPieces(slots, max_batch(), [&](std::span<const int32_t> piece, size_t) {
      return hrr_->Zero(piece);
    }).IgnoreError();
    return s;
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    const int32_t slot = slots[i];
    const uint64_t id = next_id_++;
    slot_ids_[size_t(slot)] = id;
    digests_[size_t(slot)] = new_digests_[i];
    slots_.emplace(id, slot);
    ids.push_back(id);
    scan_end_ = std::max(scan_end_, slot + 1);
  }
  free_.resize(free_.size() - size_t(n));
  return absl::OkStatus();
}

absl::Status MemorySpace::Erase(std::span<const int32_t> slots) {
  if (absl::Status s =
          InPieces(slots, max_batch(), [&](std::span<const int32_t> piece, size_t) { return hrr_->Zero(piece); });
      !s.ok()) {
    return s;
  }
  for (const int32_t slot : slots) {
    slots_.erase(slot_ids_[size_t(slot)]);
    slot_ids_[size_t(slot)] = 0;
    free_.push_back(slot);
  }
  return absl::OkStatus();
}

absl::Status MemorySpace::Verify(std::span<const int32_t> slots, DigestScratch& scratch) {
  if (absl::Status s = Digests(slots, scratch, new_digests_, /*check_range=*/false); !s.ok()) return s;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (new_digests_[i] != digests_[size_t(slots[i])]) {
      return absl::DataLossError(absl::StrCat("vector ", slot_ids_[size_t(slots[i])], " of space '", name_,
                                              "' is corrupt: its stored spectrum no longer matches the SHA-256 "
                                              "taken when it was written"));
    }
  }
  return absl::OkStatus();
}

absl::Status MemorySpace::Digests(std::span<const int32_t> slots, DigestScratch& scratch,
                                  std::vector<Digest>& digests, bool check_range) {
  digests.resize(slots.size());
  const size_t bins = size_t(hrr_->bins());
  return InPieces(slots, max_batch(), [&](std::span<const int32_t> piece, size_t begin) {
    scratch.spectra.resize(piece.size() * bins);
    if (absl::Status s = hrr_->GetSpectra(piece, scratch.spectra); !s.ok()) return s;
    if (check_range) {
      if (absl::Status s = hrr::CheckBins("result", scratch.spectra, int(bins), begin); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            s.message(), ": the operation's result is too large to keep; nothing was stored"));
      }
    }
    for (size_t i = 0; i < piece.size(); ++i) {
      const std::span<const hrr::Cf> spectrum(scratch.spectra.data() + i * bins, bins);
      absl::StatusOr<Digest> d = scratch.digester->Sha256(std::as_bytes(spectrum));
      if (!d.ok()) return d.status();
      digests[begin + i] = *d;
    }
    return absl::OkStatus();
  });
}

}  // namespace fieldbrain::server::memory
