#include "sass_reading.hpp"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <unistd.h>

#include <fmt/format.h>

namespace tiletune_test {

std::string disassemble(const std::string& cubin, const std::string& name) {
  // A folder of its own per call: threads of one process disassemble in parallel, and one that
  // removed a shared folder between another's creating it and writing its cubin left that one
  // no SASS to read (a compile test saw "0 main loops" once in CI).
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("tiletune_sass_{}_{}", getpid(), name);
  std::filesystem::create_directories(dir);
  const auto path = dir / (name + ".cubin");
  std::ofstream(path, std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  // cuobjdump runs nvdisasm, found on PATH or next to it.
  const std::string bin_dir = std::filesystem::path(TILETUNE_CUOBJDUMP).parent_path().string();
  const std::string command =
      fmt::format("PATH=\"{}:$PATH\" '{}' -sass '{}' 2>&1", bin_dir, TILETUNE_CUOBJDUMP, path.string());
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (pipe) {
    std::array<char, 4096> buffer{};
    std::size_t n = 0;
    while ((n = fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0) out.append(buffer.data(), n);
  }
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  std::filesystem::remove(dir, ignored);
  return out;
}

std::vector<std::string> instructions(const std::string& sass) {
  static const std::regex line(R"(/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;)");
  std::vector<std::string> out;
  std::istringstream in(sass);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, line)) out.push_back(m[1]);
  }
  return out;
}

namespace {
// The opcode of an instruction, its predicate ("@P0 ", "@!UP1 ") dropped.
std::string opcode(const std::string& instruction) {
  std::string s = instruction;
  if (!s.empty() && s[0] == '@') s = s.substr(s.find(' ') + 1);
  return s.substr(0, s.find(' '));
}
bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
}  // namespace

std::vector<std::string> hgmma_issue_problems(const std::string& sass, int per_k_tile, const char* mnemonic) {
  std::vector<std::string> problems;
  int groups = 0, in_group = 0;
  std::string waits;  // a wait seen since the group's first HGMMA
  for (const std::string& ins : instructions(sass)) {
    const std::string op = opcode(ins);
    if (starts_with(op, mnemonic)) {
      if (in_group > 0 && !waits.empty())
        problems.push_back(fmt::format("{} between the {}s of k-group {}", waits, mnemonic, groups + 1));
      waits.clear();
      ++in_group;
      if (ins.find("gsb0") != std::string::npos) {
        ++groups;
        if (in_group != per_k_tile)
          problems.push_back(fmt::format("k-group {} has {} {} where the tile implies {}{}", groups, in_group, mnemonic,
                                         per_k_tile, in_group == 1 ? " (serialized: a gsb0 on each)" : ""));
        in_group = 0;
      }
    } else if (in_group > 0 && (starts_with(op, "WARPGROUP") || starts_with(op, "BAR") ||
                                starts_with(op, "WARPSYNC") || starts_with(op, "DEPBAR"))) {
      waits = op;
    }
  }
  if (in_group > 0) problems.push_back(fmt::format("{} {} at the end belong to no committed group", in_group, mnemonic));
  if (groups == 0) problems.push_back(fmt::format("no {} k-group at all", mnemonic));
  return problems;
}

int uniform_moves_in_k_groups(const std::string& sass, const char* mnemonic) {
  int moves = 0, pending = 0;  // pending: R2UR since the group's last HGMMA
  bool in_group = false;
  for (const std::string& ins : instructions(sass)) {
    const std::string op = opcode(ins);
    if (starts_with(op, mnemonic)) {
      if (in_group) moves += pending;
      pending = 0;
      in_group = ins.find("gsb0") == std::string::npos;
    } else if (in_group && starts_with(op, "R2UR")) {
      ++pending;
    }
  }
  return moves;
}

namespace {
// Every loop of a listing: from a backward branch's target to the branch.
std::vector<hmma_loop> all_loops(const std::string& sass) {
  static const std::regex line(R"(/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;)");
  static const std::regex branch(R"(BRA\s+(?:\S+\s+)?0x([0-9a-f]+))");
  std::vector<std::pair<long, std::string>> code;  // address, instruction
  std::istringstream in(sass);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, line)) code.emplace_back(std::stol(m[1].str(), nullptr, 16), m[2].str());
  }
  std::vector<hmma_loop> loops;
  for (std::size_t i = 0; i < code.size(); ++i) {
    std::smatch m;
    if (opcode(code[i].second) != "BRA" || !std::regex_search(code[i].second, m, branch)) continue;
    const long target = std::stol(m[1].str(), nullptr, 16);
    if (target >= code[i].first) continue;
    hmma_loop loop;
    for (std::size_t j = 0; j <= i; ++j) {
      if (code[j].first < target) continue;
      const std::string op = opcode(code[j].second);
      ++loop.instructions;
      loop.hmma += starts_with(op, "HMMA") || starts_with(op, "QMMA");  // fp8's mma.sync is QMMA (sm_89)
      loop.ldsm += starts_with(op, "LDSM");
      loop.barriers += starts_with(op, "BAR");
      loop.ffma += starts_with(op, "FFMA");
      loop.lds += op == "LDS" || starts_with(op, "LDS.");
      if (starts_with(op, "LDGSTS")) {
        ++loop.copies;
        loop.zero_filling_copies += op.find("ZFILL") != std::string::npos;
      }
    }
    loops.push_back(loop);
  }
  return loops;
}
}  // namespace

std::vector<hmma_loop> hmma_loops(const std::string& sass) {
  std::vector<hmma_loop> out;
  for (const hmma_loop& l : all_loops(sass))
    if (l.hmma > 0) out.push_back(l);
  return out;
}

std::vector<hmma_loop> ffma_loops(const std::string& sass) {
  std::vector<hmma_loop> out;
  for (const hmma_loop& l : all_loops(sass))
    if (l.ffma > 0) out.push_back(l);
  return out;
}

std::vector<std::string> mma_main_loop_problems(const std::string& sass, int per_k_tile, double budget,
                                                double edge_budget) {
  std::vector<std::string> problems;
  int main_loops = 0;
  for (const hmma_loop& l : hmma_loops(sass)) {
    if (l.copies == 0) continue;  // not a pipelined loop (the element-wise path of unaligned rows)
    const bool edge = l.zero_filling_copies > 0;
    main_loops += !edge;
    const double limit = edge ? edge_budget : budget;
    const char* which = edge ? "the edge blocks' loop" : "the main loop";
    if (l.per_hmma() > limit)
      problems.push_back(fmt::format("{}: {} instructions for {} HMMA, {:.2f} per HMMA, over {}", which, l.instructions,
                                     l.hmma, l.per_hmma(), limit));
    if (l.hmma != per_k_tile)
      problems.push_back(fmt::format("{}: {} HMMA where one k-tile is {}", which, l.hmma, per_k_tile));
    if (l.barriers != 1) problems.push_back(fmt::format("{}: {} barriers per k-tile, not 1", which, l.barriers));
  }
  if (main_loops != 1)
    problems.push_back(fmt::format("{} main loops copying without bounds, not 1", main_loops));
  return problems;
}

std::vector<std::string> ptxas_performance_warnings(const std::string& log) {
  std::vector<std::string> found;
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);)
    if (l.find("C751") != std::string::npos || l.find("Performance Loss") != std::string::npos ||
        l.find("serialized") != std::string::npos || l.find("injected") != std::string::npos)
      found.push_back(l);
  return found;
}

}  // namespace tiletune_test
