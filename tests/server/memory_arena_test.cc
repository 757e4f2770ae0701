// The Memory service's building blocks: the arena, the vector digest, space names.
#include "server/memory/memory_arena.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/memory/space_registry.h"
#include "server/memory/vector_digest.h"

namespace fieldbrain::server::memory {
namespace {

using ::testing::HasSubstr;

TEST(MemoryArenaTest, CarvesAlignedRegionsAndCoalescesThemWhenFreed) {
  absl::StatusOr<std::unique_ptr<MemoryArena>> arena = MemoryArena::Create(4096, /*host_block=*/true);
  ASSERT_TRUE(arena.ok()) << arena.status();
  MemoryArena& a = **arena;
  EXPECT_TRUE(a.host());
  EXPECT_EQ(a.bytes(), 4096);
  absl::StatusOr<MemoryArena::Lease> r1 = a.TakeRegion(1000);  // rounded up to 1024
  absl::StatusOr<MemoryArena::Lease> r2 = a.TakeRegion(1024);
  absl::StatusOr<MemoryArena::Lease> r3 = a.TakeRegion(1024);
  ASSERT_TRUE(r1.ok() && r2.ok() && r3.ok());
  for (const auto* r : {&*r1, &*r2, &*r3}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(r->data()) % 256, 0u);
    EXPECT_EQ(r->bytes(), 1024);
  }
  std::memset(r2->data(), 0xab, 1024);  // the memory is there
  EXPECT_EQ(a.used(), 3072);

  absl::StatusOr<MemoryArena::Lease> big = a.TakeRegion(2048);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(big.status().message(), HasSubstr("2048 bytes are needed"));
  EXPECT_THAT(big.status().message(), HasSubstr("1024 of 4096 bytes free"));

  *r1 = MemoryArena::Lease();  // [0, 1024) and [1024, 2048) free and merge into one region
  *r2 = MemoryArena::Lease();
  EXPECT_EQ(a.used(), 1024);
  big = a.TakeRegion(2048);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(a.used(), 3072);
}

TEST(MemoryArenaTest, BudgetLeasesCountAgainstTheSameBytes) {
  for (bool host : {true, false}) {
    absl::StatusOr<std::unique_ptr<MemoryArena>> arena = MemoryArena::Create(1 << 20, host);
    ASSERT_TRUE(arena.ok());
    MemoryArena& a = **arena;
    EXPECT_EQ(a.host(), host);
    absl::StatusOr<MemoryArena::Lease> counted = a.TakeBudget(700 * 1024);
    ASSERT_TRUE(counted.ok());
    EXPECT_EQ(counted->data(), nullptr);
    EXPECT_EQ(a.available(), (1 << 20) - 700 * 1024);
    absl::StatusOr<MemoryArena::Lease> more = a.TakeBudget(400 * 1024);
    EXPECT_EQ(more.status().code(), absl::StatusCode::kResourceExhausted);
    if (host) {
      EXPECT_EQ(a.TakeRegion(400 * 1024).status().code(), absl::StatusCode::kResourceExhausted);
    } else {
      EXPECT_EQ(a.TakeRegion(1024).status().code(), absl::StatusCode::kFailedPrecondition);
    }
    {
      MemoryArena::Lease moved = *std::move(counted);
      EXPECT_EQ(a.used(), 700 * 1024);
    }
    EXPECT_EQ(a.used(), 0);
  }
}

TEST(VectorDigestTest, IsSha256) {
  absl::StatusOr<std::unique_ptr<VectorDigester>> d = VectorDigester::Create();
  ASSERT_TRUE(d.ok()) << d.status();
  const std::string abc = "abc";
  absl::StatusOr<Digest> digest = (*d)->Sha256(std::as_bytes(std::span<const char>(abc.data(), abc.size())));
  ASSERT_TRUE(digest.ok());
  std::string hex;
  for (uint8_t byte : *digest) {
    constexpr char kHex[] = "0123456789abcdef";
    hex += kHex[byte >> 4];
    hex += kHex[byte & 15];
  }
  EXPECT_EQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // FIPS 180-2
}

TEST(SpaceNameTest, AcceptsOnlyShortPortableNames) {
  EXPECT_TRUE(CheckSpaceName("robot-7.episodic_memory").ok());
  EXPECT_TRUE(CheckSpaceName(std::string(64, 'a')).ok());
  for (const std::string& bad : {std::string(), std::string(65, 'a'), std::string("a b"), std::string("a/b"),
                                 std::string("caf\xc3\xa9"), std::string("a\0b", 3)}) {
    const absl::Status s = CheckSpaceName(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(CheckSpaceName("a b").message(), HasSubstr("byte 1"));
}

}  // namespace
}  // namespace fieldbrain::server::memory
