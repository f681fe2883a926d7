#include "sass_reading.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string_view>
#include <thread>
#include <utility>
#include <unistd.h>

#include <fmt/format.h>

#include "core/compile/cubin_resources.hpp"

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

namespace {

// "/*01a0*/   @P0 BRA 0x2c0 ;" -> address 0x1a0 and "@P0 BRA 0x2c0"; false for any other line.
bool listing_line(const std::string& l, long& address, std::string& instruction) {
  const std::size_t open = l.find("/*"), close = open == std::string::npos ? open : l.find("*/", open + 2);
  if (close == std::string::npos || close - open - 2 < 4 ||
      l.find_first_not_of("0123456789abcdef", open + 2) != close)
    return false;
  const std::size_t begin = l.find_first_not_of(" \t", close + 2), end = l.find(';', close + 2);
  if (begin == std::string::npos || end == std::string::npos || end <= begin) return false;
  address = std::stol(l.substr(open + 2, close - open - 2), nullptr, 16);
  instruction = l.substr(begin, l.find_last_not_of(" \t", end - 1) + 1 - begin);
  return true;
}

// The instructions whose operands are code addresses (branches, calls, returns, convergence
// barriers), which a raw image shows from its own start: `offset` is taken from each.
std::string rebased(const std::string& instruction, long offset) {
  const std::size_t op = instruction[0] == '@' ? instruction.find(' ') + 1 : 0;
  bool addresses = false;
  for (const char* o : {"BRA", "BSSY", "CALL", "RET", "JMP", "JMX", "BRX", "WARPSYNC"})
    addresses |= instruction.compare(op, std::strlen(o), o) == 0;
  if (!addresses || offset == 0) return instruction;
  std::string out;
  std::size_t at = 0;
  for (std::size_t x; (x = instruction.find("0x", at)) != std::string::npos;) {
    std::size_t end = instruction.find_first_not_of("0123456789abcdef", x + 2);
    if (end == std::string::npos) end = instruction.size();
    out += instruction.substr(at, x - at) + fmt::format("{:#x}", std::stol(instruction.substr(x + 2, end - x - 2), nullptr, 16) - offset);
    at = end;
  }
  return out + instruction.substr(at);
}

// One nvdisasm run over the code of `cubins` (all of architecture `arch`), one listing each.
std::vector<std::string> disassemble_batch(const std::vector<const std::string*>& cubins, const std::string& arch) {
  static std::atomic<unsigned> runs{0};
  struct piece {
    std::size_t cubin;
    std::string function;
    long begin, end;
  };
  std::vector<piece> pieces;
  std::string image;
  for (std::size_t i = 0; i < cubins.size(); ++i)
    for (const auto& [function, code] : tiletune::cubin_code_sections(*cubins[i])) {
      pieces.push_back({i, function, static_cast<long>(image.size()), static_cast<long>(image.size() + code.size())});
      image += code;  // SASS instructions are 16 bytes on every architecture read here: each piece stays aligned
    }
  std::vector<std::string> out(cubins.size());
  if (pieces.empty()) return out;
  const auto path = std::filesystem::temp_directory_path() / fmt::format("tiletune_sass_{}_{}.bin", getpid(), runs++);
  std::ofstream(path, std::ios::binary).write(image.data(), static_cast<std::streamsize>(image.size()));
  const std::string raw_arch = "SM" + arch.substr(arch.rfind('_') + 1);  // sm_90a -> SM90a
  const std::string bin_dir = std::filesystem::path(TILETUNE_CUOBJDUMP).parent_path().string();
  const std::string command =
      fmt::format("PATH=\"{}:$PATH\" nvdisasm -b {} -ndf '{}' 2>&1", bin_dir, raw_arch, path.string());
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string listing;
  if (pipe) {
    std::array<char, 1 << 16> buffer{};
    for (std::size_t n; (n = fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0;) listing.append(buffer.data(), n);
  }
  pipe.reset();
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  std::size_t p = 0;
  bool started = false;
  std::istringstream in(listing);
  long address = 0;
  std::string instruction;
  for (std::string l; std::getline(in, l);) {
    if (!listing_line(l, address, instruction)) continue;
    while (p < pieces.size() && address >= pieces[p].end) ++p, started = false;
    if (p == pieces.size()) break;
    if (address < pieces[p].begin) continue;
    std::string& sass = out[pieces[p].cubin];
    if (!started) sass += fmt::format("\t\tFunction : {}\n", pieces[p].function), started = true;
    sass += fmt::format("        /*{:04x}*/                   {} ;\n", address - pieces[p].begin,
                        rebased(instruction, pieces[p].begin));
  }
  // A function that nvdisasm did not list (it failed): its header at least, and its error.
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i].empty() && !tiletune::cubin_code_sections(*cubins[i]).empty()) out[i] = "nvdisasm listed nothing of it:\n" + listing.substr(0, 2000);
  return out;
}

}  // namespace

std::vector<std::string> disassemble_all(const std::vector<std::string>& cubins, const std::vector<std::string>& archs) {
  std::map<std::string, std::vector<std::size_t>> by_arch;
  for (std::size_t i = 0; i < cubins.size(); ++i)
    if (!cubins[i].empty()) by_arch[archs.at(i)].push_back(i);
  // Each architecture's cubins in as many runs as there are cores, at most one per 8 cubins.
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::pair<std::string, std::vector<std::size_t>>> runs;
  for (const auto& [arch, which] : by_arch) {
    const std::size_t n = std::min(cores, (which.size() + 7) / 8);
    for (std::size_t r = 0; r < n; ++r) {
      runs.push_back({arch, {}});
      for (std::size_t j = r; j < which.size(); j += n) runs.back().second.push_back(which[j]);
    }
  }
  std::vector<std::string> out(cubins.size());
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> workers;
  for (std::size_t w = 0; w < std::min(cores, runs.size()); ++w)
    workers.emplace_back([&] {
      for (std::size_t r; (r = next++) < runs.size();) {
        std::vector<const std::string*> batch;
        for (std::size_t i : runs[r].second) batch.push_back(&cubins[i]);
        std::vector<std::string> listed = disassemble_batch(batch, runs[r].first);
        for (std::size_t j = 0; j < listed.size(); ++j) out[runs[r].second[j]] = std::move(listed[j]);
      }
    });
  for (auto& w : workers) w.join();
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
