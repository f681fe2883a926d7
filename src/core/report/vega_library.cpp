#include "core/report/vega_library.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace tiletune {

namespace {

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw environment_error(fmt::format("{} cannot be read", file.string()));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool is_file(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

[[noreturn]] void missing(const std::filesystem::path& file, bool from_default) {
  throw environment_error(fmt::format(
      "the chart library is missing: {} does not exist. `tiletune report` inlines Vega 5 from Debian's package "
      "libjs-vega (sudo apt-get install libjs-vega; scripts/setup.sh installs it){}",
      file.string(),
      from_default ? ", or give --vega-dir DIR (or TILETUNE_VEGA_DIR) a folder with Vega 5's files"
                   : "; the folder given by --vega-dir or TILETUNE_VEGA_DIR must hold Vega 5's files (Debian's "
                     "layout, or upstream's vega.min.js)"));
}

}  // namespace

std::vector<std::string> vega_module_names() {
  // Each after the modules it needs (their UMD headers name them). Enough to
  // parse and draw specs with the SVG renderer: no geo, force, hierarchy,
  // label, regression, voronoi, wordcloud or crossfilter transforms.
  return {"vega-util",       "vega-time",          "vega-format",         "vega-loader",     "vega-dataflow",
          "vega-statistics", "vega-expression",    "vega-selection",      "vega-canvas",     "vega-scale",
          "vega-scenegraph", "vega-functions",     "vega-event-selector", "vega-runtime",    "vega-view",
          "vega-parser",     "vega-transforms",    "vega-view-transforms", "vega-encode"};
}

vega_library load_vega_library(const std::optional<std::filesystem::path>& dir) {
  vega_library lib;
  bool from_default = false;
  if (dir) {
    lib.dir = *dir;
  } else if (const char* env = std::getenv("TILETUNE_VEGA_DIR"); env && *env) {
    lib.dir = env;
  } else {
    lib.dir = default_vega_dir;
    from_default = true;
  }
  std::error_code ec;
  if (!from_default && !std::filesystem::is_directory(lib.dir, ec))
    throw environment_error(fmt::format("{} (--vega-dir or TILETUNE_VEGA_DIR) is not a folder", lib.dir.string()));
  if (const auto bundle = lib.dir / "vega.min.js"; is_file(bundle)) {
    lib.bundle = true;
    lib.scripts.push_back({"vega", bundle, read_text(bundle)});
    return lib;
  }
  std::vector<vega_script> modules;
  for (const auto& name : vega_module_names()) {
    const auto file = lib.dir / (name + ".min.js");
    if (!is_file(file)) missing(file, from_default);
    modules.push_back({name, file, read_text(file)});
  }
  // vega-loader's UMD header asks for topojson-client, which libjs-vega installs beside vega/.
  const std::filesystem::path topojson_here = lib.dir / "topojson-client.min.js";
  const std::filesystem::path topojson_debian = lib.dir.parent_path() / "topojson-client" / "topojson-client.min.js";
  if (is_file(topojson_here))
    lib.scripts.push_back({"topojson-client", topojson_here, read_text(topojson_here)});
  else if (is_file(topojson_debian))
    lib.scripts.push_back({"topojson-client", topojson_debian, read_text(topojson_debian)});
  else
    missing(from_default ? topojson_debian : topojson_here, from_default);
  lib.scripts.insert(lib.scripts.end(), modules.begin(), modules.end());
  return lib;
}

}  // namespace tiletune
