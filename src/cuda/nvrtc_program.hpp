// An NVRTC program owned by a unique_ptr, and its log: shared by the variant compiler and the
// worker's own kernels (the L2 read flush).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>

#include <nvrtc.h>

namespace tiletune {

struct nvrtc_program_deleter {
  void operator()(nvrtcProgram p) const noexcept { nvrtcDestroyProgram(&p); }
};
using nvrtc_program_ptr = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, nvrtc_program_deleter>;

// The program's compile log, "" where it has none or cannot be read.
inline std::string nvrtc_program_log(nvrtcProgram p) {
  std::size_t size = 0;
  if (nvrtcGetProgramLogSize(p, &size) != NVRTC_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(p, log.data()) != NVRTC_SUCCESS) return {};
  log.resize(size - 1);  // drop the terminating NUL
  return log;
}

}  // namespace tiletune
