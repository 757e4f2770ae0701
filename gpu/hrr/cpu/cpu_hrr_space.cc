#include "gpu/hrr/cpu/cpu_hrr_space.h"

#include <kiss_fftr.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpu/hrr/hrr_checks.h"
#include "gpu/hrr/top_k.h"

namespace fieldbrain::hrr::cpu {
namespace {

static_assert(sizeof(kiss_fft_cpx) == sizeof(Cf) && alignof(kiss_fft_cpx) == alignof(Cf),
              "KissFFT's complex must be laid out as hrr::Cf");

// Entries of a batch below this run on the calling thread alone (threads cost more than they save).
constexpr int kParallelFrom = 64;

struct KissFftrDeleter {
  void operator()(kiss_fftr_cfg cfg) const { kiss_fftr_free(cfg); }
};
using FftPlan = std::unique_ptr<std::remove_pointer_t<kiss_fftr_cfg>, KissFftrDeleter>;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

class CpuHrrSpace final : public HrrSpace {
 public:
  CpuHrrSpace(const HrrConfig& config, HrrStorage storage)
      : config_(config),
        bins_(Bins(config.dim)),
        threads_(std::max(1, omp_get_max_threads())),
        stage_(size_t(config.max_batch) * size_t(bins_)),
        top_cos_(size_t(threads_) * kMaxTopK),
        top_slot_(size_t(threads_) * kMaxTopK) {
    if (storage.data == nullptr) {
      owned_.reset(static_cast<std::byte*>(std::aligned_alloc(256, size_t(StorageBytes(config)))));
      storage = HrrStorage{owned_.get(), owned_ ? StorageBytes(config) : 0};
    }
    if (storage.data != nullptr) {
      std::memset(storage.data, 0, size_t(StorageBytes(config)));  // zero vectors, and every page touched
      spectra_ = static_cast<Cf*>(storage.data);
      const int64_t spectra_bytes = (int64_t(config.capacity) * bins_ * int64_t(sizeof(Cf)) + 255) / 256 * 256;
      norm2_ = reinterpret_cast<float*>(static_cast<std::byte*>(storage.data) + spectra_bytes);
    }
    for (int t = 0; t < threads_; ++t) {
      forward_.emplace_back(kiss_fftr_alloc(config.dim, 0, nullptr, nullptr));
      inverse_.emplace_back(kiss_fftr_alloc(config.dim, 1, nullptr, nullptr));
    }
  }

  bool ok() const {
    if (spectra_ == nullptr) return false;
    for (int t = 0; t < threads_; ++t)
      if (!forward_[size_t(t)] || !inverse_[size_t(t)]) return false;
    return true;
  }

  std::string_view backend() const override { return "cpu"; }
  const HrrConfig& config() const override { return config_; }
  int64_t bytes() const override {
    return (owned_ ? StorageBytes(config_) : 0) + int64_t(stage_.size()) * int64_t(sizeof(Cf)) +
           int64_t(top_cos_.size()) * int64_t(sizeof(float)) +
           int64_t(top_slot_.size()) * int64_t(sizeof(int32_t));
  }

  absl::Status Put(std::span<const int32_t> slots, std::span<const float> values) override {
    if (absl::Status s = CheckPut(slots, values, config_); !s.ok()) return s;
    const int n = int(slots.size());
    const int dim = config_.dim;
#pragma omp parallel for num_threads(threads_) schedule(static) if (n >= kParallelFrom)
    for (int i = 0; i < n; ++i) {
      kiss_fftr(forward_[size_t(omp_get_thread_num())].get(), values.data() + size_t(i) * size_t(dim),
                reinterpret_cast<kiss_fft_cpx*>(Stage(i)));
    }
    Commit(slots);
    return absl::OkStatus();
  }

  absl::Status Get(std::span<const int32_t> slots, std::span<float> values) override {
    if (absl::Status s = CheckGet(slots, values.size(), config_); !s.ok()) return s;
    const int n = int(slots.size());
    const int dim = config_.dim;
    const float scale = GetScale(dim);
#pragma omp parallel for num_threads(threads_) schedule(static) if (n >= kParallelFrom)
    for (int i = 0; i < n; ++i) {
      float* out = values.data() + size_t(i) * size_t(dim);
      kiss_fftri(inverse_[size_t(omp_get_thread_num())].get(), reinterpret_cast<const kiss_fft_cpx*>(Spectrum(slots[size_t(i)])),
                 out);
      for (int j = 0; j < dim; ++j) out[j] *= scale;
    }
    return absl::OkStatus();
  }

  absl::Status PutSpectra(std::span<const int32_t> slots, std::span<const Cf> spectra) override {
    if (absl::Status s = CheckPutSpectra(slots, spectra, config_); !s.ok()) return s;
    std::memcpy(stage_.data(), spectra.data(), spectra.size() * sizeof(Cf));
    Commit(slots);
    return absl::OkStatus();
  }

  absl::Status GetSpectra(std::span<const int32_t> slots, std::span<Cf> spectra) override {
    if (absl::Status s = CheckGetSpectra(slots, spectra.size(), config_); !s.ok()) return s;
    for (size_t i = 0; i < slots.size(); ++i)
      std::memcpy(spectra.data() + i * size_t(bins_), Spectrum(slots[i]), size_t(bins_) * sizeof(Cf));
    return absl::OkStatus();
  }

  absl::Status Random(std::span<const int32_t> slots, VectorKind kind, uint64_t seed,
                      std::span<const uint64_t> ids) override {
    if (absl::Status s = CheckRandom(slots, ids.size(), config_); !s.ok()) return s;
    const int bins = bins_;
    switch (kind) {
      case VectorKind::kGaussian:
        Map(slots.size(), [&](int i, int k) { return gaussian_bin(seed, ids[size_t(i)], k, bins); });
        break;
      case VectorKind::kUnitary:
        Map(slots.size(), [&](int i, int k) { return unitary_bin(seed, ids[size_t(i)], k, bins); });
        break;
    }
    Commit(slots);
    return absl::OkStatus();
  }

  absl::Status Zero(std::span<const int32_t> slots) override {
    if (absl::Status s = CheckSlots("slots", slots, config_); !s.ok()) return s;
    for (int32_t slot : slots) {
      std::fill_n(Spectrum(slot), bins_, Cf{});
      norm2_[size_t(slot)] = 0.0f;
    }
    return absl::OkStatus();
  }

  absl::Status Bind(std::span<const int32_t> out, std::span<const int32_t> a, std::span<const int32_t> b) override {
    if (absl::Status s = CheckBinary(out, a, b, config_); !s.ok()) return s;
    Map(out.size(), [&](int i, int k) { return cmul(Bin(a, i, k), Bin(b, i, k)); });
    Commit(out);
    return absl::OkStatus();
  }

  absl::Status Unbind(std::span<const int32_t> out, std::span<const int32_t> c, std::span<const int32_t> key) override {
    if (absl::Status s = CheckBinary(out, c, key, config_); !s.ok()) return s;
    Map(out.size(), [&](int i, int k) { return cmul_conj(Bin(c, i, k), Bin(key, i, k)); });
    Commit(out);
    return absl::OkStatus();
  }

  absl::Status Inverse(std::span<const int32_t> out, std::span<const int32_t> a) override {
    if (absl::Status s = CheckUnary(out, a, config_); !s.ok()) return s;
    Map(out.size(), [&](int i, int k) { return cinverse(Bin(a, i, k)); });
    Commit(out);
    return absl::OkStatus();
  }

  absl::Status Project(std::span<const int32_t> out, std::span<const int32_t> a) override {
    if (absl::Status s = CheckUnary(out, a, config_); !s.ok()) return s;
    Map(out.size(), [&](int i, int k) { return cunit(Bin(a, i, k)); });
    Commit(out);
    return absl::OkStatus();
  }

  absl::Status Permute(std::span<const int32_t> out, std::span<const int32_t> a,
                       std::span<const int32_t> shifts) override {
    if (absl::Status s = CheckPermute(out, a, shifts, config_); !s.ok()) return s;
    const int dim = config_.dim;
    Map(out.size(), [&](int i, int k) { return cmul(Bin(a, i, k), shift_phase(k, shifts[size_t(i)], dim)); });
    Commit(out);
    return absl::OkStatus();
  }

  absl::Status Power(std::span<const int32_t> out, std::span<const int32_t> base,
                     std::span<const float> exponents) override {
    if (absl::Status s = CheckPower(out, base, exponents, config_); !s.ok()) return s;
    const int bins = bins_;
    Map(out.size(), [&](int i, int k) {
      return cpow(Bin(base, i, k), exponents[size_t(i)], k == 0 || k == bins - 1);
    });
    Commit(out);
    return absl::OkStatus();
  }

  absl::Status Superpose(std::span<const int32_t> out, std::span<const int32_t> offsets, std::span<const int32_t> terms,
                         std::span<const float> weights, bool normalize) override {
    if (absl::Status s = CheckSuperpose(out, offsets, terms, weights, config_); !s.ok()) return s;
    const int n = int(out.size());
    const int bins = bins_;
#pragma omp parallel for num_threads(threads_) schedule(static) if (n >= kParallelFrom)
    for (int g = 0; g < n; ++g) {
      Cf* acc = Stage(g);
      std::fill_n(acc, bins, Cf{});
      for (int j = offsets[size_t(g)]; j < offsets[size_t(g) + 1]; ++j) {
        const float w = weights.empty() ? 1.0f : weights[size_t(j)];
        const Cf* t = Spectrum(terms[size_t(j)]);
        for (int k = 0; k < bins; ++k) acc[k] = cadd(acc[k], cscale(t[k], w));
      }
      if (normalize) {
        const float scale = unit_scale(Norm2(acc));
        for (int k = 0; k < bins; ++k) acc[k] = cscale(acc[k], scale);
      }
    }
    Commit(out);
    return absl::OkStatus();
  }

  absl::Status Similarity(std::span<const int32_t> a, std::span<const int32_t> b, std::span<float> cosines) override {
    if (absl::Status s = CheckSimilarity(a, b, cosines.size(), config_); !s.ok()) return s;
    const int n = int(a.size());
#pragma omp parallel for num_threads(threads_) schedule(static) if (n >= kParallelFrom)
    for (int i = 0; i < n; ++i) cosines[size_t(i)] = Cosine(a[size_t(i)], b[size_t(i)]);
    return absl::OkStatus();
  }

  absl::Status Cleanup(std::span<const int32_t> queries, int item_begin, int item_count, int k,
                       std::span<int32_t> top_slots, std::span<float> top_cosines) override {
    if (absl::Status s = CheckCleanupCall(queries, item_begin, item_count, k, top_slots.size(), top_cosines.size(), config_);
        !s.ok())
      return s;
    for (size_t q = 0; q < queries.size(); ++q) {
      // Items split over threads, each with its own top-k, merged in thread order: the ranking
      // breaks ties by slot, so the result is the same for any split.
      const int32_t query = queries[q];
      const int chunks = item_count >= 4096 ? threads_ : 1;
#pragma omp parallel for num_threads(threads_) schedule(static) if (chunks > 1)
      for (int t = 0; t < chunks; ++t) {
        float* tc = top_cos_.data() + size_t(t) * kMaxTopK;
        int32_t* ts = top_slot_.data() + size_t(t) * kMaxTopK;
        top_k_clear(tc, ts, k);
        const int begin = item_begin + int(int64_t(item_count) * t / chunks);
        const int end = item_begin + int(int64_t(item_count) * (t + 1) / chunks);
        for (int item = begin; item < end; ++item) {
          if (norm2_[size_t(item)] <= 0.0f) continue;
          top_k_insert(tc, ts, k, Cosine(query, item), item);
        }
      }
      float* out_c = top_cosines.data() + q * size_t(k);
      int32_t* out_s = top_slots.data() + q * size_t(k);
      top_k_clear(out_c, out_s, k);
      for (int t = 0; t < chunks; ++t)
        for (int i = 0; i < k; ++i) {
          const int32_t s = top_slot_[size_t(t) * kMaxTopK + size_t(i)];
          if (s >= 0) top_k_insert(out_c, out_s, k, top_cos_[size_t(t) * kMaxTopK + size_t(i)], s);
        }
    }
    return absl::OkStatus();
  }

 private:
  Cf* Spectrum(int32_t slot) { return spectra_ + size_t(slot) * size_t(bins_); }
  const Cf* Spectrum(int32_t slot) const { return spectra_ + size_t(slot) * size_t(bins_); }
  Cf* Stage(int i) { return stage_.data() + size_t(i) * size_t(bins_); }
  Cf Bin(std::span<const int32_t> slots, int i, int k) const { return Spectrum(slots[size_t(i)])[k]; }

  // |a|^2 of the real vector with half spectrum `s` (Parseval).
  float Norm2(const Cf* s) const {
    float sum = 0.0f;
    for (int k = 0; k < bins_; ++k) sum += dot_term(s[k], s[k], k, bins_);
    return sum / float(config_.dim);
  }

  float Cosine(int32_t a, int32_t b) const {
    const float na = norm2_[size_t(a)], nb = norm2_[size_t(b)];
    if (na <= 0.0f || nb <= 0.0f) return 0.0f;
    const Cf* x = Spectrum(a);
    const Cf* y = Spectrum(b);
    float dot = 0.0f;
    for (int k = 0; k < bins_; ++k) dot += dot_term(x[k], y[k], k, bins_);
    return cosine(dot, na, nb, config_.dim);
  }

  // stage[i][k] <- fn(i, k) for i < n: every input is read before Commit writes any slot.
  template <typename Fn>
  void Map(size_t n_entries, Fn fn) {
    const int n = int(n_entries);
    const int bins = bins_;
#pragma omp parallel for num_threads(threads_) schedule(static) if (n >= kParallelFrom)
    for (int i = 0; i < n; ++i) {
      Cf* out = Stage(i);
      for (int k = 0; k < bins; ++k) out[k] = fn(i, k);
    }
  }

  // slots[i] <- stage[i], with its norm (a slot named twice gets the later entry).
  void Commit(std::span<const int32_t> slots) {
    for (size_t i = 0; i < slots.size(); ++i) {
      std::memcpy(Spectrum(slots[i]), Stage(int(i)), size_t(bins_) * sizeof(Cf));
      norm2_[size_t(slots[i])] = Norm2(Stage(int(i)));
    }
  }

  HrrConfig config_;
  int bins_;
  int threads_;
  std::unique_ptr<std::byte[], FreeDeleter> owned_;  // the storage, unless the caller gave one
  Cf* spectra_ = nullptr;    // capacity spectra (HrrStorage layout: spectra, then norms)
  float* norm2_ = nullptr;   // |a|^2 of each slot's real vector, kept with every write
  std::vector<Cf> stage_;     // max_batch spectra: results before they are written
  std::vector<float> top_cos_;
  std::vector<int32_t> top_slot_;
  std::vector<FftPlan> forward_, inverse_;  // one per thread: KissFFT plans hold scratch space
};

}  // namespace

absl::StatusOr<std::unique_ptr<HrrSpace>> MakeCpuHrrSpace(const HrrConfig& config, HrrStorage storage) {
  if (absl::Status s = CheckConfig(config); !s.ok()) return s;
  if (absl::Status s = CheckStorage(storage, config); !s.ok()) return s;
  auto space = std::make_unique<CpuHrrSpace>(config, storage);
  if (!space->ok())
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate an HRR space of ", config.capacity, " vectors of dimension ", config.dim));
  return std::unique_ptr<HrrSpace>(std::move(space));
}

}  // namespace fieldbrain::hrr::cpu
