#include "core/gemm/gemm_suite.hpp"

#include <cstdint>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/results/json_file.hpp"

namespace tiletune {

namespace {
// A suite's problem has these keys only, and whole numbers where sizes go:
// a misspelt key ("dtpye") or 4096.5 would otherwise be quietly ignored or cut.
void check_problem_fields(const nlohmann::json& p) {
  if (!p.is_object()) throw usage_error("a problem must be an object");
  static const std::set<std::string> known = {"name",   "m",     "n",    "k",      "batch",
                                              "dtype",  "layout", "alpha", "beta", "scaling", "out_dtype"};
  for (const auto& [key, value] : p.items()) {
    if (!known.count(key))
      throw usage_error(fmt::format("unknown key \"{}\" (a problem has name, m, n, k, batch, dtype, layout, alpha, "
                                    "beta, scaling, out_dtype)",
                                    key));
    const bool size = key == "m" || key == "n" || key == "k" || key == "batch";
    if (size && !value.is_number_integer())
      throw usage_error(fmt::format("\"{}\": {} is not a whole number written as one (e.g. 4096)", key, value.dump()));
    // Past int64 (JSON reads it unsigned): it would wrap to a negative size.
    if (size && value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      throw usage_error(fmt::format("\"{}\": {} is larger than any GEMM's", key, value.dump()));
    if ((key == "alpha" || key == "beta") && !value.is_number())
      throw usage_error(fmt::format("\"{}\": {} is not a number", key, value.dump()));
    if ((key == "name" || key == "dtype" || key == "layout" || key == "scaling" || key == "out_dtype") &&
        !value.is_string())
      throw usage_error(fmt::format("\"{}\": {} is not a string", key, value.dump()));
  }
  // What the reader needs, named, rather than a JSON library's "key not found".
  for (const char* key : {"m", "n", "k", "dtype"})
    if (!p.contains(key))
      throw usage_error(fmt::format("the field \"{}\" is missing (a problem needs m, n, k and dtype; name, batch, "
                                    "layout, alpha, beta, scaling and out_dtype are optional)",
                                    key));
}

gemm_suite parse_suite(const nlohmann::json& j, const std::filesystem::path& path) {
  const std::string where = path.string();
  if (!j.is_object() || j.value("schema", "") != "tiletune.suite/1")
    throw usage_error(fmt::format("{}: not a suite (expected \"schema\": \"tiletune.suite/1\")", where));
  if (!j.contains("problems") || !j["problems"].is_array() || j["problems"].empty())
    throw usage_error(fmt::format("{}: \"problems\" must be a non-empty array", where));
  if (j.contains("name") && !j["name"].is_string())
    throw usage_error(fmt::format("{}: the suite's \"name\": {} is not a string", where, j["name"].dump()));
  // A misspelt key ("problem", "descripton") would be quietly ignored, as in a problem.
  for (const auto& [key, value] : j.items())
    if (key != "schema" && key != "name" && key != "description" && key != "problems")
      throw usage_error(fmt::format("{}: unknown key \"{}\" (a suite has schema, name, description and problems)",
                                    where, key));
  gemm_suite s;
  s.name = j.value("name", path.stem().string());
  std::set<std::string> names;
  for (std::size_t i = 0; i < j["problems"].size(); ++i) {
    const auto& p = j["problems"][i];
    suite_problem sp;
    // A problem without a name is called by its place in the list.
    const bool named = p.is_object() && p.contains("name") && p["name"].is_string();
    sp.name = named ? p["name"].get<std::string>() : fmt::format("problem {}", i);
    const std::string which = named ? fmt::format("{}: problem {} (\"{}\")", where, i, sp.name)
                                    : fmt::format("{}: problem {}", where, i);
    try {
      check_problem_fields(p);
      // A problem without a layout takes gemm's default, nt (x @ W.T), as --layout does.
      nlohmann::json with_layout = p;
      if (!with_layout.contains("layout")) with_layout["layout"] = "nt";
      sp.problem = gemm_problem_from_json(with_layout);
      validate(sp.problem);
    } catch (const nlohmann::json::exception& e) {
      throw usage_error(fmt::format("{}: {}", which, json_error_text(e)));
    } catch (const usage_error& e) {
      // validate() speaks of gemm's flags ("--m 0 is invalid"); here the value is the suite's field "m".
      std::string why = e.what();
      for (const auto& [flag, key] : {std::pair{"m", "m"}, {"n", "n"}, {"k", "k"}, {"batch", "batch"}, {"alpha", "alpha"},
                                      {"beta", "beta"}, {"out-dtype", "out_dtype"}})
        if (why.rfind(fmt::format("--{} ", flag), 0) == 0)
          why = fmt::format("\"{}\": {}", key, why.substr(std::string(flag).size() + 3));
      throw usage_error(fmt::format("{}: {}", which, why));
    }
    if (!names.insert(sp.name).second) throw usage_error(fmt::format("{}: the name is used twice", which));
    s.problems.push_back(std::move(sp));
  }
  return s;
}
}  // namespace

gemm_suite load_suite(const std::filesystem::path& path) {
  const nlohmann::json j = read_json_file(path);
  try {
    return parse_suite(j, path);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type, e.g. "name": 3
    throw usage_error(fmt::format("{}: {}", path.string(), json_error_text(e)));
  }
}

}  // namespace tiletune
