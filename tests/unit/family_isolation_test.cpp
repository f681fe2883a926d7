// Each kernel family lives in its own folders, src/core/gemm/families/<name>/
// and kernels_templates/<name>/, and nothing else names it (DESIGN.md: "Each
// family is one module"): not the core, the CLI, the common templates, the
// build files or the schemas, in code, literals or comments. Only the registry
// (src/core/gemm/families/registry.cpp) lists them.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/compile/kernel_templates.hpp"
#include "core/gemm/family.hpp"
#include "core/gemm/problem.hpp"

namespace tiletune {
namespace {

namespace fs = std::filesystem;

// A file's family folder, if it is in one: src/core/gemm/families/<name>/...
bool in_family_folder(const std::string& rel) {
  const std::string prefix = "core/gemm/families/";
  return rel.starts_with(prefix) && rel.find('/', prefix.size()) != std::string::npos;
}

// Where a file names a family as a word or as a part of an identifier, in code,
// literals and comments alike ("mma", "is_wgmma", "tt_simt_offset", "mma.sync"),
// but not inside a longer word ("comma", "HMMA"): "path:line: text".
std::vector<std::string> strict_mentions(const fs::path& root, const fs::path& file,
                                         const std::vector<std::string>& names) {
  std::vector<std::string> found;
  std::ifstream in(file, std::ios::binary);
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    for (const auto& name : names) {
      const std::regex token("(^|[^A-Za-z0-9])" + name + "([^A-Za-z0-9]|$)");
      if (std::regex_search(text, token))
        found.push_back(fmt::format("{}:{}: names the {} family: {}", fs::relative(file, root).generic_string(), line,
                                    name, text));
    }
  }
  return found;
}

// Everything outside the family folders: the core and CLI sources, the common
// templates, the build files and the schemas. The registry is the one exemption.
TEST(family_isolation, no_file_outside_a_family_folder_names_a_family_or_its_identifiers) {
  const fs::path root = TILETUNE_SOURCE_DIR;
  std::vector<std::string> names;
  for (const gemm_family* f : all_families()) names.emplace_back(f->name());
  ASSERT_GE(names.size(), 3u);
  std::vector<fs::path> files = {root / "CMakeLists.txt"};
  for (const char* dir : {"src", "kernels_templates/common", "cmake", "schemas"})
    for (const auto& e : fs::recursive_directory_iterator(root / dir))
      if (e.is_regular_file()) files.push_back(e.path());
  std::vector<std::string> found;
  std::size_t checked = 0;
  for (const auto& file : files) {
    const std::string rel = fs::relative(file, root / "src").generic_string();
    if (in_family_folder(rel) || rel == "core/gemm/families/registry.cpp") continue;
    ++checked;
    for (auto& f : strict_mentions(root, file, names)) found.push_back(std::move(f));
  }
  EXPECT_GT(checked, 100u);
  std::string all;
  for (const auto& f : found) all += f + "\n";
  EXPECT_TRUE(found.empty()) << "a family is named outside its folders (src/core/gemm/families/<name>/, "
                                "kernels_templates/<name>/):\n"
                             << all;
}

// The kernel side of the same rule: a family's source is rendered from the
// templates of its own folder, kernels_templates/<name>/, and common/ only,
// and every embedded template sits in a family's folder or common/.
TEST(family_isolation, a_family_renders_its_own_templates_and_the_common_ones) {
  std::vector<std::string> names;
  for (const gemm_family* f : all_families()) names.emplace_back(f->name());
  std::size_t own_total = 0;
  for (const gemm_family* f : all_families()) {
    const std::string own = std::string(f->name()) + "/";
    const dtype t = f->serves(dtype::bf16) ? dtype::bf16 : dtype::f32;
    const auto space = f->default_space(t);
    ASSERT_FALSE(space.empty()) << f->name();
    const std::string src = render_kernel_source(space.front(), t, parse_layout("nt"));
    static const std::regex line_marker("#line 1 \"([^\"]+)\"");
    std::size_t own_files = 0;
    for (std::sregex_iterator it(src.begin(), src.end(), line_marker), end; it != end; ++it) {
      const std::string file = (*it)[1];
      EXPECT_TRUE(file.starts_with(own) || file.starts_with("common/"))
          << f->name() << " renders " << file << ", from another family's folder";
      own_files += file.starts_with(own);
    }
    EXPECT_GE(own_files, 1u) << f->name() << " renders nothing from kernels_templates/" << own;
    own_total += own_files;
  }
  EXPECT_GE(own_total, names.size());
  for (const auto& tpl : embedded_templates()) {
    const std::string name = tpl.name, folder = name.substr(0, name.find('/'));
    EXPECT_TRUE(folder == "common" || std::find(names.begin(), names.end(), folder) != names.end())
        << name << " is in no family's folder";
  }
}

// The strict check catches a family in a comment, in an identifier and in a
// literal, and not inside a longer word.
TEST(family_isolation, the_strict_check_finds_identifiers_and_comments) {
  const fs::path dir = fs::temp_directory_path() / "tiletune_family_isolation_strict";
  fs::create_directories(dir);
  const fs::path file = dir / "plant.cpp";
  std::ofstream(file) << "// the mma family, in a comment\n"
                         "int is_wgmma = 0;\n"
                         "int y = tt_simt_offset(1);\n"
                         "const char* t = \"a comma, HMMA.16816, mmap\";\n"
                         "help(\"ids such as mma_128x128x32_w2x2_s3\");\n";
  const auto found = strict_mentions(dir, file, {"simt", "mma", "wgmma"});
  ASSERT_EQ(found.size(), 4u) << ::testing::PrintToString(found);
  EXPECT_NE(found[0].find("plant.cpp:1: names the mma family"), std::string::npos) << found[0];
  EXPECT_NE(found[1].find("plant.cpp:2: names the wgmma family"), std::string::npos) << found[1];
  EXPECT_NE(found[2].find("plant.cpp:3: names the simt family"), std::string::npos) << found[2];
  EXPECT_NE(found[3].find("plant.cpp:5: names the mma family"), std::string::npos) << found[3];
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tiletune
