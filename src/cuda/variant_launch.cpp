#include "cuda/variant_launch.hpp"

#include <cctype>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "core/gemm/tensor_map_spec.hpp"
#include "cuda/tensor_map.hpp"

namespace tiletune {

namespace {

unsigned dim(std::int64_t v) { return static_cast<unsigned>(v); }

}  // namespace

variant_launch::variant_launch(const measure_request& r, cudaKernel_t kernel, const gpu_state& g) : kernel_(kernel) {
  const kernel_launch& l = r.launch;
  const std::vector<argument_binding> bindings = bind_arguments(l);
  const gemm_problem& p = g.setup.problem;
  void* const operands[] = {g.a.get(), g.b.get(), g.c.get()};
  slots_.resize(bindings.size());
  args_.reserve(bindings.size());
  for (std::size_t i = 0; i < bindings.size(); ++i) {
    const argument_binding& b = bindings[i];
    unsigned char* const slot = slots_[i].bytes;
    void* pointer = nullptr;
    switch (b.from) {
      case argument_binding::source::operand:
        pointer = operands[b.operand - 'A'];
        std::memcpy(slot, &pointer, sizeof pointer);
        break;
      case argument_binding::source::scratch:
        if (b.buffer_bytes > 0) {
          scratch_.push_back(device_alloc(static_cast<std::size_t>(b.buffer_bytes)));
          pointer = scratch_.back().get();
          TT_CUDA(cudaMemsetAsync(pointer, 0, static_cast<std::size_t>(b.buffer_bytes), g.stream));
          scratch_bytes_ += b.buffer_bytes;
        }
        std::memcpy(slot, &pointer, sizeof pointer);
        break;
      case argument_binding::source::tensor_map: {
        if (!r.config)
          throw std::invalid_argument(fmt::format("{}: a tensor map parameter, but the request has no tile", r.id));
        const char operand = static_cast<char>(std::tolower(static_cast<unsigned char>(b.operand)));
        const encoded_tensor_map map =
            encode_tensor_map(tensor_map_for(p, *r.config, operand), operands[b.operand - 'A']);
        static_assert(sizeof map <= sizeof(slot::bytes));
        std::memcpy(slot, &map, sizeof map);
        break;
      }
      case argument_binding::source::group_rows:
        if (!g.group_rows)
          throw std::invalid_argument(fmt::format("{}: a group_rows parameter, but the problem has no groups", r.id));
        pointer = g.group_rows.get();
        std::memcpy(slot, &pointer, sizeof pointer);
        break;
      case argument_binding::source::scales:
        pointer = b.operand == 'A' ? g.scale_a.get() : g.scale_b.get();
        if (!pointer)
          throw std::invalid_argument(fmt::format("{}: a scale parameter, but the problem has no rowwise or block "
                                                  "scales", r.id));
        std::memcpy(slot, &pointer, sizeof pointer);
        break;
      case argument_binding::source::value:
        std::memcpy(slot, b.bytes.data(), b.bytes.size());
        break;
    }
    args_.push_back(slot);
  }
  config_.gridDim = dim3(dim(l.grid[0]), dim(l.grid[1]), dim(l.grid[2]));
  config_.blockDim = dim3(dim(l.block[0]), dim(l.block[1]), dim(l.block[2]));
  config_.dynamicSmemBytes = static_cast<std::size_t>(l.dynamic_smem_bytes);
  config_.stream = g.stream;
  if (l.cluster[0] * l.cluster[1] * l.cluster[2] > 1) {
    cluster_.id = cudaLaunchAttributeClusterDimension;
    cluster_.val.clusterDim.x = dim(l.cluster[0]);
    cluster_.val.clusterDim.y = dim(l.cluster[1]);
    cluster_.val.clusterDim.z = dim(l.cluster[2]);
    config_.attrs = &cluster_;
    config_.numAttrs = 1;
  }
}

void variant_launch::operator()() {
  TT_CUDA(cudaLaunchKernelExC(&config_, reinterpret_cast<const void*>(kernel_), args_.data()));
}

}  // namespace tiletune
