#include "core/report/html_report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.hpp"
#include "core/results/json_file.hpp"
#include "core/report/report_charts.hpp"
#include "core/results/result_compare.hpp"
#include "core/plan_mode.hpp"

namespace tiletune {

namespace report {

namespace {
// A field present with another type than the reader takes: named (report_sections adds the file).
[[noreturn]] void wrong_type(const char* key, const json& v, const char* wanted) {
  const std::string dump = v.dump();
  throw usage_error(fmt::format("\"{}\" is {}, not {}", key, dump.size() > 40 ? dump.substr(0, 40) + "..." : dump,
                                wanted));
}
}  // namespace

std::optional<double> number_at(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) wrong_type(key, *it, "a number");
  return it->get<double>();
}

std::string string_at(const json& j, const char* key, const std::string& fallback) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_string()) wrong_type(key, *it, "a string");
  return it->get<std::string>();
}

bool bool_at(const json& j, const char* key, bool fallback) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) wrong_type(key, *it, "true or false");
  return it->get<bool>();
}

const json& require(const json& j, const char* key, bool array, const std::string& path, const std::string& what) {
  const auto it = j.find(key);
  if (it == j.end() || (array ? !it->is_array() : !it->is_object()))
    throw usage_error(fmt::format("{}: {} has no \"{}\" {}", path, what, key, array ? "list" : "object"));
  return *it;
}

const json& entry_object(const json& list, std::size_t i, const char* key, const std::string& path) {
  const json& e = list[i];
  if (e.is_object()) return e;
  const std::string dump = e.dump();
  throw usage_error(fmt::format("{}: entry {} of \"{}\" is {}, not an object", path, i + 1, key,
                                dump.size() > 40 ? dump.substr(0, 40) + "..." : dump));
}

std::string one_of(const json& j, const char* key, const std::vector<std::string>& allowed, const std::string& fallback) {
  const std::string v = string_at(j, key, fallback);
  if (v != fallback && std::find(allowed.begin(), allowed.end(), v) == allowed.end())
    throw usage_error(fmt::format("\"{}\" is \"{}\", not one of {}", key, v, fmt::join(allowed, ", ")));
  return v;
}

double non_negative_at(const json& j, const char* key, double fallback) {
  const auto v = number_at(j, key);
  if (v && !(*v >= 0 && std::isfinite(*v))) wrong_type(key, j.at(key), "a number at least 0");
  return v.value_or(fallback);
}

namespace {
std::string shown_field_value(const json& v) {
  const std::string dump = v.dump();
  return dump.size() > 40 ? dump.substr(0, 40) + "..." : dump;
}
}  // namespace

std::optional<double> at_least(const json& j, const char* key, double min, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return std::nullopt;
  const json& v = j[key];
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < min)
    throw usage_error(fmt::format("{}: \"{}\" is {}, not a number at least {}", where, key, shown_field_value(v), min));
  return v.get<double>();
}

void check_object(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null() || j[key].is_object()) return;
  throw usage_error(fmt::format("{}: \"{}\" is {}, not an object", where, key, shown_field_value(j[key])));
}

void check_mode_field(const json& j, const char* key, const std::string& where, bool allow_empty) {
  if (!j.is_object() || !j.contains(key)) return;
  const json& v = j[key];
  if (v.is_string() && (plan_mode_named(v.get<std::string>()) || (allow_empty && v.get<std::string>().empty()))) return;
  throw usage_error(fmt::format("{}: \"{}\" is {}, not measured or predicted", where, key, shown_field_value(v)));
}

}  // namespace report

std::string_view to_string(result_kind k) {
  switch (k) {
    case result_kind::gemm: return "gemm";
    case result_kind::suite: return "suite";
    case result_kind::batch: return "batch";
    case result_kind::comparison: return "compare";
    case result_kind::tuning_db: return "tuning database";
  }
  return "?";
}

result_kind classify_result(const nlohmann::json& doc, const std::string& path) {
  if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string())
    throw usage_error(fmt::format("{}: not a tiletune result file (no \"schema\")", path));
  const std::string schema = doc["schema"].get<std::string>();
  if (schema == "tiletune.gemm/1") return result_kind::gemm;
  if (schema == "tiletune.gemm-suite/1") return result_kind::suite;
  if (schema == "tiletune.batch/1") return result_kind::batch;
  if (schema == "tiletune.compare/1") return result_kind::comparison;
  if (schema == "tiletune.tuning-db-list/1" || schema == "tiletune.tuning-export/1") return result_kind::tuning_db;
  std::string hint;
  if (schema == "tiletune.suite/1") hint = " (a suite's definition: report the result of `tiletune gemm --suite FILE --out R.json`)";
  throw usage_error(fmt::format("{}: schema \"{}\" is not a result `tiletune report` draws{}; it reads tiletune.gemm/1, "
                                "tiletune.gemm-suite/1, tiletune.batch/1, tiletune.compare/1, tiletune.tuning-db-list/1 and "
                                "tiletune.tuning-export/1",
                                path, schema, hint));
}

std::vector<report_section> report_sections(const nlohmann::json& doc, const std::string& path,
                                            const report_options& options) {
  const result_kind kind = classify_result(doc, path);
  // The checks every reader of a gemm result makes, first: fields of their types (named), a
  // problem the tool accepts, figures the GPU allows.
  if (kind == result_kind::gemm || kind == result_kind::suite) (void)result_file_from_json(doc, path);
  std::vector<report_section> sections;
  try {
    switch (kind) {
      case result_kind::gemm: sections = report::gemm_sections(doc, path, options); break;
      case result_kind::suite: sections = report::suite_sections(doc, path, options); break;
      case result_kind::batch: return report::batch_sections(doc, path, options);
      case result_kind::comparison: return report::comparison_sections(doc, path, options);
      case result_kind::tuning_db: return report::tuning_db_sections(doc, path, options);
    }
  } catch (const nlohmann::json::exception& e) {
    // A field of the wrong type where the schema promises another.
    throw usage_error(fmt::format("{}: not a valid {} result: {}", path, to_string(kind), json_error_text(e)));
  } catch (const usage_error& e) {
    const std::string what = e.what();  // a field the readers named without the file
    if (what.rfind(path, 0) == 0) throw;
    throw usage_error(fmt::format("{}: not a valid {} result: {}", path, to_string(kind), what));
  }
  return sections;
}

std::vector<report_section> report_sections_from_file(const std::filesystem::path& path, const report_options& options) {
  return report_sections(read_json_file(path), path.string(), options);
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

// A script inlined in a <script> element: only "</script" would end it early;
// "<\/script" means the same in JavaScript's strings, regular expressions and comments.
std::string script_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '<' && i + 7 < s.size() && s[i + 1] == '/') {
      std::string word(s.substr(i + 2, 6));
      for (auto& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (word == "script") out += '\\';
    }
  }
  return out;
}

// JSON inside a <script type="application/json">. Escaping "</" alone is not
// enough: "<!--" followed by "<script" puts the HTML parser in the script's
// "double escaped" state, where "</script>" no longer ends the element and the
// rest of the page, charts and all, becomes this script's text. So no '<' (nor
// '>' or '&') reaches the page: JSON's \u escapes mean the same characters to
// JSON.parse, and outside strings a JSON text has none of them.
std::string json_script_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

constexpr const char* page_style = R"(
body { font: 14px/1.45 system-ui, sans-serif; color: #222; margin: 24px auto; max-width: 1100px; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin: 32px 0 4px; border-bottom: 1px solid #ccc; }
.source { color: #666; font-family: monospace; margin: 0 0 8px; }
.basis { padding: 6px 10px; border-left: 4px solid; }
.basis.measured { border-color: #009e73; background: #eef8f4; } .basis.predicted { border-color: #e69f00; background: #fdf6e8; }
.notices li { color: #8a5a00; }
figure.chart { margin: 18px 0; break-inside: avoid; page-break-inside: avoid; }
figcaption { margin-bottom: 6px; color: #444; max-width: 820px; } figcaption strong { color: #222; display: block; }
#tiletune-errors { color: #a00; background: #fee; padding: 8px; white-space: pre-wrap; }
#tiletune-status { color: #888; font-size: 12px; margin-top: 32px; }
@media print {
  body { margin: 0; max-width: none; } nav, #tiletune-status { display: none; }
  section.result + section.result { break-before: page; page-break-before: always; }
}
)";

// Captures every error of the page into #tiletune-errors (the browser test reads it).
constexpr const char* error_script = R"(
function tiletuneFail(message) {
  var box = document.getElementById('tiletune-errors');
  box.textContent += message + '\n';
  box.hidden = false;
}
window.addEventListener('error', function (e) { tiletuneFail('error: ' + e.message); });
window.addEventListener('unhandledrejection', function (e) { tiletuneFail('error: ' + e.reason); });
(function () {
  var error = console.error, warn = console.warn;
  console.error = function () { tiletuneFail('console.error: ' + Array.prototype.join.call(arguments, ' ')); error.apply(console, arguments); };
  console.warn = function () { tiletuneFail('console.warn: ' + Array.prototype.join.call(arguments, ' ')); warn.apply(console, arguments); };
})();
)";

// Debian's libjs-vega ships Vega's modules as separate UMD files; this AMD
// define() gives each the modules it names, in the order they are inlined.
constexpr const char* module_loader_script = R"(
var tiletuneModules = {}, tiletuneModuleName = '';
window.define = function (deps, factory) {
  var exported = {};
  var args = deps.map(function (d) {
    if (d === 'exports') return exported;
    if (d === 'vega-selections') d = 'vega-selection';  // vega-functions' name for it
    if (!(d in tiletuneModules)) throw new Error(tiletuneModuleName + ' needs ' + d + ', which is not inlined');
    return tiletuneModules[d];
  });
  factory.apply(null, args);
  tiletuneModules[tiletuneModuleName] = exported;
};
window.define.amd = true;
)";

// Joins the modules as vega's own index does: the transforms registered, parse and View exported.
constexpr const char* module_join_script = R"(
delete window.define;
window.vega = (function (m) {
  var v = {};
  ['vega-util', 'vega-loader', 'vega-scenegraph', 'vega-dataflow', 'vega-scale', 'vega-format', 'vega-view',
   'vega-parser', 'vega-runtime', 'vega-functions', 'vega-expression', 'vega-event-selector']
    .forEach(function (n) { Object.assign(v, m[n]); });
  Object.assign(m['vega-dataflow'].transforms, m['vega-transforms'], m['vega-view-transforms'], m['vega-encode']);
  return v;
})(tiletuneModules);
)";

constexpr const char* draw_script = R"(
(function () {
  var status = document.getElementById('tiletune-status');
  try {
    var charts = JSON.parse(document.getElementById('tiletune-specs').textContent);
    Promise.all(charts.map(function (c) {
      var element = document.getElementById(c.element);
      var view = new vega.View(vega.parse(c.spec), { renderer: 'svg', container: element, hover: true });
      return view.runAsync().then(function () { element.setAttribute('data-drawn', 'yes'); })
        .catch(function (e) { tiletuneFail('chart ' + c.element + ': ' + e); });
    })).then(function () {
      status.setAttribute('data-state', 'done');
      status.textContent = charts.length + ' chart(s) drawn by Vega.';
    });
  } catch (e) {
    tiletuneFail('report: ' + e);
  }
})();
)";

}  // namespace

std::string render_report_page(const std::vector<report_section>& sections, const vega_library& vega,
                               const std::string& command_line) {
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += fmt::format("<title>tiletune report{}</title>\n", sections.size() == 1 ? ": " + html_escape(sections[0].title) : "");
  html += fmt::format("<style>{}</style>\n</head>\n<body>\n", page_style);
  html += "<header><h1>tiletune report</h1>\n";
  html += fmt::format("<p class=\"source\">{}</p>\n", html_escape(command_line));
  html += "<p>Charts drawn by Vega, inlined in this page: it needs no network to view.</p></header>\n";
  html += "<pre id=\"tiletune-errors\" hidden></pre>\n";
  if (sections.size() > 1) {
    html += "<nav><ul>\n";
    for (std::size_t i = 0; i < sections.size(); ++i)
      html += fmt::format("<li><a href=\"#result-{}\">{}</a></li>\n", i + 1, html_escape(sections[i].title));
    html += "</ul></nav>\n";
  }
  nlohmann::json specs = nlohmann::json::array();
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const report_section& s = sections[i];
    html += fmt::format("<section class=\"result\" id=\"result-{}\" data-kind=\"{}\">\n<h2>{}</h2>\n", i + 1,
                        to_string(s.kind), html_escape(s.title));
    html += fmt::format("<p class=\"source\">{}</p>\n", html_escape(s.source));
    html += fmt::format("<p class=\"basis {}\">{}</p>\n", s.predicted ? "predicted" : "measured", html_escape(s.basis));
    if (!s.facts.empty()) {
      html += "<ul class=\"facts\">\n";
      for (const auto& f : s.facts) html += "<li>" + html_escape(f) + "</li>\n";
      html += "</ul>\n";
    }
    for (const auto& c : s.charts) {
      const std::string element = fmt::format("chart-{}", specs.size() + 1);
      html += fmt::format("<figure class=\"chart\"><figcaption><strong>{}</strong>{}</figcaption>\n"
                          "<div class=\"chart-view\" id=\"{}\" data-chart=\"{}\" data-rows=\"{}\"></div></figure>\n",
                          html_escape(c.title), html_escape(c.caption), element, html_escape(c.id), c.rows.size());
      specs.push_back({{"element", element}, {"spec", c.spec}});
    }
    if (!s.notices.empty()) {
      html += "<ul class=\"notices\">\n";
      for (const auto& n : s.notices) html += "<li>" + html_escape(n) + "</li>\n";
      html += "</ul>\n";
    }
    html += "</section>\n";
  }
  html += fmt::format("<div id=\"tiletune-status\" data-state=\"drawing\" data-charts=\"{}\"></div>\n", specs.size());
  html += fmt::format("<script>{}</script>\n", error_script);
  if (!vega.bundle) html += fmt::format("<script>{}</script>\n", module_loader_script);
  for (const auto& s : vega.scripts) {
    // One element per file, so a failing module is reported with its name.
    if (!vega.bundle) html += fmt::format("<script>tiletuneModuleName = '{}';</script>\n", s.module);
    // The file's name in a comment: a "*/" in it would end the comment and break the script.
    std::string name = html_escape(s.file.string());
    for (std::size_t at; (at = name.find("*/")) != std::string::npos;) name.replace(at, 2, "* /");
    html += fmt::format("<script>/* {} */\n{}\n</script>\n", name, script_safe(s.source));
  }
  if (!vega.bundle) html += fmt::format("<script>{}</script>\n", module_join_script);
  html += fmt::format("<script type=\"application/json\" id=\"tiletune-specs\">{}</script>\n", json_script_safe(specs.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  html += fmt::format("<script>{}</script>\n</body>\n</html>\n", draw_script);
  return html;
}

}  // namespace tiletune
