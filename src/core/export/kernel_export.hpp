#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device/device_spec.hpp"
#include "core/gemm/kernel_launch.hpp"
#include "core/tune/gemm_tuner.hpp"
#include "core/gemm/problem.hpp"
#include "core/gemm/tile_config.hpp"

// `tiletune gemm --export DIR`: a tuned variant as files a user takes into
// their own code: ID.cu (the source, constants fixed), ID.cubin, ID.json (how
// to launch it, schema tiletune.kernel/1), ID.h (the kernel's declaration and a
// launcher, kernel_header.hpp). The entry in ID.cu and ID.h is
// export_entry_name (unique per variant and problem); ID.cubin is the
// JIT's compile and keeps kernel_entry_name ("tiletune_gemm").
namespace tiletune {

// The launch of variant c on problem p on device d (its family's
// gemm_family::describe_launch). Throws std::invalid_argument for a tile of no family.
kernel_launch describe_launch(const tile_config& c, const gemm_problem& p, const device_spec& d);

nlohmann::json to_json(const kernel_parameter& k);
nlohmann::json to_json(const tensor_map_description& t);
nlohmann::json to_json(const kernel_launch& l);

// One file of an export, named relative to the export folder.
struct export_file {
  std::string name;
  std::string bytes;
};

// The entry's name in an export: kernel_header.hpp's export_entry_name, and where the launch depends
// on the GPU's SM count (a persistent grid, split-K inside clusters, a stream-K workspace)
// "_sm<count>", since the launcher is that GPU's.
std::string export_entry_name(const tile_config& c, const gemm_problem& p, const device_spec& d);

// The launch of an exported variant: describe_launch with the entry renamed to export_entry_name.
kernel_launch export_launch(const gemm_plan& plan, const variant_result& v);

// The four files of one ok variant of a plan: ID.cu, ID.cubin, ID.json, ID.h.
// Throws std::invalid_argument when the variant is not ok or has no cubin.
std::vector<export_file> export_variant(const gemm_plan& plan, const variant_result& v, const run_info& run);

// The exported source: a header comment (variant, problem, how to compile and
// launch it), then the rendered NVRTC source, which includes no header.
std::string exported_source(const gemm_plan& plan, const variant_result& v, const kernel_launch& launch,
                            const run_info& run);

// The launch JSON (schema tiletune.kernel/1).
nlohmann::json export_manifest(const gemm_plan& plan, const variant_result& v, const kernel_launch& launch,
                               const run_info& run);

// Which variants of a plan to export: each id of `only` (in that order), or
// the recommended one. A variant that is not ok comes back too: the caller
// reports it. Empty when nothing is recommended and `only` is empty.
std::vector<const variant_result*> variants_to_export(const gemm_plan& plan, const std::vector<std::string>& only);

// A folder name for a suite problem's exports: letters, digits, '.', '_' and
// '-' kept, anything else becomes '-'.
std::string export_folder_name(const std::string& problem_name);

// Throws usage_error naming DIR when it cannot become the export folder: a
// path that is a file (itself or a parent), or an unwritable folder.
void check_export_dir(const std::filesystem::path& dir);

// Writes the files under dir (created if missing; subfolders in names are
// created too): all are written into a temporary folder inside dir first, then
// each is renamed into place, so a file is whole or absent, never half
// written. An existing file is replaced and keeps its permission bits. Throws usage_error naming the path
// when dir cannot be written, environment_error when a write fails midway.
void write_export(const std::filesystem::path& dir, const std::vector<export_file>& files);

}  // namespace tiletune
