#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gemm/problem.hpp"

struct sqlite3;

namespace tiletune {

// Which measurement answers which question: the same GPU model, driver,
// CUDA runtime, tool and compiler, and the same problem.
struct tuning_key {
  std::string device_model;  // the preset ("h100-sxm"), or the GPU's name where none matches
  std::string driver = "unknown", cuda = "unknown";
  std::string tool_version, compiler;
  gemm_problem problem;
};
// "4096x4096x4096 b1 bf16 nt a1 b0": the problem as the database keys it.
std::string tuning_problem_key(const gemm_problem& p);

struct tuning_record {
  tuning_key key;
  std::string device_name;  // as the GPU called itself
  std::string strategy;     // the search that measured it
  std::string measured_at;  // ISO 8601, UTC
  std::string recommended;  // variant id, empty when none ran
  double tflops = 0;
  nlohmann::json result;  // the whole measured result (tiletune.gemm/1)
};

// Measured results in one SQLite file (WAL, busy timeout), shared safely by
// concurrent runs; each store is its own transaction, so an interrupted suite
// keeps every problem it finished. A file that is not a tiletune database, or
// one of a newer schema, is an environment_error naming the file.
class tuning_db {
 public:
  static constexpr int schema_version = 1;
  // create: a missing or empty file becomes a new database. existing: the
  // file must already be a tiletune database of this schema, and whole
  // (PRAGMA quick_check); nothing in it is changed by opening (db merge's inputs).
  enum class open_mode { create, existing };
  explicit tuning_db(std::filesystem::path file, open_mode mode = open_mode::create);
  ~tuning_db();
  tuning_db(const tuning_db&) = delete;
  tuning_db& operator=(const tuning_db&) = delete;

  std::optional<tuning_record> find(const tuning_key& key) const;
  // Records of this problem measured on this GPU model with any driver or tool, newest first.
  std::vector<tuning_record> find_same_model(const std::string& device_model, const gemm_problem& p) const;
  // Every record (of one GPU model when given), newest first.
  std::vector<tuning_record> list(const std::string& device_model = "") const;
  // Inserts or replaces the record of the same key.
  void store(const tuning_record& r);
  // Stores every record in one transaction: all or none.
  void store_all(const std::vector<tuning_record>& records);
  // Read, decide, write as one transaction that holds the database's write
  // lock throughout (BEGIN IMMEDIATE): `change` gets every record as the
  // database holds it now and returns the records to store (inserted, or
  // replacing those of the same key). Other writers wait for the commit (the
  // busy timeout), so nothing they commit is lost and nothing they commit is
  // decided on unseen. All or none: an exception from `change` rolls back.
  void update(const std::function<std::vector<tuning_record>(std::vector<tuning_record> current)>& change);
  const std::filesystem::path& file() const { return file_; }

 private:
  std::vector<tuning_record> query(const std::string& where, const std::vector<std::string>& args) const;
  [[noreturn]] void fail(const std::string& what) const;
  void open_and_check();  // the constructor's work; it closes the handle when this throws
  void bind_and_step(const tuning_record& r);
  std::filesystem::path file_;
  open_mode mode_ = open_mode::create;
  sqlite3* db_ = nullptr;
};

// default_cache_dir()/tuning.sqlite3: beside the compiled kernels.
std::filesystem::path default_tuning_db_path();

// A record from a measured tiletune.gemm/1 result (and its suite header when
// it came from a suite); throws usage_error when it is not a measured result.
// With allow_predicted, an offline plan is a record too (gemm --store-plans):
// its driver and CUDA runtime are filed as "predicted", so it never shares a
// key with (and so never replaces) a measurement.
tuning_record record_from_result(const nlohmann::json& result, const nlohmann::json& header,
                                 bool allow_predicted = false);
inline constexpr const char* predicted_driver = "predicted";

// Whether a record holds a measurement ("mode": "measured"), not a stored plan.
bool is_measured(const tuning_record& r);
// How well a record's answer was checked, from what it holds: 2 measured with
// its recommended variant verified against cuBLASLt (status ok and a
// max_rel_error figure), 1 measured without that (no variant ran, or an older
// record without the figure), 0 a stored plan (predicted, nothing ran).
int verification_rank(const tuning_record& r);
// Whether a is the better answer for the same question: better verified, then
// newer (measured_at, ISO 8601 UTC, compares as text).
bool better_record(const tuning_record& a, const tuning_record& b);

}  // namespace tiletune
