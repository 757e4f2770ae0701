#include "gpu/cpu/field_pass.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "gpu/cpu/streaming_store.h"
#include "gpu/model/field_math.h"

namespace fieldbrain::cpu {
namespace {

// Per-voxel terms of a slab (SlabScratch::terms): 4 group means, memory coupling per r (4),
// evolve gain (0.9 lam), k, eta per r (4 each), activity sums per r (4 each of |F|, F, F^2, quiet
// count), A_g of the new field (4), the sum of the memory channels (then its mean's tanh), the
// recalled pattern of one memory channel, and that channel's new slab when the pass streams.
constexpr int kGroupMean = 0, kCoupling = 4, kGain = 8, kRate = 12, kEta = 16;
constexpr int kActAbs = 20, kActSum = 24, kActSq = 28, kActQuiet = 32, kNewGroup = 36;
constexpr int kMemSum = 40, kPattern = 41, kMemNew = 42;
constexpr int kTerms = 43;

// The loops below are small functions with __restrict parameters: that is where GCC trusts
// restrict, and it lets every one of them vectorise. Each runs over the whole slab (rows of a
// small field are shorter than a vector). Sums that start a slab add to 0.0f instead of reading
// zeroed terms (kFirst...), which rounds the same and spares the zeroing.

// The two below sum a run of channels (each `stride` floats after the last) voxel by voxel, in
// channel order from 0.0f, kLanes voxels at a time in registers: each input value is read once
// and each sum written once (added plane by plane, every sum was read and written per channel).
// A slab's voxel count is a multiple of 16: a plane's two sides are multiples of 4.
constexpr int kLanes = 16;

// Local activity of the channels of one quarter r: sums of |F|, F, F^2 and quiet voxels.
void QuarterActivity(const float* __restrict f, int64_t stride, int channels, float* __restrict a_abs,
                     float* __restrict a_sum, float* __restrict a_sq, float* __restrict a_quiet, int n) {
  for (int v0 = 0; v0 < n; v0 += kLanes) {
    float s_abs[kLanes], s_sum[kLanes], s_sq[kLanes], s_quiet[kLanes];
    for (int l = 0; l < kLanes; ++l) s_abs[l] = s_sum[l] = s_sq[l] = s_quiet[l] = 0.0f;
    for (int k = 0; k < channels; ++k) {
      const float* in = f + k * stride + v0;
      for (int l = 0; l < kLanes; ++l) {
        s_abs[l] += fabsf(in[l]);
        s_sum[l] += in[l];
        s_sq[l] += in[l] * in[l];
        s_quiet[l] += model::is_quiet(in[l]) ? 1.0f : 0.0f;
      }
    }
    for (int l = 0; l < kLanes; ++l) {
      a_abs[v0 + l] = s_abs[l];
      a_sum[v0 + l] = s_sum[l];
      a_sq[v0 + l] = s_sq[l];
      a_quiet[v0 + l] = s_quiet[l];
    }
  }
}

// The mean of a run of channels (a content group): their sum times `inv_count`.
void ChannelMean(const float* __restrict f, int64_t stride, int channels, float inv_count, float* __restrict mean,
                 int n) {
  for (int v0 = 0; v0 < n; v0 += kLanes) {
    float acc[kLanes];
    for (int l = 0; l < kLanes; ++l) acc[l] = 0.0f;
    for (int k = 0; k < channels; ++k) {
      const float* in = f + k * stride + v0;
      for (int l = 0; l < kLanes; ++l) acc[l] += in[l];
    }
    for (int l = 0; l < kLanes; ++l) mean[v0 + l] = acc[l] * inv_count;
  }
}

// `gain` is evolve_gain of the retention rate lam: all the channels need of lam.
void VoxelRates(const float* __restrict d_ret, const float* __restrict d_dif, const float* __restrict d_pla,
                float* __restrict gain, float* __restrict rate, float* __restrict eta, int n) {
  for (int v = 0; v < n; ++v) {
    gain[v] = model::evolve_gain(model::retention_rate(d_ret[v]));
    rate[v] = model::diffusion_rate(d_dif[v]);
    eta[v] = model::plasticity_gain(d_pla[v]);
  }
}

// tanh of the memory channels' mean, which every quarter's coupling takes.
void MemoryTanh(float* __restrict mem_sum, float inv_mem, int n) {
  for (int v = 0; v < n; ++v) mem_sum[v] = model::memory_mean_tanh(mem_sum[v] * inv_mem);
}

void Coupling(const float* __restrict d_cou, const float* __restrict tanh_mean, float* __restrict cou, int n) {
  for (int v = 0; v < n; ++v) cou[v] = model::memory_coupling_of(d_cou[v], tanh_mean[v]);
}

// A one-plane slab of a long plane reads its inner rows (1 to Y - 2) from the field itself: only
// the first and last rows need neighbours beyond the plane. Copying the whole plane was 10-12 % of
// the default field's cycle (1024-voxel planes); on the small field's 256-voxel planes the three
// runs a plane then takes cost ~5 % more than the copy, so shorter planes keep it.
constexpr int kInnerRowsFromFieldFrom = 512;  // plane voxels

// One channel's one-plane slab into `padded` (SlabScratch::padded_, Y + 2 rows) with its first
// and last rows replicated beyond it, the inner rows only where `inner_rows` (without them, rows 0,
// 1, Y - 2 and Y - 1, all the border rows' neighbours); returns its row 0.
float* PadPlane(const float* src, int Y, int Z, bool inner_rows, float* padded) {
  float* c = padded + Z;
  const size_t row = sizeof(float) * Z;
  if (inner_rows) {
    std::memcpy(c, src, size_t(Y) * row);
  } else {
    std::memcpy(c, src, 2 * row);
    std::memcpy(c + size_t(Y - 2) * Z, src + size_t(Y - 2) * Z, 2 * row);
  }
  std::memcpy(c - Z, src, row);
  std::memcpy(c + size_t(Y) * Z, src + size_t(Y - 1) * Z, row);
  return c;
}

// One channel's slab of `planes` planes (at `src`, the channel's plane x0 in the field) into
// `padded` between the planes either side of it, replicated at the field's x borders; returns
// the slab's first voxel.
float* PadPlanes(const float* src, int x0, int planes, int nx, int YZ, float* padded) {
  float* c = padded + YZ;
  std::memcpy(c, src, sizeof(float) * size_t(planes) * YZ);
  std::memcpy(c - YZ, x0 > 0 ? src - YZ : c, sizeof(float) * YZ);
  const float* last = c + size_t(planes - 1) * YZ;
  std::memcpy(c + size_t(planes) * YZ, x0 + planes < nx ? src + size_t(planes) * YZ : last, sizeof(float) * YZ);
  return c;
}

// Asks the cache for `floats` floats at `p`, a line at a time (unrolled: rolled, the loop's own
// counting took three instructions for every prefetch).
void Prefetch(const float* p, int floats) {
  constexpr int kLineFloats = 16;
#pragma GCC unroll 8
  for (int i = 0; i < floats; i += kLineFloats) __builtin_prefetch(p + i);
}

// fn(b, e) over [begin, end) in pieces of kPiece voxels, each after asking the cache for the same
// voxels of `ahead` (null: nothing to ask for). Asked for all at once, a plane's 64 lines waited
// on the core's miss buffers; spread over the run, the default field's cycle was ~4 % faster.
constexpr int kPiece = 256;
template <typename Fn>
void InPieces(int begin, int end, const float* ahead, Fn fn) {
  if (ahead == nullptr) {
    fn(begin, end);
    return;
  }
  for (int b = begin; b < end; b += kPiece) {
    const int e = std::min(b + kPiece, end);
    Prefetch(ahead + b, e - b);
    fn(b, e);
  }
}

// The 7 neighbours of every voxel of one channel's slab, all loads in bounds; at the field's
// borders a neighbour is the voxel itself, which the loops choose where the padding does not
// already hold it: z always, y where kYBorders (a slab of several planes). Voxels are read from
// the padded copy `c`, except that a slab of one long plane reads its inner rows (every voxel but
// the first and last `pitch`) from the field (`inner`).
struct Stencil {
  const float* c;
  const float* inner;  // null: `c` serves every voxel
  const float* xm;
  const float* xp;
  int pitch;  // nz
  const int* z_first;
  const int* z_last;
  const int* y_first;
  const int* y_last;
  const float* ahead;  // the plane to ask the cache for meanwhile, or null
};

// fn(c, b, e) over [begin, end) of a slab of n voxels, in the runs that read one source: `c` the
// padded rows or the field.
template <typename Fn>
void BySource(const Stencil& st, int n, int begin, int end, Fn fn) {
  if (st.inner == nullptr) {
    fn(st.c, begin, end);
    return;
  }
  const int a = std::clamp(st.pitch, begin, end), b = std::clamp(n - st.pitch, begin, end);
  if (begin < a) fn(st.c, begin, a);
  if (a < b) fn(st.inner, a, b);
  if (b < end) fn(st.c, b, end);
}

// Rows of kRow voxels (the field's nz, as a compile-time constant; 0: nz known at run time only).
// With it, the loops below know which lanes of a chunk lie on a z border (a chunk starts a row
// and holds whole rows: runs start at row boundaries, and kChunk is a multiple of kRow), so they
// choose the border voxels by lane, with constant masks on the vectors that hold them, not by
// loading z_first and z_last for every voxel.
// The tiny, small and default fields' rows are known; 32 only in a slab of one plane, since a slab
// of several has planes of up to 128 voxels (SlabPlanes), so rows of 16 at most.
template <bool kYBorders, typename Fn>
void WithRowLength(int nz, Fn fn) {
  if (nz == 8) return fn(std::integral_constant<int, 8>{});
  if (nz == 16) return fn(std::integral_constant<int, 16>{});
  if constexpr (!kYBorders)
    if (nz == 32) return fn(std::integral_constant<int, 32>{});
  fn(std::integral_constant<int, 0>{});
}

// The evolve core's argument at slab voxel v, the i-th of its chunk.
template <bool kYBorders, int kRow>
[[gnu::always_inline]] inline float ArgumentAt(const float* __restrict c, const float* __restrict xm,
                                           const float* __restrict xp, const int* __restrict z_first,
                                           const int* __restrict z_last, const int* __restrict y_first,
                                           const int* __restrict y_last, int pitch, const float* __restrict gain,
                                           const float* __restrict rate, int v, int i) {
  const float left = c[v - 1], right = c[v + 1];  // loaded always: the padding makes both safe
  float zm = left, zp = right;
  if constexpr (kRow > 0) {
    if (i % kRow == 0) zm = c[v];
    if (i % kRow == kRow - 1) zp = c[v];
  } else {
    zm = z_first[v] ? c[v] : left;
    zp = z_last[v] ? c[v] : right;
  }
  const int row = kRow > 0 ? kRow : pitch;  // pitch is nz
  float ym = c[v - row], yp = c[v + row];
  if constexpr (kYBorders) {
    ym = y_first[v] ? c[v] : ym;
    yp = y_last[v] ? c[v] : yp;
  }
  return model::evolve_argument(c[v], model::laplacian7(c[v], xm[v], xp[v], ym, yp, zm, zp), gain[v], rate[v]);
}

// Content channel: F' + imprint + coupling over slab voxels [begin, end), and its share of A_g
// of the new field. This and MemoryRun stay out of line: inlined into their callers, GCC
// no longer vectorises them. (Their stencil arguments are separate __restrict parameters, not a
// Stencil: GCC does not trust restrict on members.) Both take the evolve core in three loops over
// chunks of kChunk voxels, its argument from the stencil, its tanh, then the rest: as one loop, an
// iteration's chain of dependent operations was longer than a 128-bit machine's window could hide
// (docs/decisions.md, "The evolve core in three loops"). A chunk is a default field's row: the runs
// between its padded rows then hold whole chunks only.
constexpr int kChunk = 32;

// fn(b, count) over [begin, end) in chunks of kChunk voxels and a shorter last one. A whole chunk's
// count is a compile-time constant, so its loops run straight through; with the count known only
// at run time GCC checked it after every vector of each loop (docs/decisions.md, "Chunks of a
// count the compiler knows").
template <typename Fn>
[[gnu::always_inline]] inline void InChunks(int begin, int end, Fn fn) {
  int b = begin;
  for (; b + kChunk <= end; b += kChunk) fn(b, std::integral_constant<int, kChunk>{});
  if (b < end) fn(b, end - b);
}

template <bool kImprint, bool kFirstOfGroup, bool kYBorders, int kRow, bool kStream>
[[gnu::noinline]] void ContentRun(const float* __restrict c, const float* __restrict xm, const float* __restrict xp,
                                  const int* __restrict z_first, const int* __restrict z_last,
                                  const int* __restrict y_first, const int* __restrict y_last, int pitch,
                                  const float* __restrict gain, const float* __restrict rate,
                                  const float* __restrict s_field, const float* __restrict e_field,
                                  const float* __restrict eta, const float* __restrict cou, float* __restrict dst,
                                  float* __restrict new_group, int begin, int end) {
  static_assert(kRow == 0 || (kChunk % kRow == 0 && kPiece % kRow == 0), "a chunk would not start a row");
  auto chunk = [&](int b, auto count) {
    const int m = count;
    float argument[kChunk];
    for (int i = 0; i < m; ++i)
      argument[i] = ArgumentAt<kYBorders, kRow>(c, xm, xp, z_first, z_last, y_first, y_last, pitch, gain, rate, b + i, i);
    for (int i = 0; i < m; ++i) argument[i] = model::evolve_core_of(argument[i]);
    auto next_at = [&](int v, float evolved) {
      const float imprint = kImprint ? model::imprint_term(s_field[v], e_field[v], eta[v]) : 0.0f;
      return model::content_next(evolved, imprint, cou[v]);
    };
    if constexpr (kStream && std::is_same_v<decltype(count), std::integral_constant<int, kChunk>>) {
      if (StreamAligned(dst + b)) {  // rows of 16 floats or more start lines; shorter ones may not
        float next[kChunk];
        for (int i = 0; i < kChunk; ++i) {
          next[i] = next_at(b + i, argument[i]);
          new_group[b + i] = (kFirstOfGroup ? 0.0f : new_group[b + i]) + next[i];
        }
        StreamFloats<kChunk>(dst + b, next);
        return;
      }
    }
    for (int i = 0; i < m; ++i) {
      const int v = b + i;
      dst[v] = next_at(v, argument[i]);
      new_group[v] = (kFirstOfGroup ? 0.0f : new_group[v]) + dst[v];
    }
  };
  InChunks(begin, end, chunk);
}

template <bool kFirstOfGroup, bool kYBorders, bool kStream>
void ContentSlab(const Stencil& st, const SlabImprint& imprint, const float* gain, const float* rate,
                 const float* eta, const float* cou, float* dst, float* new_group, int n) {
  auto run = [&](auto with_imprint, int begin, int end) {
    InPieces(begin, end, st.ahead, [&](int piece_begin, int piece_end) {
      BySource(st, n, piece_begin, piece_end, [&](const float* c, int b, int e) {
        WithRowLength<kYBorders>(st.pitch, [&](auto row) {
          ContentRun<decltype(with_imprint)::value, kFirstOfGroup, kYBorders, decltype(row)::value, kStream>(
              c, st.xm, st.xp, st.z_first, st.z_last, st.y_first, st.y_last, st.pitch, gain, rate,
              imprint.s_field(), imprint.e_field(), eta, cou, dst, new_group, b, e);
        });
      });
    });
  };
  if (imprint.empty()) {
    run(std::false_type{}, 0, n);
    return;
  }
  run(std::false_type{}, 0, imprint.begin());
  run(std::true_type{}, imprint.begin(), imprint.end());
  run(std::false_type{}, imprint.end(), n);
}

// The ContentSlab of a channel: the first of its group starts the group's sum of A_g; a streamed
// pass writes past the caches. Chosen once a channel, so that the runs inside take no choice.
template <bool kYBorders>
auto ContentSlabFor(bool first_of_group, bool stream) {
  if (stream) return first_of_group ? ContentSlab<true, kYBorders, true> : ContentSlab<false, kYBorders, true>;
  return first_of_group ? ContentSlab<true, kYBorders, false> : ContentSlab<false, kYBorders, false>;
}

// Memory channel j: 0.9 F' + 0.05 mean(G) + 0.1 P over the slab, and F_t's memory channels summed
// for the coupling.
template <bool kPattern, bool kFirstMemory, bool kYBorders, int kRow>
[[gnu::noinline]] void MemoryRun(const float* __restrict c, const float* __restrict xm, const float* __restrict xp,
                                 const int* __restrict z_first, const int* __restrict z_last,
                                 const int* __restrict y_first, const int* __restrict y_last, int pitch,
                                 const float* __restrict gain, const float* __restrict rate,
                                 const float* __restrict group_mean, const float* __restrict pattern,
                                 float* __restrict mem_sum, float* __restrict dst, int begin, int end) {
  static_assert(kRow == 0 || (kChunk % kRow == 0 && kPiece % kRow == 0), "a chunk would not start a row");
  auto chunk = [&](int b, auto count) {
    const int m = count;
    float argument[kChunk];
    for (int i = 0; i < m; ++i) {
      const int v = b + i;
      mem_sum[v] = (kFirstMemory ? 0.0f : mem_sum[v]) + c[v];
      argument[i] = ArgumentAt<kYBorders, kRow>(c, xm, xp, z_first, z_last, y_first, y_last, pitch, gain, rate, v, i);
    }
    for (int i = 0; i < m; ++i) argument[i] = model::evolve_core_of(argument[i]);
    for (int i = 0; i < m; ++i) {
      const int v = b + i;
      dst[v] = model::memory_next(argument[i], group_mean[v], kPattern ? pattern[v] : 0.0f);
    }
  };
  InChunks(begin, end, chunk);
}

template <bool kYBorders>
void MemorySlab(const Stencil& st, bool pattern_active, bool first, const float* gain, const float* rate,
                const float* group_mean, const float* pattern, float* mem_sum, float* dst, int n) {
  auto run = [&](auto with_pattern, auto first_memory) {
    InPieces(0, n, st.ahead, [&](int piece_begin, int piece_end) {
      BySource(st, n, piece_begin, piece_end, [&](const float* c, int begin, int end) {
        WithRowLength<kYBorders>(st.pitch, [&](auto row) {
          MemoryRun<decltype(with_pattern)::value, decltype(first_memory)::value, kYBorders, decltype(row)::value>(
              c, st.xm, st.xp, st.z_first, st.z_last, st.y_first, st.y_last, st.pitch, gain, rate, group_mean,
              pattern, mem_sum, dst, begin, end);
        });
      });
    });
  };
  if (pattern_active)
    first ? run(std::true_type{}, std::true_type{}) : run(std::true_type{}, std::false_type{});
  else
    first ? run(std::false_type{}, std::true_type{}) : run(std::false_type{}, std::false_type{});
}

// out[i] = lerp(a[i], b[i], w): pattern_sample's x lerp over a run of values.
void LerpRun(const float* __restrict a, const float* __restrict b, float w, float* __restrict out, int n) {
  for (int i = 0; i < n; ++i) out[i] = model::pattern_lerp(a[i], b[i], w);
}

// pattern_sample's y lerp over a whole plane: each row between its two nearest rows of `px` (the
// x-lerped coarse rows, Z values each), `axes` the rows' pattern_axis.
void LerpRows(const float* __restrict px, const model::PatternAxis* axes, int Y, int Z, float* __restrict out) {
  for (int y = 0; y < Y; ++y) {
    const model::PatternAxis ay = axes[y];
    const float* a = px + ay.i0 * Z;
    const float* b = px + ay.i1 * Z;
    for (int z = 0; z < Z; ++z) out[y * Z + z] = model::pattern_lerp(a[z], b[z], ay.w);
  }
}

// coarse_memory_value's z columns of one coarse y cell: its four rows added in y order.
void CellColumns(const float* __restrict rows, int Z, float* __restrict columns) {
  for (int z = 0; z < Z; ++z) {
    float sum = 0.0f;
    for (int dy = 0; dy < 4; ++dy) sum += rows[dy * Z + z];
    columns[z] = sum;
  }
}

// One dynamics channel of quarter Q over a slab; Q is a template argument so the quarter's
// branch folds away and the loop vectorises. kStream: dst written past the caches, a line at a
// time where it starts one.
template <DynamicsQuarter Q, bool kStream>
void DynamicsSlab(const float* __restrict f, const float* __restrict a_abs, const float* __restrict a_sum,
                   const float* __restrict a_sq, const float* __restrict a_quiet, int per_r, float* __restrict dst,
                   int n) {
  auto next = [&](int v) {
    return model::dynamics_next(
        f[v], model::dynamics_target(Q, model::local_activity(a_abs[v], a_sum[v], a_sq[v], a_quiet[v], per_r)));
  };
  int v = 0;
  if constexpr (kStream) {
    constexpr int kLine = 16;
    if (StreamAligned(dst))  // planes start lines (their sides are multiples of 4), and so do pieces of them
      for (; v + kLine <= n; v += kLine) {
        float line[kLine];
        for (int i = 0; i < kLine; ++i) line[i] = next(v + i);
        StreamFloats<kLine>(dst + v, line);
      }
  }
  for (; v < n; ++v) dst[v] = next(v);
}

}  // namespace

int SlabPlanes(const FieldShape& shape) {
  // Planes of up to kShortPlane voxels are gathered into slabs of kSlabVoxels: on the tiny field
  // (64-voxel planes) eight planes a slab measured about 15 % faster than one, while on the small
  // field (256) two planes a slab were 10-15 % slower (each voxel then chooses its y neighbours
  // too, and the scratch outgrows L1).
  constexpr int kShortPlane = 128, kSlabVoxels = 512;
  const int plane = shape.ny * shape.nz;
  if (plane > kShortPlane) return 1;
  int planes = std::min(kSlabVoxels / plane, shape.nx);
  while (shape.nx % planes != 0) --planes;
  return planes;
}

SlabScratch::SlabScratch(const FieldShape& shape) : SlabScratch(shape, SlabPlanes(shape)) {}

SlabScratch::SlabScratch(const FieldShape& shape, int planes)
    : slab_(planes * shape.ny * shape.nz),
      terms_(size_t(kTerms) * slab_),
      padded_(planes == 1 ? size_t(shape.ny + 2) * shape.nz : size_t(slab_) + 2 * shape.ny * shape.nz),
      z_first_(slab_),
      z_last_(slab_),
      y_first_(planes > 1 ? slab_ : 0),  // a slab of one plane has its y borders in its padding
      y_last_(planes > 1 ? slab_ : 0),
      pattern_x_(size_t(shape.ny / 4) * shape.nz),
      y_axes_(size_t(shape.ny)),
      columns_(shape.nz),
      imprint_(shape, planes) {
  for (int v = 0; v < slab_; ++v) {
    const int z = v % shape.nz, y = v / shape.nz % shape.ny;
    z_first_[v] = z == 0;
    z_last_[v] = z == shape.nz - 1;
    if (planes == 1) continue;
    y_first_[v] = y == 0;
    y_last_[v] = y == shape.ny - 1;
  }
  for (int y = 0; y < shape.ny; ++y) y_axes_[size_t(y)] = model::pattern_axis(y, shape.ny / 4);
}

void UpsamplePatternZ(const float* coarse, const FieldShape& sh, float* out) {
  const int cz = sh.nz / 4, Z = sh.nz;
  constexpr int kMaxZ = 1024;
  if (Z > kMaxZ) {  // fields this deep are not made in practice; the plain formula serves them
    const int columns = sh.memory() * (sh.nx / 4) * (sh.ny / 4);
    for (int c = 0; c < columns; ++c, out += Z)
      for (int z = 0; z < Z; ++z)
        out[z] = model::pattern_z(coarse + size_t(c / ((sh.nx / 4) * (sh.ny / 4))) * sh.coarse_voxels(), sh,
                                  (c / (sh.ny / 4)) % (sh.nx / 4), c % (sh.ny / 4), model::pattern_axis(z, cz));
    return;
  }
  int i0[kMaxZ], i1[kMaxZ];
  float w[kMaxZ];
  for (int z = 0; z < Z; ++z) {
    const model::PatternAxis a = model::pattern_axis(z, cz);
    i0[z] = a.i0;
    i1[z] = a.i1;
    w[z] = a.w;
  }
  // Every coarse (x, y) column of every channel, contiguous in `coarse`: model::pattern_z's lerp.
  const int columns = sh.memory() * (sh.nx / 4) * (sh.ny / 4);
  for (int c = 0; c < columns; ++c, out += Z) {
    const float* cell = coarse + size_t(c) * cz;
    for (int z = 0; z < Z; ++z) out[z] = model::pattern_lerp(cell[i0[z]], cell[i1[z]], w[z]);
  }
}

void AddPlanePools(const PlanePool* planes, const FieldShape& sh, model::FieldSummary& summary) {
  summary = model::FieldSummary{};
  for (int x = 0; x < sh.nx; ++x) {
    const int first = model::pool_block(x, 0, 0, sh);  // the plane's x cell's first block
    for (int g = 0; g < kContentGroups; ++g)
      for (int c = 0; c < kPoolCells * kPoolCells; ++c) summary.pool[g][first + c] += planes[x].pool[g][c];
  }
}

void PoolFromMemoryPlanes(const float* planes, const FieldShape& sh, float* pooled) {
  const int cx = sh.nx / 4, cy = sh.ny / 4, cz = sh.nz / 4;
  const int64_t plane_floats = MemoryPlaneFloats(sh);
  for (int j = 0; j < sh.memory(); ++j)
    for (int bx = 0; bx < cx; ++bx)
      for (int c = 0; c < cy * cz; ++c) {
        float sum = 0.0f;
        for (int dx = 0; dx < 4; ++dx) sum += planes[(4 * bx + dx) * plane_floats + int64_t(j) * cy * cz + c];
        pooled[(int64_t(j) * cx + bx) * cy * cz + c] = sum * (1.0f / 64.0f);
      }
}

// EvolveSlab for a slab of one plane (kYBorders false) or of several.
template <bool kYBorders>
void EvolveSlabOf(const SlabJob& job, SlabScratch& s) {
  using namespace model;
  const FieldShape& sh = *job.shape;
  const RobotParams& p = *job.params;
  const int Y = sh.ny, Z = sh.nz, YZ = Y * Z, x0 = job.x, planes = job.planes, n = planes * YZ;
  const int content = sh.content(), memory = sh.memory(), gs = sh.group_size(), q = sh.quarter();
  const float* F = job.field_in;
  float* out = job.field_out;
  auto slab = [&](const float* base, int c, int xx) { return base + sh.index(c, xx, 0, 0); };
  // Channel ch's stencil; a slab of one plane also asks the cache for channel `next`'s x + 1
  // plane as it goes (-1: none), which is first read there.
  const bool inner_from_field = YZ >= kInnerRowsFromFieldFrom;
  auto stencil = [&](int ch, int next) {
    if constexpr (kYBorders) {
      const float* c = PadPlanes(slab(F, ch, x0), x0, planes, sh.nx, YZ, s.padded_.data());
      return Stencil{c, nullptr, c - YZ, c + YZ, Z, s.z_first_.data(), s.z_last_.data(), s.y_first_.data(),
                     s.y_last_.data(), nullptr};
    } else {
      const int xp = std::min(x0 + 1, sh.nx - 1);
      const float* plane = slab(F, ch, x0);
      return Stencil{PadPlane(plane, Y, Z, !inner_from_field, s.padded_.data()),
                     inner_from_field ? plane : nullptr,
                     slab(F, ch, std::max(x0 - 1, 0)),
                     slab(F, ch, xp),
                     Z,
                     s.z_first_.data(),
                     s.z_last_.data(),
                     nullptr,
                     nullptr,
                     next >= 0 ? slab(F, next, xp) : nullptr};
    }
  };

  // Cross-channel terms of F_t in this slab: group means, local activity per r (the channels
  // ch = r, r + q, ...), the rates.
  const int64_t channel_floats = sh.voxels();
  const float inv_gs = 1.0f / float(gs), inv_mem = 1.0f / float(memory);
  for (int g = 0; g < kContentGroups; ++g)
    ChannelMean(slab(F, g * gs, x0), channel_floats, gs, inv_gs, s.terms(kGroupMean + g), n);
  for (int r = 0; r < q; ++r)
    QuarterActivity(slab(F, r, x0), q * channel_floats, content / q, s.terms(kActAbs + r), s.terms(kActSum + r),
                    s.terms(kActSq + r), s.terms(kActQuiet + r), n);
  for (int r = 0; r < q; ++r)
    VoxelRates(slab(F, sh.dyn_channel(DynamicsQuarter::kRetention, r), x0),
               slab(F, sh.dyn_channel(DynamicsQuarter::kDiffusion, r), x0),
               slab(F, sh.dyn_channel(DynamicsQuarter::kPlasticity, r), x0), s.terms(kGain + r), s.terms(kRate + r),
               s.terms(kEta + r), n);

  // Memory channels, which also sum F_t's memory channels for the coupling. Each channel's plane
  // of the next slab is first read as a stencil's x + 1 neighbour, so the stencils ask for the
  // next channel's ahead (stencil's `next`), and the first's before them. Their new planes are
  // read back at once for the memory planes, so a streamed pass writes each to the scratch first
  // (a streamed line read back would come from memory) and streams it from there.
  const int memory_end = content + memory;
  if constexpr (!kYBorders) Prefetch(slab(F, content, std::min(x0 + 1, sh.nx - 1)), YZ);
  float* mem_sum = s.terms(kMemSum);
  for (int j = 0; j < memory; ++j) {
    const int ch = content + j, r = ch % q;
    float* pattern = s.terms(kPattern);
    if (job.pattern_active) {  // pattern_sample's x lerp of the z-upsampled columns, then its y lerp
      const int coarse_plane = (Y / 4) * Z;
      const float* pz = job.pattern_z + size_t(j) * (sh.nx / 4) * coarse_plane;
      for (int t = 0; t < planes; ++t) {
        const PatternAxis ax = pattern_axis(x0 + t, sh.nx / 4);
        LerpRun(pz + ax.i0 * coarse_plane, pz + ax.i1 * coarse_plane, ax.w, s.pattern_x_.data(), coarse_plane);
        LerpRows(s.pattern_x_.data(), s.y_axes_.data(), Y, Z, pattern + t * YZ);
      }
    }
    float* dst = job.stream_out ? s.terms(kMemNew) : out + sh.index(ch, x0, 0, 0);
    MemorySlab<kYBorders>(stencil(ch, ch + 1 < memory_end ? ch + 1 : 0), job.pattern_active, j == 0,
                          s.terms(kGain + r), s.terms(kRate + r), s.terms(kGroupMean + j % kContentGroups), pattern,
                          mem_sum, dst, n);
    // Each plane's memory plane: coarse_memory_value's sums, rows in y order, then z in fours.
    for (int t = 0; t < planes; ++t)
      for (int cy = 0; cy < Y / 4; ++cy) {
        CellColumns(dst + t * YZ + cy * 4 * Z, Z, s.columns_.data());
        float* cells = job.memory_plane + t * MemoryPlaneFloats(sh) + (size_t(j) * (Y / 4) + cy) * (Z / 4);
        const float* columns = s.columns_.data();
        for (int k = 0; k < Z / 4; ++k)
          cells[k] = columns[4 * k] + columns[4 * k + 1] + columns[4 * k + 2] + columns[4 * k + 3];
      }
    if (job.stream_out) StreamCopy(out + sh.index(ch, x0, 0, 0), dst, n);
  }
  MemoryTanh(mem_sum, inv_mem, n);
  for (int r = 0; r < q; ++r) Coupling(slab(F, sh.dyn_channel(DynamicsQuarter::kCoupling, r), x0), mem_sum, s.terms(kCoupling + r), n);

  // Content channels: F' + imprint + coupling, and A_g of the new field as they are written.
  s.imprint_.Prepare(p, x0, planes);
  for (int ch = 0; ch < content; ++ch) {
    const int r = ch % q;
    if (!s.imprint_.empty()) s.imprint_.Fill(p, job.sensors, job.errors, ch);
    float* new_group = s.terms(kNewGroup + ch / gs);
    auto run = ContentSlabFor<kYBorders>(ch % gs == 0, job.stream_out);
    run(stencil(ch, ch + 1 < content ? ch + 1 : -1), s.imprint_, s.terms(kGain + r), s.terms(kRate + r),
        s.terms(kEta + r), s.terms(kCoupling + r), out + sh.index(ch, x0, 0, 0), new_group, n);
  }

  // Dynamics channels: D <- 0.95 D + 0.05 U(local activity).
  const int per_r = content / q;
  for (int d = 0; d < sh.dynamics(); ++d) {
    const int r = d % q;
    const float* f = slab(F, sh.dynamics_begin() + d, x0);
    // The next slab's dynamics channels are read first by its rates, which no stencil reads
    // ahead: ask for them as this slab's go.
    const float* ahead = !kYBorders && x0 + 1 < sh.nx ? slab(F, sh.dynamics_begin() + d, x0 + 1) : nullptr;
    float* dst = out + sh.index(sh.dynamics_begin() + d, x0, 0, 0);
    const float *a_abs = s.terms(kActAbs + r), *a_sum = s.terms(kActSum + r), *a_sq = s.terms(kActSq + r),
                *a_quiet = s.terms(kActQuiet + r);
    InPieces(0, n, ahead, [&](int b, int e) {
      auto dynamics = [&](auto quarter) {
        auto dynamics_slab = job.stream_out ? DynamicsSlab<decltype(quarter)::value, true>
                                            : DynamicsSlab<decltype(quarter)::value, false>;
        dynamics_slab(f + b, a_abs + b, a_sum + b, a_sq + b, a_quiet + b, per_r, dst + b, e - b);
      };
      using Q = DynamicsQuarter;
      switch (sh.quarter_of(d)) {
        case Q::kRetention: dynamics(std::integral_constant<Q, Q::kRetention>{}); break;
        case Q::kDiffusion: dynamics(std::integral_constant<Q, Q::kDiffusion>{}); break;
        case Q::kCoupling: dynamics(std::integral_constant<Q, Q::kCoupling>{}); break;
        case Q::kPlasticity: dynamics(std::integral_constant<Q, Q::kPlasticity>{}); break;
      }
    });
  }

  // Each plane's share of the summary of F_t+1: A_g pooled, each pool cell's voxels added in y,
  // then z order (as pool_block's loop took them). A row of pool cells is summed side by side in
  // registers, so no cell's addition waits on another's.
  const int cell_y = Y / kPoolCells, cell_z = Z / kPoolCells;
  for (int t = 0; t < planes; ++t)
    for (int g = 0; g < kContentGroups; ++g) {
      const float* a = s.terms(kNewGroup + g) + t * YZ;
      for (int cy = 0; cy < kPoolCells; ++cy) {
        float* pool = &job.plane_pools[t].pool[g][cy * kPoolCells];
        float acc[kPoolCells];
        for (int c = 0; c < kPoolCells; ++c) acc[c] = 0.0f;
        for (int y = cy * cell_y; y < (cy + 1) * cell_y; ++y)
          for (int zi = 0; zi < cell_z; ++zi)
            for (int c = 0; c < kPoolCells; ++c) acc[c] += a[y * Z + c * cell_z + zi] * inv_gs;
        for (int c = 0; c < kPoolCells; ++c) pool[c] = acc[c];
      }
    }
}

void EvolveSlab(const SlabJob& job, SlabScratch& s) {
  if (job.planes == 1)
    EvolveSlabOf<false>(job, s);
  else
    EvolveSlabOf<true>(job, s);
  if (job.stream_out) StreamFence();
}

}  // namespace fieldbrain::cpu
