#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tune/tuning_db/tuning_db.hpp"

namespace tiletune {

// tiletune db export: the best recorded config per GPU model and problem, for
// other tools. The best record of a problem is the better_record of all that
// answer it (any driver, tool or compiler): verified measurements first, then
// other measurements, then stored plans; newer first among equals.
std::vector<tuning_record> best_per_problem(const std::vector<tuning_record>& records);

// {"schema": "tiletune.tuning-export/1", "configs": [{device_model, problem,
// key, id, family, tile, triton, cutlass, mode, verified, tflops, median_us or
// predicted_us, measured_at, driver, tool_version, compiler}], "no_config": [...]}.
nlohmann::json export_json(const std::vector<tuning_record>& best, const std::string& database,
                           const std::string& date);
// A Python file: CONFIGS maps (gpu, m, n, k, batch, dtype, layout, alpha,
// beta) to a list of triton.Config in the names of Triton's matmul tutorial.
std::string export_triton(const std::vector<tuning_record>& best, const std::string& database,
                          const std::string& date);
// CSV in the columns of cutlass_profiler's GEMM report.
std::string export_cutlass_csv(const std::vector<tuning_record>& best);
// The grouped GEMMs (mixture of experts) of BEST: the Triton file and the CSV leave them out (their keys
// and rows have no groups), the JSON keeps them.
std::size_t grouped_records(const std::vector<tuning_record>& best);

}  // namespace tiletune
