#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tiletune {

// The chart library a report inlines: Vega 5 (https://vega.github.io/vega/).
// Vega, because its chart specs are JSON: the C++ side builds them with
// nlohmann/json and the unit tests read the data each chart is given.
// Debian's libjs-vega ships Vega's modules as separate UMD files under
// /usr/share/javascript/vega/ (vega-util.min.js, vega-view.min.js, ...), not
// one bundle; a report inlines the ones it needs, in dependency order, and a
// few lines of loader script join them (html_report.cpp). A folder holding
// upstream's single bundle (vega.min.js) is used as it is.
struct vega_script {
  std::string module;  // "vega-util", or "vega" for a whole bundle
  std::filesystem::path file;
  std::string source;
};

struct vega_library {
  std::filesystem::path dir;
  bool bundle = false;  // one vega.min.js
  std::vector<vega_script> scripts;
};

// Where Debian's libjs-vega puts Vega.
inline const std::filesystem::path default_vega_dir = "/usr/share/javascript/vega";

// The module files read from a folder of Debian's layout, in load order.
std::vector<std::string> vega_module_names();

// Reads Vega from DIR: the folder given, else $TILETUNE_VEGA_DIR, else
// default_vega_dir. Throws environment_error naming the first missing file and
// the package that provides it (exit 3).
vega_library load_vega_library(const std::optional<std::filesystem::path>& dir);

}  // namespace tiletune
