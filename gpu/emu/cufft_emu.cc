// The emulated cuFFT (libcufft.so.<CUFFT_VER_MAJOR> in the emulation build): 1-D single-precision
// R2C and C2R plans with the basic data layout, computed by KissFFT in stream order on the CPU.
//
// The rules a card enforces, and some it only punishes with wrong results, are checked so that
// code which breaks them fails here too:
//   - a handle must come from cufftCreate and be made (cufftMakePlanMany64) before it executes,
//     and executes only the transform type it was made for (else CUFFT_INVALID_PLAN);
//   - with auto-allocation off, execution needs a work area (else CUFFT_NO_WORKSPACE) that is
//     device memory of at least the reported size (else CUFFT_INVALID_VALUE); the transform
//     poisons it and stages every row through it, so whatever else lived there is gone, as it
//     would be on a card;
//   - input and output must be device memory covering every row of the batch, and either the
//     same address (in place, rows padded to 2 * (n/2 + 1) reals) or not overlapping at all
//     (else CUFFT_INVALID_VALUE);
//   - C2R overwrites its input, as cuFFT documents: the input rows are poisoned.
// Transforms are unnormalised, as cuFFT's: C2R(R2C(x)) is n * x.

#include <cufft.h>
#include <kissfft/kiss_fftr.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda_emu/device_work.h"

namespace {

namespace emu = fieldbrain::emu;

static_assert(std::is_same_v<kiss_fft_scalar, float>, "KissFFT must be its float build, as cuFFT's R2C/C2R");
static_assert(sizeof(kiss_fft_cpx) == sizeof(cufftComplex) && alignof(kiss_fft_cpx) <= alignof(cufftComplex),
              "KissFFT's complex must be laid out as cufftComplex");

struct KissFftrFree {
  void operator()(kiss_fftr_cfg cfg) const { kiss_fftr_free(cfg); }
};
using KissFftr = std::unique_ptr<std::remove_pointer_t<kiss_fftr_cfg>, KissFftrFree>;

// A made plan: what its transforms need, shared with the transforms queued on streams so that
// destroying the plan while they wait does not pull their configuration away.
struct Transform {
  cufftType type = CUFFT_R2C;
  int dim = 0;
  int64_t batch = 0;
  size_t work_bytes = 0;
  KissFftr kiss;
  // The area cuFFT would allocate for itself with auto-allocation on; empty when it is off.
  std::vector<float> own_work;
  // KissFFT keeps scratch in its configuration, so one plan runs one transform at a time even
  // when it is executed on two streams at once.
  std::mutex running;

  int64_t Bins() const { return int64_t(dim) / 2 + 1; }
  // Floats from one row to the next of the real side: dense, or padded to the complex side's
  // size when the transform is in place.
  int64_t RealStride(bool in_place) const { return in_place ? 2 * Bins() : dim; }
  size_t RealBytes(bool in_place) const { return size_t(batch * RealStride(in_place)) * sizeof(float); }
  size_t ComplexBytes() const { return size_t(batch * Bins()) * sizeof(cufftComplex); }
};

struct Plan {
  bool auto_allocate = true;  // cuFFT's default
  cudaStream_t stream = nullptr;
  void* work_area = nullptr;
  std::shared_ptr<Transform> transform;  // null until the plan is made
};

// The library's plans, by handle. Handles are never reused, so a destroyed one stays invalid.
class PlanTable {
 public:
  cufftResult Add(cufftHandle& handle) {
    std::lock_guard lock(mu_);
    if (next_ == INT_MAX) return CUFFT_ALLOC_FAILED;
    plans_.emplace(next_, Plan{});
    handle = next_++;
    return CUFFT_SUCCESS;
  }

  cufftResult Remove(cufftHandle handle) {
    std::lock_guard lock(mu_);
    return plans_.erase(handle) == 1 ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
  }

  // Runs fn(Plan&) under the table's lock; CUFFT_INVALID_PLAN for a handle that is not a plan.
  template <typename Fn>
  cufftResult With(cufftHandle handle, Fn&& fn) {
    std::lock_guard lock(mu_);
    auto it = plans_.find(handle);
    if (it == plans_.end()) return CUFFT_INVALID_PLAN;
    return std::forward<Fn>(fn)(it->second);
  }

 private:
  std::mutex mu_;
  cufftHandle next_ = 1;
  std::map<cufftHandle, Plan> plans_;
};

// Constructed on first use and never destroyed: plans may be destroyed from other objects'
// static destructors at exit, in whatever order those run.
PlanTable& Plans() {
  alignas(PlanTable) static std::byte storage[sizeof(PlanTable)];
  static PlanTable* const table = std::construct_at(reinterpret_cast<PlanTable*>(storage));
  return *table;
}

// The entry points are C functions: nothing may escape them as an exception.
template <typename Fn>
cufftResult Guarded(Fn&& fn) noexcept {
  try {
    return std::forward<Fn>(fn)();
  } catch (const std::bad_alloc&) {
    return CUFFT_ALLOC_FAILED;
  } catch (...) {
    return CUFFT_INTERNAL_ERROR;
  }
}

// The rank, sizes, layout and type a plan may have here: the basic layout (null embeds, so the
// strides and distances are ignored, as documented) of a 1-D real transform of even length,
// which is what KissFFT's real transform computes.
cufftResult CheckShape(int rank, const long long* n, const long long* inembed, const long long* onembed,
                       cufftType type, long long batch) {
  if (rank < 1 || rank > 3) return CUFFT_INVALID_SIZE;
  if (type != CUFFT_R2C && type != CUFFT_C2R) return type == CUFFT_C2C ? CUFFT_NOT_SUPPORTED : CUFFT_INVALID_TYPE;
  if (rank != 1 || inembed != nullptr || onembed != nullptr) return CUFFT_NOT_SUPPORTED;
  if (n[0] < 1 || batch < 1) return CUFFT_INVALID_SIZE;
  if (n[0] % 2 != 0 || n[0] > INT_MAX) return CUFFT_NOT_SUPPORTED;
  // Every byte count of the plan (the work area being the largest) must fit in a size_t.
  const uint64_t row_bytes = uint64_t(n[0] / 2 + 1) * sizeof(cufftComplex);
  if (uint64_t(batch) > uint64_t(SIZE_MAX) / row_bytes || uint64_t(batch) > uint64_t(INT64_MAX) / row_bytes)
    return CUFFT_INVALID_SIZE;
  return CUFFT_SUCCESS;
}

// KissFFT's configuration is made here, once per plan; executions only use it.
cufftResult MakeTransform(int dim, cufftType type, int64_t batch, bool auto_allocate,
                          std::shared_ptr<Transform>& out) {
  auto t = std::make_shared<Transform>();
  t->type = type;
  t->dim = dim;
  t->batch = batch;
  // One row's slot of scratch per batch row, each the size of the complex side.
  t->work_bytes = t->ComplexBytes();
  t->kiss.reset(kiss_fftr_alloc(dim, type == CUFFT_C2R ? 1 : 0, nullptr, nullptr));
  if (t->kiss == nullptr) return CUFFT_ALLOC_FAILED;
  if (auto_allocate) t->own_work.resize(t->work_bytes / sizeof(float));
  out = std::move(t);
  return CUFFT_SUCCESS;
}

// The overlap rule: the same buffer (in place) or disjoint ones.
bool InPlace(const void* in, const void* out) { return in == out; }
bool Overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

// What one execution captures from its plan when it is called.
struct Launch {
  std::shared_ptr<Transform> transform;
  cudaStream_t stream = nullptr;
  float* work = nullptr;  // the caller's work area; null: the plan's own
};

cufftResult PrepareLaunch(cufftHandle handle, cufftType type, Launch& launch) {
  return Plans().With(handle, [&](Plan& plan) {
    if (plan.transform == nullptr || plan.transform->type != type) return CUFFT_INVALID_PLAN;
    const Transform& t = *plan.transform;
    if (plan.work_area != nullptr) {
      // Checked again here: the allocation may have been freed since cufftSetWorkArea.
      if (!emu::IsDeviceRange(plan.work_area, t.work_bytes)) return CUFFT_INVALID_VALUE;
    } else if (!plan.auto_allocate) {
      return CUFFT_NO_WORKSPACE;
    }
    launch.transform = plan.transform;
    launch.stream = plan.stream;
    launch.work = static_cast<float*>(plan.work_area);
    return CUFFT_SUCCESS;
  });
}

cufftResult CheckData(const void* in, size_t in_bytes, const void* out, size_t out_bytes) {
  if (!emu::IsDeviceRange(in, in_bytes) || !emu::IsDeviceRange(out, out_bytes)) return CUFFT_INVALID_VALUE;
  if (!InPlace(in, out) && Overlap(in, in_bytes, out, out_bytes)) return CUFFT_INVALID_VALUE;
  return CUFFT_SUCCESS;
}

// Poisons the caller's work area (nothing in it survives a transform) and returns the scratch
// the rows are staged through.
float* Scratch(Transform& t, float* work) {
  if (work == nullptr) return t.own_work.data();
  emu::Poison(work, t.work_bytes);
  return work;
}

void RunR2C(Transform& t, float* work, const float* in, cufftComplex* out, bool in_place) {
  std::lock_guard lock(t.running);
  float* scratch = Scratch(t, work);
  const int64_t bins = t.Bins(), in_stride = t.RealStride(in_place);
  for (int64_t r = 0; r < t.batch; ++r) {
    float* slot = scratch + r * 2 * bins;
    std::memcpy(slot, in + r * in_stride, size_t(t.dim) * sizeof(float));
    kiss_fftr(t.kiss.get(), slot, reinterpret_cast<kiss_fft_cpx*>(out + r * bins));
  }
}

void RunC2R(Transform& t, float* work, cufftComplex* in, float* out, bool in_place) {
  std::lock_guard lock(t.running);
  float* scratch = Scratch(t, work);
  const int64_t bins = t.Bins(), out_stride = t.RealStride(in_place);
  const size_t row_bytes = size_t(bins) * sizeof(cufftComplex);
  for (int64_t r = 0; r < t.batch; ++r) {
    float* slot = scratch + r * 2 * bins;
    std::memcpy(slot, in + r * bins, row_bytes);
    // Before the output is written: in place, the poison is left in each row's padding.
    emu::Poison(in + r * bins, row_bytes);
    kiss_fftri(t.kiss.get(), reinterpret_cast<const kiss_fft_cpx*>(slot), out + r * out_stride);
  }
}

cufftResult Enqueue(const Launch& launch, const char* name, std::function<cudaError_t()> work) {
  return emu::EnqueueLibraryKernel(launch.stream, name, std::move(work)) == cudaSuccess ? CUFFT_SUCCESS
                                                                                       : CUFFT_EXEC_FAILED;
}

}  // namespace

extern "C" {

cufftResult cufftCreate(cufftHandle* handle) {
  if (handle == nullptr) return CUFFT_INVALID_VALUE;
  return Guarded([&] { return Plans().Add(*handle); });
}

cufftResult cufftDestroy(cufftHandle plan) {
  return Guarded([&] { return Plans().Remove(plan); });
}

// Read by cufftMakePlanMany64: documented to be set between cufftCreate and making the plan, so
// a made plan refuses it (its work area is already decided).
cufftResult cufftSetAutoAllocation(cufftHandle plan, int autoAllocate) {
  return Guarded([&] {
    return Plans().With(plan, [&](Plan& p) {
      if (p.transform != nullptr) return CUFFT_INVALID_PLAN;
      p.auto_allocate = autoAllocate != 0;
      return CUFFT_SUCCESS;
    });
  });
}

cufftResult cufftMakePlanMany64(cufftHandle plan, int rank, long long int* n, long long int* inembed,
                                long long int /*istride*/, long long int /*idist*/, long long int* onembed,
                                long long int /*ostride*/, long long int /*odist*/, cufftType type,
                                long long int batch, size_t* workSize) {
  return Guarded([&] {
    return Plans().With(plan, [&](Plan& p) {
      if (p.transform != nullptr) return CUFFT_INVALID_PLAN;  // a handle is made once
      if (n == nullptr || workSize == nullptr) return CUFFT_INVALID_VALUE;
      if (const cufftResult r = CheckShape(rank, n, inembed, onembed, type, batch); r != CUFFT_SUCCESS) return r;
      // A plan belongs to the current device: without one, cuFFT cannot set up.
      int device = 0;
      if (cudaGetDevice(&device) != cudaSuccess) return CUFFT_SETUP_FAILED;
      if (const cufftResult r = MakeTransform(int(n[0]), type, batch, p.auto_allocate, p.transform);
          r != CUFFT_SUCCESS)
        return r;
      *workSize = p.transform->work_bytes;
      return CUFFT_SUCCESS;
    });
  });
}

cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream) {
  return Guarded([&] {
    return Plans().With(plan, [&](Plan& p) {
      p.stream = stream;
      return CUFFT_SUCCESS;
    });
  });
}

// Null takes the caller's work area away again. A made plan checks the area at once; either way
// it is checked again at every execution.
cufftResult cufftSetWorkArea(cufftHandle plan, void* workArea) {
  return Guarded([&] {
    return Plans().With(plan, [&](Plan& p) {
      if (workArea != nullptr && p.transform != nullptr && !emu::IsDeviceRange(workArea, p.transform->work_bytes))
        return CUFFT_INVALID_VALUE;
      p.work_area = workArea;
      return CUFFT_SUCCESS;
    });
  });
}

cufftResult cufftExecR2C(cufftHandle plan, cufftReal* idata, cufftComplex* odata) {
  return Guarded([&] {
    Launch launch;
    if (const cufftResult r = PrepareLaunch(plan, CUFFT_R2C, launch); r != CUFFT_SUCCESS) return r;
    const bool in_place = InPlace(idata, odata);
    const Transform& t = *launch.transform;
    if (const cufftResult r = CheckData(idata, t.RealBytes(in_place), odata, t.ComplexBytes()); r != CUFFT_SUCCESS)
      return r;
    return Enqueue(launch, "cufftExecR2C", [transform = launch.transform, work = launch.work, idata, odata, in_place] {
      RunR2C(*transform, work, idata, odata, in_place);
      return cudaSuccess;
    });
  });
}

cufftResult cufftExecC2R(cufftHandle plan, cufftComplex* idata, cufftReal* odata) {
  return Guarded([&] {
    Launch launch;
    if (const cufftResult r = PrepareLaunch(plan, CUFFT_C2R, launch); r != CUFFT_SUCCESS) return r;
    const bool in_place = InPlace(idata, odata);
    const Transform& t = *launch.transform;
    if (const cufftResult r = CheckData(idata, t.ComplexBytes(), odata, t.RealBytes(in_place)); r != CUFFT_SUCCESS)
      return r;
    return Enqueue(launch, "cufftExecC2R", [transform = launch.transform, work = launch.work, idata, odata, in_place] {
      RunC2R(*transform, work, idata, odata, in_place);
      return cudaSuccess;
    });
  });
}

}  // extern "C"
