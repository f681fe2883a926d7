#pragma once
// Reading a kernel's machine code on the CPU (cuobjdump, no GPU): what the
// compile tests ask of it, as functions that a planted defect can be shown to fail.
#include <string>
#include <vector>

namespace tiletune_test {

// cuobjdump -sass of a cubin (TILETUNE_CUOBJDUMP, with nvdisasm beside it);
// empty or an error text when cuobjdump fails.
std::string disassemble(const std::string& cubin, const std::string& name);

// The SASS of many cubins, each listed as `disassemble` lists it ("Function : name", then its
// instructions at their addresses, without encodings; empty for an empty or unreadable cubin).
// `archs[i]` is cubin i's architecture ("sm_90a"). The kernels' code of one architecture is
// disassembled as one raw image (nvdisasm -b), a few runs in all: nvdisasm's start, about 0.4 s,
// was most of a kernel's listing, and the compile tests read a thousand (compile.sass_batches
// checks that the listings equal cuobjdump's).
std::vector<std::string> disassemble_all(const std::vector<std::string>& cubins, const std::vector<std::string>& archs);

// The instructions of a SASS listing in order, without addresses and encodings
// ("HGMMA.64x256x16.F32.BF16 R24, gdesc[UR12], R24, gsb0").
std::vector<std::string> instructions(const std::string& sass);

// What is wrong with the tensor-core issue of a wgmma kernel's main loop: its
// HGMMAs must come in k-groups of `per_k_tile` (the tile's k-steps x its m64
// instructions), each ended by exactly one gsb0 (one commit group; a gsb0 on
// every HGMMA is the serialization ptxas warns of), with no barrier or
// dependency wait between the HGMMAs of a group. Empty: nothing wrong. fp8 kernels issue QGMMA
// (`mnemonic`) the same way.
std::vector<std::string> hgmma_issue_problems(const std::string& sass, int per_k_tile, const char* mnemonic = "HGMMA");

// R2UR (a per-thread register moved into a uniform one) between the first and the last HGMMA
// of each committed k-group, summed over the kernel: operand descriptors built from a value the
// compiler holds per thread (threadIdx.x / 128) are moved so for every instruction.
int uniform_moves_in_k_groups(const std::string& sass, const char* mnemonic = "HGMMA");

// The loops of a kernel that multiply with HMMA (or QMMA, fp8's mma.sync): from
// a backward branch's target to the branch, in instructions, and what they hold.
struct hmma_loop {
  int instructions = 0, hmma = 0, ldsm = 0, barriers = 0;
  int ffma = 0, lds = 0;  // FFMA; LDS (ld.shared, LDSM not counted)
  int copies = 0, zero_filling_copies = 0;  // LDGSTS (cp.async), those with .ZFILL (a src-size)
  double per_hmma() const { return hmma > 0 ? static_cast<double>(instructions) / hmma : 0; }
};
std::vector<hmma_loop> hmma_loops(const std::string& sass);
// The loops that multiply with FFMA (the simt family's), counted the same way.
std::vector<hmma_loop> ffma_loops(const std::string& sass);

// What is wrong with an mma.sync kernel's main loop, the loop of the blocks
// that lie inside the matrices: its cp.async copies without bounds (no
// .ZFILL), it runs `per_k_tile` HMMA (one k-tile) at one barrier, and spends
// at most `budget` instructions per HMMA, the HMMA included. The loop of the
// blocks at the edges (copies with .ZFILL) is held to `edge_budget`. Empty:
// nothing wrong.
std::vector<std::string> mma_main_loop_problems(const std::string& sass, int per_k_tile, double budget,
                                                double edge_budget);

// ptxas's performance diagnostics in a compile log: wgmma serialized (C7510,
// C7511...), waits or arrives it had to inject, "Potential Performance Loss".
std::vector<std::string> ptxas_performance_warnings(const std::string& log);

}  // namespace tiletune_test
