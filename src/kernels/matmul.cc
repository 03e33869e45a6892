#include "kernels/matmul.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "kernels/packed_x8.h"
#include "util/check.h"

namespace weft::kernels {

void MatMulScratch::Free::operator()(void* p) const { std::free(p); }

void* MatMulScratch::Get(size_t bytes) {
  if (bytes > size_ || data_ == nullptr) {
    const size_t size = std::max<size_t>((bytes + 63) / 64 * 64, 64);
    void* p = std::aligned_alloc(64, size);
    CHECK(p != nullptr) << "out of memory for " << size << " bytes";
    data_.reset(p);
    size_ = size;
  }
  return data_.get();
}

namespace {

// The table format of a weight type, or nullopt when MatMul has no kernels
// for it.
std::optional<WeightFormat> WeightFormatOf(GgmlType type) {
  switch (type) {
    case GgmlType::kF32: return WeightFormat::kF32;
    case GgmlType::kF16: return WeightFormat::kF16;
    case GgmlType::kBF16: return WeightFormat::kBF16;
    case GgmlType::kQ4_0: return WeightFormat::kQ4_0;
    case GgmlType::kQ5_0: return WeightFormat::kQ5_0;
    case GgmlType::kQ4_1: return WeightFormat::kQ4_1;
    case GgmlType::kQ5_1: return WeightFormat::kQ5_1;
    case GgmlType::kIQ4_NL: return WeightFormat::kIQ4_NL;
    case GgmlType::kIQ4_XS: return WeightFormat::kIQ4_XS;
    case GgmlType::kQ8_0: return WeightFormat::kQ8_0;
    case GgmlType::kQ2_K: return WeightFormat::kQ2_K;
    case GgmlType::kQ3_K: return WeightFormat::kQ3_K;
    case GgmlType::kMXFP4: return WeightFormat::kMXFP4;
    case GgmlType::kQ4_K: return WeightFormat::kQ4_K;
    case GgmlType::kQ5_K: return WeightFormat::kQ5_K;
    case GgmlType::kQ6_K: return WeightFormat::kQ6_K;
    default: return std::nullopt;
  }
}

}  // namespace

bool MatMulSupports(GgmlType type) { return WeightFormatOf(type).has_value(); }

WeightFormat ToWeightFormat(GgmlType type) {
  const std::optional<WeightFormat> format = WeightFormatOf(type);
  CHECK(format.has_value()) << "MatMul does not support weight type " << TypeName(type);
  return *format;
}

void MatMul(const MatMulArgs& args) { MatMul(Kernels(), args); }

void MatMul(const KernelTable& table, const MatMulArgs& a) { MatMulMany(table, &a, 1); }

void MatMulMany(const MatMulArgs* args, int count) { MatMulMany(Kernels(), args, count); }

namespace {

// One validated product of a MatMulMany call.
struct Product {
  const MatMulKernel* kern = nullptr;
  const char* w = nullptr;
  size_t w_stride = 0;
  const float* x = nullptr;
  int64_t x_stride = 0;
  const char* xq = nullptr;  // activations in kern->act (set after quantizing)
  size_t xq_stride = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
  int64_t m = 0, n = 0, k = 0;
  bool x8 = false;         // x8 weight layout: task blocks of whole groups
  int share = -1;          // index of an earlier product with the same xq
  char* panels = nullptr;  // xq repacked for kern->panel_tile, if taken
  int64_t rows = 0;        // weight rows per task
  int64_t n_blocks = 0;    // tasks
};

// Checks `a` and fills *p; false when there is nothing to compute (empty
// shapes; K = 0 writes zeros).
bool Prepare(const KernelTable& table, const MatMulArgs& a, Product* p) {
  CHECK(a.m >= 0 && a.n >= 0 && a.k >= 0) << a.m << "x" << a.n << "x" << a.k;
  const GgmlTypeTraits& traits = TypeTraits(a.w_type);
  const int fmt = static_cast<int>(ToWeightFormat(a.w_type));
  const MatMulKernel& kern = a.w_x8 ? table.matmul_x8[fmt] : table.matmul[fmt];
  CHECK(!a.w_x8 || (kern.tile != nullptr && kern.tile_rows == kX8Rows))
      << "no x8 kernel for " << traits.name;
  CHECK(kern.pair_tile == nullptr || a.w_x8) << "pair tiles are x8 only";
  CHECK(kern.tile == nullptr || (kern.tile_rows >= 1 && kern.tile_rows <= kMaxTileRows &&
                                 kern.tile_cols >= 1 && kern.tile_cols <= kMaxTileCols));
  CHECK_EQ(a.k % traits.block_size, 0) << "K must be a multiple of the "
                                       << traits.name << " block";
  if (a.m == 0 || a.n == 0) return false;
  const size_t row_bytes = static_cast<size_t>(a.k / traits.block_size) *
                           static_cast<size_t>(traits.type_size);
  p->kern = &kern;
  p->w = static_cast<const char*>(a.w);
  p->w_stride = a.w_x8 ? X8RowBytes(a.w_type, a.k)
                       : a.w_row_bytes == 0 ? row_bytes : a.w_row_bytes;
  p->x8 = a.w_x8;
  p->x = a.x;
  p->x_stride = a.x_row_stride == 0 ? a.k : a.x_row_stride;
  p->y = a.y;
  p->y_stride = a.y_row_stride == 0 ? a.n : a.y_row_stride;
  p->m = a.m;
  p->n = a.n;
  p->k = a.k;
  CHECK(p->w_stride >= row_bytes && p->x_stride >= a.k && p->y_stride >= a.n);
  CHECK(a.w != nullptr && a.x != nullptr && a.y != nullptr);
  if (a.k == 0) {
    for (int64_t r = 0; r < a.m; ++r) std::fill_n(a.y + r * p->y_stride, a.n, 0.0f);
    return false;
  }
  p->xq = reinterpret_cast<const char*>(a.x);
  p->xq_stride = static_cast<size_t>(p->x_stride) * sizeof(float);
  if (kern.act != ActFormat::kF32) p->xq_stride = ActRowBytes(kern.act, a.k);
  return true;
}

// The i with first[i] <= t < first[i + 1] (first: ascending starts of
// consecutive task ranges, the last one's end after them; empty ranges are
// skipped). REQUIRES: first[0] <= t < the end.
int RangeOf(const int64_t* first, int64_t t) {
  int i = 0;
  while (t >= first[i + 1]) ++i;
  return i;
}

// Weight rows [blk * rows, ...) of `p` against all of its M rows: register
// tiles (or kMaxDotCols rows per dot call). A block stays in L1/L2 while
// the M rows stream past it.
void RunBlock(const Product& p, int64_t blk) {
  const int64_t r0 = blk * p.rows, r1 = std::min(p.n, r0 + p.rows);
  const MatMulKernel& kern = *p.kern;
  if (p.panels != nullptr && kern.panel_all_rows) {
    const int64_t step = kern.panel_pairs ? 2 * kern.tile_rows : kern.tile_rows;
    for (int64_t r = r0; r < r1; r += step) {
      const int nr = static_cast<int>(std::min<int64_t>(step, r1 - r));
      kern.panel_tile(p.k, p.w + static_cast<size_t>(r) * p.w_stride, p.w_stride, nr, p.panels,
                      p.xq_stride, static_cast<int>(p.m), p.y + r,
                      static_cast<size_t>(p.y_stride));
    }
    return;
  }
  if (p.panels != nullptr) {
    const int64_t pr = kern.panel_rows, tr = kern.tile_rows;
    for (int64_t c0 = 0; c0 < p.m; c0 += pr) {
      const int nc = static_cast<int>(std::min<int64_t>(pr, p.m - c0));
      const char* panel =
          p.panels +
          static_cast<size_t>(c0 / pr * kern.panel_stride_rows) * p.xq_stride;
      const int64_t step = kern.panel_pairs ? 2 * tr : tr;
      for (int64_t r = r0; r < r1; r += step) {
        const int nr = static_cast<int>(std::min<int64_t>(step, r1 - r));
        kern.panel_tile(p.k, p.w + static_cast<size_t>(r) * p.w_stride,
                        p.w_stride, nr, panel, p.xq_stride, nc,
                        p.y + c0 * p.y_stride + r,
                        static_cast<size_t>(p.y_stride));
      }
    }
    return;
  }
  if (kern.tile != nullptr) {
    const int64_t tr = kern.tile_rows, tc = kern.tile_cols;
    for (int64_t c0 = 0; c0 < p.m; c0 += tc) {
      const int nc = static_cast<int>(std::min<int64_t>(tc, p.m - c0));
      const char* xc = p.xq + static_cast<size_t>(c0) * p.xq_stride;
      int64_t r = r0;
      // Two groups a call where the pair tile is there and both hold rows
      // (x8 blocks are whole groups, so r - r0 is a multiple of tr).
      if (kern.pair_tile != nullptr && p.m >= kern.pair_min_m) {
        for (; r + tr < r1; r += 2 * tr) {
          const int nr = static_cast<int>(std::min<int64_t>(2 * tr, r1 - r));
          kern.pair_tile(p.k, p.w + static_cast<size_t>(r) * p.w_stride, p.w_stride, nr, xc,
                         p.xq_stride, nc, p.y + c0 * p.y_stride + r,
                         static_cast<size_t>(p.y_stride));
        }
      }
      for (; r < r1; r += tr) {
        const int nr = static_cast<int>(std::min<int64_t>(tr, r1 - r));
        kern.tile(p.k, p.w + static_cast<size_t>(r) * p.w_stride, p.w_stride, nr, xc,
                  p.xq_stride, nc, p.y + c0 * p.y_stride + r, static_cast<size_t>(p.y_stride));
      }
    }
    return;
  }
  float out[kMaxDotCols];
  for (int64_t c0 = 0; c0 < p.m; c0 += kMaxDotCols) {
    const int nc = static_cast<int>(std::min<int64_t>(kMaxDotCols, p.m - c0));
    const char* xc = p.xq + static_cast<size_t>(c0) * p.xq_stride;
    for (int64_t r = r0; r < r1; ++r) {
      kern.dot(p.k, p.w + static_cast<size_t>(r) * p.w_stride, xc, p.xq_stride, nc, out);
      for (int c = 0; c < nc; ++c) p.y[(c0 + c) * p.y_stride + r] = out[c];
    }
  }
}

// Where a MatMulMany call's converted activations and panels lie in its
// scratch buffer (byte offsets).
struct ActPlan {
  size_t offsets[kMaxMatMulGroup] = {};        // product i's own rows
  size_t panel_offsets[kMaxMatMulGroup] = {};  // product i's panels
  bool paneled[kMaxMatMulGroup] = {};          // product i takes panels
  size_t total = 0;                            // bytes in all
};

// Plans the activations in each kernel's format, once per distinct (X,
// format): a product whose X, format and shape an earlier one has shares its
// rows (Product::share). Panels (MatMulKernel::pack_panel) go after the
// rows, whole panels each.
ActPlan PlanActivations(Product* prods, int n_live) {
  ActPlan plan;
  for (int i = 0; i < n_live; ++i) {
    Product& p = prods[i];
    if (p.kern->act == ActFormat::kF32) continue;
    for (int j = 0; j < i && p.share < 0; ++j) {
      const Product& q = prods[j];
      if (q.share < 0 && q.kern->act == p.kern->act && q.x == p.x && q.k == p.k &&
          q.m == p.m && q.x_stride == p.x_stride) {
        p.share = j;
      }
    }
    if (p.share >= 0) continue;
    plan.offsets[i] = plan.total;
    plan.total += p.xq_stride * static_cast<size_t>(p.m);
  }
  for (int i = 0; i < n_live; ++i) {
    const Product& p = prods[i];
    const MatMulKernel& kern = *p.kern;
    if (kern.pack_panel == nullptr || p.m < kern.panel_min_m) continue;
    CHECK(kern.act != ActFormat::kF32 && kern.panel_rows >= 1 &&
          kern.panel_rows <= kMaxTileCols &&
          kern.panel_stride_rows >= kern.panel_rows &&
          kern.tile_rows == kX8Rows);
    plan.paneled[i] = true;
    plan.panel_offsets[i] = plan.total;
    const int64_t n_panels = (p.m + kern.panel_rows - 1) / kern.panel_rows;
    plan.total +=
        p.xq_stride * static_cast<size_t>(n_panels * kern.panel_stride_rows);
  }
  return plan;
}

// Converts the rows of every product that owns its activations into `buf`
// at plan.offsets, then points each sharing product at its owner's rows.
void QuantizeActivations(Product* prods, int n_live, const ActPlan& plan,
                         char* buf, ThreadPool* pool, int n_threads) {
  int64_t n_rows = 0;
  int64_t first_row[kMaxMatMulGroup + 1];
  int owners[kMaxMatMulGroup];
  int n_owners = 0;
  for (int i = 0; i < n_live; ++i) {
    Product& p = prods[i];
    if (p.kern->act == ActFormat::kF32 || p.share >= 0) continue;
    p.xq = buf + plan.offsets[i];
    owners[n_owners] = i;
    first_row[n_owners++] = n_rows;
    n_rows += p.m;
  }
  first_row[n_owners] = n_rows;
  int64_t n_elems = 0;  // floats to convert, over every owner
  for (int o = 0; o < n_owners; ++o) n_elems += prods[owners[o]].m * prods[owners[o]].k;
  auto quantize = [&](int64_t row, int) {
    const int o = RangeOf(first_row, row);
    const Product& p = prods[owners[o]];
    const int64_t r = row - first_row[o];
    char* dst = const_cast<char*>(p.xq) + static_cast<size_t>(r) * p.xq_stride;
    p.kern->quantize(p.x + r * p.x_stride, dst, p.k);
  };
  // A parallel region costs a fork-join (microseconds); converting 64K
  // floats takes tens of microseconds. Below that (every decode step up
  // to B = 16 on a 2048-wide model) the calling thread converts alone.
  constexpr int64_t kParallelQuantizeElems = int64_t{1} << 16;
  if (pool != nullptr && n_rows >= 4 * n_threads && n_elems >= kParallelQuantizeElems) {
    pool->ParallelFor(n_rows, quantize);
  } else {
    for (int64_t r = 0; r < n_rows; ++r) quantize(r, 0);
  }
  for (int i = 0; i < n_live; ++i) {
    if (prods[i].share >= 0) prods[i].xq = prods[prods[i].share].xq;
  }
}

// Repacks the converted rows of the paneled products into `buf` at
// plan.panel_offsets: one task per panel, over the pool when there are many
// (prefill).
void PackPanels(Product* prods, int n_live, const ActPlan& plan, char* buf,
                ThreadPool* pool, int n_threads) {
  int64_t first_panel[kMaxMatMulGroup + 1];
  int64_t n_panels = 0;
  for (int i = 0; i < n_live; ++i) {
    first_panel[i] = n_panels;
    if (!plan.paneled[i]) continue;
    Product& p = prods[i];
    p.panels = buf + plan.panel_offsets[i];
    n_panels += (p.m + p.kern->panel_rows - 1) / p.kern->panel_rows;
  }
  first_panel[n_live] = n_panels;
  auto pack = [&](int64_t task, int) {
    const int i = RangeOf(first_panel, task);
    const Product& p = prods[i];
    const int64_t panel = task - first_panel[i];
    const int64_t c0 = panel * p.kern->panel_rows;
    const size_t panel_bytes =
        static_cast<size_t>(p.kern->panel_stride_rows) * p.xq_stride;
    p.kern->pack_panel(
        p.xq + static_cast<size_t>(c0) * p.xq_stride, p.xq_stride,
        static_cast<int>(std::min<int64_t>(p.kern->panel_rows, p.m - c0)),
        p.k, p.panels + static_cast<size_t>(panel) * panel_bytes);
  };
  if (pool != nullptr && n_panels >= 4 * n_threads) {
    pool->ParallelFor(n_panels, pack);
  } else {
    for (int64_t t = 0; t < n_panels; ++t) pack(t, 0);
  }
}

// Sets each product's weight rows per task (Product::rows, n_blocks).
// A block is at least kTaskBytes of weights (at least 16 rows): a thread
// then reads long runs of consecutive rows, which the hardware prefetcher
// follows (decode is memory bound: on Zen 3 a Q8_0 M = 1 product read
// 16-row blocks claimed in turn by two threads at ~16 GB/s and 64+ row
// blocks at ~23, against 30 for a plain read). Blocks shrink, all by the
// same factor, until every thread gets several (load balance).
void PlanBlocks(Product* prods, int n_live, int64_t max_m, int n_threads) {
  constexpr size_t kTaskBytes = size_t{64} << 10;
  constexpr int64_t kComputeBoundM = 16;
  constexpr int64_t kMaxTaskRows = 1024;
  int64_t rows[kMaxMatMulGroup];
  for (int i = 0; i < n_live; ++i) {
    rows[i] = 16;
    while (rows[i] < kMaxTaskRows && static_cast<size_t>(rows[i]) * prods[i].w_stride < kTaskBytes) {
      rows[i] *= 2;
    }
  }
  auto count_blocks = [&] {
    int64_t total = 0;
    for (int i = 0; i < n_live; ++i) total += (prods[i].n + rows[i] - 1) / rows[i];
    return total;
  };
  // With many activation rows the products are compute bound (each weight
  // block is reused from cache M times) and a block is long work: finer
  // blocks cut the time threads wait on the last one.
  const int64_t per_thread = max_m >= kComputeBoundM ? 16 : 4;
  for (bool shrunk = true; shrunk && count_blocks() < per_thread * n_threads;) {
    shrunk = false;
    for (int i = 0; i < n_live; ++i) {
      if (rows[i] > (prods[i].x8 ? kX8Rows : 1)) {
        rows[i] /= 2;
        shrunk = true;
      }
    }
  }
  for (int i = 0; i < n_live; ++i) {
    prods[i].rows = rows[i];
    prods[i].n_blocks = (prods[i].n + rows[i] - 1) / rows[i];
  }
}

// One parallel region over the weight-row blocks of every product.
void RunBlocks(const Product* prods, int n_live, int64_t max_m, ThreadPool* pool) {
  int64_t first_block[kMaxMatMulGroup + 1];
  int64_t n_blocks = 0;
  for (int i = 0; i < n_live; ++i) {
    first_block[i] = n_blocks;
    n_blocks += prods[i].n_blocks;
  }
  first_block[n_live] = n_blocks;
  auto task = [&](int64_t blk, int) {
    const int i = RangeOf(first_block, blk);
    RunBlock(prods[i], blk - first_block[i]);
  };
  // Decode batches (M < kStreamingM): each thread streams its own
  // contiguous run of blocks (ParallelForRanges), which the hardware
  // prefetchers follow, rather than blocks handed out in turn. Measured side
  // by side: on Zen 3, tg64 ran 4-10% faster on Gemma 3 270M, a 1B Q4_0 and
  // a 134M Q8_0 model; on a Zen 5, Gemma's decode step at B = 8 and 16 (M =
  // 8, 16: the weights still stream from memory while each block is reused
  // from cache) took 5-25% less time, with the AVX2 and the AVX-512 table
  // alike (4 alternating runs each, medians).
  constexpr int64_t kStreamingM = 17;
  if (pool != nullptr && max_m < kStreamingM) {
    pool->ParallelForRanges(n_blocks, task);
  } else if (pool != nullptr) {
    pool->ParallelFor(n_blocks, task);
  } else {
    for (int64_t b = 0; b < n_blocks; ++b) task(b, 0);
  }
}

}  // namespace

// Plan -> validate -> dispatch: Prepare checks each product, the
// activations are converted (and panels packed) once per distinct X, the
// weight rows are cut into blocks, and one parallel region runs them all.
void MatMulMany(const KernelTable& table, const MatMulArgs* args, int count) {
  CHECK(count >= 0 && count <= kMaxMatMulGroup) << count;
  if (count == 0) return;
  ThreadPool* pool = args[0].pool;
  const int n_threads = pool != nullptr ? pool->num_threads() : 1;
  Product prods[kMaxMatMulGroup];
  int n_live = 0;
  for (int i = 0; i < count; ++i) {
    CHECK(args[i].pool == pool) << "MatMulMany: products must share the pool";
    if (Prepare(table, args[i], &prods[n_live])) ++n_live;
  }
  if (n_live == 0) return;

  // 1. Activations in each kernel's format, once per distinct (X, format).
  const ActPlan plan = PlanActivations(prods, n_live);
  if (plan.total > 0) {
    MatMulScratch* scratch = args[0].scratch;
    if (scratch == nullptr) {
      thread_local MatMulScratch tls;
      scratch = &tls;
    }
    char* buf = static_cast<char*>(scratch->Get(plan.total));
    QuantizeActivations(prods, n_live, plan, buf, pool, n_threads);
    PackPanels(prods, n_live, plan, buf, pool, n_threads);
  }

  // 2. One parallel region over the weight-row blocks of every product.
  int64_t max_m = 0;
  for (int i = 0; i < n_live; ++i) max_m = std::max(max_m, prods[i].m);
  PlanBlocks(prods, n_live, max_m, n_threads);
  RunBlocks(prods, n_live, max_m, pool);
}

}  // namespace weft::kernels
