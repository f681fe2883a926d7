// The bounded compile of an offline plan (core/tune/compile_selection) must
// recommend, and rank in its top rows, exactly what compiling every variant
// does. A replaying compiler stands in for NVRTC with made-up but varied
// resources (registers, static shared memory, spills, compile errors), the
// same for a tile and its rasterization copies, as the real compiler's are.
#include "core/tune/compile_selection.hpp"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/gemm/gemm_suite.hpp"
#include "core/gemm/search_space.hpp"
#include "core/tune/calibration/model_calibration.hpp"
#include "core/tune/gemm_tuner.hpp"

using namespace tiletune;

namespace {

// The program a variant id compiles to: the block order's part does not change it (at the end of
// the id, or before the suffixes that follow it, as _kc's; once only the first was stripped, and the
// K-major copies' raster copies took made-up resources of their own that no compiler gives).
std::string program_of(const std::string& id) {
  static const std::regex raster("_g[0-9]+[mn](_|$)");  // built once: building it was 3/4 of these tests' time
  return std::regex_replace(id, raster, "$1");
}

class varied_compiler : public kernel_compiler {
 public:
  std::atomic<int> compiles{0};  // plan_gemm compiles on several threads
  std::atomic<int> fresh_compiles{0};  // of programs not in cached_programs
  std::atomic<int> cached_after_fresh{0};  // a cached program asked for after a fresh compile
  std::map<std::string, int> accumulator_floor;  // per program, filled before planning
  std::set<std::string> cached_programs;  // what is_cached says yes to
  bool is_cached(const compile_job& job) const override { return cached_programs.count(program_of(job.name)) > 0; }
  compiled_kernel compile(const compile_job& job) override {
    ++compiles;
    const std::string program = program_of(job.name);
    if (cached_programs.count(program) == 0)
      ++fresh_compiles;
    else if (fresh_compiles > 0)
      ++cached_after_fresh;
    const std::size_t h = std::hash<std::string>{}(program);
    compiled_kernel k;
    k.ok = h % 37 != 0;
    if (!k.ok) {
      k.log = "error: made up";
      return k;
    }
    k.cubin = "cubin";
    // At least the accumulators' share and one multiply's operands (as every compiled
    // non-spilling kernel: register_floor), up to 255.
    const int floor = accumulator_floor.at(program);
    k.resources.registers = floor + static_cast<int>(h % (256 - floor));
    k.resources.static_smem_bytes = (h >> 8) % 3 == 0 ? 1024 : 0;
    if ((h >> 12) % 23 == 0) k.resources.spill_store_bytes = 16;
    return k;
  }
  std::string version() const override { return "varied 1"; }
};

// The compiler's register floor for every variant of p's search space.
void prepare(varied_compiler& c, const gemm_problem& p, const device_spec& d) {
  for (kernel_family f : families_for(p.type))
    for (const tile_config& t : problem_search_space(f, p, d))
      c.accumulator_floor[program_of(t.id())] = register_floor(t);
}

struct top_rows {
  std::vector<std::string> ids;
  std::vector<double> times;
};

top_rows top(const gemm_plan& plan, int rows) {
  top_rows t;
  for (const auto& v : plan.variants) {
    if (v.status != variant_status::ok || static_cast<int>(t.ids.size()) >= rows) continue;
    t.ids.push_back(v.config.id());
    t.times.push_back(v.predicted.time_us);
  }
  return t;
}

gemm_problem make(std::int64_t m, std::int64_t n, std::int64_t k, const char* type, const char* lay,
                  std::int64_t batch = 1) {
  gemm_problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  p.type = parse_dtype(type);
  p.layout = parse_layout(lay);
  return p;
}

std::vector<gemm_problem> problems() {
  std::vector<gemm_problem> all;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(TILETUNE_SOURCE_DIR) /
                                                               "profiles" / "suites"))
    for (const auto& sp : load_suite(entry.path()).problems) all.push_back(sp.problem);
  // The odd shapes of the other tests, each dtype.
  for (const char* t : {"f32", "tf32", "f16", "bf16"}) {
    all.push_back(make(1000, 3000, 777, t, "tn"));
    all.push_back(make(17, 4099, 1023, t, "nt"));
    all.push_back(make(333, 65, 4096, t, "nn", 3));
    all.push_back(make(4096, 4096, 4096, t, "nt"));
  }
  return all;
}

// Two compile jobs; with keep > 0 the bounded selection: raster copies
// share their tile's program and the model's `keep` best are compiled.
plan_options options(int keep = 0) {
  plan_options o;
  o.jobs = 2;
  if (keep > 0) {
    o.selection.share_raster_copies = true;
    o.selection.keep = keep;
  }
  return o;
}

}  // namespace

TEST(compile_selection, bounded_plans_recommend_and_rank_what_full_plans_do) {
  const auto all = problems();
  ASSERT_GT(all.size(), 20u);
  int full_compiles = 0, bounded_compiles = 0;
  for (const char* gpu : {"h100-sxm", "a100-sxm-80gb"}) {
    const device_spec& d = find_preset(gpu);
    for (const auto& p : all) {
      for (int keep : {1, 10}) {
        varied_compiler full_c, bounded_c;
        prepare(full_c, p, d);
        prepare(bounded_c, p, d);
        const plan_options full_o = options(), bounded_o = options(keep);
        const gemm_plan full = plan_gemm(p, d, full_c, full_o);
        const gemm_plan bounded = plan_gemm(p, d, bounded_c, bounded_o);
        const std::string what = fmt::format("{} on {}, keep {}", p.describe(), gpu, keep);
        ASSERT_EQ(full.recommended.has_value(), bounded.recommended.has_value()) << what;
        const top_rows a = top(full, keep), b = top(bounded, keep);
        EXPECT_EQ(a.ids, b.ids) << what;
        EXPECT_EQ(a.times, b.times) << what;
        EXPECT_EQ(full.variants.size(), bounded.variants.size()) << what;
        EXPECT_LE(bounded_c.compiles, full_c.compiles) << what;
        full_compiles += full_c.compiles;
        bounded_compiles += bounded_c.compiles;
        for (const auto& v : bounded.variants)
          if (v.constraint == "model_bound") {
            EXPECT_NE(v.reason.find("not ranked"), std::string::npos);
          }
      }
    }
  }
  // The point of it: far fewer programs compiled.
  EXPECT_LT(bounded_compiles * 2, full_compiles);
}

TEST(compile_selection, the_optimistic_time_never_exceeds_the_compiled_one) {
  for (const char* gpu : {"h100-sxm", "a100-sxm-80gb", "rtx-4090"}) {
    const device_spec* d = &find_preset(gpu);
    int checked = 0;
    for (const auto& p : problems()) {
      for (kernel_family f : families_for(p.type)) {
        for (const tile_config& c : problem_search_space(f, p, *d)) {
          if (check_constraints(c, p, *d)) continue;
          const std::int64_t smem = c.smem_bytes(p.type, p.layout);
          const double best = optimistic_time_us(*d, p, c, smem);
          const int floor = register_floor(c);
          for (int regs : {floor, floor + 7, floor + 40, 255}) {
            if (regs > 255) continue;
            const occupancy_estimate occ = estimate_occupancy(*d, c.threads(), regs, smem + 512);
            if (occ.blocks_per_sm == 0) continue;
            EXPECT_LE(best, predict(*d, p, c, occ).time_us) << c.id() << " " << p.describe() << " " << regs;
            ++checked;
          }
        }
      }
    }
    EXPECT_GT(checked, 1000) << gpu;
  }
}

TEST(compile_selection, raster_copies_share_a_program_key_and_nothing_else_does) {
  const device_spec& d = find_preset("h100-sxm");
  const gemm_problem p = make(4096, 4096, 4096, "bf16", "nt");
  std::map<std::string, std::vector<tile_config>> groups;
  for (kernel_family f : families_for(p.type))
    for (const tile_config& c : problem_search_space(f, p, d)) groups[program_key(c)].push_back(c);
  int shared = 0;
  for (const auto& [key, members] : groups) {
    for (const auto& c : members) {
      tile_config a = c, b = members.front();
      a.raster_group = b.raster_group = 0;
      a.raster_along_n = b.raster_along_n = false;
      EXPECT_EQ(a, b) << key;  // only the block order differs within a group
    }
    shared += static_cast<int>(members.size()) - 1;
  }
  EXPECT_GT(shared, 20);
}

TEST(compile_selection, a_plan_that_shares_says_so_in_its_variants_and_notes) {
  const device_spec& d = find_preset("h100-sxm");
  // Whole waves for every wgmma tile shape (128x128: 1584 tiles = 12 x 132 SMs): no stream-K copies,
  // which have no raster copies and would lead the ranking where the last wave is partial.
  const gemm_problem p = make(33792, 768, 4096, "bf16", "nt");
  varied_compiler c;
  prepare(c, p, d);
  const plan_options o = options(5);
  const gemm_plan plan = plan_gemm(p, d, c, o);
  int copies = 0, bounded = 0;
  for (const auto& v : plan.variants) {
    if (!v.same_program_as.empty()) {
      ++copies;
      EXPECT_NE(v.same_program_as, v.config.id());
      EXPECT_TRUE(v.cubin.empty());
    }
    if (v.constraint == "model_bound") ++bounded;
  }
  EXPECT_GT(copies, 0);
  EXPECT_GT(bounded, 0);
  EXPECT_EQ(plan.notes.size(), 2u);
  const nlohmann::json j = to_json(plan, run_info{"test", "2026-11-23T00:00:00Z"});
  bool seen = false;
  for (const auto& v : j["variants"])
    if (v.contains("compile") && v["compile"].contains("same_program_as")) seen = true;
  EXPECT_TRUE(seen);
}

// The plan is re-ranked by a calibrated model afterwards: the bound must use it.
TEST(compile_selection, the_bound_follows_a_calibrated_model) {
  model_calibration cal;
  cal.efficiency = {{"mma/*", 0.95}, {"wgmma/*", 0.30}};  // turns the uncalibrated order around
  cal.time_scale = {{"wgmma/*", 1.4}};
  const device_spec& d = find_preset("h100-sxm");
  for (const auto& p : problems()) {
    varied_compiler full_c, bounded_c;
    prepare(full_c, p, d);
    prepare(bounded_c, p, d);
    const plan_options full_o = options();
    plan_options bounded_o = options(3);
    bounded_o.selection.ranking_time = [&](const gemm_problem& q, const tile_config& c, const occupancy_estimate& o) {
      const auto r = calibrated_prediction(cal, d, q, c, o);
      return r ? r->time_us : predict(d, q, c, o).time_us;
    };
    gemm_plan full = plan_gemm(p, d, full_c, full_o);
    gemm_plan bounded = plan_gemm(p, d, bounded_c, bounded_o);
    apply_calibration(full, cal);
    apply_calibration(bounded, cal);
    EXPECT_EQ(top(full, 3).ids, top(bounded, 3).ids) << p.describe();
    EXPECT_EQ(top(full, 3).times, top(bounded, 3).times) << p.describe();
  }
}

// In a suite, what earlier problems compiled is in the cache: those programs are read first, so
// their exact times set the bar, and fewer programs are compiled afresh; the answer stays the same.
TEST(compile_selection, cached_programs_are_read_first_and_change_no_answer) {
  const device_spec& d = find_preset("h100-sxm");
  int fresh_without = 0, fresh_with = 0;
  for (const auto& p : problems()) {
    for (int keep : {1, 10}) {
      varied_compiler full_c, cold_c, warm_c;
      prepare(full_c, p, d);
      prepare(cold_c, p, d);
      prepare(warm_c, p, d);
      // Every third program (by its name's hash) is "in the cache".
      for (const auto& [program, floor] : warm_c.accumulator_floor)
        if (std::hash<std::string>{}(program) % 3 == 0) warm_c.cached_programs.insert(program);
      const plan_options full_o = options(), bounded_o = options(keep);
      const gemm_plan full = plan_gemm(p, d, full_c, full_o);
      const gemm_plan cold = plan_gemm(p, d, cold_c, bounded_o);
      const gemm_plan warm = plan_gemm(p, d, warm_c, bounded_o);
      const std::string what = fmt::format("{}, keep {}", p.describe(), keep);
      EXPECT_EQ(top(full, keep).ids, top(warm, keep).ids) << what;
      EXPECT_EQ(top(full, keep).times, top(warm, keep).times) << what;
      // What the cache held changes no status either: a plan's JSON is the same cold or warm.
      ASSERT_EQ(cold.variants.size(), warm.variants.size()) << what;
      std::map<std::string, const variant_result*> warm_by_id;
      for (const auto& v : warm.variants) warm_by_id[v.config.id()] = &v;
      for (const auto& v : cold.variants) {
        const variant_result* w = warm_by_id.at(v.config.id());
        EXPECT_EQ(v.status, w->status) << what << " " << v.config.id() << ": " << w->reason;
        EXPECT_EQ(v.reason, w->reason) << what << " " << v.config.id();
      }
      EXPECT_EQ(cold.notes, warm.notes) << what;
      EXPECT_EQ(warm_c.cached_after_fresh, 0) << what;  // every cached program before any fresh compile
      EXPECT_LE(warm_c.fresh_compiles, cold_c.compiles) << what;
      fresh_without += cold_c.compiles;
      fresh_with += warm_c.fresh_compiles;
    }
  }
  EXPECT_LT(fresh_with, fresh_without);
}

// -j past the cores compiles no more programs than -j at the cores: a round larger than the cores
// finishes no sooner and compiles what the bar would prune (-j 10000 on 2 cores compiled 152
// programs of a 64x64x64 plan in 48 s where -j 2 compiled 4). The plan is the same.
TEST(compile_selection, threads_past_the_cores_compile_no_more_programs) {
  const device_spec& d = find_preset("h100-sxm");
  for (const gemm_problem& p : {make(64, 64, 64, "bf16", "nt"), make(17, 4099, 1023, "f16", "nt")}) {
    varied_compiler at_cores, past_cores;
    prepare(at_cores, p, d);
    prepare(past_cores, p, d);
    plan_options o = options(3);
    o.selection.cores = 2;
    const gemm_plan a = plan_gemm(p, d, at_cores, o);
    o.jobs = 10000;
    const gemm_plan b = plan_gemm(p, d, past_cores, o);
    EXPECT_EQ(top(a, 3).ids, top(b, 3).ids) << p.describe();
    EXPECT_EQ(past_cores.compiles.load(), at_cores.compiles.load()) << p.describe();
    EXPECT_LT(at_cores.compiles.load(), 20) << p.describe();
  }
}

// The floor is the accumulators' share and the operands of one multiply: the figures ptxas
// reported for real kernels (tests/compile checks every variant) are never below it.
TEST(compile_selection, the_register_floor_counts_accumulators_and_one_multiplys_operands) {
  const device_spec& d = find_preset("h100-sxm");
  const gemm_problem p = make(4096, 4096, 4096, "bf16", "nt");
  int checked = 0;
  for (kernel_family f : families_for(p.type))
    for (const tile_config& c : problem_search_space(f, p, d)) {
      const int accumulators = (c.block_m * c.block_n + c.threads() - 1) / c.threads();
      const int operands = to_string(c.family) == "mma" ? 6 : 0;
      EXPECT_EQ(register_floor(c), accumulators + operands) << c.id();
      ++checked;
    }
  EXPECT_GT(checked, 50);
  const gemm_problem q = make(4096, 4096, 4096, "f32", "nt");
  for (const tile_config& c : problem_search_space(family_named("simt"), q, d))
    EXPECT_EQ(register_floor(c), (c.block_m * c.block_n + c.threads() - 1) / c.threads() + 2) << c.id();
}

namespace {

// A compiler whose compile of one variant fails, or gives other registers than its tile's program.
class one_off_compiler : public varied_compiler {
 public:
  std::string odd_one;
  bool fails = true;
  compiled_kernel compile(const compile_job& job) override {
    compiled_kernel k = varied_compiler::compile(job);
    if (job.name == odd_one) {
      if (fails) {
        k.ok = false;
        k.cubin.clear();
        k.log = "error: planted";
      } else {
        k.resources.registers += 8;
      }
    }
    return k;
  }
};

// The first ok variant that took its figures from another's program.
std::optional<std::size_t> first_copy(const gemm_plan& plan) {
  for (std::size_t i = 0; i < plan.variants.size(); ++i)
    if (plan.variants[i].status == variant_status::ok && !plan.variants[i].same_program_as.empty()) return i;
  return std::nullopt;
}

}  // namespace

// --export of an offline plan: the bounded compile builds no cubin for a rasterization copy, so the
// recommended one compiles its own program afterwards; should that not be the program it took its
// figures from, it is a compile error and the next best is recommended.
TEST(compile_selection, a_recommended_raster_copy_compiles_its_own_cubin_for_export) {
  const device_spec& d = find_preset("h100-sxm");
  const gemm_problem p = make(33792, 768, 4096, "bf16", "nt");
  for (int planted : {0, 1, 2}) {  // none; its own compile fails; it gives other registers
    one_off_compiler c;
    prepare(c, p, d);
    gemm_plan plan = plan_gemm(p, d, c, options(5));
    const auto copy = first_copy(plan);
    ASSERT_TRUE(copy);
    plan.recommended = *copy;  // as if the model had put the copy first
    const std::string id = plan.variants[*copy].config.id();
    c.odd_one = planted ? id : "";
    c.fails = planted == 1;
    const int before = c.compiles;
    const std::size_t compiled_before = plan.compiled;
    compile_recommended_cubin(plan, c, options(5));
    ASSERT_TRUE(plan.recommended) << planted;
    const variant_result& rec = plan.variants[*plan.recommended];
    EXPECT_EQ(rec.status, variant_status::ok) << planted;
    EXPECT_FALSE(rec.cubin.empty()) << planted;
    EXPECT_TRUE(rec.same_program_as.empty()) << planted;
    EXPECT_GE(c.compiles - before, 1) << planted;
    EXPECT_EQ(plan.compiled - compiled_before, static_cast<std::size_t>(c.compiles - before)) << planted;
    if (planted == 0) {
      EXPECT_EQ(rec.config.id(), id);
      EXPECT_EQ(c.compiles - before, 1);
    } else {
      EXPECT_NE(rec.config.id(), id) << planted;
      const auto odd = std::find_if(plan.variants.begin(), plan.variants.end(),
                                    [&](const variant_result& v) { return v.config.id() == id; });
      ASSERT_NE(odd, plan.variants.end());
      EXPECT_EQ(odd->status, variant_status::compile_error) << planted;
      EXPECT_NE(odd->reason.find(planted == 1 ? "could not compile" : "registers"), std::string::npos) << odd->reason;
      EXPECT_NE(plan.notes.back().find(id), std::string::npos) << plan.notes.back();
    }
    // A recommendation with its cubin compiles nothing more.
    const int settled = c.compiles;
    compile_recommended_cubin(plan, c, options(5));
    EXPECT_EQ(c.compiles, settled) << planted;
  }
}
