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

variant_launch::variant_launch(const measure_request& r, cudaKernel_t kernel, cudaLibrary_t library,
                               const gpu_state& g) {
  for (const kernel_launch& before : r.launch.prologue) {
    kernels_.push_back(std::make_unique<bound_kernel>());
    TT_CUDA(cudaLibraryGetKernel(&kernels_.back()->kernel, library, before.entry.c_str()));
    bind(*kernels_.back(), r, before, g);
  }
  kernels_.push_back(std::make_unique<bound_kernel>());
  kernels_.back()->kernel = kernel;
  bind(*kernels_.back(), r, r.launch, g);
}

void* variant_launch::k_major_copy(char operand, std::int64_t bytes, const gpu_state& g) {
  const int i = operand == 'A' ? 0 : 1;
  if (!copies_[i]) {
    scratch_.push_back(device_alloc(static_cast<std::size_t>(bytes)));
    copies_[i] = scratch_.back().get();
    copy_bytes_[i] = bytes;
    TT_CUDA(cudaMemsetAsync(copies_[i], 0, static_cast<std::size_t>(bytes), g.stream));
    scratch_bytes_ += bytes;
  } else if (copy_bytes_[i] != bytes) {
    throw std::invalid_argument(fmt::format("{}_k_major: {} bytes in one launch, {} in another", operand,
                                            copy_bytes_[i], bytes));
  }
  return copies_[i];
}

void variant_launch::bind(bound_kernel& k, const measure_request& r, const kernel_launch& l, const gpu_state& g) {
  const std::vector<argument_binding> bindings = bind_arguments(l);
  const gemm_problem& p = g.setup.problem;
  void* const operands[] = {g.a.get(), g.b.get(), g.c.get()};
  k.slots.resize(bindings.size());
  k.args.reserve(bindings.size());
  for (std::size_t i = 0; i < bindings.size(); ++i) {
    const argument_binding& b = bindings[i];
    unsigned char* const slot = k.slots[i].bytes;
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
      case argument_binding::source::k_major_copy:
        pointer = k_major_copy(b.operand, b.buffer_bytes, g);
        std::memcpy(slot, &pointer, sizeof pointer);
        break;
      case argument_binding::source::tensor_map: {
        if (!r.config)
          throw std::invalid_argument(fmt::format("{}: a tensor map parameter, but the request has no tile", r.id));
        const char operand = static_cast<char>(std::tolower(static_cast<unsigned char>(b.operand)));
        // A map of a K-major copy addresses the copy, which a prologue kernel bound before it made.
        void* const address = b.of_copy ? copies_[b.operand - 'A'] : operands[b.operand - 'A'];
        if (!address)
          throw std::invalid_argument(fmt::format("{}: a tensor map of {}'s K-major copy, which no prologue writes",
                                                  r.id, b.operand));
        const encoded_tensor_map map = encode_tensor_map(tensor_map_for(p, *r.config, operand), address);
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
    k.args.push_back(slot);
  }
  k.config.gridDim = dim3(dim(l.grid[0]), dim(l.grid[1]), dim(l.grid[2]));
  k.config.blockDim = dim3(dim(l.block[0]), dim(l.block[1]), dim(l.block[2]));
  k.config.dynamicSmemBytes = static_cast<std::size_t>(l.dynamic_smem_bytes);
  k.config.stream = g.stream;
  if (l.cluster[0] * l.cluster[1] * l.cluster[2] > 1) {
    k.cluster.id = cudaLaunchAttributeClusterDimension;
    k.cluster.val.clusterDim.x = dim(l.cluster[0]);
    k.cluster.val.clusterDim.y = dim(l.cluster[1]);
    k.cluster.val.clusterDim.z = dim(l.cluster[2]);
    k.config.attrs = &k.cluster;
    k.config.numAttrs = 1;
    if (l.clusters_walk_tiles) cap_clusters(k);
  }
}

// No more clusters than the GPU holds at once (kernel_launch::clusters_walk_tiles): the planned grid
// counts SMs, but a cluster sits inside one GPC, and a GPC's SMs left over from whole clusters hold
// none. Where the driver cannot say, the planned grid stands.
void variant_launch::cap_clusters(bound_kernel& k) {
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, reinterpret_cast<const void*>(k.kernel), &k.config) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: the launch itself reports what is wrong
    return;
  }
  const unsigned size = k.cluster.val.clusterDim.x * k.cluster.val.clusterDim.y * k.cluster.val.clusterDim.z;
  if (clusters > 0 && k.config.gridDim.x / size > static_cast<unsigned>(clusters))
    k.config.gridDim.x = static_cast<unsigned>(clusters) * size;
  clusters_at_once_ = clusters;
}

void variant_launch::operator()() {
  for (const auto& k : kernels_)
    TT_CUDA(cudaLaunchKernelExC(&k->config, reinterpret_cast<const void*>(k->kernel), k->args.data()));
}

}  // namespace tiletune
