#include "core/tune/fleet/tuning_merge.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>

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
                                     std::vector<std::size_t>* kept_per_input, std::vector<std::size_t>* from_input) {
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
  if (from_input) from_input->clear();
  std::vector<tuning_record> out;
  for (const chosen* c : in_order) {
    out.push_back(*c->record);
    if (kept_per_input) ++(*kept_per_input)[c->input];
    if (from_input) from_input->push_back(c->input);
  }
  return out;
}

merge_summary merge_tuning_dbs(const std::vector<fs::path>& given, const fs::path& target) {
  if (given.empty()) throw usage_error("db merge needs databases to merge: tiletune db merge A B ... --into OUT");
  std::error_code ec;
  std::vector<fs::path> inputs;
  for (const auto& f : given) {
    if (!fs::exists(f, ec))
      throw usage_error(fmt::format("{}: no such file (refused: nothing was merged)", f.string()));
    if (!fs::is_regular_file(f, ec))
      throw usage_error(fmt::format("{}: not a regular file ({}; refused: nothing was merged)", f.string(),
                                    fs::is_directory(f, ec) ? "a folder" : "a device, FIFO or socket"));
    // The target given as an input too is the target, read under its lock below.
    if (fs::exists(target, ec) && fs::equivalent(f, target, ec)) continue;
    inputs.push_back(f);
  }
  const auto refused = [&](const environment_error& e) {
    return environment_error(fmt::format("{} (refused: nothing was merged, {} is unchanged)", e.what(), target.string()));
  };
  // Open and check every input (quick_check, and every record read) before the target is opened: a bad
  // input leaves it as it was, and a missing target is not created.
  std::vector<std::unique_ptr<tuning_db>> opened;
  for (const auto& f : inputs) {
    try {
      opened.push_back(std::make_unique<tuning_db>(f, tuning_db::open_mode::read));
      opened.back()->check_records();
    } catch (const environment_error& e) {
      throw refused(e);
    }
  }
  // An existing target is checked whole like an input; a missing (or still empty) one is created.
  const bool existed = fs::exists(target, ec) && fs::file_size(target, ec) > 0 && !ec;
  std::optional<tuning_db> out;
  try {
    out.emplace(target, existed ? tuning_db::open_mode::existing : tuning_db::open_mode::create);
  } catch (const environment_error& e) {
    throw refused(e);
  }
  std::vector<const tuning_db*> sources;
  for (const auto& db : opened) sources.push_back(db.get());
  const auto counts = out->merge_from(sources);
  merge_summary summary;
  std::size_t total = 0;
  if (existed || counts.read[0] > 0) summary.inputs.push_back({target, counts.read[0], counts.kept[0]});
  for (std::size_t i = 0; i < inputs.size(); ++i)
    summary.inputs.push_back({inputs[i], counts.read[i + 1], counts.kept[i + 1]});
  for (std::size_t n : counts.read) total += n;
  for (std::size_t n : counts.kept) summary.records += n;
  summary.duplicates = total - summary.records;
  return summary;
}

}  // namespace tiletune
