#include "core/tune/calibration/calibration_cache.hpp"

#include <cstdint>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/version.hpp"
#include "core/whole_file.hpp"

namespace tiletune {

namespace fs = std::filesystem;

namespace {
// The file of a key: its 64-bit FNV-1a hash (the key itself is inside, and compared).
fs::path file_of(const fs::path& dir, const std::string& key) {
  std::uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return dir / "calibrations" / fmt::format("{:016x}.json", h);
}
}  // namespace

std::string calibration_cache_key(const fs::path& db_file, const std::string& fingerprint,
                                  const std::string& device_model) {
  std::error_code ec;
  const fs::path where = fs::weakly_canonical(fs::absolute(db_file, ec), ec);
  return fmt::format("{} | {} | {} | tiletune {} {}", where.string(), fingerprint, device_model, tool_version,
                     source_commit());
}

std::optional<model_calibration> cached_calibration(const fs::path& dir, const std::string& key) {
  std::ifstream in(file_of(dir, key));
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (!j.is_object() || j.value("key", "") != key || !j.contains("calibration")) return std::nullopt;
  try {
    return calibration_from_json(j["calibration"]);
  } catch (const std::exception&) {
    return std::nullopt;  // a file of another version's layout: fitted again
  }
}

void keep_calibration(const fs::path& dir, const std::string& key, const model_calibration& c) {
  const fs::path file = file_of(dir, key);
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (!ec) (void)write_file_whole(file, nlohmann::json{{"key", key}, {"calibration", to_json(c)}}.dump() + "\n");
}

}  // namespace tiletune
