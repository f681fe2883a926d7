#include "cuda/tensor_map.hpp"

#include <cstring>

#include <cuda.h>  // types only: CUtensorMap and its enums; libcuda is not linked
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cuda/cuda_check.hpp"

namespace tiletune {

static_assert(sizeof(CUtensorMap) == sizeof(encoded_tensor_map), "CUtensorMap is 128 bytes");

namespace {

PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    TT_CUDA(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !p)
      throw cuda_error("the driver has no cuTensorMapEncodeTiled (needs CUDA 12.0 or newer)", 0);
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

CUtensorMapDataType tensor_map_data_type(tensor_map_spec::element e) {
  switch (e) {
    case tensor_map_spec::element::f16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case tensor_map_spec::element::bf16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case tensor_map_spec::element::f32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case tensor_map_spec::element::u8: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  }
  return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

}  // namespace

encoded_tensor_map encode_tensor_map(const tensor_map_spec& spec, const void* global) {
  CUtensorMap map{};
  cuuint64_t dims[3], strides[2];
  cuuint32_t box[3], element_strides[3];
  for (int i = 0; i < 3; ++i) {
    dims[i] = spec.dims[i];
    box[i] = spec.box[i];
    element_strides[i] = spec.element_strides[i];
  }
  for (int i = 0; i < 2; ++i) strides[i] = spec.strides_bytes[i];
  const CUresult r = encoder()(
      &map, tensor_map_data_type(spec.type), static_cast<cuuint32_t>(spec.rank), const_cast<void*>(global), dims,
      strides, box, element_strides, spec.interleave ? CU_TENSOR_MAP_INTERLEAVE_16B : CU_TENSOR_MAP_INTERLEAVE_NONE,
      spec.swizzle_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      spec.oob_fill_zero ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE : CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
  if (r != CUDA_SUCCESS)
    throw cuda_error(fmt::format("cuTensorMapEncodeTiled failed ({}) for dims {} strides {} box {}",
                                 static_cast<int>(r), spec.dims, spec.strides_bytes, spec.box),
                     static_cast<int>(r));
  encoded_tensor_map out;
  static_assert(sizeof(out.opaque) == sizeof(map));
  std::memcpy(out.opaque.data(), &map, sizeof(map));
  return out;
}

}  // namespace tiletune
