// MemoryStore on the CPU backend, called directly (as the engine thread does): the digest check
// catches a corrupted vector, and the arena bounds what spaces take.
#include "server/memory/memory_store.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fieldbrain::server::memory {

// Test-only access to a space's stored bytes: flips one bit of a stored spectrum in place, as a
// memory fault would (in the arena's host block; through the library where the backend keeps the
// vectors itself).
class MemorySpaceTestPeer {
 public:
  static absl::Status FlipStoredBit(MemorySpace& space, uint64_t id, size_t byte) {
    std::vector<int32_t> slots;
    if (absl::Status s = space.Resolve("id", std::span<const uint64_t>(&id, 1), slots); !s.ok()) return s;
    const size_t spectrum_bytes = size_t(space.bins()) * sizeof(hrr::Cf);
    if (space.storage_.data() != nullptr) {
      auto* stored = static_cast<uint8_t*>(space.storage_.data()) + size_t(slots[0]) * spectrum_bytes;
      stored[byte] ^= 1;
      return absl::OkStatus();
    }
    std::vector<hrr::Cf> spectrum(size_t(space.bins()));
    if (absl::Status s = space.hrr_->GetSpectra(slots, spectrum); !s.ok()) return s;
    reinterpret_cast<uint8_t*>(spectrum.data())[byte] ^= 1;
    return space.hrr_->PutSpectra(slots, spectrum);
  }
};

namespace {

using ::testing::HasSubstr;

std::unique_ptr<MemoryStore> MakeStore(int64_t arena_bytes) {
  MemoryOptions o;
  o.arena_bytes = arena_bytes;
  o.max_request_vectors = 256;
  o.engine_kind = "cpu";
  absl::StatusOr<std::unique_ptr<MemoryStore>> store = MemoryStore::Create(o, nullptr);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

brain::v1::CreateSpaceRequest Space(const std::string& name, uint32_t dim, uint32_t capacity) {
  brain::v1::CreateSpaceRequest r;
  r.set_name(name);
  r.set_dimension(dim);
  r.set_capacity(capacity);
  return r;
}

TEST(MemoryStoreTest, CorruptedVectorIsDataLossNamingItsId) {
  auto store = MakeStore(4 << 20);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->backend(), "cpu");
  brain::v1::CreateSpaceResponse created;
  ASSERT_TRUE(store->CreateSpace(Space("s", 64, 8), &created).ok());
  brain::v1::PutRequest put;
  put.set_space("s");
  put.mutable_random()->set_kind(brain::v1::VECTOR_KIND_GAUSSIAN);
  put.mutable_random()->set_seed(5);
  put.mutable_random()->set_count(3);
  brain::v1::PutResponse ids;
  ASSERT_TRUE(store->Put(put, &ids).ok());
  ASSERT_EQ(ids.ids_size(), 3);

  absl::StatusOr<MemorySpace*> space = store->registry().Find("s");
  ASSERT_TRUE(space.ok());
  ASSERT_TRUE(MemorySpaceTestPeer::FlipStoredBit(**space, ids.ids(1), 17).ok());

  brain::v1::GetRequest get;
  get.set_space("s");
  get.add_ids(ids.ids(0));
  get.add_ids(ids.ids(1));
  brain::v1::GetResponse got;
  const absl::Status s = store->Get(get, &got);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("vector ", ids.ids(1), " of space 's'")));
  EXPECT_EQ(got.vectors_size(), 0);  // nothing is returned

  get.clear_ids();
  get.add_ids(ids.ids(2));
  get.add_ids(ids.ids(0));
  EXPECT_TRUE(store->Get(get, &got).ok());
  EXPECT_EQ(got.vectors_size(), 2);
}

TEST(MemoryStoreTest, SpacesTakeTheirBytesFromTheArenaAndGiveThemBack) {
  auto store = MakeStore(4 << 20);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->arena().bytes(), 4 << 20);
  EXPECT_EQ(store->arena().used(), 0);
  brain::v1::CreateSpaceResponse created;
  ASSERT_TRUE(store->CreateSpace(Space("a", 1024, 256), &created).ok());
  // 256 spectra of 513 bins, their norms, 256 slots of index and the library's staging area.
  const int64_t storage = hrr::StorageBytes(hrr::HrrConfig{1024, 256, 256});
  EXPECT_GE(int64_t(created.space().bytes()), storage + 256 * kIndexBytesPerSlot);
  EXPECT_EQ(store->arena().used(), int64_t(created.space().bytes()));

  const absl::Status too_big = store->CreateSpace(Space("b", 1024, 4096), &created);
  EXPECT_EQ(too_big.code(), absl::StatusCode::kResourceExhausted) << too_big;
  EXPECT_THAT(too_big.message(), HasSubstr("space 'b' (dimension 1024, capacity 4096) does not fit"));
  EXPECT_THAT(too_big.message(), HasSubstr("--memory_arena_bytes"));
  brain::v1::ListSpacesResponse list;
  ASSERT_TRUE(store->ListSpaces({}, &list).ok());
  EXPECT_EQ(list.spaces_size(), 1);  // nothing of "b" was kept
  EXPECT_EQ(list.limits().arena_used_bytes(), uint64_t(store->arena().used()));

  brain::v1::DeleteSpaceRequest del;
  del.set_name("a");
  brain::v1::DeleteSpaceResponse deleted;
  ASSERT_TRUE(store->DeleteSpace(del, &deleted).ok());
  EXPECT_EQ(store->arena().used(), 0);
}

}  // namespace
}  // namespace fieldbrain::server::memory
