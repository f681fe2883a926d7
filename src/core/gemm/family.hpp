#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/device/device_spec.hpp"
#include "core/gemm/problem.hpp"
#include "core/gemm/tile_config.hpp"

namespace tiletune {

struct launch_shape;            // core/measure/measure_protocol.hpp
struct kernel_launch;           // core/gemm/kernel_launch.hpp
struct tensor_map_spec;         // core/gemm/tensor_map_spec.hpp

// Why a config cannot run a problem on a device: which named constraint it breaks.
struct constraint_violation {
  std::string constraint;  // e.g. "shared_memory"
  std::string message;     // e.g. "needs 139264 bytes of shared memory, the GPU allows 101376"
};

// What a family's check_constraints returns for a broken constraint.
inline std::optional<constraint_violation> violation(std::string constraint, std::string message) {
  return constraint_violation{std::move(constraint), std::move(message)};
}

// Shared-memory reads against the math they feed, per thread (or warp) and k-step.
struct smem_traffic {
  double flops = 0;
  double bytes = 0;
};

// A persistent grid that shares the k-loops of some tiles out among its CTAs (stream-K): what the
// performance model counts instead of whole blocks over resident slots.
struct shared_k_schedule {
  std::int64_t ctas = 0;         // CTAs, every one resident at once
  double busiest_cta_tiles = 0;  // whole output tiles' worth of MMA work on the busiest CTA
  double shared_tiles = 0;       // of busiest_cta_tiles, the stream-K range's (the rest whole tiles)
  // What a k-tile of a stream-K range costs against one of a whole tile (measured; 1: the same):
  // the range's compute counts shared_tiles * shared_tile_cost.
  double shared_tile_cost = 1;
  std::int64_t longest_k = 0;    // the longest k-extent (elements) one CTA runs through its ring unbroken
  double fixup_bytes = 0;        // fp32 partial tiles written by peers and read back by owners
  // The busiest owner's fixup after its k-loop, not overlapped with it: the partial tiles it
  // stores or reads back, and the peers it waits on one after the other.
  double owner_fixup_bytes = 0;
  int owner_waits = 0;
  // Units (whole tiles or parts of one) the busiest CTA starts beyond its whole tiles' worth:
  // each one more pipeline fill and one more epilogue.
  int extra_tile_starts = 0;
};

// Everything a kernel family decides. Each family is one implementation in
// its own folder (core/gemm/families/<name>/), registered by one line in
// core/gemm/families/registry.cpp; nothing outside its folder names it.
class gemm_family {
 public:
  virtual ~gemm_family() = default;

  // The name in ids and JSON ("family": ...).
  virtual std::string_view name() const = 0;
  // What its kernels are and which dtypes and GPUs they serve, for --help.
  virtual std::string_view summary() const = 0;
  // Whether the family has kernels for a dtype (the architecture is a constraint).
  virtual bool serves(dtype t) const = 0;
  // Whether it has a grouped kernel (gemm_problem::groups); the common check refuses grouped
  // problems to the others (constraint "grouped").
  virtual bool runs_grouped() const { return false; }

  // Search space: the default points for a dtype, and those for one problem
  // (the default ones plus per-problem copies, e.g. split-K or rasterization).
  virtual std::vector<tile_config> default_space(dtype t) const = 0;
  virtual std::vector<tile_config> problem_space(const gemm_problem& p, const device_spec& d) const;
  // The family's own named constraints; check_constraints adds the common ones.
  virtual std::optional<constraint_violation> check(const tile_config& c, const gemm_problem& p,
                                                    const device_spec& d) const = 0;

  // The tile: threads per block, dynamic shared memory, the id after
  // "<name>_BMxBNxBK", and the family's fields of the tile JSON.
  virtual int threads(const tile_config& c) const = 0;
  virtual std::int64_t smem_bytes(const tile_config& c, dtype t) const = 0;
  virtual std::string id_suffix(const tile_config& c) const = 0;
  virtual void to_json(const tile_config& c, nlohmann::json& j) const = 0;
  // Whether a tile JSON without a "family" field is this family's (older records).
  virtual bool claims_json(const nlohmann::json& j) const = 0;
  virtual void from_json(const nlohmann::json& j, tile_config& c) const = 0;

  // Source: the rendered kernel after the common #defines (TT_DTYPE to TT_BK):
  // the family's #defines, headers and template (kernel_templates.hpp).
  virtual std::string render(const tile_config& c, dtype t, layout l) const = 0;
  // The NVRTC architecture for a device.
  virtual std::string compile_arch(const device_spec& d) const { return d.compile_arch(); }
  // Compiler options of this variant beyond the standard and ptxas's report (none by default).
  virtual std::vector<std::string> compile_options(const tile_config&, dtype, layout) const { return {}; }

  // Launch: grid, block, shared memory and cluster for the worker (a plain
  // tile grid unless the family says otherwise), the export's description,
  // and the TMA tensor maps of operand 'a' or 'b' where it takes them.
  virtual launch_shape launch(const tile_config& c, const gemm_problem& p, int sm_count) const;
  virtual kernel_launch describe_launch(const tile_config& c, const gemm_problem& p,
                                        const device_spec& d) const = 0;
  // Device memory of the scratch buffers its launch asks for (the buffer_bytes of
  // describe_launch's parameters on that device), without describing the launch.
  virtual std::int64_t scratch_bytes(const tile_config&, const gemm_problem&, const device_spec&) const { return 0; }
  virtual bool uses_tensor_maps() const { return false; }
  virtual tensor_map_spec tensor_map(const gemm_problem& p, const tile_config& c, char operand) const;
  // A persistent grid loops over the tiles: no grid-size limit applies.
  virtual bool persistent_grid() const { return false; }
  // What of this variant, for operands of type t, has not yet run on any GPU (such as "swap-AB
  // (_swab)"), "" when all has: a plan that recommends it without measuring says so.
  virtual std::string untried_on_gpu(const tile_config&, dtype) const { return {}; }
  // The optional mechanisms this variant uses, each named as its id spells it ("tmas", "sk",
  // "k2"...); none for the family's plain kernel. A launch error suspends, for the rest of the
  // problem, the variants that use every mechanism of the one that failed (gemm_measure.cpp).
  virtual std::vector<std::string> mechanisms(const tile_config&) const { return {}; }
  // When the variant's kernel last changed in a way that moves its timings (UTC, YYYY-MM-DDTHH:MM:SSZ,
  // the commit's time): a timing measured by a build whose kernels predate it times another kernel,
  // and calibration leaves it out (core/tune/calibration/kernel_revisions.hpp). "" (the default):
  // never revised, every timing stands. newest_revision: the latest of the family's revisions.
  virtual std::string_view revised(const tile_config&) const { return {}; }
  virtual std::string_view newest_revision() const { return {}; }
  // Among variants the model cannot tell apart (the same time, bytes, waves and resources), which
  // comes first, lower first: a mechanism the model has no term for, measured to help wherever the
  // family generates it.
  virtual int tie_order(const tile_config&) const { return 0; }

  // Model terms: the fraction of peak the family attains, a factor for its
  // pipeline depth, its shared-memory traffic, and whether the attainable
  // efficiency was measured (calibration reports list it as assumed_efficiency).
  virtual double attainable_efficiency(int compute_capability) const = 0;
  virtual double pipeline_factor(const tile_config&) const { return 1.0; }
  // The share of the math pipe's rate the main loop's instruction issue leaves it on d (an SM
  // sub-partition issues one instruction a clock): 1 where the math, not the issue, sets the pace.
  virtual double issue_factor(const tile_config&, dtype, const device_spec&) const { return 1.0; }
  // The share of its rate the main loop keeps with warps_per_sm warps resident to hide its latency:
  // eight suffice, and with fewer the rate falls linearly, to half at none.
  virtual double latency_factor(const tile_config&, int warps_per_sm, const device_spec&) const {
    return std::min(1.0, 0.5 + warps_per_sm / 16.0);
  }
  // The k-tiles a block has in flight while it computes one: its stages less those the
  // consumers hold (one, the k-tile they read, where the math is synchronous).
  virtual int tiles_in_flight(const tile_config& c) const { return std::max(1, c.stages - 1); }
  // Stream-K: how the variant shares k-loops out on a device of sm_count SMs; none (the
  // default) where every block runs whole tiles.
  virtual std::optional<shared_k_schedule> shared_k(const tile_config&, const gemm_problem&, int) const {
    return std::nullopt;
  }
  // Registers per thread, beyond its share of the block's fp32 accumulators, that every compiled
  // kernel of the tile must hold at once: the operands of its innermost multiply, live beside all
  // the accumulators. A floor for the bounded compile of an offline plan (compile_selection);
  // 0 where none is certain.
  virtual int operand_registers(const tile_config&) const { return 0; }
  virtual smem_traffic shared_memory_traffic(const tile_config& c, dtype t) const = 0;
  virtual bool efficiency_from_measurements() const { return true; }
  // Whether producer warps issue the loads beside the warps that multiply (the two overlap the
  // better for it), rather than the warps that multiply issuing their own: a calibration that did
  // not measure the family takes its overlap loss from a measured family of the same kind.
  virtual bool producer_warps_load() const { return false; }
  // Whether the variant copies rows that are not 16-byte aligned one element at a time, each
  // load awaited before the next (the model's serial-copy term, perf_model.cpp), rather than
  // reading copies padded to 16 bytes.
  virtual bool copies_unaligned_rows_serially(const tile_config&) const { return false; }
  // Whether split-K's slices meet in a workspace in global memory, the last slice of each
  // tile reading every slice's partial tile back before it writes C (the model's split-K
  // reduction tail); not where they meet inside a cluster.
  virtual bool reduces_split_k_in_global_memory() const { return false; }
  // Where it does: the L2 round trips each thread of the last slice's block waits out one after
  // another while it reads the partials back (0: none awaited in turn; its bytes' bandwidth alone).
  virtual double split_k_reduction_round_trips(const tile_config&, const gemm_problem&) const { return 0; }
  // Whether split-K's slices meet inside a cluster instead: each peer CTA stores its whole partial
  // tile into the leader's shared memory and the leader, having waited for every peer's arrival,
  // adds them before its epilogue (the model's cluster reduction tail).
  virtual bool reduces_split_k_in_cluster() const { return false; }
  // Whether B's loads carry an L2 evict-first hint, so that B's fills (a decode step's weights,
  // read once) replace one another in L2 rather than the lines that were there before the kernel
  // (the model's evict-first DRAM factor, perf_model.cpp).
  virtual bool loads_b_evict_first(const tile_config&) const { return false; }
  // The relative Frobenius error verification allows the variant (the dtype's bound unless the
  // variant trades accuracy for speed and states its own, such as fp8 fast accumulation).
  virtual double error_bound(const tile_config&, const gemm_problem& p) const { return row_of(p.type).error_bound; }
  // Kernels the variant launches before its GEMM (kernel_launch::prologue, such as a transposing
  // pre-pass): how many, and the device-memory bytes they read and write in all (the model's
  // prologue term: streamed at DRAM bandwidth, a launch each).
  virtual int prologue_launches(const tile_config&, const gemm_problem&) const { return 0; }
  virtual double prologue_bytes(const tile_config&, const gemm_problem&) const { return 0; }

  // Other libraries' names for the tile.
  virtual int triton_num_warps(const tile_config& c) const { return threads(c) / 32; }
  virtual std::string cutlass_shape(const tile_config& c, dtype t) const = 0;
  // cutlass_profiler's op_class column: "tensorop", or CUTLASS's name for CUDA-core FMA kernels.
  virtual std::string_view cutlass_op_class() const { return "tensorop"; }
};

// The registered families, in registration order (families/registry.cpp).
const std::vector<const gemm_family*>& all_families();

// A family from elsewhere (a test's, a plug-in's), registered for the object's
// lifetime: one line, `const family_registration r{my_family()};`. Not while
// another thread plans or reads all_families().
class family_registration {
 public:
  explicit family_registration(const gemm_family& f);
  ~family_registration();
  family_registration(const family_registration&) = delete;
  family_registration& operator=(const family_registration&) = delete;

 private:
  const gemm_family* family_;
};

// Shared pieces for families that use them.
// "_k<split>" for split-K and "_g<group><m|n>" for grouped rasterization.
std::string split_k_id_suffix(const tile_config& c);
std::string raster_id_suffix(const tile_config& c);
// fp8's C where it is not the dtype's bf16 (a family keeps it in a knob, from the problem's `out`):
// "_of16"/"_of32" in the id, gemm_common.cuh's TT_OUT (1 f16, 2 f32), and the check that a
// variant writes the problem's C ("out_dtype").
std::string out_id_suffix(std::optional<element_type> out);
std::string out_define(std::optional<element_type> out);
std::optional<constraint_violation> out_mismatch(std::optional<element_type> out, const gemm_problem& p);

}  // namespace tiletune
