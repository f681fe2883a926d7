#pragma once
#include <string>
#include <vector>

#include "core/compile/kernel_compiler.hpp"

namespace tiletune {

// Compiles a variant to a cubin with NVRTC. Needs no GPU and no driver.
// Thread-safe: each call owns its nvrtcProgram.
class nvrtc_compiler : public kernel_compiler {
 public:
  nvrtc_compiler();
  compiled_kernel compile(const compile_job& job) override;
  std::string version() const override;  // "nvrtc 13.0"
  std::vector<int> supported_archs() const override;  // nvrtcGetSupportedArchs
};

}  // namespace tiletune
