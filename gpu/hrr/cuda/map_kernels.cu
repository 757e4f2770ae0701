// The bin-by-bin operations (Random, Bind, Unbind, Inverse, Project, Permute, Power, and the
// gather of Get / GetSpectra): one kernel each, instantiated from one template over the op, one
// thread per (entry, bin), writing staging. Every formula is a call into gpu/hrr/hrr_math.h, the
// functions the CPU backend calls too.
#include "gpu/cuda/kernel_macros.h"
#include "gpu/hrr/cuda/hrr_device.cuh"
#include "gpu/hrr/cuda/hrr_launch.h"
#include "gpu/hrr/hrr_math.h"

namespace fieldbrain::hrr::cuda {
namespace {

template <typename Op>
FB_KERNEL(MapKernel, kFlatThreads, const Op op, Cf* __restrict__ stage, int n, int bins) {
  int i, k;
  if (!FlatEntryBin(n, bins, i, k)) return;
  StoreBin(stage + int64_t(i) * bins + k, op(i, k));
}

template <typename Op>
cudaError_t LaunchMap(const Op& op, Cf* stage, int n, int bins, cudaStream_t stream) {
  FB_LAUNCH(MapKernel<Op>, FlatBlocks(n, bins), kFlatThreads, 0, stream)(op, stage, n, bins);
  return cudaGetLastError();
}

struct RandomOp {
  bool unitary;
  uint64_t seed;
  const uint64_t* ids;
  int bins;
  __device__ Cf operator()(int i, int k) const {
    return unitary ? unitary_bin(seed, ids[i], k, bins) : gaussian_bin(seed, ids[i], k, bins);
  }
};

struct BindOp {
  SlotStore st;
  const int32_t* a;
  const int32_t* b;
  __device__ Cf operator()(int i, int k) const {
    return cmul(SlotBin(st.spectra, st.bins, a[i], k), SlotBin(st.spectra, st.bins, b[i], k));
  }
};

struct UnbindOp {
  SlotStore st;
  const int32_t* c;
  const int32_t* key;
  __device__ Cf operator()(int i, int k) const {
    return cmul_conj(SlotBin(st.spectra, st.bins, c[i], k), SlotBin(st.spectra, st.bins, key[i], k));
  }
};

struct InverseOp {
  SlotStore st;
  const int32_t* a;
  __device__ Cf operator()(int i, int k) const { return cinverse(SlotBin(st.spectra, st.bins, a[i], k)); }
};

struct ProjectOp {
  SlotStore st;
  const int32_t* a;
  __device__ Cf operator()(int i, int k) const { return cunit(SlotBin(st.spectra, st.bins, a[i], k)); }
};

struct PermuteOp {
  SlotStore st;
  const int32_t* a;
  const int32_t* shifts;
  __device__ Cf operator()(int i, int k) const {
    return cmul(SlotBin(st.spectra, st.bins, a[i], k), shift_phase(k, shifts[i], st.dim));
  }
};

struct PowerOp {
  SlotStore st;
  const int32_t* base;
  const float* exponents;
  __device__ Cf operator()(int i, int k) const {
    return cpow(SlotBin(st.spectra, st.bins, base[i], k), exponents[i], k == 0 || k == st.bins - 1);
  }
};

struct GatherOp {
  SlotStore st;
  const int32_t* slots;
  __device__ Cf operator()(int i, int k) const { return SlotBin(st.spectra, st.bins, slots[i], k); }
};

}  // namespace

cudaError_t LaunchRandom(const SlotStore& store, Cf* stage, bool unitary, uint64_t seed, const uint64_t* ids, int n,
                         cudaStream_t stream) {
  return LaunchMap(RandomOp{unitary, seed, ids, store.bins}, stage, n, store.bins, stream);
}

cudaError_t LaunchBind(const SlotStore& store, Cf* stage, const int32_t* a, const int32_t* b, int n,
                       cudaStream_t stream) {
  return LaunchMap(BindOp{store, a, b}, stage, n, store.bins, stream);
}

cudaError_t LaunchUnbind(const SlotStore& store, Cf* stage, const int32_t* c, const int32_t* key, int n,
                         cudaStream_t stream) {
  return LaunchMap(UnbindOp{store, c, key}, stage, n, store.bins, stream);
}

cudaError_t LaunchInverse(const SlotStore& store, Cf* stage, const int32_t* a, int n, cudaStream_t stream) {
  return LaunchMap(InverseOp{store, a}, stage, n, store.bins, stream);
}

cudaError_t LaunchProject(const SlotStore& store, Cf* stage, const int32_t* a, int n, cudaStream_t stream) {
  return LaunchMap(ProjectOp{store, a}, stage, n, store.bins, stream);
}

cudaError_t LaunchPermute(const SlotStore& store, Cf* stage, const int32_t* a, const int32_t* shifts, int n,
                          cudaStream_t stream) {
  return LaunchMap(PermuteOp{store, a, shifts}, stage, n, store.bins, stream);
}

cudaError_t LaunchPower(const SlotStore& store, Cf* stage, const int32_t* base, const float* exponents, int n,
                        cudaStream_t stream) {
  return LaunchMap(PowerOp{store, base, exponents}, stage, n, store.bins, stream);
}

cudaError_t LaunchGather(const SlotStore& store, Cf* stage, const int32_t* slots, int n, cudaStream_t stream) {
  return LaunchMap(GatherOp{store, slots}, stage, n, store.bins, stream);
}

}  // namespace fieldbrain::hrr::cuda
