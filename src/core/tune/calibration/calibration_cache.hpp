#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "core/tune/calibration/model_calibration.hpp"

namespace tiletune {

// Fitted calibrations kept beside the compiled kernels (DIR/calibrations/), so that an offline
// plan does not refit every measured record of its GPU model on every run (600 records took 23 s).
// A fit is found by its key: the database file, what its records are
// (tuning_db::calibration_fingerprint), the GPU model, and this tiletune's version and source
// commit (the model the fit is of). The whole key is stored and compared, never just its hash.
std::string calibration_cache_key(const std::filesystem::path& db_file, const std::string& fingerprint,
                                  const std::string& device_model);
// The cached fit of this key, or none (no file, another key, or a file that does not read).
std::optional<model_calibration> cached_calibration(const std::filesystem::path& dir, const std::string& key);
// Keeps the fit under this key; a folder that cannot be written keeps nothing (the next run fits
// again). The file is written whole or not at all (a temporary file renamed).
void keep_calibration(const std::filesystem::path& dir, const std::string& key, const model_calibration& c);

}  // namespace tiletune
