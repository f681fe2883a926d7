// Grouped GEMM's tile space (kernels_templates/wgmma/wgmma_grouped.cuh), emulated on the host
// with the kernel's own functions: the group table as the kernel's warp builds it (32 lanes'
// chunks, a scan, the fills), the persistent schedule with and without stream-K, rasterization,
// and a data path that multiplies each unit's k-range of its group's rows by its group's slice
// of B and stores only its group's rows.
// - Groups of 0, 1, BM-1, BM, BM+1 and more rows, contiguous and masked, on 1 to 132 CTAs: every
//   valid element of C is written exactly once with its group's product; padding and masked
//   rows (NaN-poisoned) are never written.
// - The M tiles map to the same (group, first row, row bound) as a brute-force list of the groups' tiles.
// - Planted defects (a group's first row off by one, no row bound, the next group's B, tiles
//   counted by floor, a table scan that drops a lane's prefix) each fail.
// - fp8's rowwise and block scales (wgmma_fp8.cuh): A's by the row in A, each group's own of B
//   at tt_rowwise_scale_b_offset / tt_block_scale_b_offset; planted: every group on group 0's
//   scales, A's scales by the tile's grouped index instead of its rows (each caught with both).
#define TT_HOST_DEVICE inline
#include "wgmma/wgmma_schedule.cuh"
#include "wgmma/wgmma_tile_math.cuh"
#include "wgmma/wgmma_grouped.cuh"
#include "wgmma/wgmma_fp8.cuh"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {

struct grouped_case {
  std::vector<int> rows;  // per group
  int stride = 0;         // masked: rows per group's block; 0: contiguous
  int n = 10, k = 6;
  int bm = 4, bn = 4, bk = 2;
  int ctas = 3;
  int stream_k = 0, min_unit = 1;
  int raster = 0, along_n = 0;
  int scaled = 0;  // fp8 scales: 1 rowwise, 2 block
  std::string name() const {
    return fmt::format("rows [{}] {} n {} k {} tile {}x{}x{} ctas {} stream-K {} raster {}{}{}", fmt::join(rows, ","),
                       stride ? fmt::format("masked {}", stride) : "contiguous", n, k, bm, bn, bk, ctas, stream_k, raster,
                       along_n ? "n" : "m", scaled == 1 ? " rowwise-scaled" : scaled == 2 ? " block-scaled" : "");
  }
};

struct defects {
  bool first_row_off_by_one = false;  // a group starts one row late
  bool no_row_bound = false;          // a tile stores all its BM rows
  bool next_group_b = false;          // a tile multiplies by the next group's B
  bool floor_tiles = false;           // a group's M tiles counted by floor, not ceiling
  bool scan_drops_a_lane = false;     // the warp scan leaves out lane 0's sums
  bool scales_of_group_0 = false;     // rowwise: every group's columns take group 0's scales of B
  bool scale_rows_by_m_tile = false;  // rowwise: A's scales read at m_tile * BM + i, not the group's rows
};

struct group_table {
  std::vector<int> first_tile, first_row, end_row;
  int m_tiles() const { return first_tile.back(); }
};

// As the kernel's warp builds it: each lane sums its chunk, an exclusive scan, each lane fills.
group_table build_table(const grouped_case& c, const defects& d) {
  const int groups = static_cast<int>(c.rows.size());
  group_table t;
  t.first_tile.assign(groups + 1, -1);
  t.first_row.assign(groups, -1);
  t.end_row.assign(groups, -1);
  tt_group_sums lane_sums[32];
  for (int lane = 0; lane < 32; ++lane)
    lane_sums[lane] = tt_group_chunk_sums(c.rows.data(), tt_group_chunk_begin(lane, groups),
                                          tt_group_chunk_begin(lane + 1, groups), c.stride, c.bm);
  tt_group_sums before{0, 0};
  for (int lane = 0; lane < 32; ++lane) {
    tt_group_chunk_fill(c.rows.data(), tt_group_chunk_begin(lane, groups), tt_group_chunk_begin(lane + 1, groups),
                        c.stride, c.bm, before, t.first_tile.data(), t.first_row.data(), t.end_row.data());
    if (!(d.scan_drops_a_lane && lane == 0)) {
      before.tiles += lane_sums[lane].tiles;
      before.rows += lane_sums[lane].rows;
    }
  }
  t.first_tile[groups] = before.tiles;  // the kernel: the last lane's inclusive sum
  if (d.first_row_off_by_one && groups > 1) {
    for (int g = 1; g < groups; ++g) ++t.first_row[g];
  }
  if (d.floor_tiles) {
    int tile = 0;
    for (int g = 0; g < groups; ++g) {
      t.first_tile[g] = tile;
      tile += (t.end_row[g] - t.first_row[g]) / c.bm;
    }
    t.first_tile[groups] = tile;
  }
  return t;
}

int total_rows(const grouped_case& c) {
  if (c.stride > 0) return static_cast<int>(c.rows.size()) * c.stride;
  int sum = 0;
  for (int r : c.rows) sum += std::max(r, 0);
  return sum;
}

double a_at(int r, int k) { return static_cast<double>((r * 7 + k * 3) % 11 - 5); }
double b_at(int g, int n, int k) { return static_cast<double>((g * 5 + n * 3 + k * 2) % 9 - 4); }
// Scales, powers of two, by definition: rowwise scale_a[row] and scale_b[g][n]; block (one k-block
// here: K < 128) scale_a[kb][row] and scale_b[g][kb][n / 128], n / 128 being 0 as N < 128.
double scale_a_at(int r) { return std::ldexp(1.0, (r * 5) % 7 - 3); }
double scale_b_at(int g, int n) { return std::ldexp(1.0, (g * 3 + n) % 5 - 2); }
double block_b_at(int g) { return std::ldexp(1.0, (g * 2) % 5 - 2); }

// C as the reference computes it: each group's valid rows times its own B; everything else NaN.
std::vector<double> reference(const grouped_case& c) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> out(static_cast<std::size_t>(total_rows(c)) * c.n, nan);
  int row = 0;
  for (int g = 0; g < static_cast<int>(c.rows.size()); ++g) {
    const int start = c.stride > 0 ? g * c.stride : row;
    const int valid = std::min(std::max(c.rows[g], 0), c.stride > 0 ? c.stride : 1 << 30);
    for (int r = start; r < start + valid; ++r)
      for (int n = 0; n < c.n; ++n) {
        double s = 0;
        for (int k = 0; k < c.k; ++k) s += a_at(r, k) * b_at(g, n, k);
        const double scale = c.scaled == 1 ? scale_a_at(r) * scale_b_at(g, n) : c.scaled == 2 ? scale_a_at(r) * block_b_at(g) : 1;
        out[static_cast<std::size_t>(r) * c.n + n] = s * scale;
      }
    row += c.stride > 0 ? 0 : valid;
  }
  return out;
}

struct grid_result {
  std::vector<double> c;
  std::vector<int> writes;
  int peers = 0;  // stream-K partial tiles published
};

// The persistent grid over the grouped tile space: peers publish partial tiles, owners add them
// and store their group's rows; C starts NaN-poisoned.
grid_result run_grid(const grouped_case& c, const defects& d) {
  const int groups = static_cast<int>(c.rows.size());
  const group_table t = build_table(c, d);
  const int rows_total = total_rows(c);
  const int n_tiles = (c.n + c.bn - 1) / c.bn, k_tiles = (c.k + c.bk - 1) / c.bk;
  const tt_schedule s = tt_make_schedule(static_cast<long long>(t.m_tiles()) * n_tiles, k_tiles, c.ctas, c.min_unit,
                                         c.stream_k);
  grid_result out;
  out.c.assign(static_cast<std::size_t>(rows_total) * c.n, std::numeric_limits<double>::quiet_NaN());
  out.writes.assign(out.c.size(), 0);
  std::vector<std::vector<double>> slots(c.ctas);
  // The scales as the kernel reads them: rowwise scale_b[G][N]; block scale_a[1][rows] (one k-block)
  // and scale_b[G][1][1] at the kernel's offsets and indices.
  std::vector<double> scale_a(static_cast<std::size_t>(std::max(rows_total, 1))), scale_b(static_cast<std::size_t>(groups) * c.n);
  for (int r = 0; r < rows_total; ++r) scale_a[static_cast<std::size_t>(r)] = scale_a_at(r);
  for (int g = 0; g < groups; ++g)
    for (int n = 0; n < c.n; ++n)
      scale_b[static_cast<std::size_t>(c.scaled == 2 ? tt_block_scale_b_offset(g, c.k, c.n) : g * c.n + n)] =
          c.scaled == 2 ? block_b_at(g) : scale_b_at(g, n);
  auto partial = [&](const tt_work_unit& u, tt_tile_coord& tc, tt_group_tile& gt) {
    tc = tt_tile_of(u.tile, t.m_tiles(), n_tiles, c.raster, c.along_n);
    gt = tt_group_of_m_tile(tc.m_tile, t.first_tile.data(), t.first_row.data(), t.end_row.data(), groups, c.bm);
    const int b_group = d.next_group_b ? (gt.group + 1) % groups : gt.group;
    std::vector<double> acc(static_cast<std::size_t>(c.bm) * c.bn, 0.0);
    for (int i = 0; i < c.bm; ++i)
      for (int j = 0; j < c.bn; ++j)
        for (int k = u.k_begin * c.bk; k < std::min(u.k_end * c.bk, c.k); ++k) {
          const int r = gt.row0 + i, n = tc.n_tile * c.bn + j;
          if (r >= rows_total || n >= c.n) continue;
          double scale = 1;
          if (c.scaled == 2) {  // tt_load_block_scales at each promotion: the tile's rows in A, its group's B
            const int kb = k / TT_SCALE_BLOCK, row = (d.scale_rows_by_m_tile ? tc.m_tile * c.bm : gt.row0) + i;
            const int n_blocks = (c.n + TT_SCALE_BLOCK - 1) / TT_SCALE_BLOCK;
            scale = scale_a[static_cast<std::size_t>(tt_block_scale_a_index(kb, std::min(row, rows_total - 1), rows_total))] *
                    scale_b[static_cast<std::size_t>(tt_block_scale_b_offset(d.scales_of_group_0 ? 0 : gt.group, c.k, c.n) +
                                                     tt_block_scale_b_index(kb, n / TT_SCALE_BLOCK, n_blocks))];
          }
          acc[static_cast<std::size_t>(i) * c.bn + j] += a_at(r, k) * b_at(b_group, n, k) * scale;
        }
    return acc;
  };
  for (int pass = 0; pass < 2; ++pass)  // peers publish first: on the GPU owners wait for them
    for (int cta = 0; cta < c.ctas; ++cta)
      for (int ui = 0; ui < tt_units_of(s, cta); ++ui) {
        const tt_work_unit u = tt_unit(s, cta, ui);
        if ((pass == 0) == static_cast<bool>(u.owner)) continue;
        tt_tile_coord tc{};
        tt_group_tile gt{};
        std::vector<double> acc = partial(u, tc, gt);
        if (!u.owner) {
          ++out.peers;
          slots[u.worker] = acc;
          continue;
        }
        for (int p = u.first_peer; p <= u.last_peer; ++p)
          for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += slots[p][i];
        if (c.scaled == 1)  // tt_scale_rows_columns after the fixup: rows from the group's first, B's at its offset
          for (int i = 0; i < c.bm; ++i)
            for (int j = 0; j < c.bn; ++j) {
              const int r = (d.scale_rows_by_m_tile ? tc.m_tile * c.bm : gt.row0) + i, n = tc.n_tile * c.bn + j;
              const long long b0 = tt_rowwise_scale_b_offset(d.scales_of_group_0 ? 0 : gt.group, c.n);
              acc[static_cast<std::size_t>(i) * c.bn + j] *= scale_a[static_cast<std::size_t>(std::min(r, rows_total - 1))] *
                                                             scale_b[static_cast<std::size_t>(b0 + std::min(n, c.n - 1))];
            }
        const int bound = d.no_row_bound ? rows_total : gt.row_end;
        for (int i = 0; i < c.bm; ++i)
          for (int j = 0; j < c.bn; ++j) {
            const int r = gt.row0 + i, n = tc.n_tile * c.bn + j;
            if (r >= bound || r >= rows_total || n >= c.n) continue;
            out.c[static_cast<std::size_t>(r) * c.n + n] = acc[static_cast<std::size_t>(i) * c.bn + j];
            ++out.writes[static_cast<std::size_t>(r) * c.n + n];
          }
      }
  return out;
}

// The first element that breaks "written once, with its group's product; untouched where invalid".
std::string first_wrong(const grouped_case& c, const defects& d, int* peers = nullptr) {
  const auto want = reference(c);
  const auto got = run_grid(c, d);
  if (peers) *peers += got.peers;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const int r = static_cast<int>(i) / c.n, n = static_cast<int>(i) % c.n;
    const bool valid = !std::isnan(want[i]);
    if (valid && got.writes[i] != 1)
      return fmt::format("{}: C[{}][{}] written {} times", c.name(), r, n, got.writes[i]);
    if (!valid && got.writes[i] != 0)
      return fmt::format("{}: C[{}][{}] is padding or masked and was written", c.name(), r, n);
    if (valid && got.c[i] != want[i])
      return fmt::format("{}: C[{}][{}] = {}, want {}", c.name(), r, n, got.c[i], want[i]);
  }
  return "";
}

std::vector<grouped_case> cases() {
  std::vector<grouped_case> out;
  const std::vector<std::vector<int>> contiguous = {
      {0, 1, 3, 4, 5, 11, 0, 0},  // BM = 4: empty, 1, BM-1, BM, BM+1, 2BM+3, trailing empties
      {9},
      {0, 0, 0},
      {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 0, 7},  // > 32 groups: two per lane
  };
  for (const auto& rows : contiguous)
    for (int ctas : {1, 3, 7, 132})
      for (int stream_k : {0, 1})
        for (int raster : {0, 2}) {
          grouped_case c;
          c.rows = rows;
          c.ctas = ctas;
          c.stream_k = stream_k;
          c.raster = raster;
          c.along_n = raster && ctas == 3;
          c.k = stream_k ? 9 : 6;
          out.push_back(c);
        }
  for (int ctas : {1, 5, 132})
    for (int stream_k : {0, 1}) {
      grouped_case c;
      c.rows = {0, 13, 1, 12, 3, 20};  // masked: empty, full, 1, a whole number of tiles, BM-1, over the stride (clamped)
      c.stride = 13;
      c.ctas = ctas;
      c.stream_k = stream_k;
      c.k = 7;
      out.push_back(c);
    }
  const std::size_t plain = out.size();
  for (std::size_t i = 0; i < plain; i += 3)  // a third of them again with fp8's rowwise and block scales
    for (int scaled : {1, 2}) {
      grouped_case c = out[i];
      c.scaled = scaled;
      out.push_back(c);
    }
  return out;
}

}  // namespace

TEST(wgmma_grouped, every_valid_row_is_computed_once_with_its_groups_b_and_padding_is_never_written) {
  int checked = 0, peers = 0;
  for (const auto& c : cases()) {
    EXPECT_EQ(first_wrong(c, defects{}, &peers), "");
    ++checked;
  }
  EXPECT_GT(peers, 0) << "no case shared a tile's k-loop out: stream-K went unchecked";
  std::printf("%d grouped problems emulated, %d stream-K partial tiles\n", checked, peers);
}

TEST(wgmma_grouped, m_tiles_map_to_the_brute_force_list_of_the_groups_tiles) {
  for (const auto& c : cases()) {
    const group_table t = build_table(c, defects{});
    std::vector<tt_group_tile> brute;
    int row = 0;
    for (int g = 0; g < static_cast<int>(c.rows.size()); ++g) {
      const int start = c.stride > 0 ? g * c.stride : row;
      const int valid = std::min(std::max(c.rows[g], 0), c.stride > 0 ? c.stride : 1 << 30);
      for (int r0 = start; r0 < start + valid; r0 += c.bm) brute.push_back({g, r0, start + valid});
      row += c.stride > 0 ? 0 : valid;
    }
    ASSERT_EQ(t.m_tiles(), static_cast<int>(brute.size())) << c.name();
    for (int m = 0; m < t.m_tiles(); ++m) {
      const auto got = tt_group_of_m_tile(m, t.first_tile.data(), t.first_row.data(), t.end_row.data(),
                                          static_cast<int>(c.rows.size()), c.bm);
      EXPECT_EQ(got.group, brute[m].group) << c.name() << " m tile " << m;
      EXPECT_EQ(got.row0, brute[m].row0) << c.name() << " m tile " << m;
      EXPECT_EQ(got.row_end, brute[m].row_end) << c.name() << " m tile " << m;
    }
  }
}

TEST(wgmma_grouped, the_emulation_catches_planted_defects) {
  const std::vector<std::pair<const char*, defects>> planted = {
      {"a group's first row off by one", defects{.first_row_off_by_one = true}},
      {"no row bound", defects{.no_row_bound = true}},
      {"the next group's B", defects{.next_group_b = true}},
      {"tiles counted by floor", defects{.floor_tiles = true}},
      {"the scan drops lane 0", defects{.scan_drops_a_lane = true}},
      {"every group on group 0's scales of B", defects{.scales_of_group_0 = true}},
      {"A's scales by the tile's grouped index", defects{.scale_rows_by_m_tile = true}},
  };
  for (const auto& [what, d] : planted) {
    int caught = 0, caught_scaled[3] = {0, 0, 0};
    for (const auto& c : cases()) {
      const bool wrong = !first_wrong(c, d).empty();
      caught += wrong;
      caught_scaled[c.scaled] += wrong;
    }
    EXPECT_GT(caught, 0) << what << " went unnoticed";
    if (d.scales_of_group_0 || d.scale_rows_by_m_tile) {  // by the rowwise and the block-scaled cases each
      EXPECT_GT(caught_scaled[1], 0) << what << " went unnoticed with rowwise scales";
      EXPECT_GT(caught_scaled[2], 0) << what << " went unnoticed with block scales";
    }
  }
}
