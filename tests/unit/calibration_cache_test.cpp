// A fitted calibration is kept under a key that says what it was fitted to, and read back only
// under the same key: another database, other records or another GPU model fit again.
#include "core/tune/calibration/calibration_cache.hpp"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/tune/tuning_db/tuning_db.hpp"
#include "shipped_measurements.hpp"

using namespace tiletune;
namespace fs = std::filesystem;

TEST(calibration_cache, a_fit_is_read_back_only_for_the_same_records) {
  const fs::path dir = fs::temp_directory_path() / ("tiletune-calcache-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto results = shipped::h100_2026_11_23();
  ASSERT_GE(results.size(), 4u);
  const fs::path file = dir / "t.sqlite3";
  tuning_db db(file);
  for (std::size_t i = 0; i + 1 < results.size(); ++i) db.store(record_from_result(results[i], nlohmann::json()));
  const std::string model = record_from_result(results[0], nlohmann::json()).key.device_model;
  const std::string key = calibration_cache_key(file, db.calibration_fingerprint(model), model);
  EXPECT_FALSE(cached_calibration(dir, key));
  const model_calibration fitted = fit_calibration(db.calibration_inputs(model));
  keep_calibration(dir, key, fitted);
  const auto back = cached_calibration(dir, key);
  ASSERT_TRUE(back);
  EXPECT_EQ(to_json(*back), to_json(fitted));
  // One more record, another database file, another GPU model: other keys, nothing cached for them.
  db.store(record_from_result(results.back(), nlohmann::json()));
  const std::string more = calibration_cache_key(file, db.calibration_fingerprint(model), model);
  EXPECT_NE(more, key);
  EXPECT_FALSE(cached_calibration(dir, more));
  EXPECT_FALSE(cached_calibration(dir, calibration_cache_key(dir / "other.sqlite3", db.calibration_fingerprint(model), model)));
  EXPECT_FALSE(cached_calibration(dir, calibration_cache_key(file, db.calibration_fingerprint(model), "h200")));
  // A record replaced by another of the same key (a newer measurement) changes the fingerprint too.
  auto again = record_from_result(results.back(), nlohmann::json());
  again.measured_at = "2000-01-01T00:00:00Z";  // older: the newest measured_at stays, the row id does not
  db.store(again);
  EXPECT_NE(calibration_cache_key(file, db.calibration_fingerprint(model), model), more);
  fs::remove_all(dir);
}
