#include "core/compile/cubin_resources.hpp"

#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace tiletune {

namespace {

// .nv.info record formats and attribute codes, as cuobjdump -elf names them
// (checked against cubins NVRTC 13.0 compiled here, with and without local memory).
constexpr std::uint8_t eifmt_sval = 0x04;  // a u16 size follows, then that many bytes
constexpr std::uint8_t eiattr_frame_size = 0x11;
constexpr std::uint8_t eiattr_min_stack_size = 0x12;
constexpr std::uint8_t eiattr_regcount = 0x2f;

constexpr int max_registers_per_thread = 255;  // every architecture since sm_35
constexpr std::uint32_t sht_symtab = 2;
constexpr std::uint32_t sht_nobits = 8;
constexpr std::size_t elf64_symbol_size = 24;
// From sm_90 on, a kernel's .nv.shared section starts with 1 KB the toolchain
// reserves (the cubin then names this symbol); ptxas's "bytes smem" leaves it out.
constexpr std::string_view reserved_smem_symbol = ".nv.reservedSmem.offset0";
constexpr std::int64_t reserved_smem_bytes = 1024;
constexpr std::size_t elf64_header_size = 64;
constexpr std::size_t elf64_section_header_size = 64;

template <typename T>
T read_le(std::string_view bytes, std::size_t at) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    v |= static_cast<T>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return v;
}

// True when [offset, offset + size) lies inside a file of `total` bytes, without overflow.
bool fits(std::uint64_t offset, std::uint64_t size, std::size_t total) {
  return offset <= total && size <= total - offset;
}

struct section {
  std::string_view name;
  std::uint32_t type = 0;
  std::uint64_t offset = 0, size = 0;
  std::uint32_t link = 0;
  std::uint32_t info = 0;
};

// The NUL-terminated string at `offset` of a string table, or empty when out of range.
std::string_view string_at(std::string_view table, std::uint64_t offset) {
  if (offset >= table.size()) return {};
  const std::string_view rest = table.substr(static_cast<std::size_t>(offset));
  return rest.substr(0, rest.find('\0'));
}

// The section header table of an ELF64 cubin whose bounds have been checked.
struct section_table {
  std::string_view cubin;
  std::uint64_t offset = 0;
  std::uint16_t entry_size = 0, count = 0, names_index = 0;

  // Section i, and the offset of its name in the section-name table.
  std::pair<section, std::uint32_t> header(std::size_t i) const {
    const std::size_t at = static_cast<std::size_t>(offset) + i * entry_size;
    section s;
    s.type = read_le<std::uint32_t>(cubin, at + 4);
    s.offset = read_le<std::uint64_t>(cubin, at + 24);
    s.size = read_le<std::uint64_t>(cubin, at + 32);
    s.link = read_le<std::uint32_t>(cubin, at + 40);
    s.info = read_le<std::uint32_t>(cubin, at + 44);
    s.name = {};
    return std::pair{s, read_le<std::uint32_t>(cubin, at)};
  }
};

bool read_section_table(std::string_view cubin, section_table& table, std::string& error) {
  if (cubin.size() < elf64_header_size || std::memcmp(cubin.data(), "\x7f" "ELF", 4) != 0) {
    error = fmt::format("not an ELF file ({} bytes)", cubin.size());
    return false;
  }
  if (cubin[4] != 2 || cubin[5] != 1) {
    error = fmt::format("ELF class {} / data {}: not a little-endian ELF64 cubin",
                        static_cast<int>(cubin[4]), static_cast<int>(cubin[5]));
    return false;
  }
  const auto shoff = read_le<std::uint64_t>(cubin, 0x28);
  const auto shentsize = read_le<std::uint16_t>(cubin, 0x3a);
  const auto shnum = read_le<std::uint16_t>(cubin, 0x3c);
  const auto shstrndx = read_le<std::uint16_t>(cubin, 0x3e);
  if (shentsize < elf64_section_header_size || shnum == 0 || shstrndx >= shnum ||
      !fits(shoff, static_cast<std::uint64_t>(shentsize) * shnum, cubin.size())) {
    error = fmt::format("section header table (offset {}, {} entries of {} bytes) lies outside the {}-byte file",
                        shoff, shnum, shentsize, cubin.size());
    return false;
  }
  table = {cubin, shoff, shentsize, shnum, shstrndx};
  return true;
}

// The sections that describe one kernel.
struct kernel_sections {
  bool found_text = false, found_info = false, found_shared = false;
  std::uint32_t symbol = 0;
  section info, symtab;
};

bool find_kernel_sections(const section_table& table, std::string_view entry, kernel_sections& found,
                          cubin_resources& out, std::string& error) {
  const std::string_view cubin = table.cubin;
  const section names = table.header(table.names_index).first;
  if (names.type == sht_nobits || !fits(names.offset, names.size, cubin.size())) {
    error = "the section-name table lies outside the file";
    return false;
  }
  const std::string_view name_table = cubin.substr(static_cast<std::size_t>(names.offset),
                                                   static_cast<std::size_t>(names.size));
  const std::string text_name = fmt::format(".text.{}", entry);
  const std::string shared_name = fmt::format(".nv.shared.{}", entry);
  for (std::size_t i = 0; i < table.count; ++i) {
    auto [s, name_offset] = table.header(i);
    s.name = string_at(name_table, name_offset);
    if (s.type == sht_symtab) found.symtab = s;
    if (s.name == text_name) {
      found.found_text = true;
      // sh_info of a kernel's .text: its symbol index in the low 24 bits; older
      // cubins keep the register count in the top 8 bits.
      found.symbol = s.info & 0xffffffu;
      out.registers = static_cast<int>(s.info >> 24);
    } else if (s.name == shared_name) {
      if (s.size > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        error = fmt::format("{} claims {} bytes", shared_name, s.size);
        return false;
      }
      out.static_smem_bytes = static_cast<std::int64_t>(s.size);
      found.found_shared = true;
    } else if (s.name == ".nv.info") {
      if (s.type == sht_nobits || !fits(s.offset, s.size, cubin.size())) {
        error = ".nv.info lies outside the file";
        return false;
      }
      found.found_info = true;
      found.info = s;
    }
  }
  if (!found.found_text) {
    error = fmt::format("no section {} (is {} the kernel's name?)", text_name, entry);
    return false;
  }
  return true;
}

bool read_nv_info(std::string_view records, std::uint32_t symbol, cubin_resources& out, bool& found_regcount,
                  std::string& error) {
  std::size_t at = 0;
  while (at + 4 <= records.size()) {
    const auto format = static_cast<std::uint8_t>(records[at]);
    const auto attribute = static_cast<std::uint8_t>(records[at + 1]);
    const auto value = read_le<std::uint16_t>(records, at + 2);
    at += 4;
    if (format != eifmt_sval) continue;  // the 16-bit value was the whole record
    if (value > records.size() - at) {
      error = fmt::format(".nv.info record 0x{:02x} claims {} bytes, {} are left", attribute, value,
                          records.size() - at);
      return false;
    }
    // Per-function figures: a u32 symbol index, then the u32 value.
    if (value == 8 && read_le<std::uint32_t>(records, at) == symbol) {
      const auto v = read_le<std::uint32_t>(records, at + 4);
      switch (attribute) {
        case eiattr_regcount: out.registers = static_cast<int>(v); found_regcount = true; break;
        case eiattr_frame_size: out.frame_bytes = v; break;
        case eiattr_min_stack_size: out.min_stack_bytes = v; break;
        default: break;
      }
    }
    at += value;
  }
  return true;
}

// Leaves out the 1 KB the toolchain reserves when the symbol table names it.
void drop_reserved_smem(const section_table& table, const kernel_sections& found, cubin_resources& out) {
  const std::string_view cubin = table.cubin;
  const section& symtab = found.symtab;
  if (found.found_shared && out.static_smem_bytes >= reserved_smem_bytes && symtab.type == sht_symtab &&
      symtab.link < table.count) {
    const section strings = table.header(symtab.link).first;
    if (symtab.type != sht_nobits && fits(symtab.offset, symtab.size, cubin.size()) &&
        strings.type != sht_nobits && fits(strings.offset, strings.size, cubin.size())) {
      const std::string_view names = cubin.substr(static_cast<std::size_t>(strings.offset),
                                                  static_cast<std::size_t>(strings.size));
      for (std::uint64_t at = 0; at + elf64_symbol_size <= symtab.size; at += elf64_symbol_size) {
        const auto name = read_le<std::uint32_t>(cubin, static_cast<std::size_t>(symtab.offset + at));
        if (string_at(names, name) == reserved_smem_symbol) {
          out.static_smem_bytes -= reserved_smem_bytes;
          break;
        }
      }
    }
  }
}

}  // namespace

bool read_cubin_resources(std::string_view cubin, std::string_view entry, cubin_resources& out,
                          std::string& error) {
  out = {};
  section_table table;
  if (!read_section_table(cubin, table, error)) return false;
  kernel_sections found;
  if (!find_kernel_sections(table, entry, found, out, error)) return false;
  bool found_regcount = false;
  if (found.found_info) {
    const std::string_view records = cubin.substr(static_cast<std::size_t>(found.info.offset),
                                                  static_cast<std::size_t>(found.info.size));
    if (!read_nv_info(records, found.symbol, out, found_regcount, error)) return false;
  }
  drop_reserved_smem(table, found, out);
  if (!found_regcount && out.registers == 0) {
    error = fmt::format("no register count for {} (neither EIATTR_REGCOUNT nor the .text header)", entry);
    return false;
  }
  if (out.registers <= 0 || out.registers > max_registers_per_thread) {
    error = fmt::format("register count {} of {} is impossible (1 to {})", out.registers, entry,
                        max_registers_per_thread);
    return false;
  }
  return true;
}

std::vector<std::pair<std::string, std::string_view>> cubin_code_sections(std::string_view cubin) {
  std::vector<std::pair<std::string, std::string_view>> out;
  section_table table;
  std::string error;
  if (!read_section_table(cubin, table, error)) return out;
  const section names = table.header(table.names_index).first;
  if (!fits(names.offset, names.size, cubin.size())) return out;
  const std::string_view name_table = cubin.substr(names.offset, names.size);
  for (std::size_t i = 0; i < table.count; ++i) {
    const auto [s, name_at] = table.header(i);
    const std::string_view name = string_at(name_table, name_at);
    if (s.type == 1 && s.size > 0 && name.starts_with(".text.") && fits(s.offset, s.size, cubin.size()))
      out.emplace_back(std::string(name.substr(6)), cubin.substr(s.offset, s.size));  // PROGBITS
  }
  return out;
}

void complete_resources(compiled_kernel& k, std::string_view entry) {
  if (!k.ok) return;
  kernel_resources report;
  if (parse_ptxas_report(k.log, report, entry)) {
    k.resources = report;
    return;
  }
  cubin_resources c;
  std::string error;
  if (!read_cubin_resources(k.cubin, entry, c, error)) {
    k.ok = false;
    k.internal_failure = true;
    k.log = fmt::format("the compile returned a cubin but no ptxas report, and the cubin cannot be read: {}\n{}",
                        error, k.log);
    return;
  }
  k.resources = {};
  k.resources.registers = c.registers;
  k.resources.static_smem_bytes = c.static_smem_bytes;
  k.resources.stack_bytes = c.frame_bytes;
  k.resources.from_ptxas_report = false;
}

}  // namespace tiletune
