// The CUDA HRR backend's per-process library context (gpu/hrr/cuda/cuda_libraries.h) on the
// emulated device: every space shares one stream, one cuBLAS handle and one work area, counted
// once by the Memory store; a device error fails its call alone unless it is sticky, which loses
// the context for every space. Each test runs in its own process (gtest_discover_tests), so a
// sticky fault cannot leak into the next.
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "brain/v1/memory.pb.h"
#include "cuda_emu/control.h"
#include "cuda_runtime_api.h"
#include "gpu/hrr/cuda/cuda_hrr_space.h"
#include "gpu/hrr/cuda/cuda_libraries.h"
#include "gpu/hrr/hrr_backend_context.h"
#include "gpu/hrr/hrr_space.h"
#include "gtest/gtest.h"
#include "server/memory/memory_limits.h"
#include "server/memory/memory_store.h"

namespace fieldbrain {
namespace {

using hrr::HrrConfig;
using hrr::HrrSpace;
using Slots = std::vector<int32_t>;

constexpr int64_t kMiB = int64_t(1) << 20;

class SharedContextTest : public ::testing::Test {
 protected:
  void TearDown() override { emu::ResetDevice(); }

  // A Memory store of 256 MiB on the CUDA backend.
  static absl::StatusOr<std::unique_ptr<server::memory::MemoryStore>> CudaStore() {
    server::memory::MemoryOptions options;
    options.arena_bytes = 256 * kMiB;
    options.engine_kind = "cuda";
    return server::memory::MemoryStore::Create(options, nullptr);
  }

  static std::unique_ptr<HrrSpace> Space(int dim = 1024, int capacity = 256, int batch = 256) {
    absl::StatusOr<std::unique_ptr<HrrSpace>> s = hrr::MakeHrrSpace("cuda", HrrConfig{dim, capacity, batch});
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }
};

TEST_F(SharedContextTest, EverySpaceSharesOneContextThatGoesWithTheLast) {
  const int64_t made_before = hrr::cuda::CurrentLibraryContextStats().made;
  std::vector<std::unique_ptr<HrrSpace>> spaces;
  for (int i = 0; i < 20; ++i) {
    spaces.push_back(Space());
    ASSERT_NE(spaces.back(), nullptr);
    // A space of 256 vectors of dimension 1024 holds 1 MiB of vectors and about 4.5 MiB of
    // workspace (arguments, staging and results for batches of 256, scores, the cuFFT work area);
    // before the shared context each also held 32 MiB of cuBLAS work area and its pinned block.
    EXPECT_LT(spaces.back()->bytes(), 8 * kMiB) << "space " << i;
  }
  const hrr::cuda::LibraryContextStats stats = hrr::cuda::CurrentLibraryContextStats();
  EXPECT_EQ(stats.made, made_before + 1);
  EXPECT_TRUE(stats.live);
  // The emulated H100's cuBLAS work area (cuBLAS's own default from Hopper on) and the one pinned
  // staging block, sized for these spaces' batches.
  EXPECT_EQ(stats.bytes, 32 * kMiB + hrr::cuda::PinnedBytesFor(HrrConfig{1024, 256, 256}));
  spaces.clear();
  EXPECT_FALSE(hrr::cuda::CurrentLibraryContextStats().live);
}

TEST_F(SharedContextTest, TheMemoryStoreCountsTheContextOnceAndFitsManySpaces) {
  const int64_t made_before = hrr::cuda::CurrentLibraryContextStats().made;  // earlier tests' too
  absl::StatusOr<std::unique_ptr<server::memory::MemoryStore>> store = CudaStore();
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_EQ((*store)->backend(), "cuda");
  // The cuBLAS work area and the pinned staging block, sized once for the largest space the
  // limits allow (dimension 16384, batches of 256: 16 MiB).
  const int64_t pinned = hrr::cuda::PinnedBytesFor(HrrConfig{server::memory::kMaxSpaceDimension, 256, 256});
  EXPECT_EQ((*store)->shared_bytes(), 32 * kMiB + pinned);
  // A space of 1024 vectors of dimension 1024 takes about 10.5 MiB: six filled this arena when
  // each also held its own 32 MiB cuBLAS work area; now 20 fit beside the one shared work area.
  constexpr int kSpaces = 20;
  for (int i = 0; i < kSpaces; ++i) {
    brain::v1::CreateSpaceRequest r;
    r.set_name(absl::StrCat("space-", i));
    r.set_dimension(1024);
    r.set_capacity(1024);
    brain::v1::CreateSpaceResponse out;
    ASSERT_TRUE((*store)->CreateSpace(r, &out).ok()) << "space " << i;
  }
  brain::v1::ListSpacesResponse list;
  ASSERT_TRUE((*store)->ListSpaces(brain::v1::ListSpacesRequest(), &list).ok());
  ASSERT_EQ(list.spaces_size(), kSpaces);
  const uint64_t spaces_bytes = std::accumulate(list.spaces().begin(), list.spaces().end(), uint64_t(0),
                                                [](uint64_t sum, const brain::v1::SpaceInfo& s) { return sum + s.bytes(); });
  EXPECT_EQ(list.limits().arena_used_bytes(), spaces_bytes + uint64_t(32 * kMiB + pinned));
  EXPECT_EQ(hrr::cuda::CurrentLibraryContextStats().made, made_before + 1);
  EXPECT_TRUE((*store)->device_health().ok());
}

TEST_F(SharedContextTest, CreatingAndDeletingSpacesNeverSynchronisesTheDevice) {
  // cudaMalloc, cudaFree, cudaHostAlloc and cudaFreeHost synchronise the device on a card (they
  // would hold up the robots' kernels on their own stream): once the store exists, making and
  // deleting spaces calls none of them, only the stream-ordered allocator.
  absl::StatusOr<std::unique_ptr<server::memory::MemoryStore>> store = CudaStore();
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_EQ((*store)->backend(), "cuda");
  const std::vector<std::string> synchronising = {"cudaMalloc", "cudaFree", "cudaHostAlloc", "cudaFreeHost"};
  std::vector<int64_t> before;
  for (const std::string& call : synchronising) before.push_back(emu::CallCount(call));
  const int64_t allocs_before = emu::CallCount("cudaMallocFromPoolAsync");
  const int64_t frees_before = emu::CallCount("cudaFreeAsync");
  constexpr int kRounds = 10;
  // Every dimension a client may ask for up to the largest, so the pinned block never grows.
  const int dims[] = {64, 1024, 4096, server::memory::kMaxSpaceDimension};
  for (int round = 0; round < kRounds; ++round) {
    for (int d = 0; d < 4; ++d) {
      brain::v1::CreateSpaceRequest r;
      r.set_name(absl::StrCat("space-", d));
      r.set_dimension(uint32_t(dims[d]));
      r.set_capacity(d == 3 ? 64 : 512);
      brain::v1::CreateSpaceResponse out;
      ASSERT_TRUE((*store)->CreateSpace(r, &out).ok()) << "round " << round << " dimension " << dims[d];
    }
    brain::v1::PutRequest put;  // a call between, so that the spaces are used, not only made
    put.set_space("space-1");
    put.mutable_random()->set_count(8);
    put.mutable_random()->set_kind(brain::v1::VECTOR_KIND_GAUSSIAN);
    brain::v1::PutResponse put_out;
    ASSERT_TRUE((*store)->Put(put, &put_out).ok());
    for (int d = 0; d < 4; ++d) {
      brain::v1::DeleteSpaceRequest r;
      r.set_name(absl::StrCat("space-", d));
      brain::v1::DeleteSpaceResponse out;
      ASSERT_TRUE((*store)->DeleteSpace(r, &out).ok());
    }
  }
  for (size_t i = 0; i < synchronising.size(); ++i)
    EXPECT_EQ(emu::CallCount(synchronising[i]), before[i]) << synchronising[i] << " was called";
  // Each space: its slots and its workspace from the pool, both given back.
  EXPECT_EQ(emu::CallCount("cudaMallocFromPoolAsync") - allocs_before, 2 * 4 * kRounds);
  EXPECT_EQ(emu::CallCount("cudaFreeAsync") - frees_before, 2 * 4 * kRounds);
  // The pool keeps what the deleted spaces freed for the next ones: it reserves no more than
  // the largest round needed, not the sum of all rounds.
  absl::StatusOr<std::shared_ptr<hrr::cuda::LibraryContext>> context = hrr::cuda::LibraryContext::Acquire();
  ASSERT_TRUE(context.ok());
  uint64_t reserved = 0, used = 0;
  ASSERT_EQ(cudaMemPoolGetAttribute((*context)->pool(), cudaMemPoolAttrReservedMemCurrent, &reserved), cudaSuccess);
  ASSERT_EQ(cudaMemPoolGetAttribute((*context)->pool(), cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess);
  EXPECT_EQ(used, 0u);
  EXPECT_GT(reserved, 0u);
  EXPECT_LT(reserved, uint64_t(64 * kMiB)) << "one round's spaces, reused every round";
  EXPECT_EQ((*context)->pinned_allocs(), 1) << "the pinned block was sized once, when the store was made";
}

TEST_F(SharedContextTest, ASpaceOnAnotherThreadComputesTheSameBits) {
  // Spaces used from two threads at once take turns on the context's lock: same results as alone.
  std::unique_ptr<HrrSpace> a = Space(), b = Space();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const std::vector<int32_t> slots = {0, 1, 2, 3};
  const std::vector<uint64_t> ids = {1, 2, 3, 4};
  auto work = [&](HrrSpace& s, std::vector<float>& cosines) {
    for (int round = 0; round < 20; ++round) {
      ASSERT_TRUE(s.Random(slots, hrr::VectorKind::kGaussian, 7, ids).ok());
      ASSERT_TRUE(s.Bind(Slots{4, 5}, Slots{0, 1}, Slots{2, 3}).ok());
      cosines.assign(2, 0.0f);
      ASSERT_TRUE(s.Similarity(Slots{4, 5}, Slots{5, 4}, cosines).ok());
    }
  };
  std::vector<float> ca, cb;
  std::thread other([&] { work(*b, cb); });
  work(*a, ca);
  other.join();
  EXPECT_EQ(ca, cb);
}

TEST_F(SharedContextTest, ANonStickyDeviceErrorFailsItsCallAlone) {
  std::unique_ptr<HrrSpace> space = Space();
  ASSERT_NE(space, nullptr);
  emu::InjectKernelFault("CommitKernel", cudaErrorInvalidConfiguration);
  const absl::Status failed = space->Random(Slots{0, 1}, hrr::VectorKind::kUnitary, 3, std::vector<uint64_t>{1, 2});
  EXPECT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("cudaErrorInvalidConfiguration"), std::string::npos) << failed;
  // The space and the context go on: the same call now succeeds, and a unitary vector's cosine
  // with itself is 1.
  ASSERT_TRUE(space->Random(Slots{0, 1}, hrr::VectorKind::kUnitary, 3, std::vector<uint64_t>{1, 2}).ok());
  std::vector<float> cosines(2);
  ASSERT_TRUE(space->Similarity(Slots{0, 1}, Slots{0, 1}, cosines).ok());
  EXPECT_NEAR(cosines[0], 1.0f, 1e-5f);
  absl::StatusOr<std::shared_ptr<hrr::BackendContext>> context = hrr::AcquireBackendContext("cuda");
  ASSERT_TRUE(context.ok());
  EXPECT_TRUE((*context)->health().ok());
}

TEST_F(SharedContextTest, AStickyDeviceErrorLosesTheContextForEverySpace) {
  std::unique_ptr<HrrSpace> a = Space(), b = Space();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  emu::InjectKernelFault("CommitKernel", cudaErrorIllegalAddress);
  const absl::Status failed = a->Random(Slots{0}, hrr::VectorKind::kGaussian, 3, std::vector<uint64_t>{1});
  EXPECT_TRUE(absl::IsUnavailable(failed)) << failed;
  EXPECT_NE(failed.message().find("device context is lost"), std::string::npos) << failed;
  // The spaces hold the live context (a new one could not be made on a lost device).
  absl::StatusOr<std::shared_ptr<hrr::cuda::LibraryContext>> context = hrr::cuda::LibraryContext::Acquire();
  ASSERT_TRUE(context.ok()) << context.status();
  EXPECT_TRUE(absl::IsUnavailable((*context)->health())) << (*context)->health();
  // The other space fails too (every call returns the sticky error), and the first refuses at once.
  EXPECT_FALSE(b->Random(Slots{0}, hrr::VectorKind::kGaussian, 3, std::vector<uint64_t>{1}).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(a->Zero(Slots{0})));
}

}  // namespace
}  // namespace fieldbrain
