// The cubin reader on any bytes: figures within the hardware's limits, or an error.
#include "core/compile/cubin_resources.hpp"
#include "core/compile/kernel_templates.hpp"
#include "fuzz_input.hpp"

using namespace tiletune;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  cubin_resources c;
  std::string error;
  if (read_cubin_resources(bytes, kernel_entry_name, c, error)) {
    if (c.registers < 1 || c.registers > 255 || c.static_smem_bytes < 0 || c.frame_bytes < 0)
      fuzz::finding("impossible figures accepted");
  } else if (error.empty()) {
    fuzz::finding("an error without a message");
  }
  compiled_kernel k;
  k.ok = true;
  k.cubin = std::string(bytes);
  complete_resources(k, kernel_entry_name);
  if (!k.ok && !k.internal_failure) fuzz::finding("an unreadable cubin is not an internal failure");
  return 0;
}
