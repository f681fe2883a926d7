#include "core/results/result_compare.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/utf8.hpp"

namespace tiletune {

std::string_view to_string(verdict v) {
  switch (v) {
    case verdict::same: return "SAME";
    case verdict::faster: return "FASTER";
    case verdict::slower: return "SLOWER";
    case verdict::noisy: return "NOISY";
    case verdict::incorrect: return "INCORRECT";
    case verdict::missing: return "MISSING";
    case verdict::answered: return "ANSWERED";
  }
  return "?";
}

verdict timing_verdict(double change, double tolerance, double noise) {
  if (std::abs(change) <= tolerance) return verdict::same;
  if (std::abs(change) <= std::max(tolerance, noise)) return verdict::noisy;
  return change < 0 ? verdict::slower : verdict::faster;
}

bool verdict_fits_change(std::string_view written, double change, double tolerance, double noise) {
  // A file's numbers round-trip exactly; the tiny slack only forgives a writer that rounds them.
  constexpr double eps = 1e-9;
  for (const verdict v : {verdict::same, verdict::noisy, verdict::faster, verdict::slower})
    if (written == to_string(v))
      return timing_verdict(change - eps, tolerance, noise) == v || timing_verdict(change, tolerance, noise) == v ||
             timing_verdict(change + eps, tolerance, noise) == v;
  return true;
}

bool comparison::failed() const {
  for (const auto& r : rows)
    if (r.result == verdict::slower || r.result == verdict::incorrect || r.result == verdict::missing) return true;
  return false;
}

namespace {

// Results of different GPUs or of a prediction against a measurement stop the run unless allowed.
void check_comparable(const result_file& base, const result_file& fresh, const compare_options& o, comparison& c) {
  if (base.device_model != fresh.device_model || base.device_arch != fresh.device_arch) {
    // What tells them apart: the GPU model (a preset, else the name) and the architecture, each said.
    auto on = [](const result_file& f) {
      return fmt::format("{} ({}{})", f.device_name.empty() ? f.device_model : f.device_name,
                         f.device_arch.empty() ? "no architecture given" : f.device_arch,
                         f.device_model != f.device_name ? ", GPU model " + f.device_model : ", no preset");
    };
    const std::string both =
        fmt::format("{} was recorded on {}, {} on {}", base.path, on(base), fresh.path, on(fresh));
    if (!o.allow_device_mismatch)
      throw environment_error(both + "; compare results of one GPU model, or pass --allow-device-mismatch");
    c.notes.push_back("device mismatch allowed: " + both);
  }
  if (base.mode != fresh.mode) {
    const std::string what = fmt::format("{} is {}, {} is {}", base.path, base.mode, fresh.path, fresh.mode);
    if (!o.allow_mode_mismatch)
      throw usage_error(what + ": a prediction against a measurement says nothing about a regression; " +
                        (o.mode_mismatch_flag ? std::string("compare two measured (or two predicted) results, or pass "
                                                            "--allow-mode-mismatch")
                                              : std::string("check re-measures, so give it a measured baseline")));
    c.notes.push_back("mode mismatch allowed: " + what);
  }
}

// Two timings of one problem whose L2 flushes differ time different things (a flush by writes leaves
// dirty lines that the kernel's loads write back): refused, naming the problem and both flushes.
void check_same_flush(const result_entry& b, const result_entry& n, const result_file& base,
                      const result_file& fresh) {
  if (b.l2_flush.empty() || n.l2_flush.empty() || b.l2_flush == n.l2_flush) return;
  throw usage_error(fmt::format(
      "{}: {} timed it with --l2-flush {}, {} with --l2-flush {}: timings that empty the L2 differently are not "
      "comparable; time both the same way",
      b.label, base.path, b.l2_flush, fresh.path, n.l2_flush));
}

// The verdict on one problem both files hold.
comparison_row judge(const result_entry& b, const result_entry& n, const compare_options& o, comparison_row row) {
  if (n.incorrect) {  // a kernel that computes a wrong answer fails the gate, whichever variant is fastest
    row.result = verdict::incorrect;
    row.detail = n.has_result ? "a variant failed verification" : "no variant passed verification";
    return row;
  }
  if (!n.has_result && !b.has_result) {  // no variant ran it in either: nothing changed (a file against itself)
    row.result = verdict::same;
    row.detail = "neither file has a result for it (no variant ran)";
    return row;
  }
  if (!n.has_result) {
    row.result = verdict::missing;
    row.detail = "no variant produced a result";
    return row;
  }
  if (!b.has_result) {  // MISSING is a problem NEW lacks; this one NEW answers for the first time
    row.result = verdict::answered;
    row.detail = "the baseline has no result for it (no variant ran there); NEW has one: nothing to compare";
    return row;
  }
  const bool by_ratio = !o.absolute && b.vs_reference && n.vs_reference;
  if (by_ratio) {
    row.basis = "ratio to cuBLAS";
    row.base_value = b.vs_reference;
    row.new_value = n.vs_reference;
    row.change = *n.vs_reference / *b.vs_reference - 1;
  } else if (b.time_us && n.time_us && *b.time_us > 0 && *n.time_us > 0) {
    row.basis = "time";
    row.base_value = b.time_us;
    row.new_value = n.time_us;
    row.change = *b.time_us / *n.time_us - 1;
  } else {
    row.result = verdict::missing;
    row.detail = "the files carry no comparable figure";
    return row;
  }
  row.noise = std::hypot(b.noise, n.noise);
  row.result = timing_verdict(row.change, o.tolerance, row.noise);
  if (row.result == verdict::noisy)
    row.detail = fmt::format("{:+.1f}% is within the measured noise of {:.1f}%", 100 * row.change, 100 * row.noise);
  if (b.variant_id != n.variant_id) {
    if (!row.detail.empty()) row.detail += "; ";
    row.detail += fmt::format("recommended variant changed: {} -> {}", b.variant_id, n.variant_id);
  }
  return row;
}

// For each base entry, the new file's entry that stands for it: the same problem under the same suite
// name first, then the unmatched ones of the same problem in order (a suite may hold one shape twice).
// An entry left over on either side where the other file holds its problem fewer times is judged
// against that problem's first entry there (compare_results): never MISSING nor "new" while its
// problem was measured on both sides (a suite's slowed q_proj hid behind a lone 4096^3 result).
std::vector<std::optional<std::size_t>> counterparts(const std::vector<result_entry>& base,
                                                     const std::vector<result_entry>& fresh, std::vector<bool>& used) {
  std::vector<std::optional<std::size_t>> match(base.size());
  for (std::size_t b = 0; b < base.size(); ++b)
    for (std::size_t i = 0; i < fresh.size() && !match[b]; ++i)
      if (!used[i] && fresh[i].key == base[b].key && fresh[i].label == base[b].label) used[i] = true, match[b] = i;
  for (std::size_t b = 0; b < base.size(); ++b)
    for (std::size_t i = 0; i < fresh.size() && !match[b]; ++i)
      if (!used[i] && fresh[i].key == base[b].key) used[i] = true, match[b] = i;
  return match;
}

// The first entry of a problem in a file, if it holds one.
std::optional<std::size_t> first_of(const std::vector<result_entry>& entries, const std::string& key) {
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (entries[i].key == key) return i;
  return std::nullopt;
}

// The verdict on a problem only NEW holds, one of whose variants failed verification.
comparison_row incorrect_new_problem(const result_entry& n, const std::string& base_path) {
  comparison_row row;
  row.key = n.key;
  row.label = n.label;
  row.result = verdict::incorrect;
  row.detail = fmt::format("not in {} (a new problem), and {}", base_path,
                           n.has_result ? "a variant failed verification" : "no variant passed verification");
  return row;
}

// Says which entry of the other file a leftover entry was judged against.
void also_judged_against(comparison_row& row, const std::string& label, const std::string& path) {
  const std::string said = fmt::format("judged against {} of {}, which holds this problem fewer times", label, path);
  row.detail = row.detail.empty() ? said : said + "; " + row.detail;
}

}  // namespace

comparison compare_results(const result_file& base, const result_file& fresh, const compare_options& o) {
  if (!(o.tolerance >= 0 && o.tolerance < 1))
    throw usage_error(fmt::format("--tolerance {} is invalid: a fraction from 0 up to (not including) 1 (0.05 = 5%)", o.tolerance));
  comparison c;
  c.base_path = base.path;
  c.new_path = fresh.path;
  c.base_mode = base.mode;
  c.new_mode = fresh.mode;
  c.options = o;
  check_comparable(base, fresh, o, c);

  std::vector<bool> used(fresh.entries.size(), false);
  const auto matches = counterparts(base.entries, fresh.entries, used);
  std::size_t shared = 0;
  bool ratios = false;  // a problem both files time against cuBLAS: --absolute changes its basis
  for (std::size_t bi = 0; bi < base.entries.size(); ++bi) {
    const result_entry& b = base.entries[bi];
    const std::optional<std::size_t>& match = matches[bi];
    comparison_row row;
    row.key = b.key;
    row.label = b.label;
    const std::optional<std::size_t> stand_in = match ? match : first_of(fresh.entries, b.key);
    if (!stand_in) {
      row.result = verdict::missing;
      row.detail = fmt::format("in {} but not in {}", base.path, fresh.path);
      c.rows.push_back(row);
      continue;
    }
    ++shared;
    const result_entry& n = fresh.entries[*stand_in];
    check_same_flush(b, n, base, fresh);
    ratios |= b.vs_reference && n.vs_reference;
    c.rows.push_back(judge(b, n, o, row));
    if (!match) also_judged_against(c.rows.back(), n.label, fresh.path);
  }
  for (std::size_t i = 0; i < fresh.entries.size(); ++i) {
    if (used[i]) continue;
    const result_entry& n = fresh.entries[i];
    const std::optional<std::size_t> b = first_of(base.entries, n.key);
    if (!b) {
      c.only_in_new.push_back(n.label == n.key ? n.key : fmt::format("{} ({})", n.label, n.key));
      // Nothing to judge its speed against, but a kernel that computes a wrong answer fails the gate all
      // the same (it went through as a new problem).
      if (n.incorrect) c.rows.push_back(incorrect_new_problem(n, base.path));
      continue;
    }
    check_same_flush(base.entries[*b], n, base, fresh);
    comparison_row row;
    row.key = n.key;
    row.label = n.label;
    ratios |= base.entries[*b].vs_reference && n.vs_reference;
    c.rows.push_back(judge(base.entries[*b], n, o, row));
    also_judged_against(c.rows.back(), base.entries[*b].label, base.path);
  }
  if (shared == 0)
    throw usage_error(fmt::format("{} and {} share no problem: nothing to compare", base.path, fresh.path));
  if (!c.only_in_new.empty())
    c.notes.push_back(fmt::format("{} problem(s) in {} are not in {}", c.only_in_new.size(), fresh.path, base.path));
  if (o.absolute && !ratios)
    c.notes.push_back("--absolute has no effect here: no problem has a ratio to cuBLAS in both files (a predicted "
                      "result has none), so each is judged on time as it is");
  // A partial run's recommendation answers another question (the best of the variants it was given,
  // or nothing timed): judged as it is, and said (db import leaves such runs out).
  for (const result_file* f : {&base, &fresh}) {
    std::set<std::string> options;
    std::size_t partial = 0;
    for (const result_entry& e : f->entries)
      if (!e.partial.empty()) ++partial, options.insert(e.partial);
    if (partial)
      c.notes.push_back(fmt::format(
          "{} {}: {} of its {} result(s) {} a partial run ({}): a recommendation there is the best of the variants that "
          "run was given, not a tuning of the problem",
          f == &base ? "BASE" : "NEW", f->path, partial, f->entries.size(), partial == 1 ? "is" : "are",
          fmt::join(options, ", ")));
  }
  return c;
}

nlohmann::json to_json(const comparison& c) {
  nlohmann::json j;
  j["schema"] = "tiletune.compare/1";
  j["base"] = c.base_path;
  j["new"] = c.new_path;
  j["base_mode"] = c.base_mode;
  j["new_mode"] = c.new_mode;
  j["tolerance"] = c.options.tolerance;
  j["absolute"] = c.options.absolute;
  j["rows"] = nlohmann::json::array();
  std::map<std::string, int> counts;
  for (const auto& r : c.rows) {
    ++counts[std::string(to_string(r.result))];
    j["rows"].push_back({{"problem", r.key},
                         {"name", r.label},
                         {"verdict", to_string(r.result)},
                         {"basis", r.basis},
                         {"base", r.base_value ? nlohmann::json(*r.base_value) : nlohmann::json(nullptr)},
                         {"new", r.new_value ? nlohmann::json(*r.new_value) : nlohmann::json(nullptr)},
                         {"change", r.change},
                         {"noise", r.noise},
                         {"detail", r.detail}});
  }
  j["counts"] = counts;
  j["only_in_new"] = c.only_in_new;
  j["notes"] = c.notes;
  j["failed"] = c.failed();
  return j;
}

namespace {
// XML 1.0's Char range, escaped: a byte that is not UTF-8 (a Latin-1 file name) is U+FFFD, as json_text
// gives it, and the control characters but line breaks and tabs, and U+FFFE and U+FFFF, are left out.
// (Invalid bytes had gone into the report as they were: no XML reader takes it.)
std::string xml_escape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const std::optional<utf8_char> ch = utf8_at(s, i);
    if (!ch) {
      out += "\xef\xbf\xbd";
      ++i;
      continue;
    }
    switch (ch->code) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if ((ch->code >= 0x20 || ch->code == '\n' || ch->code == '\t') && ch->code != 0xfffe && ch->code != 0xffff)
          out.append(s.substr(i, ch->length));
    }
    i += ch->length;
  }
  return out;
}
}  // namespace

std::string to_junit_xml(const comparison& c) {
  int failures = 0;
  for (const auto& r : c.rows)
    failures += r.result == verdict::slower || r.result == verdict::incorrect || r.result == verdict::missing;
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites tests=\"{}\" failures=\"{}\">\n", c.rows.size(), failures);
  x += fmt::format("  <testsuite name=\"tiletune\" tests=\"{}\" failures=\"{}\">\n", c.rows.size(), failures);
  for (const auto& r : c.rows) {
    const std::string summary =
        fmt::format("{}: {:+.1f}% by {} (tolerance {:.1f}%, noise {:.1f}%){}", to_string(r.result), 100 * r.change,
                    r.basis.empty() ? "-" : r.basis, 100 * c.options.tolerance, 100 * r.noise,
                    r.detail.empty() ? "" : "; " + r.detail);
    x += fmt::format("    <testcase classname=\"tiletune.gemm\" name=\"{}\">\n", xml_escape(r.label));
    if (r.result == verdict::slower || r.result == verdict::incorrect || r.result == verdict::missing)
      x += fmt::format("      <failure message=\"{}\" type=\"{}\"/>\n", xml_escape(summary), to_string(r.result));
    x += fmt::format("      <system-out>{}</system-out>\n", xml_escape(summary));
    x += "    </testcase>\n";
  }
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

}  // namespace tiletune
