#pragma once
// GEMM times a tuning database holds for one GPU model, as `tiletune batch`
// reads them: cuBLASLt's time (what a framework runs) of each measured problem,
// and how those times compare with the library model, to scale it for the rest.
#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "core/device/device_spec.hpp"
#include "core/gemm/problem.hpp"
#include "core/tune/tuning_db/tuning_db.hpp"

namespace tiletune {

struct stored_gemm_times {
  std::map<std::string, double> us;  // tuning_problem_key -> cuBLASLt's median, newest measurement
  // The median over the stored problems of their time over predict_library_gemm's (1 when none).
  double model_scale = 1;
  std::optional<double> find(const gemm_problem& p) const;
};

// The measured records of `device_model` (the preset, else the GPU's name) whose
// cuBLASLt reference was timed; any driver, tool or compiler, the newest per problem.
stored_gemm_times load_stored_gemm_times(const tuning_db& db, const std::string& device_model, const device_spec& d);

}  // namespace tiletune
