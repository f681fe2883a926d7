// The libraries and the unit, cli and compile tests are compiled in batches of files, each batch
// one translation unit (TILETUNE_UNITY_BUILD; the host emulations one batch per family): what one file defines in its anonymous namespace is
// seen by the files after it in its batch. The same name with the same signature stops the
// build, but with another signature it quietly becomes an overload, and a call may bind to the
// other file's function. So no two batched files of one target define the same file-local name;
// the batched files are those tests/CMakeLists.txt lists in unity_sources.txt.
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The name a line at column 0 declares: the word after struct/class/enum/using, or else the
// identifier just before the first '(', '=', '{' or '[' ("double cost(", "const int n = 1;").
std::string declared_name(const std::string& line) {
  for (const char* keyword : {"struct ", "class ", "enum class ", "enum ", "using "}) {
    if (!starts_with(line, keyword)) continue;
    std::size_t b = std::string(keyword).size(), e = b;
    while (e < line.size() && identifier_char(line[e])) ++e;
    return line.substr(b, e - b);
  }
  const std::size_t stop = line.find_first_of("(={[");
  if (stop == std::string::npos) return "";
  std::size_t e = stop;
  while (e > 0 && line[e - 1] == ' ') --e;
  std::size_t b = e;
  while (b > 0 && identifier_char(line[b - 1])) --b;
  const std::string name = line.substr(b, e - b);
  return name == "operator" || (!name.empty() && std::isdigit(static_cast<unsigned char>(name[0]))) ? "" : name;
}

// The names a file's text defines at column 0 inside an anonymous namespace (or `static`).
std::set<std::string> file_local_names(const std::string& text) {
  std::set<std::string> names;
  std::vector<bool> anonymous;  // the open namespaces, innermost last
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (starts_with(line, "namespace") && line.find('{') != std::string::npos) {
      anonymous.push_back(line.find_first_not_of(' ', 9) == line.find('{'));
      continue;
    }
    if (starts_with(line, "}") && line.find("namespace") != std::string::npos) {
      if (!anonymous.empty()) anonymous.pop_back();
      continue;
    }
    const bool local = (!anonymous.empty() && anonymous.back()) || starts_with(line, "static ");
    if (!local || line.empty() || std::isspace(static_cast<unsigned char>(line[0])) ||
        std::string("#}/").find(line[0]) != std::string::npos || starts_with(line, "TEST") ||
        starts_with(line, "template") || starts_with(line, "namespace") || starts_with(line, "using namespace"))
      continue;
    const std::string name = declared_name(line);
    if (!name.empty()) names.insert(name);
  }
  return names;
}

// "name: file, file" for each name two files of one target define locally.
std::vector<std::string> shared_local_names(const std::multimap<std::string, std::string>& files_by_target,
                                            const std::map<std::string, std::string>& text_of) {
  std::vector<std::string> found;
  std::map<std::string, std::map<std::string, std::vector<std::string>>> where;  // target, name: files
  for (const auto& [target, file] : files_by_target)
    for (const std::string& name : file_local_names(text_of.at(file))) where[target][name].push_back(file);
  for (const auto& [target, names] : where)
    for (const auto& [name, files] : names)
      if (files.size() > 1) {
        std::string line = target + ": " + name + " in";
        for (const auto& f : files) line += " " + f;
        found.push_back(line);
      }
  return found;
}

}  // namespace

TEST(unity_names, no_two_batched_files_of_a_target_define_one_local_name) {
  std::ifstream list(TILETUNE_UNITY_SOURCES);
  ASSERT_TRUE(list) << TILETUNE_UNITY_SOURCES;
  std::multimap<std::string, std::string> files_by_target;
  std::map<std::string, std::string> text_of;
  std::size_t names = 0;
  for (std::string target, file; list >> target >> file;) {
    std::ifstream in(file);
    ASSERT_TRUE(in) << file;
    std::stringstream s;
    s << in.rdbuf();
    text_of[file] = s.str();
    names += file_local_names(text_of[file]).size();
    files_by_target.emplace(target, file);
  }
  // The libraries' and tests' batched files, and their helpers, are there to check.
  for (const char* target : {"tiletune_core", "tiletune_cli", "unit_tests", "cli_tests"})
    EXPECT_GE(files_by_target.count(target), 10u) << target;
  EXPECT_GT(names, 300u);
  for (const std::string& s : shared_local_names(files_by_target, text_of)) ADD_FAILURE() << s;
}

TEST(unity_names, a_planted_helper_of_the_same_name_in_two_files_is_found) {
  const std::string a = "namespace tiletune {\nnamespace {\nstruct scratch {\n  int dir;\n};\n"
                        "double cost(const int& v) {\n  return v;\n}\n}  // namespace\n\n"
                        "double public_cost(int v) { return v; }\n}  // namespace tiletune\n";
  const std::string b = "namespace {\nconst std::map<std::string, int> bytes_of{{\"f32\", 4}};\n"
                        "namespace fs = std::filesystem;\nstatic double cost(long v, int w = 1) { return v; }\n"
                        "}  // namespace\n"
                        "TEST(x, y) {\n  scratch s;\n}\n";
  EXPECT_EQ(file_local_names(a), (std::set<std::string>{"scratch", "cost"}));
  EXPECT_EQ(file_local_names(b), (std::set<std::string>{"bytes_of", "cost"}));
  const std::multimap<std::string, std::string> files = {{"t", "a.cpp"}, {"t", "b.cpp"}, {"u", "c.cpp"}};
  const std::map<std::string, std::string> texts = {{"a.cpp", a}, {"b.cpp", b}, {"c.cpp", a}};
  EXPECT_EQ(shared_local_names(files, texts), (std::vector<std::string>{"t: cost in a.cpp b.cpp"}));
}
