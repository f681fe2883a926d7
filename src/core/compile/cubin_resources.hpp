#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/compile/kernel_compiler.hpp"

namespace tiletune {

// What a cubin (the ELF64 file NVRTC returns) says about one entry function,
// read from its section headers and .nv.info attributes: these are there even
// when ptxas printed no report (the driver's compute cache hides it).
struct cubin_resources {
  int registers = 0;
  std::int64_t static_smem_bytes = 0;  // size of .nv.shared.<entry>
  std::int64_t frame_bytes = 0;        // EIATTR_FRAME_SIZE: local memory per thread (spills + local arrays)
  std::int64_t min_stack_bytes = 0;    // EIATTR_MIN_STACK_SIZE
};

// Reads the figures of `entry` from `cubin`. Never throws, never reads outside
// the bytes given: a damaged file returns false with `error` naming what is wrong.
bool read_cubin_resources(std::string_view cubin, std::string_view entry, cubin_resources& out,
                          std::string& error);

// The machine code of each function of `cubin` (its ".text.<function>" sections), in section
// order: empty for bytes that are not a readable cubin. What nvdisasm reads (tests/support).
std::vector<std::pair<std::string, std::string_view>> cubin_code_sections(std::string_view cubin);

// Fills k.resources after a successful compile: from ptxas's report when it
// printed one, else from the cubin (spill bytes then unknown, see
// kernel_resources::from_ptxas_report). A cubin that cannot be read either way
// turns `k` into an internal failure, which is never cached.
void complete_resources(compiled_kernel& k, std::string_view entry);

}  // namespace tiletune
