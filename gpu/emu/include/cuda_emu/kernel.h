// The CUDA kernel language as the emulation build compiles it: a project .cu file is built as
// C++ with this header in front (the build adds it), so __global__ functions are plain functions
// that every emulated thread of a launch calls, threadIdx and friends are that thread's, and
// __syncthreads and the warp shuffles are real synchronisation between the block's fibers
// (gpu/emu/kernel_runner.cc). The .cu sources spell launches and __shared__ declarations with the
// macros of gpu/cuda/kernel_macros.h, which expand to plain CUDA under nvcc and to the calls
// below here.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda_emu/launch.h"
#include "cuda_emu/launch_bound.h"
#include "cuda_runtime_api.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
// No __launch_bounds__: a kernel declares its bound with FB_KERNEL (gpu/cuda/kernel_macros.h),
// which the emulator enforces (cuda_emu/launch_bound.h); a bound spelled in CUDA would be lost here.

namespace fieldbrain::emu {

struct ThreadContext {
  uint3 thread_idx;
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
};

// The emulated thread running on this OS thread.
const ThreadContext& CurrentThread();

// __syncthreads: every live thread of the block must reach the same barrier.
void SyncThreads(const char* file, int line);
// A warp shuffle. kind: 0 = __shfl_sync (lane_arg = source lane), 1 = __shfl_down_sync
// (lane_arg = delta). Returns the source lane's bits.
enum class ShuffleKind { kIndexed, kDown };
uint64_t WarpShuffle(unsigned mask, uint64_t bits, ShuffleKind kind, int lane_arg, int width, const char* file,
                     int line);
// The block's storage for the __shared__ variable declared at `site` (one per declaration and
// template instantiation), allocated on first use and filled with signalling NaNs.
void* SharedVariable(const void* site, size_t bytes, size_t align, const char* name);
// The block's dynamic shared memory (the launch's third <<<>>> argument), poisoned the same way.
void* DynamicSharedMemory();

template <typename T, typename Site>
T& BlockShared(Site, const char* name) {
  static const char site = 0;  // one per instantiation, i.e. per declaration site
  constexpr size_t align = alignof(T) < 16 ? 16 : alignof(T);
  return *static_cast<T*>(SharedVariable(&site, sizeof(T), align, name));
}

template <typename T>
T* DynamicShared() {
  return static_cast<T*>(DynamicSharedMemory());
}

// kernel<<<grid, block, smem, stream>>>(args...): the arguments are copied at launch, as the
// runtime copies a kernel's parameters, and every thread gets its own by-value copies. A kernel
// declared with FB_KERNEL has a last parameter, its LaunchBound, that the launch passes itself.
template <typename... Params>
class KernelLaunch {
  static constexpr int kBound = DeclaredLaunchBound<Params...>();
  static constexpr size_t kArgs = sizeof...(Params) - (kBound > 0 ? 1 : 0);

  template <size_t... I>
  static auto ArgTuple(std::index_sequence<I...>)
      -> std::tuple<std::decay_t<std::tuple_element_t<I, std::tuple<Params...>>>...>;
  // What a launch keeps of its arguments, and what an injected effect reads (control.h): the
  // kernel's parameters without the bound.
  using Args = decltype(ArgTuple(std::make_index_sequence<kArgs>{}));

 public:
  KernelLaunch(void (*kernel)(Params...), const char* name, dim3 grid, dim3 block, size_t smem, cudaStream_t stream)
      : kernel_(kernel),
        config_{name, reinterpret_cast<const void*>(kernel), grid, block, smem, stream,
                kBound > 0 ? kBound : kMaxThreadsPerBlock} {}

  template <typename... Given>
  void operator()(Given&&... given) const {
    static_assert(sizeof...(Given) == kArgs, "a kernel launch passes every parameter");
    auto params = std::make_shared<const Args>(std::forward<Given>(given)...);
    EnqueueKernel(
        config_,
        [kernel = kernel_, params] {
          std::apply(
              [kernel](const auto&... args) {
                if constexpr (kBound > 0) {
                  kernel(args..., LaunchBound<kBound>{});
                } else {
                  kernel(args...);
                }
              },
              *params);
        },
        params);
  }

 private:
  void (*kernel_)(Params...);
  LaunchConfig config_;
};

template <typename... Params>
KernelLaunch<Params...> Launch(void (*kernel)(Params...), const char* name, dim3 grid, dim3 block, size_t smem = 0,
                               cudaStream_t stream = nullptr) {
  return KernelLaunch<Params...>(kernel, name, grid, block, smem, stream);
}

template <typename T>
uint64_t ShuffleBits(T v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "shuffles move 4- or 8-byte values");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

template <typename T>
T ShuffleValue(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

}  // namespace fieldbrain::emu

#define threadIdx (::fieldbrain::emu::CurrentThread().thread_idx)
#define blockIdx (::fieldbrain::emu::CurrentThread().block_idx)
#define blockDim (::fieldbrain::emu::CurrentThread().block_dim)
#define gridDim (::fieldbrain::emu::CurrentThread().grid_dim)
#define __syncthreads() ::fieldbrain::emu::SyncThreads(__FILE__, __LINE__)
#define __shfl_sync(mask, var, src, ...) \
  ::fieldbrain::emu::ShflSync(mask, var, src, __FILE__, __LINE__ __VA_OPT__(, ) __VA_ARGS__)
#define __shfl_down_sync(mask, var, delta, ...) \
  ::fieldbrain::emu::ShflDownSync(mask, var, delta, __FILE__, __LINE__ __VA_OPT__(, ) __VA_ARGS__)

namespace fieldbrain::emu {

template <typename T>
T ShflSync(unsigned mask, T var, int src_lane, const char* file, int line, int width = 32) {
  return ShuffleValue<T>(WarpShuffle(mask, ShuffleBits(var), ShuffleKind::kIndexed, src_lane, width, file, line));
}

template <typename T>
T ShflDownSync(unsigned mask, T var, unsigned delta, const char* file, int line, int width = 32) {
  return ShuffleValue<T>(WarpShuffle(mask, ShuffleBits(var), ShuffleKind::kDown, int(delta), width, file, line));
}

}  // namespace fieldbrain::emu

// Device functions the kernels call, with CUDA's names.
template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
using std::abs;
