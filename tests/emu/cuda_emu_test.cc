// The CUDA emulation against the rules of the runtime it stands in for, and its checkers against
// planted bugs (tests/emu/planted_kernels.cu): each bug must be caught, and the correct kernels
// beside them must run clean. Label cuda-emu.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_emu/control.h"
#include "gtest/gtest.h"
#include "tests/emu/planted_kernels.h"

namespace fieldbrain::emu::testing {
namespace {

// Device memory for a test, freed at the end; the context is reset after each test so that a
// planted fault does not reach the next one.
class EmuTest : public ::testing::Test {
 protected:
  void TearDown() override {
    ResetDevice();  // a faulted context frees nothing, as on a card
    for (void* p : owned_) cudaFree(p);
    SelectCard("h100");
  }
  float* DeviceFloats(size_t n) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, n * sizeof(float)), cudaSuccess);
    owned_.push_back(p);
    return static_cast<float*>(p);
  }
  std::vector<float> Read(const float* d, size_t n) {
    std::vector<float> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  void Write(float* d, const std::vector<float>& h) {
    ASSERT_EQ(cudaMemcpy(d, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<void*> owned_;
};

bool Mentions(const std::vector<std::string>& reports, const std::string& what) {
  for (const std::string& r : reports)
    if (r.find(what) != std::string::npos) return true;
  return false;
}

// A kernel that faults is launched asynchronously; whether the launch's own cudaGetLastError
// still sees success or already the fault it latched depends on how far the stream got (on a card
// as here), so both are accepted; the synchronisation after it must report the fault.
::testing::AssertionResult LaunchedOrAlreadyFailed(cudaError_t launch, cudaError_t fault) {
  if (launch == cudaSuccess || launch == fault) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "launch returned " << cudaGetErrorName(launch) << ", expected cudaSuccess or "
                                       << cudaGetErrorName(fault);
}

TEST_F(EmuTest, BarriersAndSharedMemoryGiveTheExactBlockSums) {
  const int blocks = 5;
  std::vector<float> in(size_t(blocks) * 64);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i % 7) - 3.0f;
  float* d_in = DeviceFloats(in.size());
  float* d_out = DeviceFloats(size_t(blocks));
  Write(d_in, in);
  ASSERT_EQ(LaunchBlockSum(d_in, d_out, blocks, nullptr), cudaSuccess);
  const std::vector<float> out = Read(d_out, size_t(blocks));
  for (int b = 0; b < blocks; ++b) {
    float want = 0.0f;
    for (int t = 0; t < 64; ++t) want += in[size_t(b * 64 + t)];
    EXPECT_EQ(out[size_t(b)], want) << "block " << b;
  }
  EXPECT_TRUE(Reports().empty());
}

TEST_F(EmuTest, ShufflesFollowCudaSemanticsForEveryWidth) {
  std::vector<float> in(32);
  for (int i = 0; i < 32; ++i) in[size_t(i)] = float(i * i % 11);
  float* d_in = DeviceFloats(32);
  float* d_out = DeviceFloats(32);
  Write(d_in, in);
  for (int width : {32, 16, 8, 2}) {
    ASSERT_EQ(LaunchWarpSum(d_in, d_out, width, nullptr), cudaSuccess);
    const std::vector<float> out = Read(d_out, 32);
    for (int lane = 0; lane < 32; ++lane) {
      // __shfl_down_sync within a segment of `width` lanes: lanes whose source would leave the
      // segment keep their own value, so the segment's first lane ends with the segment's sum.
      const int seg = lane / width * width;
      float want = 0.0f;
      for (int i = seg; i < seg + width; ++i) want += in[size_t(i)];
      EXPECT_EQ(out[size_t(lane)], want) << "width " << width << " lane " << lane;
    }
  }
  EXPECT_TRUE(Reports().empty());
}

TEST_F(EmuTest, AShuffleMaskThatLeavesOutItsCallerIsReported) {
  float* out = DeviceFloats(32);
  ASSERT_TRUE(LaunchedOrAlreadyFailed(LaunchShuffleMaskWithoutCaller(out, nullptr), cudaErrorLaunchFailure));
  EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaErrorLaunchFailure);
  EXPECT_TRUE(Mentions(Reports(), "does not name its lane")) << ::testing::PrintToString(Reports());
}

TEST_F(EmuTest, DivergentBarriersAreReported) {
  float* out = DeviceFloats(32);
  ASSERT_TRUE(LaunchedOrAlreadyFailed(LaunchTwoBarriers(out, nullptr), cudaErrorLaunchFailure));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  EXPECT_TRUE(Mentions(Reports(), "TwoBarriersKernel")) << ::testing::PrintToString(Reports());
  EXPECT_TRUE(Mentions(Reports(), "divergent barrier"));
  ResetDevice();
  ASSERT_TRUE(LaunchedOrAlreadyFailed(LaunchBarrierAfterExit(out, nullptr), cudaErrorLaunchFailure));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  EXPECT_TRUE(Mentions(Reports(), "a barrier every thread must reach")) << ::testing::PrintToString(Reports());
}

TEST_F(EmuTest, AFaultIsStickyLikeOnACard) {
  float* out = DeviceFloats(32);
  ASSERT_TRUE(LaunchedOrAlreadyFailed(LaunchTwoBarriers(out, nullptr), cudaErrorLaunchFailure));
  EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaErrorLaunchFailure);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 16), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure) << "a sticky error is never cleared";
  ResetDevice();
  EXPECT_EQ(cudaMalloc(&p, 16), cudaSuccess);
  owned_.push_back(p);
}

TEST_F(EmuTest, InjectedFaultsFailTheNamedKernelOrCall) {
  float* in = DeviceFloats(64);
  float* out = DeviceFloats(1);
  InjectKernelFault("BlockSumKernel", cudaErrorIllegalAddress, 2);
  ASSERT_EQ(LaunchBlockSum(in, out, 1, nullptr), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess) << "the first launch is not the injected one";
  ASSERT_TRUE(LaunchedOrAlreadyFailed(LaunchBlockSum(in, out, 1, nullptr), cudaErrorIllegalAddress));
  EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaErrorIllegalAddress);
  ResetDevice();
  InjectKernelFault("BlockSumKernel", cudaErrorLaunchOutOfResources);
  EXPECT_EQ(LaunchBlockSum(in, out, 1, nullptr), cudaErrorLaunchOutOfResources);  // its cudaGetLastError took it
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a launch error is not sticky";
  InjectCallFault("cudaMemcpyAsync", cudaErrorInvalidValue);
  float host = 0.0f;
  EXPECT_EQ(cudaMemcpyAsync(&host, out, 4, cudaMemcpyDeviceToHost, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpyAsync(&host, out, 4, cudaMemcpyDeviceToHost, nullptr), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
}

TEST_F(EmuTest, LaunchesOverTheCardsLimitsAreRefusedAsTheRuntimeRefusesThem) {
  float* out = DeviceFloats(1);
  EXPECT_EQ(LaunchSized(out, 1025, 0, nullptr), cudaErrorInvalidConfiguration);
  EXPECT_EQ(LaunchSized(out, 1024, 0, nullptr), cudaSuccess);
  // Dynamic shared memory: 48 KiB without the attribute, up to the card's opt-in with it.
  EXPECT_EQ(LaunchSized(out, 128, 48 * 1024 + 4, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "not sticky, and the launcher took it";
  ASSERT_EQ(RaiseSizedSharedLimit(100 * 1024), cudaSuccess);
  EXPECT_EQ(LaunchSized(out, 128, 100 * 1024, nullptr), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  EXPECT_EQ(Read(out, 1)[0], float(100 * 1024 / 4 - 1));
  EXPECT_EQ(RaiseSizedSharedLimit(228 * 1024), cudaErrorInvalidValue) << "over H100's 227 KiB opt-in";
  ASSERT_TRUE(SelectCard("t4"));
  EXPECT_EQ(RaiseSizedSharedLimit(100 * 1024), cudaErrorInvalidValue) << "over T4's 64 KiB";
  EXPECT_EQ(LaunchSized(out, 128, 100 * 1024, nullptr), cudaErrorInvalidValue);
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  EXPECT_EQ(prop.major, 7);
  EXPECT_EQ(prop.minor, 5);
  EXPECT_EQ(prop.sharedMemPerBlockOptin, 64u * 1024u);
  EXPECT_TRUE(Reports().empty());
}

// A kernel's __launch_bounds__ is its own limit below the card's: a block over it is refused with
// the error a card gives (too many resources requested), which is not sticky, and the kernel's
// attributes report it.
TEST_F(EmuTest, LaunchesOverTheKernelsLaunchBoundAreRefused) {
  float* out = DeviceFloats(1);
  EXPECT_EQ(BoundedKernelMaxThreads(), kBoundedThreads);
  EXPECT_EQ(LaunchBounded(out, kBoundedThreads + 1, nullptr), cudaErrorLaunchOutOfResources);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "not sticky, and the launcher took it";
  EXPECT_EQ(LaunchBounded(out, 1025, nullptr), cudaErrorInvalidConfiguration) << "the card's limit comes first";
  EXPECT_EQ(LaunchBounded(out, kBoundedThreads, nullptr), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  EXPECT_EQ(Read(out, 1)[0], float(kBoundedThreads));
  EXPECT_TRUE(Reports().empty());
}

// Static and dynamic shared memory share the block's 48 KiB unless the kernel's attribute was
// raised: 16 KiB static + 32 KiB dynamic fits, + 40 KiB does not (the launch a card refuses).
TEST_F(EmuTest, StaticAndDynamicSharedMemoryShareTheBlocksLimit) {
  float* out = DeviceFloats(1);
  ASSERT_EQ(LaunchStaticAndDynamic(out, 32 * 1024, nullptr), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  EXPECT_EQ(Read(out, 1)[0], 3.0f);
  // Refused as it runs (static shared memory is known only then).
  ASSERT_TRUE(LaunchedOrAlreadyFailed(LaunchStaticAndDynamic(out, 40 * 1024, nullptr), cudaErrorLaunchFailure));
  EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaErrorLaunchFailure);
  EXPECT_TRUE(Mentions(Reports(), "StaticAndDynamicKernel")) << ::testing::PrintToString(Reports());
}

TEST_F(EmuTest, FreshDeviceMemoryIsSignallingNans) {
  float* in = DeviceFloats(4);
  float* out = DeviceFloats(1);
  ASSERT_EQ(LaunchCopyFirst(in, out, nullptr), cudaSuccess);
  const float v = Read(out, 1)[0];
  uint32_t bits = 0;
  std::memcpy(&bits, &v, 4);
  EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(bits & 0x00400000u, 0u) << "quiet bit clear: a signalling NaN";
}

// The stream-ordered allocator (cudaMallocAsync, cudaMallocFromPoolAsync, cudaFreeAsync, memory
// pools) as the runtime documents it.
cudaMemPool_t MakePool(uint64_t release_threshold) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool = nullptr;
  EXPECT_EQ(cudaMemPoolCreate(&pool, &props), cudaSuccess);
  EXPECT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &release_threshold), cudaSuccess);
  return pool;
}

uint64_t PoolFigure(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  uint64_t v = 0;
  EXPECT_EQ(cudaMemPoolGetAttribute(pool, attr, &v), cudaSuccess);
  return v;
}

TEST_F(EmuTest, StreamOrderedMemoryIsSignallingNansAndUsableLaterInItsStream) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  cudaMemPool_t pool = MakePool(0);
  void* from_pool = nullptr;
  void* from_default = nullptr;
  ASSERT_EQ(cudaMallocFromPoolAsync(&from_pool, 64 * sizeof(float), pool, stream), cudaSuccess);
  ASSERT_EQ(cudaMallocAsync(&from_default, 64 * sizeof(float), stream), cudaSuccess);
  for (void* p : {from_pool, from_default}) {
    std::vector<float> h(64, 0.0f);
    ASSERT_EQ(cudaMemcpyAsync(h.data(), p, 64 * sizeof(float), cudaMemcpyDeviceToHost, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    for (float v : h) {
      uint32_t bits = 0;
      std::memcpy(&bits, &v, 4);
      ASSERT_TRUE(std::isnan(v));
      ASSERT_EQ(bits & 0x00400000u, 0u) << "quiet bit clear: a signalling NaN, as cudaMalloc's";
    }
    // Device memory like cudaMalloc's: kernels and copies of the stream use it.
    float* d = static_cast<float*>(p);
    Write(d, std::vector<float>(64, 2.5f));
    ASSERT_EQ(LaunchCopyFirst(d, d + 1, stream), cudaSuccess);
    std::vector<float> back(2);
    ASSERT_EQ(cudaMemcpyAsync(back.data(), d, 2 * sizeof(float), cudaMemcpyDeviceToHost, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(back, (std::vector<float>{2.5f, 2.5f}));
    cudaPointerAttributes a{};
    ASSERT_EQ(cudaPointerGetAttributes(&a, d + 3), cudaSuccess);
    EXPECT_EQ(a.type, cudaMemoryTypeDevice);
    EXPECT_EQ(cudaFreeAsync(p, stream), cudaSuccess);
  }
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaMemPoolDestroy(pool), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_TRUE(Reports().empty());
}

TEST_F(EmuTest, AFreedStreamOrderedBlockIsRefusedToLaterCalls) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  void* p = nullptr;
  ASSERT_EQ(cudaMallocAsync(&p, 256, stream), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(p, stream), cudaSuccess);
  std::vector<std::byte> h(256);
  EXPECT_EQ(cudaMemcpyAsync(h.data(), p, 256, cudaMemcpyDeviceToHost, stream), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemsetAsync(p, 0, 256, stream), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeAsync(p, stream), cudaErrorInvalidValue) << "a double free";
  // Only stream-ordered blocks are freed this way; cudaFree takes one (it synchronises first).
  void* plain = nullptr;
  ASSERT_EQ(cudaMalloc(&plain, 256), cudaSuccess);
  EXPECT_EQ(cudaFreeAsync(plain, stream), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(plain), cudaSuccess);
  ASSERT_EQ(cudaMallocAsync(&p, 256, stream), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  static_cast<void>(cudaGetLastError());
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST_F(EmuTest, PoolsKeepWhatTheirReleaseThresholdSaysAndMeetTheCardsMemory) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  constexpr size_t kBlock = size_t(4) << 20;
  size_t free0 = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  // A pool that keeps everything: the freed block stays reserved (off the device's free memory)
  // and the next allocation of its size reuses it.
  cudaMemPool_t keep = MakePool(UINT64_MAX);
  void* p = nullptr;
  ASSERT_EQ(cudaMallocFromPoolAsync(&p, kBlock, keep, stream), cudaSuccess);
  EXPECT_EQ(PoolFigure(keep, cudaMemPoolAttrUsedMemCurrent), kBlock);
  ASSERT_EQ(cudaFreeAsync(p, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(PoolFigure(keep, cudaMemPoolAttrUsedMemCurrent), 0u);
  EXPECT_EQ(PoolFigure(keep, cudaMemPoolAttrReservedMemCurrent), kBlock);
  size_t free1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(free0 - free1, kBlock);
  ASSERT_EQ(cudaMallocFromPoolAsync(&p, kBlock, keep, stream), cudaSuccess);
  EXPECT_EQ(PoolFigure(keep, cudaMemPoolAttrReservedMemCurrent), kBlock) << "reused, not grown";
  ASSERT_EQ(cudaFreeAsync(p, stream), cudaSuccess);
  // The default pool's threshold is 0: at the next synchronisation it gives everything back.
  cudaMemPool_t fallback = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&fallback, 0), cudaSuccess);
  EXPECT_EQ(PoolFigure(fallback, cudaMemPoolAttrReleaseThreshold), 0u);
  ASSERT_EQ(cudaMallocAsync(&p, kBlock, stream), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(p, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(PoolFigure(fallback, cudaMemPoolAttrReservedMemCurrent), 0u);
  EXPECT_EQ(cudaMemPoolDestroy(fallback), cudaErrorInvalidValue) << "the default pool cannot be destroyed";
  // The card's memory bounds a pool's growth as it bounds cudaMalloc.
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(cudaMallocFromPoolAsync(&p, free1 + kBlock + 1, keep, stream), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaMallocAsync(&p, total + 1, stream), cudaErrorMemoryAllocation);
  static_cast<void>(cudaGetLastError());
  // Destroying the pool gives its reservation back.
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaMemPoolDestroy(keep), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(free1, free0);
  EXPECT_EQ(cudaMallocFromPoolAsync(&p, 16, keep, stream), cudaErrorInvalidValue) << "a destroyed pool";
  // Refused as the runtime refuses them.
  cudaMemPoolProps props{};
  cudaMemPool_t bad = nullptr;
  EXPECT_EQ(cudaMemPoolCreate(&bad, &props), cudaErrorInvalidValue) << "no allocation type";
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 1;
  EXPECT_EQ(cudaMemPoolCreate(&bad, &props), cudaErrorInvalidDevice);
  uint64_t nonzero = 5;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&fallback, 0), cudaSuccess);
  EXPECT_EQ(cudaMemPoolSetAttribute(fallback, cudaMemPoolAttrUsedMemHigh, &nonzero), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPoolSetAttribute(fallback, cudaMemPoolAttrUsedMemCurrent, &nonzero), cudaErrorInvalidValue);
  static_cast<void>(cudaGetLastError());
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST_F(EmuTest, CallsAreCountedByName) {
  const int64_t mallocs = CallCount("cudaMalloc"), async = CallCount("cudaMallocAsync");
  void* p = nullptr;
  ASSERT_EQ(cudaMallocAsync(&p, 16, nullptr), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(p, nullptr), cudaSuccess);
  EXPECT_EQ(CallCount("cudaMallocAsync"), async + 1);
  EXPECT_EQ(CallCount("cudaMalloc"), mallocs) << "cudaMallocAsync is not cudaMalloc";
  InjectCallFault("cudaMalloc", cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaMalloc(&p, 16), cudaErrorMemoryAllocation);
  EXPECT_EQ(CallCount("cudaMalloc"), mallocs + 1) << "a failed call counts too";
  static_cast<void>(cudaGetLastError());
}

TEST_F(EmuTest, CopiesOutsideAnAllocationOrAgainstTheirKindAreRefused) {
  float* d = DeviceFloats(16);
  std::vector<float> h(32, 1.0f);
  EXPECT_EQ(cudaMemcpy(d, h.data(), 17 * sizeof(float), cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d + 8, h.data(), 9 * sizeof(float), cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(h.data(), d, 4, cudaMemcpyHostToDevice), cudaErrorInvalidValue) << "host destination";
  EXPECT_EQ(cudaMemcpy(d, h.data(), 16 * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemsetAsync(d, 0, 17 * sizeof(float), nullptr), cudaErrorInvalidValue);
  cudaPointerAttributes a{};
  ASSERT_EQ(cudaPointerGetAttributes(&a, d + 3), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
  ASSERT_EQ(cudaPointerGetAttributes(&a, h.data()), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);
}

TEST_F(EmuTest, ACapturedGraphReplaysItsCopiesAndKernelsInOrder) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  void* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, 65 * sizeof(float), cudaHostAllocDefault), cudaSuccess);
  auto* h = static_cast<float*>(pinned);
  float* d_in = DeviceFloats(64);
  float* d_out = DeviceFloats(1);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(d_in, h, 64 * sizeof(float), cudaMemcpyHostToDevice, s), cudaSuccess);
  ASSERT_EQ(LaunchBlockSum(d_in, d_out, 1, s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(h + 64, d_out, sizeof(float), cudaMemcpyDeviceToHost, s), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  size_t count = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &count), cudaSuccess);
  ASSERT_EQ(count, 3u);
  std::vector<cudaGraphNode_t> nodes(count);
  ASSERT_EQ(cudaGraphGetNodes(graph, nodes.data(), &count), cudaSuccess);
  cudaGraphNodeType types[3];
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cudaGraphNodeGetType(nodes[size_t(i)], &types[i]), cudaSuccess);
  EXPECT_EQ(types[0], cudaGraphNodeTypeMemcpy);
  EXPECT_EQ(types[1], cudaGraphNodeTypeKernel);
  EXPECT_EQ(types[2], cudaGraphNodeTypeMemcpy);
  cudaMemcpy3DParms p{};
  ASSERT_EQ(cudaGraphMemcpyNodeGetParams(nodes[0], &p), cudaSuccess);
  EXPECT_EQ(p.extent.width, 64 * sizeof(float));
  EXPECT_EQ(p.kind, cudaMemcpyHostToDevice);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int round = 1; round <= 3; ++round) {
    for (int i = 0; i < 64; ++i) h[i] = float(round);
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(h[64], 64.0f * float(round)) << "replay " << round << " read this round's input";
  }
  // What a capture refuses: synchronising the capturing stream invalidates it.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
  void* more = nullptr;
  EXPECT_EQ(cudaMalloc(&more, 16), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t broken = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s, &broken), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(broken, nullptr);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

// A missing barrier: without one the neighbour's slot still holds the poison the emulator fills
// shared memory with (threads of a block run in order between barriers), and ThreadSanitizer, in
// the emulation's TSan variant, reports the race itself.
TEST_F(EmuTest, AMissingBarrierIsCaught) {
  float* out = DeviceFloats(64);
#if defined(__SANITIZE_THREAD__)
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // stream workers are running
  EXPECT_EXIT(
      {
        LaunchSharedRace(out, nullptr);
        cudaStreamSynchronize(nullptr);
        std::exit(0);
      },
      ::testing::ExitedWithCode(66), "data race");
#else
  ASSERT_EQ(LaunchSharedRace(out, nullptr), cudaSuccess);
  const std::vector<float> got = Read(out, 64);
  int poisoned = 0;
  for (float v : got) poisoned += std::isnan(v) ? 1 : 0;
  EXPECT_EQ(poisoned, 63) << "every thread but the last read its neighbour's slot before it was written";
#endif
}

#if defined(__SANITIZE_THREAD__)
// Two blocks writing one word of global memory: a race, as on a card.
TEST_F(EmuTest, ARaceAcrossBlocksIsCaught) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // stream workers are running
  float* out = DeviceFloats(1);
  EXPECT_EXIT(
      {
        LaunchBlocksWriteOneWord(out, nullptr);
        cudaStreamSynchronize(nullptr);
        std::exit(0);
      },
      ::testing::ExitedWithCode(66), "data race");
}
#endif

#if defined(__SANITIZE_ADDRESS__)
TEST_F(EmuTest, WorkAfterAStreamOrderedFreeIsCaught) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // stream workers are running
  // A kernel queued after cudaFreeAsync runs after the free's point in the stream: the block is
  // gone, so its access is a use after free, however soon the host enqueued it.
  EXPECT_DEATH(
      {
        cudaStream_t stream = nullptr;
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
        void* p = nullptr;
        cudaMallocAsync(&p, 64 * sizeof(float), stream);
        float* d = static_cast<float*>(p);
        cudaFreeAsync(p, stream);
        LaunchCopyFirst(d, d + 1, stream);
        cudaStreamSynchronize(stream);
      },
      "heap-use-after-free");
}
#endif

#if defined(__SANITIZE_ADDRESS__)
TEST_F(EmuTest, OverrunsOfSharedAndDeviceMemoryAreCaught) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // stream workers are running
  float* out = DeviceFloats(64);
  EXPECT_DEATH(
      {
        LaunchSharedOverrun(out, nullptr);
        cudaStreamSynchronize(nullptr);
      },
      "heap-buffer-overflow|out of bounds");  // AddressSanitizer's red zone, or UBSan's array bound first
  EXPECT_DEATH(
      {
        LaunchGlobalOverrun(out, 64, nullptr);
        cudaStreamSynchronize(nullptr);
      },
      "heap-buffer-overflow");
}
#endif

}  // namespace
}  // namespace fieldbrain::emu::testing
