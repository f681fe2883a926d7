// Each kernel family lives in its own folder, src/core/gemm/families/<name>/,
// and nothing else in src/ names it (DESIGN.md: "Each family is one
// module"): no `kernel_family::<name>`-style identifier, no "<name>" or
// "<name>_gemm.cu" literal, no include of another family's folder. Only the
// registry (src/core/gemm/families/registry.cpp) lists them. Comments and
// raw-string prose (help footers) may mention a family, and literals may hold
// variant ids ("mma_128x128x32_w2x2_s3"); code and other literals may not.
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

struct piece {
  std::string text;
  bool literal;  // a string or character literal's contents
  int line;
};

// The code and literals of a C++ file, comments and raw literals dropped.
std::vector<piece> lex(const std::string& s) {
  std::vector<piece> out;
  std::string code;
  int line = 1, code_line = 1;
  auto flush = [&] {
    if (!code.empty()) out.push_back({code, false, code_line});
    code.clear();
    code_line = line;
  };
  for (std::size_t i = 0; i < s.size();) {
    const char ch = s[i];
    if (ch == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (ch == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const std::size_t end = s.find("*/", i + 2);
      const std::size_t stop = end == std::string::npos ? s.size() : end + 2;
      for (; i < stop; ++i) line += s[i] == '\n';
      code += ' ';
    } else if (ch == 'R' && i + 1 < s.size() && s[i + 1] == '"' &&
               (i == 0 || !(std::isalnum(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == '_'))) {
      const std::size_t open = s.find('(', i + 2);
      std::string close(1, ')');
      close.append(s, i + 2, open - i - 2);
      close.push_back('"');
      const std::size_t end = s.find(close, open);
      const std::size_t stop = end == std::string::npos ? s.size() : end + close.size();
      // Raw literals hold prose (the commands' help footers, SQL): read like comments.
      code += ' ';
      for (; i < stop; ++i) line += s[i] == '\n';
      code_line = line;
    } else if (ch == '"' || (ch == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(s[i - 1]))))) {
      // (a ' after a hex digit is a digit separator, 1'000)
      std::string text;
      std::size_t j = i + 1;
      for (; j < s.size() && s[j] != ch && s[j] != '\n'; ++j) {
        if (s[j] == '\\' && j + 1 < s.size()) text += s[j++];
        text += s[j];
      }
      flush();
      out.push_back({text, true, line});
      i = j + 1;
      code_line = line;
    } else {
      if (ch == '\n') ++line;
      code += ch;
      ++i;
    }
  }
  flush();
  return out;
}

// Where a file under src/ names a family outside its folder: "path:line: text".
std::vector<std::string> family_mentions(const fs::path& src, const fs::path& file,
                                         const std::vector<std::string>& names) {
  const std::string rel = fs::relative(file, src).generic_string();
  std::vector<std::string> found;
  std::ifstream in(file, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  for (const auto& p : lex(buf.str())) {
    for (const auto& name : names) {
      // In code, the name as a whole identifier (kernel_family::name, name(...));
      // in a literal, also as a prefix of a file or symbol name ("name_gemm.cu"),
      // but not as a variant id ("name_128x128x32_..."), a stable name users type.
      const std::regex word(p.literal ? "(^|[^A-Za-z0-9])" + name + "(?!_[0-9]+x[0-9]+x[0-9]+)([^A-Za-z0-9]|$)"
                                      : "(^|[^A-Za-z0-9_])" + name + "([^A-Za-z0-9_]|$)");
      std::smatch m;
      if (std::regex_search(p.text, m, word)) {
        const auto before = p.text.substr(0, static_cast<std::size_t>(m.position(0)));
        const int line = p.line + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
        found.push_back(fmt::format("src/{}:{}: names the {} family in {}", rel, line, name,
                                    p.literal ? "a literal" : "code"));
      }
    }
  }
  return found;
}

// A file's family folder, if it is in one: src/core/gemm/families/<name>/...
bool in_family_folder(const std::string& rel) {
  const std::string prefix = "core/gemm/families/";
  return rel.starts_with(prefix) && rel.find('/', prefix.size()) != std::string::npos;
}

TEST(family_isolation, no_file_outside_a_family_folder_names_a_family) {
  const fs::path src = fs::path(TILETUNE_SOURCE_DIR) / "src";
  ASSERT_TRUE(fs::is_directory(src)) << src;
  std::vector<std::string> names;
  for (const gemm_family* f : all_families()) names.emplace_back(f->name());
  ASSERT_GE(names.size(), 3u);
  std::vector<std::string> found;
  std::size_t checked = 0;
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh" && ext != ".in") continue;
    const std::string rel = fs::relative(e.path(), src).generic_string();
    if (in_family_folder(rel) || rel == "core/gemm/families/registry.cpp") continue;
    ++checked;
    for (auto& f : family_mentions(src, e.path(), names)) found.push_back(std::move(f));
  }
  EXPECT_GT(checked, 50u);
  std::string all;
  for (const auto& f : found) all += f + "\n";
  EXPECT_TRUE(found.empty()) << "a family is named outside its folder (core/gemm/families/<name>/):\n" << all;
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

// The check itself: it sees a family in code and literals, not in comments,
// raw-string prose, variant ids or longer identifiers.
TEST(family_isolation, the_check_finds_names_in_code_and_literals_only) {
  const fs::path dir = fs::temp_directory_path() / "tiletune_family_isolation";
  fs::create_directories(dir);
  const fs::path file = dir / "plant.cpp";
  std::ofstream(file) << "// the mma family, in a comment\n"
                         "/* wgmma too */ int is_wgmma = 0, mma_count = 1;\n"
                         "auto f = family_named(\"simt\");\n"
                         "if (c.family == kernel_family::mma) {}\n"
                         "const char* t = \"wgmma_gemm.cu\";\n"
                         "cmd->footer(R\"(the simt family, in help text)\");\n"
                         "help(\"ids such as mma_128x128x32_w2x2_s3\");\n";
  const auto found = family_mentions(dir, file, {"simt", "mma", "wgmma"});
  ASSERT_EQ(found.size(), 3u) << ::testing::PrintToString(found);
  EXPECT_NE(found[0].find("plant.cpp:3: names the simt family in a literal"), std::string::npos) << found[0];
  EXPECT_NE(found[1].find("plant.cpp:4: names the mma family in code"), std::string::npos) << found[1];
  EXPECT_NE(found[2].find("plant.cpp:5: names the wgmma family in a literal"), std::string::npos) << found[2];
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tiletune
