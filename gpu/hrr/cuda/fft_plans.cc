#include "gpu/hrr/cuda/fft_plans.h"

#include "gpu/hrr/cuda/cuda_libraries.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gpu/cuda/staging.h"

namespace fieldbrain::hrr::cuda {
namespace {

static_assert(sizeof(Cf) == sizeof(cufftComplex) && alignof(Cf) <= alignof(cufftComplex),
              "hrr::Cf must be laid out as cuFFT's complex");

const char* CufftName(cufftResult r) {
  switch (r) {
    case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "cuFFT error";
  }
}

}  // namespace

absl::Status CufftError(cufftResult r, const char* what) {
  const std::string message = absl::StrCat(what, " failed: ", CufftName(r), " (", int(r), ")");
  if (r == CUFFT_ALLOC_FAILED) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

#define FB_CUFFT_CHECK(expr)                                          \
  do {                                                                \
    if (const cufftResult fb_cufft_result_ = (expr); fb_cufft_result_ != CUFFT_SUCCESS) \
      return CufftError(fb_cufft_result_, #expr);                     \
  } while (0)

FftPlans::Plan::~Plan() { Reset(); }

FftPlans::Plan::Plan(Plan&& o) noexcept : handle_(o.handle_), valid_(std::exchange(o.valid_, false)) {}

FftPlans::Plan& FftPlans::Plan::operator=(Plan&& o) noexcept {
  if (this != &o) {
    Reset();
    handle_ = o.handle_;
    valid_ = std::exchange(o.valid_, false);
  }
  return *this;
}

void FftPlans::Plan::Reset() {
  if (valid_) static_cast<void>(Cufft().destroy(handle_));  // nothing to report it to from here
  valid_ = false;
}

absl::Status FftPlans::Plan::Make(int dim, int batch, cufftType type, cudaStream_t stream, size_t& work_bytes) {
  Reset();
  FB_CUFFT_CHECK(Cufft().create(&handle_));
  valid_ = true;
  FB_CUFFT_CHECK(Cufft().set_auto_allocation(handle_, 0));
  // The 64-bit interface: dim x batch may pass 2^31 elements for large dimensions and batches.
  long long n = dim;
  size_t bytes = 0;
  FB_CUFFT_CHECK(Cufft().make_plan_many64(handle_, 1, &n, nullptr, 1, 0, nullptr, 1, 0, type, batch, &bytes));
  FB_CUFFT_CHECK(Cufft().set_stream(handle_, stream));
  work_bytes = bytes;
  return absl::OkStatus();
}

absl::Status FftPlans::Init(int dim, int max_batch, cudaStream_t stream) {
  buckets_ = fieldbrain::cuda::BatchBuckets(max_batch);
  forward_.clear();
  inverse_.clear();
  forward_.resize(buckets_.size());
  inverse_.resize(buckets_.size());
  work_bytes_ = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    size_t forward_bytes = 0, inverse_bytes = 0;
    if (absl::Status s = forward_[b].Make(dim, buckets_[b], CUFFT_R2C, stream, forward_bytes); !s.ok()) return s;
    if (absl::Status s = inverse_[b].Make(dim, buckets_[b], CUFFT_C2R, stream, inverse_bytes); !s.ok()) return s;
    work_bytes_ = std::max({work_bytes_, forward_bytes, inverse_bytes});
  }
  return absl::OkStatus();
}

absl::Status FftPlans::SetWorkArea(void* work) {
  for (size_t b = 0; b < buckets_.size(); ++b) {
    FB_CUFFT_CHECK(Cufft().set_work_area(forward_[b].get(), work));
    FB_CUFFT_CHECK(Cufft().set_work_area(inverse_[b].get(), work));
  }
  return absl::OkStatus();
}

int FftPlans::Rows(int n) const { return buckets_[size_t(fieldbrain::cuda::BucketIndex(buckets_, n))]; }

absl::Status FftPlans::Forward(int n, float* in, Cf* out) const {
  const size_t b = size_t(fieldbrain::cuda::BucketIndex(buckets_, n));
  FB_CUFFT_CHECK(Cufft().exec_r2c(forward_[b].get(), in, reinterpret_cast<cufftComplex*>(out)));
  return absl::OkStatus();
}

absl::Status FftPlans::Inverse(int n, Cf* in, float* out) const {
  const size_t b = size_t(fieldbrain::cuda::BucketIndex(buckets_, n));
  FB_CUFFT_CHECK(Cufft().exec_c2r(inverse_[b].get(), reinterpret_cast<cufftComplex*>(in), out));
  return absl::OkStatus();
}

}  // namespace fieldbrain::hrr::cuda
