#include "core/tune/fleet/tuning_merge.hpp"

#include <unistd.h>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace tiletune {

namespace fs = std::filesystem;

std::string record_key(const tuning_record& r) {
  // Fields joined by a byte no field holds.
  return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", r.key.device_model, r.key.driver, r.key.cuda,
                     r.key.tool_version, r.key.compiler, tuning_problem_key(r.key.problem));
}

std::vector<tuning_record> pick_best(const std::vector<std::vector<tuning_record>>& per_input,
                                     std::vector<std::size_t>* kept_per_input) {
  struct chosen {
    const tuning_record* record;
    std::size_t input;
    std::size_t order;
  };
  std::map<std::string, chosen> best;
  std::size_t order = 0;
  for (std::size_t i = 0; i < per_input.size(); ++i)
    for (const auto& r : per_input[i]) {
      const std::string k = record_key(r);
      const auto it = best.find(k);
      if (it == best.end())
        best.emplace(k, chosen{&r, i, order++});
      else if (better_record(r, *it->second.record))
        it->second = chosen{&r, i, it->second.order};
    }
  std::vector<const chosen*> in_order;
  for (const auto& [k, c] : best) in_order.push_back(&c);
  std::sort(in_order.begin(), in_order.end(), [](const chosen* a, const chosen* b) { return a->order < b->order; });
  if (kept_per_input) kept_per_input->assign(per_input.size(), 0);
  std::vector<tuning_record> out;
  for (const chosen* c : in_order) {
    out.push_back(*c->record);
    if (kept_per_input) ++(*kept_per_input)[c->input];
  }
  return out;
}

namespace {
void remove_database_files(const fs::path& db) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(db.string() + suffix, ec);
}
}  // namespace

merge_summary merge_tuning_dbs(const std::vector<fs::path>& given, const fs::path& target) {
  if (given.empty()) throw usage_error("db merge needs databases to merge: tiletune db merge A B ... --into OUT");
  std::error_code ec;
  std::vector<fs::path> inputs;
  if (fs::exists(target, ec)) inputs.push_back(target);
  for (const auto& f : given) {
    if (!fs::exists(f, ec)) throw usage_error(fmt::format("{}: no such file", f.string()));
    if (!fs::is_regular_file(f, ec)) throw usage_error(fmt::format("{}: not a regular file", f.string()));
    inputs.push_back(f);
  }
  // Read and check every input before writing anything.
  merge_summary summary;
  std::vector<std::vector<tuning_record>> records;
  for (const auto& f : inputs) {
    try {
      const tuning_db db(f, tuning_db::open_mode::existing);
      records.push_back(db.list());
    } catch (const environment_error& e) {
      throw environment_error(fmt::format("{} (refused: nothing was merged, {} is unchanged)", e.what(),
                                          target.string()));
    }
    summary.inputs.push_back({f, records.back().size(), 0});
  }
  std::vector<std::size_t> kept;
  const auto merged = pick_best(records, &kept);
  std::size_t total = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    summary.inputs[i].kept = kept[i];
    total += summary.inputs[i].records;
  }
  summary.records = merged.size();
  summary.duplicates = total - merged.size();

  // A temporary database beside the target, renamed onto it when whole.
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const fs::path temp = dir / fmt::format(".{}.merge-{}.tmp", target.filename().string(), getpid());
  remove_database_files(temp);
  try {
    {
      tuning_db out(temp);
      out.store_all(merged);
    }  // closed: SQLite checkpoints the WAL into the file and removes it
    for (const char* suffix : {"-wal", "-shm"})
      if (fs::exists(target.string() + suffix, ec) && fs::file_size(target.string() + suffix, ec) > 0)
        throw environment_error(fmt::format("{} is open in another process ({}{} exists): merge into another file, or "
                                            "when the other run ends",
                                            target.string(), target.string(), suffix));
    if (fs::exists(temp.string() + "-wal", ec))
      throw environment_error(fmt::format("the merged database {} was left with a WAL file", temp.string()));
    fs::rename(temp, target);
    // A stale empty -shm of the old target would describe another file.
    fs::remove(target.string() + "-shm", ec);
  } catch (const fs::filesystem_error& e) {
    remove_database_files(temp);
    throw environment_error(fmt::format("cannot write {}: {}", target.string(), e.what()));
  } catch (...) {
    remove_database_files(temp);
    throw;
  }
  return summary;
}

}  // namespace tiletune
