// The CUDA backend of HrrSpace against the CPU backend (the reference) and against its own
// promises (ctest label "gpu"). Every test skips, with the reason, where no usable CUDA device
// exists or the build has no CUDA backend; the executable builds and runs everywhere.
//
// Inputs: made by Random and Put on the CPU space and copied bit for bit into the CUDA space
// (GetSpectra -> PutSpectra), so that each operation's comparison measures that operation's own
// rounding, not its inputs'. Random and Put are compared on their own first.
//
// Tolerances, and why (vectors of norm ~1: bins of magnitude ~1, real entries ~1/sqrt(D)). Both
// backends evaluate every per-bin formula with the same functions (gpu/hrr/hrr_math.h, sin, cos,
// log, exp and atan2 from gpu/model/portable_math.h), and nothing is contracted into an FMA on
// either side (docs/decisions.md, "Parity by construction"); what may differ is only the order of
// a sum, and the FFT and GEMM libraries on a card.
// - Bin errors are measured as |cuda - cpu| / max(|cpu bin|, floor): relative for large bins,
//   absolute below `floor`.
// - Random, Bind, Unbind, Project, Inverse, Permute, Power: bitwise (0), on the emulated device
//   and on a card: one formula per bin, adds, multiplies, IEEE divides and square roots.
// - Put (forward FFT), Get (inverse FFT): bitwise in emulation, where the emulated cuFFT is
//   KissFFT itself, so any difference would be our glue (plan shape, layout, scaling); on a card
//   cuFFT rounds its own way: 1e-5 on bins (~ulp x log2(D) x |bin| ~ 1e-6), 1e-6 absolute on the
//   entries (~0.03, the same rounding times 1/sqrt(D)).
// - Superpose: 2e-6 (floor 1). Up to 16 terms summed by up to 8 warps, partial sums added in warp
//   order, against the CPU's one running sum: 6.5e-7 at most on these inputs (emulation,
//   2026-11-25); a card runs the same kernels in the same order, so the same bits.
// - Cosines from our kernels (Similarity, the norms cached by a write): 1e-6 absolute. Sums over
//   D/2 + 1 bins in warp-tree order against the CPU's sequential order: 3e-7 at most measured.
// - Cleanup's scores come from a GEMM: 1e-6 in emulation (its SGEMM sums in eight fixed lanes),
//   1e-5 on a card, where cuBLAS picks the order by shape (~sqrt(D/2) x ulp x |terms|, ~3e-6).
// Each of these still catches a wrong index, term, weight or Parseval weight, which moves values
// by 1e-3 or more.
// - Cleanup slots: identical to the CPU's at every rank whose CPU cosine is more than twice the
//   score tolerance from its neighbours'; where two candidates are closer than that the order may
//   legitimately differ, and such ranks are counted and printed, not compared. (Ties at the same
//   cosine go to the lower slot on both: gpu/hrr/top_k.h.)
// - Same call twice, and a space on caller storage vs one on its own: bitwise.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gpu/engine.h"
#include "gpu/hrr/hrr_space.h"
#include "tests/hrr/slot_lists.h"
#include "gtest/gtest.h"
#if FIELDBRAIN_HAVE_CUDA_HRR
#include <cuda_runtime_api.h>

#include "gpu/cuda/cuda_engine.h"
#include "gpu/hrr/cuda/cuda_hrr_space.h"
#endif

namespace fieldbrain::hrr {
namespace {

using testing::Ids;
using testing::Range;

#if FIELDBRAIN_HAVE_CUDA_HRR

std::string NoDeviceReason() {
  if (CudaEngineAvailable()) return "";
  const absl::Status probe = ::fieldbrain::cuda::ProbeCudaDevice();
  return probe.ok() ? "CudaEngineAvailable() is false" : std::string(probe.message());
}

#define SKIP_WITHOUT_CUDA_DEVICE()                                                   \
  do {                                                                               \
    if (const std::string reason = NoDeviceReason(); !reason.empty())                \
      GTEST_SKIP() << "no CUDA device: " << reason;                                  \
  } while (0)

constexpr int kDim = 1024;
#if defined(FIELDBRAIN_CUDA_EMU)
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif
constexpr double kBitwise = 0.0;  // Random, the bin-by-bin operations, Power
constexpr double kPutTol = kEmulated ? 0.0 : 1e-5;
constexpr double kGetTol = kEmulated ? 0.0 : 1e-6;
constexpr double kSuperposeTol = 2e-6;
constexpr double kCosTol = 1e-6;
constexpr double kScoreTol = kEmulated ? 1e-6 : 1e-5;
constexpr double kTieTol = 2 * kScoreTol;

std::unique_ptr<HrrSpace> MustMake(std::string_view backend, const HrrConfig& config, HrrStorage storage = {}) {
  absl::StatusOr<std::unique_ptr<HrrSpace>> s = MakeHrrSpace(backend, config, storage);
  EXPECT_TRUE(s.ok()) << backend << ": " << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

struct Backends {
  std::unique_ptr<HrrSpace> cpu;
  std::unique_ptr<HrrSpace> gpu;
  bool ok() const { return cpu != nullptr && gpu != nullptr; }
};

Backends MakeBoth(const HrrConfig& config) { return Backends{MustMake("cpu", config), MustMake("cuda", config)}; }

// Calls take at most max_batch slots: longer lists go in calls of that many.
std::vector<Cf> Spectra(HrrSpace& s, std::span<const int32_t> slots) {
  const size_t bins = size_t(s.bins()), step = size_t(s.config().max_batch);
  std::vector<Cf> v(slots.size() * bins);
  for (size_t i = 0; i < slots.size(); i += step) {
    const size_t n = std::min(step, slots.size() - i);
    const absl::Status st = s.GetSpectra(slots.subspan(i, n), std::span<Cf>(v).subspan(i * bins, n * bins));
    EXPECT_TRUE(st.ok()) << s.backend() << ": " << st;
  }
  return v;
}

// The CUDA space's `slots` <- the CPU space's, bit for bit.
void Mirror(Backends& b, std::span<const int32_t> slots) {
  const std::vector<Cf> v = Spectra(*b.cpu, slots);
  const size_t bins = size_t(b.gpu->bins()), step = size_t(b.gpu->config().max_batch);
  for (size_t i = 0; i < slots.size(); i += step) {
    const size_t n = std::min(step, slots.size() - i);
    const absl::Status st = b.gpu->PutSpectra(slots.subspan(i, n), std::span<const Cf>(v).subspan(i * bins, n * bins));
    ASSERT_TRUE(st.ok()) << st;
  }
}

// Max over bins of |x - y| / max(|y|, floor).
double MaxBinError(const std::vector<Cf>& x, const std::vector<Cf>& y, double floor) {
  EXPECT_EQ(x.size(), y.size());
  double worst = 0.0;
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    const double d = std::hypot(double(x[i].re) - y[i].re, double(x[i].im) - y[i].im);
    const double scale = std::max(std::hypot(double(y[i].re), double(y[i].im)), floor);
    worst = std::max(worst, d / scale);
  }
  return worst;
}

double MaxAbsDiff(std::span<const float> x, std::span<const float> y) {
  EXPECT_EQ(x.size(), y.size());
  double worst = 0.0;
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) worst = std::max(worst, std::fabs(double(x[i]) - y[i]));
  return worst;
}

std::vector<float> GaussianValues(int n, int dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(float(dim)));
  std::vector<float> v(size_t(n) * size_t(dim));
  for (float& x : v) x = normal(rng);
  return v;
}

// Runs `call` on both backends; both must succeed.
void OnBoth(Backends& b, const std::function<absl::Status(HrrSpace&)>& call, const char* what) {
  const absl::Status c = call(*b.cpu);
  const absl::Status g = call(*b.gpu);
  ASSERT_TRUE(c.ok()) << what << " (cpu): " << c;
  ASSERT_TRUE(g.ok()) << what << " (cuda): " << g;
}

void ExpectSpectraClose(Backends& b, std::span<const int32_t> slots, double tol, double floor, const char* what) {
  const double err = MaxBinError(Spectra(*b.gpu, slots), Spectra(*b.cpu, slots), floor);
  std::printf("%-28s max bin error %.3g (tolerance %.0g, floor %.0g)\n", what, err, tol, floor);
  EXPECT_LE(err, tol) << what;
}

// Cosines of the pairs (a[i], b[i]) on both backends: checks the norms each one cached for the
// slots it wrote, besides the dot products.
void ExpectCosinesClose(Backends& b, std::span<const int32_t> x, std::span<const int32_t> y, const char* what) {
  std::vector<float> c(x.size()), g(x.size());
  ASSERT_TRUE(b.cpu->Similarity(x, y, c).ok());
  ASSERT_TRUE(b.gpu->Similarity(x, y, g).ok());
  const double err = MaxAbsDiff(g, c);
  std::printf("%-28s max cosine difference %.3g (tolerance %.0g)\n", what, err, kCosTol);
  EXPECT_LE(err, kCosTol) << what;
}

// Slots 0-31 Gaussian, 32-63 unitary (Random), 64-95 Put from Gaussian values: made on the CPU
// space and mirrored into the CUDA space.
constexpr int kGaussian = 0, kUnitary = 32, kPut = 64, kInputs = 96;

Backends Prepared(const HrrConfig& config) {
  Backends b = MakeBoth(config);
  if (!b.ok()) return b;
  EXPECT_TRUE(b.cpu->Random(Range(kGaussian, 32), VectorKind::kGaussian, 11, Ids(0, 32)).ok());
  EXPECT_TRUE(b.cpu->Random(Range(kUnitary, 32), VectorKind::kUnitary, 12, Ids(0, 32)).ok());
  EXPECT_TRUE(b.cpu->Put(Range(kPut, 32), GaussianValues(32, config.dim, 13)).ok());
  Mirror(b, Range(0, kInputs));
  return b;
}

struct TopK {
  std::vector<int32_t> slots;
  std::vector<float> cos;
};

TopK RunCleanup(HrrSpace& s, std::span<const int32_t> queries, int begin, int count, int k) {
  TopK t{std::vector<int32_t>(queries.size() * size_t(k)), std::vector<float>(queries.size() * size_t(k))};
  const absl::Status st = s.Cleanup(queries, begin, count, k, t.slots, t.cos);
  EXPECT_TRUE(st.ok()) << s.backend() << ": " << st;
  return t;
}

// CUDA's top k against the CPU's top k + 1 (the extra entry is the candidate just below rank
// k - 1). Returns the ranks left uncompared for a near tie.
int ExpectSameTopK(const TopK& gpu, const TopK& cpu, int n, int k) {
  int near_ties = 0;
  for (int q = 0; q < n; ++q)
    for (int r = 0; r < k; ++r) {
      const size_t g = size_t(q) * k + r, c = size_t(q) * (k + 1) + r;
      const int32_t slot = cpu.slots[c];
      if (slot < 0) {  // fewer non-zero items than k: the same on both
        EXPECT_EQ(gpu.slots[g], -1) << "query " << q << " rank " << r;
        EXPECT_EQ(gpu.cos[g], 0.0f) << "query " << q << " rank " << r;
        continue;
      }
      EXPECT_NEAR(gpu.cos[g], cpu.cos[c], kScoreTol) << "query " << q << " rank " << r;
      const bool apart_above = r == 0 || cpu.cos[c - 1] - cpu.cos[c] > kTieTol;
      const bool apart_below = cpu.slots[c + 1] < 0 || cpu.cos[c] - cpu.cos[c + 1] > kTieTol;
      if (apart_above && apart_below) {
        EXPECT_EQ(gpu.slots[g], slot) << "query " << q << " rank " << r << " cos " << cpu.cos[c];
      } else {
        ++near_ties;
      }
    }
  return near_ties;
}

TEST(HrrCuda, FactoryMakesCudaSpaces) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (std::string_view backend : {"cuda", "auto"}) {
    auto s = MustMake(backend, HrrConfig{kDim, 16, 16});
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->backend(), "cuda");
    EXPECT_TRUE(cuda::CountersOf(*s).has_value());
    EXPECT_GT(s->bytes(), StorageBytes(s->config()));
  }
  auto cpu = MustMake("cpu", HrrConfig{kDim, 16, 16});
  ASSERT_NE(cpu, nullptr);
  EXPECT_FALSE(cuda::CountersOf(*cpu).has_value());
}

TEST(HrrCuda, RandomMatchesTheCpuBackend) {
  SKIP_WITHOUT_CUDA_DEVICE();
  Backends b = MakeBoth(HrrConfig{kDim, 128, 64});
  ASSERT_TRUE(b.ok());
  OnBoth(b, [](HrrSpace& s) { return s.Random(Range(0, 64), VectorKind::kGaussian, 7, Ids(1000, 64)); }, "Random");
  ExpectSpectraClose(b, Range(0, 64), kBitwise, 1.0, "Random gaussian");
  OnBoth(b, [](HrrSpace& s) { return s.Random(Range(64, 64), VectorKind::kUnitary, 7, Ids(1000, 64)); }, "Random");
  ExpectSpectraClose(b, Range(64, 64), kBitwise, 1.0, "Random unitary");
  ExpectCosinesClose(b, Range(0, 64), Range(64, 64), "Random cosines");
}

TEST(HrrCuda, PutAndGetMatchTheCpuBackend) {
  SKIP_WITHOUT_CUDA_DEVICE();
  // max_batch 100: FFT buckets 1, 2, ..., 64, 100; 37 and 70 vectors run padded buckets.
  Backends b = MakeBoth(HrrConfig{kDim, 256, 100});
  ASSERT_TRUE(b.ok());
  for (const int n : {1, 37, 70, 100}) {
    const std::vector<float> values = GaussianValues(n, kDim, uint32_t(n));
    OnBoth(b, [&](HrrSpace& s) { return s.Put(Range(0, n), values); }, "Put");
    ExpectSpectraClose(b, Range(0, n), kPutTol, 1.0, "Put (forward FFT)");
    ExpectCosinesClose(b, Range(0, n), Range(0, n), "Put norms");
    // Get from identical spectra: only the inverse FFTs differ.
    Mirror(b, Range(0, n));
    std::vector<float> c(values.size()), g(values.size());
    ASSERT_TRUE(b.cpu->Get(Range(0, n), c).ok());
    ASSERT_TRUE(b.gpu->Get(Range(0, n), g).ok());
    const double err = MaxAbsDiff(g, c);
    std::printf("Get (inverse FFT), %3d vectors: max difference %.3g (tolerance %.0g)\n", n, err, kGetTol);
    EXPECT_LE(err, kGetTol);
    // Two transforms' rounding on entries of ~0.03 (the CPU backend's own round trip: hrr_space_test).
    EXPECT_LE(MaxAbsDiff(g, values), 1e-6) << "Put then Get returns the vectors";
  }
}

TEST(HrrCuda, BinByBinOperationsMatchTheCpuBackend) {
  SKIP_WITHOUT_CUDA_DEVICE();
  Backends b = Prepared(HrrConfig{kDim, 512, 512});
  ASSERT_TRUE(b.ok());
  const std::vector<int32_t> gauss = Range(kGaussian, 32), unit = Range(kUnitary, 32), put = Range(kPut, 32);

  OnBoth(b, [&](HrrSpace& s) { return s.Bind(Range(128, 32), gauss, put); }, "Bind");
  ExpectSpectraClose(b, Range(128, 32), kBitwise, 1.0, "Bind");
  OnBoth(b, [&](HrrSpace& s) { return s.Unbind(Range(160, 32), Range(128, 32), unit); }, "Unbind");
  ExpectSpectraClose(b, Range(160, 32), kBitwise, 1.0, "Unbind");
  OnBoth(b, [&](HrrSpace& s) { return s.Inverse(Range(192, 32), unit); }, "Inverse");
  ExpectSpectraClose(b, Range(192, 32), kBitwise, 1e-30, "Inverse (unitary)");
  OnBoth(b, [&](HrrSpace& s) { return s.Inverse(Range(224, 32), gauss); }, "Inverse");
  ExpectSpectraClose(b, Range(224, 32), kBitwise, 1e-30, "Inverse (gaussian)");
  OnBoth(b, [&](HrrSpace& s) { return s.Project(Range(256, 32), put); }, "Project");
  ExpectSpectraClose(b, Range(256, 32), kBitwise, 1e-30, "Project");

  std::vector<int32_t> shifts(32);
  const int32_t some[] = {0, 1, -1, 5, kDim - 1, kDim, -3000, 123456};
  for (size_t i = 0; i < shifts.size(); ++i) shifts[i] = some[i % 8] + int32_t(i);
  OnBoth(b, [&](HrrSpace& s) { return s.Permute(Range(288, 32), gauss, shifts); }, "Permute");
  ExpectSpectraClose(b, Range(288, 32), kBitwise, 1.0, "Permute");

  std::vector<float> exponents(32);
  const float powers[] = {0.0f, 1.0f, -1.0f, 0.5f, 2.5f, -1.7f, 3.0f, 0.25f};
  for (size_t i = 0; i < exponents.size(); ++i) exponents[i] = powers[i % 8];
  OnBoth(b, [&](HrrSpace& s) { return s.Power(Range(320, 32), unit, exponents); }, "Power");
  ExpectSpectraClose(b, Range(320, 32), kBitwise, 1e-30, "Power (unitary)");
  OnBoth(b, [&](HrrSpace& s) { return s.Power(Range(352, 32), gauss, exponents); }, "Power");
  ExpectSpectraClose(b, Range(352, 32), kBitwise, 1e-30, "Power (gaussian)");

  // In place, and an output named twice (the later entry wins): Bind(out = a), then out {400,
  // 400, 401}.
  OnBoth(b, [&](HrrSpace& s) { return s.Bind(Range(128, 32), Range(128, 32), unit); }, "Bind in place");
  ExpectSpectraClose(b, Range(128, 32), kBitwise, 1.0, "Bind in place");
  const std::vector<int32_t> dup_out = {400, 400, 401}, dup_a = {0, 1, 2}, dup_b = {3, 4, 5};
  OnBoth(b, [&](HrrSpace& s) { return s.Bind(dup_out, dup_a, dup_b); }, "Bind, output named twice");
  ExpectSpectraClose(b, Range(400, 2), kBitwise, 1.0, "Bind, output named twice");

  OnBoth(b, [&](HrrSpace& s) { return s.Zero(Range(160, 4)); }, "Zero");
  for (const Cf& v : Spectra(*b.gpu, Range(160, 4))) ASSERT_TRUE(v.re == 0.0f && v.im == 0.0f);

  // The norms each backend cached for what it wrote, through cosines.
  ExpectCosinesClose(b, Range(128, 288), Range(128, 288), "self cosines of the outputs");
  std::vector<int32_t> partners(288);
  for (size_t i = 0; i < partners.size(); ++i) partners[i] = int32_t(i % size_t(kInputs));
  ExpectCosinesClose(b, Range(128, 288), partners, "outputs against inputs");
}

TEST(HrrCuda, SuperposeMatchesTheCpuBackend) {
  SKIP_WITHOUT_CUDA_DEVICE();
  Backends b = Prepared(HrrConfig{kDim, 512, 64});
  ASSERT_TRUE(b.ok());
  // Groups of 0, 1, 2, 3, 5, 9 and 16 terms: one warp, two, four, eight.
  const std::vector<int32_t> sizes = {0, 1, 2, 3, 5, 9, 16};
  std::vector<int32_t> offsets = {0}, terms;
  for (int32_t size : sizes) {
    for (int32_t j = 0; j < size; ++j) terms.push_back((int32_t(terms.size()) * 7) % kInputs);
    offsets.push_back(int32_t(terms.size()));
  }
  std::vector<float> weights(terms.size());
  for (size_t j = 0; j < weights.size(); ++j) weights[j] = 0.25f + 0.1f * float(j % 9) - (j % 4 == 3 ? 1.0f : 0.0f);
  const std::vector<int32_t> out = Range(200, int(sizes.size()));
  for (const bool weighted : {false, true})
    for (const bool normalize : {false, true}) {
      const std::span<const float> w = weighted ? std::span<const float>(weights) : std::span<const float>();
      OnBoth(b, [&](HrrSpace& s) { return s.Superpose(out, offsets, terms, w, normalize); }, "Superpose");
      ExpectSpectraClose(b, out, kSuperposeTol, 1.0, weighted ? "Superpose weighted" : "Superpose");
      ExpectCosinesClose(b, out, Range(0, int(out.size())), "Superpose cosines");
    }
  // A superposition that names its own output among its terms reads it before it is written.
  const std::vector<int32_t> self_out = {5}, self_offsets = {0, 3}, self_terms = {5, 6, 5};
  OnBoth(b, [&](HrrSpace& s) { return s.Superpose(self_out, self_offsets, self_terms, {}, true); }, "Superpose");
  ExpectSpectraClose(b, self_out, kSuperposeTol, 1.0, "Superpose into a term");
}

TEST(HrrCuda, SimilarityAndASmallCleanupMatchTheCpuBackend) {
  SKIP_WITHOUT_CUDA_DEVICE();
  Backends b = Prepared(HrrConfig{kDim, 512, 64});
  ASSERT_TRUE(b.ok());
  OnBoth(b, [](HrrSpace& s) { return s.Zero(Range(10, 3)); }, "Zero");
  std::vector<int32_t> a = Range(0, 64), other(64);
  for (size_t i = 0; i < other.size(); ++i) other[i] = int32_t((i * 5 + 3) % kInputs);
  ExpectCosinesClose(b, a, other, "Similarity");
  // Zero vectors: cosine exactly 0 on both.
  const std::vector<int32_t> zero = {10, 11, 0}, any = {1, 10, 12};
  std::vector<float> g(3);
  ASSERT_TRUE(b.gpu->Similarity(zero, any, g).ok());
  for (float c : g) EXPECT_EQ(c, 0.0f);

  // 96 items with three zero ones; k = 8; and a range of 20 items with 3 zero ones and k = 20:
  // the rows end in -1.
  const std::vector<int32_t> queries = {0, 33, 70, 95, 10};
  for (const auto& [count, k] : {std::pair{kInputs, 8}, std::pair{20, 20}}) {
    const TopK cpu = RunCleanup(*b.cpu, queries, 0, count, k + 1);
    const TopK gpu = RunCleanup(*b.gpu, queries, 0, count, k);
    const int near_ties = ExpectSameTopK(gpu, cpu, int(queries.size()), k);
    std::printf("cleanup of %zu queries over %d items, k = %d: %d ranks in near ties\n", queries.size(), count, k,
                near_ties);
  }
  // The zero query: every item at cosine 0, ranked by slot on both.
  const std::vector<int32_t> zero_query = {10};
  const TopK cpu = RunCleanup(*b.cpu, zero_query, 0, kInputs, 8);
  const TopK gpu = RunCleanup(*b.gpu, zero_query, 0, kInputs, 8);
  EXPECT_EQ(gpu.slots, cpu.slots);
  EXPECT_EQ(gpu.cos, cpu.cos);
}

TEST(HrrCuda, CleanupFindsTheCpuBackendsSlotsAmong10000Items) {
  SKIP_WITHOUT_CUDA_DEVICE();
  constexpr int kItems = 10000;
  // Enough for the score matrix to split the items into two chunks (the emulation build's matrix
  // is 8 times smaller: hrr_workspace.h).
#if defined(FIELDBRAIN_CUDA_EMU)
  constexpr int kQueries = 140;
#else
  constexpr int kQueries = 1100;
#endif
  constexpr int kTop = 6;
  const HrrConfig config{kDim, kItems + kQueries, 2048};
  Backends b = MakeBoth(config);
  ASSERT_TRUE(b.ok());
  for (int begin = 0; begin < kItems; begin += 2000)
    OnBoth(b, [&](HrrSpace& s) { return s.Random(Range(begin, 2000), VectorKind::kGaussian, 21, Ids(begin, 2000)); },
           "Random");
  OnBoth(b, [](HrrSpace& s) { return s.Zero(Range(4000, 50)); }, "Zero");  // never returned
  for (int begin = 0; begin < kItems; begin += 2000) Mirror(b, Range(begin, 2000));  // the same items on both
  // Queries: 100 superpositions of 5 items with falling weights (clear top 5), noisy copies
  // of items, and a zero vector.
  std::vector<int32_t> offsets = {0}, terms;
  std::vector<float> weights;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> item(0, kItems - 1);
  for (int q = 0; q < kQueries - 1; ++q) {
    const int n_terms = q < 100 ? 5 : 2;
    for (int j = 0; j < n_terms; ++j) {
      terms.push_back(item(rng));
      weights.push_back(q < 100 ? 1.0f - 0.15f * float(j) : (j == 0 ? 1.0f : 0.3f));
    }
    offsets.push_back(int32_t(terms.size()));
  }
  // Built in batches of at most max_batch groups and terms.
  for (int g0 = 0; g0 < kQueries - 1;) {
    int g1 = g0;
    while (g1 < kQueries - 1 && offsets[size_t(g1) + 1] - offsets[size_t(g0)] <= config.max_batch) ++g1;
    std::vector<int32_t> sub_offsets;
    for (int g = g0; g <= g1; ++g) sub_offsets.push_back(offsets[size_t(g)] - offsets[size_t(g0)]);
    const std::span<const int32_t> sub_terms(terms.data() + offsets[size_t(g0)], size_t(sub_offsets.back()));
    const std::span<const float> sub_weights(weights.data() + offsets[size_t(g0)], size_t(sub_offsets.back()));
    OnBoth(b, [&](HrrSpace& s) { return s.Superpose(Range(kItems + g0, g1 - g0), sub_offsets, sub_terms, sub_weights, true); },
           "Superpose");
    g0 = g1;
  }
  Mirror(b, Range(kItems, kQueries - 1));  // the same queries on both

  const std::vector<int32_t> queries = Range(kItems, kQueries);  // the last one was never written: zero
  const TopK cpu = RunCleanup(*b.cpu, queries, 0, kItems, kTop + 1);
  const TopK gpu = RunCleanup(*b.gpu, queries, 0, kItems, kTop);
  const int near_ties = ExpectSameTopK(gpu, cpu, kQueries - 1, kTop);
  std::printf("cleanup of %d queries over %d items, k = %d: %d of %d ranks in near ties, not compared\n", kQueries,
              kItems, kTop, near_ties, (kQueries - 1) * kTop);
  EXPECT_LE(near_ties, (kQueries - 1) * kTop / 20);
  // The zero query ranks every non-zero item at 0, by slot.
  for (int r = 0; r < kTop; ++r) {
    const size_t g = size_t(kQueries - 1) * kTop + size_t(r);
    EXPECT_EQ(gpu.slots[g], r);
    EXPECT_EQ(gpu.cos[g], 0.0f);
  }
  // Items as a sub-range that starts past the zero ones.
  const TopK cpu_sub = RunCleanup(*b.cpu, Range(kItems, 50), 4050, 3000, kTop + 1);
  const TopK gpu_sub = RunCleanup(*b.gpu, Range(kItems, 50), 4050, 3000, kTop);
  ExpectSameTopK(gpu_sub, cpu_sub, 50, kTop);
  for (int32_t s : gpu_sub.slots) EXPECT_TRUE(s >= 4050 && s < 7050) << s;
}

TEST(HrrCuda, SameCallSameBits) {
  SKIP_WITHOUT_CUDA_DEVICE();
  auto s = MustMake("cuda", HrrConfig{kDim, 512, 128});
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->Random(Range(0, 64), VectorKind::kGaussian, 3, Ids(0, 64)).ok());
  ASSERT_TRUE(s->Random(Range(64, 64), VectorKind::kUnitary, 3, Ids(0, 64)).ok());
  const std::vector<float> values = GaussianValues(64, kDim, 4);
  std::vector<int32_t> offsets = {0};
  for (int g = 0; g < 8; ++g) offsets.push_back(offsets.back() + 1 + 2 * g);
  const std::vector<int32_t> terms = Range(0, offsets.back());
  const std::vector<float> exponents(64, 1.7f);
  std::vector<int32_t> shifts(64);
  std::iota(shifts.begin(), shifts.end(), -20);

  // Each writing call twice, into two sets of slots.
  for (const int out : {128, 256}) {
    ASSERT_TRUE(s->Put(Range(out, 64), values).ok());
    ASSERT_TRUE(s->Bind(Range(out + 64, 64), Range(0, 64), Range(64, 64)).ok());
    ASSERT_TRUE(s->Superpose(Range(out + 64, 8), offsets, terms, {}, true).ok());
    ASSERT_TRUE(s->Power(Range(out + 72, 16), Range(64, 16), std::span(exponents).first(16)).ok());
    ASSERT_TRUE(s->Permute(Range(out + 88, 16), Range(0, 16), std::span(shifts).first(16)).ok());
  }
  const std::vector<Cf> first = Spectra(*s, Range(128, 128)), second = Spectra(*s, Range(256, 128));
  EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * sizeof(Cf)), 0);

  std::vector<float> get1(64 * size_t(kDim)), get2(get1.size());
  ASSERT_TRUE(s->Get(Range(192, 64), get1).ok());
  ASSERT_TRUE(s->Get(Range(192, 64), get2).ok());
  EXPECT_EQ(std::memcmp(get1.data(), get2.data(), get1.size() * sizeof(float)), 0);
  std::vector<float> cos1(64), cos2(64);
  ASSERT_TRUE(s->Similarity(Range(0, 64), Range(128, 64), cos1).ok());
  ASSERT_TRUE(s->Similarity(Range(0, 64), Range(128, 64), cos2).ok());
  EXPECT_EQ(std::memcmp(cos1.data(), cos2.data(), cos1.size() * sizeof(float)), 0);
  const TopK top1 = RunCleanup(*s, Range(128, 32), 0, 384, 10);
  const TopK top2 = RunCleanup(*s, Range(128, 32), 0, 384, 10);
  EXPECT_EQ(top1.slots, top2.slots);
  EXPECT_EQ(std::memcmp(top1.cos.data(), top2.cos.data(), top1.cos.size() * sizeof(float)), 0);
}

TEST(HrrCuda, OneCopyInAtMostOneCopyOutAndNoAllocationPerCall) {
  SKIP_WITHOUT_CUDA_DEVICE();
  auto s = MustMake("cuda", HrrConfig{256, 64, 16});
  ASSERT_NE(s, nullptr);
  const std::vector<float> values = GaussianValues(16, 256, 9);
  std::vector<float> out_values(values.size()), cosines(16), top_cos(4 * 5);
  std::vector<Cf> spectra(16 * size_t(s->bins()));
  std::vector<int32_t> top_slots(4 * 5);
  const std::vector<int32_t> offsets = {0, 4, 16};
  const std::vector<float> exponents(16, 0.5f);
  const std::vector<int32_t> shifts(16, 3);
  struct Case {
    const char* name;
    int64_t d2h;
    std::function<absl::Status()> call;
  };
  const std::vector<Case> cases = {
      {"Random", 0, [&] { return s->Random(Range(0, 16), VectorKind::kUnitary, 1, Ids(0, 16)); }},
      {"Put", 0, [&] { return s->Put(Range(16, 16), values); }},
      {"Get", 1, [&] { return s->Get(Range(16, 16), out_values); }},
      {"PutSpectra", 0, [&] { return s->PutSpectra(Range(32, 16), spectra); }},
      {"GetSpectra", 1, [&] { return s->GetSpectra(Range(0, 16), spectra); }},
      {"Bind", 0, [&] { return s->Bind(Range(32, 16), Range(0, 16), Range(16, 16)); }},
      {"Unbind", 0, [&] { return s->Unbind(Range(32, 16), Range(32, 16), Range(0, 16)); }},
      {"Inverse", 0, [&] { return s->Inverse(Range(48, 16), Range(0, 16)); }},
      {"Project", 0, [&] { return s->Project(Range(48, 16), Range(16, 16)); }},
      {"Permute", 0, [&] { return s->Permute(Range(48, 16), Range(16, 16), shifts); }},
      {"Power", 0, [&] { return s->Power(Range(48, 16), Range(0, 16), exponents); }},
      {"Superpose", 0, [&] { return s->Superpose(Range(48, 2), offsets, Range(0, 16), {}, true); }},
      {"Zero", 0, [&] { return s->Zero(Range(60, 4)); }},
      {"Similarity", 1, [&] { return s->Similarity(Range(0, 16), Range(16, 16), cosines); }},
      {"Cleanup", 1, [&] { return s->Cleanup(Range(0, 4), 0, 64, 5, top_slots, top_cos); }},
  };
  for (int round = 0; round < 3; ++round)
    for (const Case& c : cases) {
      const cuda::HrrCudaCounters before = cuda::CountersOf(*s).value();
      const absl::Status st = c.call();
      ASSERT_TRUE(st.ok()) << c.name << ": " << st;
      const cuda::HrrCudaCounters after = cuda::CountersOf(*s).value();
      EXPECT_EQ(after.h2d_copies - before.h2d_copies, 1) << c.name;
      EXPECT_EQ(after.d2h_copies - before.d2h_copies, c.d2h) << c.name;
      EXPECT_EQ(after.device_allocs - before.device_allocs, 0) << c.name;
      EXPECT_EQ(after.host_allocs - before.host_allocs, 0) << c.name;
      EXPECT_EQ(after.pool_allocs - before.pool_allocs, 0) << c.name;
      EXPECT_EQ(after.calls - before.calls, 1) << c.name;
    }
  // Refused and empty calls touch nothing.
  const cuda::HrrCudaCounters before = cuda::CountersOf(*s).value();
  EXPECT_FALSE(s->Bind(Range(0, 2), Range(0, 2), Range(63, 2)).ok());
  EXPECT_TRUE(s->Bind({}, {}, {}).ok());
  const cuda::HrrCudaCounters after = cuda::CountersOf(*s).value();
  EXPECT_EQ(after.h2d_copies, before.h2d_copies);
  EXPECT_EQ(after.d2h_copies, before.d2h_copies);
  EXPECT_EQ(after.calls, before.calls);
  const cuda::HrrCudaCounters made = cuda::CountersOf(*MustMake("cuda", HrrConfig{256, 64, 16})).value();
  EXPECT_EQ(made.pool_allocs, 2) << "the slots and one workspace, stream-ordered from the context's pool";
  EXPECT_EQ(made.device_allocs, 0) << "no cudaMalloc: it would synchronise the device";
  EXPECT_EQ(made.host_allocs, 0) << "no pinned block of its own: the context's is shared";
}

TEST(HrrCuda, BadArgumentsAreRefusedLikeTheCpuBackend) {
  SKIP_WITHOUT_CUDA_DEVICE();
  constexpr int kD = 64;
  const HrrConfig config{kD, 16, 4};
  Backends b = MakeBoth(config);
  ASSERT_TRUE(b.ok());
  OnBoth(b, [](HrrSpace& s) { return s.Random(Range(0, 4), VectorKind::kGaussian, 2, Ids(0, 4)); }, "Random");
  Mirror(b, Range(0, 16));
  const std::vector<Cf> before = Spectra(*b.gpu, Range(0, 16));

  std::vector<float> nan_values(2 * kD, 0.1f);
  nan_values[kD + 5] = NAN;
  std::vector<Cf> inf_spectra(2 * size_t(Bins(kD)));
  inf_spectra[3].im = INFINITY;
  std::vector<float> large_values(2 * kD, 0.1f);
  large_values[kD + 9] = 2 * kMaxValue;
  std::vector<Cf> large_spectra(2 * size_t(Bins(kD)));
  large_spectra[Bins(kD) + 2].re = -2 * kMaxBin;
  std::vector<float> values(2 * kD), few(3), top_cos(2);
  std::vector<int32_t> top_slots(2);
  const std::vector<int32_t> bad_slot = {0, 16}, negative = {-1, 0}, five = Range(0, 5);
  struct Case {
    const char* name;
    std::function<absl::Status(HrrSpace&)> call;
  };
  const std::vector<Case> cases = {
      {"Put: a slot out of range", [&](HrrSpace& s) { return s.Put(bad_slot, values); }},
      {"Put: more than max_batch", [&](HrrSpace& s) { return s.Put(five, std::vector<float>(5 * kD)); }},
      {"Put: value count", [&](HrrSpace& s) { return s.Put(Range(0, 2), few); }},
      {"Put: NaN", [&](HrrSpace& s) { return s.Put(Range(0, 2), nan_values); }},
      {"Put: beyond kMaxValue", [&](HrrSpace& s) { return s.Put(Range(0, 2), large_values); }},
      {"Get: value count", [&](HrrSpace& s) { return s.Get(Range(0, 2), few); }},
      {"PutSpectra: infinity", [&](HrrSpace& s) { return s.PutSpectra(Range(0, 2), inf_spectra); }},
      {"PutSpectra: beyond kMaxBin", [&](HrrSpace& s) { return s.PutSpectra(Range(0, 2), large_spectra); }},
      {"GetSpectra: count", [&](HrrSpace& s) { return s.GetSpectra(Range(0, 3), inf_spectra); }},
      {"Random: ids", [&](HrrSpace& s) { return s.Random(Range(0, 2), VectorKind::kGaussian, 1, Ids(0, 3)); }},
      {"Zero: negative slot", [&](HrrSpace& s) { return s.Zero(negative); }},
      {"Bind: b out of range", [&](HrrSpace& s) { return s.Bind(Range(0, 2), Range(0, 2), bad_slot); }},
      {"Bind: lengths", [&](HrrSpace& s) { return s.Bind(Range(0, 2), Range(0, 1), Range(0, 2)); }},
      {"Unbind: out negative", [&](HrrSpace& s) { return s.Unbind(negative, Range(0, 2), Range(0, 2)); }},
      {"Inverse: lengths", [&](HrrSpace& s) { return s.Inverse(Range(0, 2), Range(0, 3)); }},
      {"Project: over max_batch", [&](HrrSpace& s) { return s.Project(five, five); }},
      {"Permute: shifts", [&](HrrSpace& s) { return s.Permute(Range(0, 2), Range(0, 2), Range(0, 1)); }},
      {"Power: NaN exponent",
       [&](HrrSpace& s) { return s.Power(Range(0, 2), Range(0, 2), std::vector<float>{1.0f, NAN}); }},
      {"Superpose: offsets[0]",
       [&](HrrSpace& s) { return s.Superpose(Range(0, 1), std::vector<int32_t>{1, 2}, Range(0, 2), {}, false); }},
      {"Superpose: descending",
       [&](HrrSpace& s) { return s.Superpose(Range(0, 2), std::vector<int32_t>{0, 2, 1}, Range(0, 1), {}, false); }},
      {"Superpose: last offset",
       [&](HrrSpace& s) { return s.Superpose(Range(0, 1), std::vector<int32_t>{0, 3}, Range(0, 2), {}, false); }},
      {"Superpose: weights count",
       [&](HrrSpace& s) { return s.Superpose(Range(0, 1), std::vector<int32_t>{0, 2}, Range(0, 2), few, false); }},
      {"Superpose: infinite weight",
       [&](HrrSpace& s) {
         return s.Superpose(Range(0, 1), std::vector<int32_t>{0, 2}, Range(0, 2), std::vector<float>{1, INFINITY},
                            false);
       }},
      {"Superpose: term out of range",
       [&](HrrSpace& s) { return s.Superpose(Range(0, 1), std::vector<int32_t>{0, 2}, bad_slot, {}, false); }},
      {"Similarity: cosines", [&](HrrSpace& s) { return s.Similarity(Range(0, 2), Range(0, 2), few); }},
      {"Similarity: lengths", [&](HrrSpace& s) { return s.Similarity(Range(0, 2), Range(0, 3), few); }},
      {"Cleanup: items past the end", [&](HrrSpace& s) { return s.Cleanup(Range(0, 1), 10, 7, 2, top_slots, top_cos); }},
      {"Cleanup: k = 0", [&](HrrSpace& s) { return s.Cleanup(Range(0, 1), 0, 16, 0, top_slots, top_cos); }},
      {"Cleanup: k too large",
       [&](HrrSpace& s) { return s.Cleanup(Range(0, 1), 0, 16, kMaxTopK + 1, top_slots, top_cos); }},
      {"Cleanup: result size", [&](HrrSpace& s) { return s.Cleanup(Range(0, 2), 0, 16, 2, top_slots, top_cos); }},
      {"Cleanup: query out of range", [&](HrrSpace& s) { return s.Cleanup(bad_slot, 0, 16, 1, top_slots, top_cos); }},
  };
  for (const Case& c : cases) {
    const absl::Status cpu = c.call(*b.cpu);
    const absl::Status gpu = c.call(*b.gpu);
    EXPECT_FALSE(cpu.ok()) << c.name;
    EXPECT_EQ(gpu.code(), cpu.code()) << c.name << ": cuda " << gpu << " / cpu " << cpu;
    EXPECT_EQ(gpu.message(), cpu.message()) << c.name;
  }
  const std::vector<Cf> after = Spectra(*b.gpu, Range(0, 16));
  EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * sizeof(Cf)), 0) << "a refused call changed slots";

  // Spaces refused at creation, with the same words. The storage pointers are never dereferenced:
  // the checks refuse them first.
  void* aligned = reinterpret_cast<void*>(uintptr_t(1) << 20);
  void* misaligned = reinterpret_cast<void*>((uintptr_t(1) << 20) + 8);
  const std::vector<std::pair<HrrConfig, HrrStorage>> bad_spaces = {
      {HrrConfig{63, 8, 8}, {}},
      {HrrConfig{0, 8, 8}, {}},
      {HrrConfig{kMaxDim * 2, 8, 8}, {}},
      {HrrConfig{64, 0, 8}, {}},
      {HrrConfig{64, 8, 0}, {}},
      {config, HrrStorage{aligned, StorageBytes(config) - 1}},
      {config, HrrStorage{misaligned, StorageBytes(config)}},
  };
  for (const auto& [bad_config, storage] : bad_spaces) {
    const auto cpu = MakeHrrSpace("cpu", bad_config, storage);
    const auto gpu = cuda::MakeCudaHrrSpace(bad_config, storage);
    ASSERT_FALSE(cpu.ok());
    ASSERT_FALSE(gpu.ok());
    EXPECT_EQ(gpu.status().code(), cpu.status().code());
    EXPECT_EQ(gpu.status().message(), cpu.status().message());
  }
}

TEST(HrrCuda, WorksOnCallerProvidedDeviceStorage) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const HrrConfig config{kDim, 64, 64};
  const int64_t bytes = StorageBytes(config);
  void* region = nullptr;
  ASSERT_EQ(cudaMalloc(&region, size_t(bytes)), cudaSuccess);
  struct Free {
    void* p;
    ~Free() { cudaFree(p); }
  } free_region{region};
  ASSERT_EQ(cudaMemset(region, 0xFF, size_t(bytes)), cudaSuccess);  // NaN everywhere: the space must zero it

  auto on_region = MustMake("cuda", config, HrrStorage{region, bytes});
  auto own = MustMake("cuda", config);
  ASSERT_NE(on_region, nullptr);
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(own->bytes() - on_region->bytes(), bytes) << "the caller's storage is not the space's own";
  EXPECT_EQ(cuda::CountersOf(*on_region)->pool_allocs, 1) << "only the workspace";
  for (const Cf& v : Spectra(*on_region, Range(0, 64))) ASSERT_TRUE(v.re == 0.0f && v.im == 0.0f);

  for (HrrSpace* s : {on_region.get(), own.get()}) {
    ASSERT_TRUE(s->Random(Range(0, 16), VectorKind::kGaussian, 99, Ids(0, 16)).ok());
    ASSERT_TRUE(s->Bind(Range(16, 16), Range(0, 16), Range(0, 16)).ok());
  }
  const std::vector<Cf> x = Spectra(*on_region, Range(0, 64)), y = Spectra(*own, Range(0, 64));
  EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(Cf)), 0);

  // The vectors are where StorageBytes says: spectra by slot, then the squared norms.
  std::vector<std::byte> raw(static_cast<size_t>(bytes));
  ASSERT_EQ(cudaMemcpy(raw.data(), region, raw.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::memcmp(raw.data(), x.data(), x.size() * sizeof(Cf)), 0);
  const int64_t spectra_bytes = (int64_t(config.capacity) * Bins(config.dim) * int64_t(sizeof(Cf)) + 255) / 256 * 256;
  const float* norm2 = reinterpret_cast<const float*>(raw.data() + spectra_bytes);
  const int bins = Bins(config.dim);
  for (int slot = 0; slot < 32; ++slot) {
    double sum = 0.0;
    for (int k = 0; k < bins; ++k) sum += dot_term(x[size_t(slot) * bins + k], x[size_t(slot) * bins + k], k, bins);
    EXPECT_NEAR(norm2[slot], sum / config.dim, 1e-5 * sum / config.dim + 1e-30) << "slot " << slot;
  }
  for (int slot = 32; slot < 64; ++slot) EXPECT_EQ(norm2[slot], 0.0f);
  on_region.reset();  // before the region is freed
}

#else  // !FIELDBRAIN_HAVE_CUDA_HRR

TEST(HrrCuda, NeedsACudaBuild) {
  GTEST_SKIP() << "no CUDA device: this build has no CUDA backend (nvcc was not found at build time)";
}

#endif

}  // namespace
}  // namespace fieldbrain::hrr
