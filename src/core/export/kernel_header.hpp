#pragma once
#include <string>

#include "core/gemm/problem.hpp"
#include "core/gemm/tile_config.hpp"
#include "core/gemm/kernel_launch.hpp"

// The names and the host header of an exported kernel (kernel_export.hpp).
// Every JIT-compiled kernel is `tiletune_gemm` (kernel_entry_name); an export
// renames its entry so that several exports link into one program.
namespace tiletune {

// The exported kernel's extern "C" name: "tiletune_" + the variant id + "_" + dtype + "_" + layout
// + "_" + M x N x K (+ "_b" batch where above 1; a grouped problem: "_g" + its groups + "_" + 8 hex
// digits of its description), e.g. tiletune_<family>_128x128x32_..._bf16_nt_4096x4096x4096. A valid
// C identifier (any other character becomes '_'), the same on every export of that variant and
// problem, and distinct for two problems, whose headers' constants differ: so exports of one
// variant for a model's several GEMMs link into one program.
std::string export_entry_name(const tile_config& c, const gemm_problem& p);

// `source` with every whole-word kernel_entry_name replaced by `entry`, and every whole-word
// prologue entry (kernel_entry_name + "_transpose") by `entry` + "_transpose".
std::string rename_entry(const std::string& source, const std::string& entry);

// ID.h: the kernel's declaration (launch.entry, launch.parameters) and an
// inline `<entry>_launch(...)` that launches it on the problem it was tuned
// for: the scalars fixed (as <entry>_<NAME> constants), alpha and beta and
// the pointers passed; the grid, block, cluster and dynamic shared memory of
// `launch`; cudaFuncSetAttribute for the shared memory; each tensor map
// encoded from its description (cuTensorMapEncodeTiled through
// cudaGetDriverEntryPointByVersion, so the program need not link libcuda).
// `about` is a few lines of comment (what the kernel is, where it came from).
std::string exported_header(const kernel_launch& launch, const std::string& id, const std::string& about);

}  // namespace tiletune
