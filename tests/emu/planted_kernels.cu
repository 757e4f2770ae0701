#include "tests/emu/planted_kernels.h"

#include "gpu/cuda/kernel_macros.h"

namespace fieldbrain::emu::testing {
namespace {

constexpr int kBlock = 64;

__global__ void BlockSumKernel(const float* in, float* out) {
  FB_SHARED(float, part, [kBlock]);
  const int t = threadIdx.x;
  part[t] = in[blockIdx.x * kBlock + t];
  __syncthreads();
  for (int stride = kBlock / 2; stride > 0; stride /= 2) {
    if (t < stride) part[t] += part[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = part[0];
}

__global__ void WarpSumKernel(const float* in, float* out, int width) {
  float v = in[threadIdx.x];
  for (int offset = width / 2; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset, width);
  out[threadIdx.x] = __shfl_sync(0xffffffffu, v, 0, width);
}

__global__ void MaskWithoutCallerKernel(float* out) {
  out[threadIdx.x] = __shfl_sync(0x0000ffffu, 1.0f, 0);
}

__global__ void TwoBarriersKernel(float* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1.0f;
}

__global__ void BarrierAfterExitKernel(float* out) {
  if (threadIdx.x >= 16) return;
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}

__global__ void SharedRaceKernel(float* out) {
  FB_SHARED(float, slot, [kBlock]);
  const int t = threadIdx.x;
  slot[t] = float(t);
  out[t] = slot[(t + 1) % kBlock];  // no barrier between the neighbour's write and this read
}

__global__ void BlocksWriteOneWordKernel(float* out) {
  if (threadIdx.x == blockIdx.x) out[0] = float(blockIdx.x);
}

__global__ void SharedOverrunKernel(float* out) {
  FB_SHARED(float, slot, [kBlock]);
  const int t = threadIdx.x;
  slot[t + (t == kBlock - 1 ? 1 : 0)] = 1.0f;
  __syncthreads();
  out[t] = slot[t];
}

__global__ void GlobalOverrunKernel(float* out, int n) {
  if (threadIdx.x == 0) out[n] = 1.0f;
}

__global__ void CopyFirstKernel(const float* in, float* out) { out[0] = in[0]; }

__global__ void SizedKernel(float* out, int words) {
  FB_DYNAMIC_SHARED(float, dyn);
  for (int i = threadIdx.x; i < words; i += blockDim.x) dyn[i] = float(i);
  __syncthreads();
  if (threadIdx.x == 0) out[0] = words > 0 ? dyn[words - 1] : 0.0f;
}

__global__ void StaticAndDynamicKernel(float* out, int words) {
  FB_SHARED(float, fixed, [4096]);
  FB_DYNAMIC_SHARED(float, dyn);
  for (int i = threadIdx.x; i < 4096; i += blockDim.x) fixed[i] = 1.0f;
  for (int i = threadIdx.x; i < words; i += blockDim.x) dyn[i] = 2.0f;
  __syncthreads();
  if (threadIdx.x == 0) out[0] = fixed[4095] + (words > 0 ? dyn[words - 1] : 0.0f);
}

FB_KERNEL(BoundedKernel, kBoundedThreads, float* out) {
  if (threadIdx.x == 0) out[0] = float(blockDim.x);
}

}  // namespace

cudaError_t LaunchStaticAndDynamic(float* out, size_t dynamic_bytes, cudaStream_t stream) {
  FB_LAUNCH(StaticAndDynamicKernel, 1, 128, dynamic_bytes, stream)(out, int(dynamic_bytes / sizeof(float)));
  return cudaGetLastError();
}

cudaError_t LaunchBlockSum(const float* in, float* out, int blocks, cudaStream_t stream) {
  FB_LAUNCH(BlockSumKernel, unsigned(blocks), kBlock, 0, stream)(in, out);
  return cudaGetLastError();
}

cudaError_t LaunchWarpSum(const float* in, float* out, int width, cudaStream_t stream) {
  FB_LAUNCH(WarpSumKernel, 1, 32, 0, stream)(in, out, width);
  return cudaGetLastError();
}

cudaError_t LaunchShuffleMaskWithoutCaller(float* out, cudaStream_t stream) {
  FB_LAUNCH(MaskWithoutCallerKernel, 1, 32, 0, stream)(out);
  return cudaGetLastError();
}

cudaError_t LaunchTwoBarriers(float* out, cudaStream_t stream) {
  FB_LAUNCH(TwoBarriersKernel, 1, 32, 0, stream)(out);
  return cudaGetLastError();
}

cudaError_t LaunchBarrierAfterExit(float* out, cudaStream_t stream) {
  FB_LAUNCH(BarrierAfterExitKernel, 1, 32, 0, stream)(out);
  return cudaGetLastError();
}

cudaError_t LaunchSharedRace(float* out, cudaStream_t stream) {
  FB_LAUNCH(SharedRaceKernel, 1, kBlock, 0, stream)(out);
  return cudaGetLastError();
}

cudaError_t LaunchBlocksWriteOneWord(float* out, cudaStream_t stream) {
  FB_LAUNCH(BlocksWriteOneWordKernel, 2, 2, 0, stream)(out);
  return cudaGetLastError();
}

cudaError_t LaunchSharedOverrun(float* out, cudaStream_t stream) {
  FB_LAUNCH(SharedOverrunKernel, 1, kBlock, 0, stream)(out);
  return cudaGetLastError();
}

cudaError_t LaunchGlobalOverrun(float* out, int n, cudaStream_t stream) {
  FB_LAUNCH(GlobalOverrunKernel, 1, 32, 0, stream)(out, n);
  return cudaGetLastError();
}

cudaError_t LaunchCopyFirst(const float* in, float* out, cudaStream_t stream) {
  FB_LAUNCH(CopyFirstKernel, 1, 1, 0, stream)(in, out);
  return cudaGetLastError();
}

cudaError_t LaunchSized(float* out, int threads, size_t dynamic_bytes, cudaStream_t stream) {
  FB_LAUNCH(SizedKernel, 1, unsigned(threads), dynamic_bytes, stream)(out, int(dynamic_bytes / sizeof(float)));
  return cudaGetLastError();
}

cudaError_t RaiseSizedSharedLimit(int bytes) {
  return cudaFuncSetAttribute(SizedKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

cudaError_t LaunchBounded(float* out, int threads, cudaStream_t stream) {
  FB_LAUNCH(BoundedKernel, 1, unsigned(threads), 0, stream)(out);
  return cudaGetLastError();
}

int BoundedKernelMaxThreads() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, BoundedKernel) == cudaSuccess ? attributes.maxThreadsPerBlock : 0;
}

}  // namespace fieldbrain::emu::testing
