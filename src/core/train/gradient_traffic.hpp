// Internal to src/core/train: the bytes a framework moves to handle the gradients, outside the GEMMs
// that make them and the optimizer's own update (optimizer_bytes_per_parameter). Each term is our
// reading of the framework's source at the commits training_framework.cpp names (DeepSpeed edaa722,
// Megatron-LM d98e8a6, PyTorch's DDP, FSDP2 and clip_grad_norm_), not a traced step.
#pragma once

#include "core/train/training_plan.hpp"

namespace tiletune {

struct gradient_traffic {
  // Bytes per local trainable parameter, every micro-step:
  //  - autocast on fp32 weights (PyTorch's AMP, Composer, LitGPT, FSDP1; LoRA's fp32 adapters): each
  //    16-bit weight gradient cast back to the fp32 parameter's, 2 read and 4 written;
  //  - FSDP: each unit's gradients copied into the reduce-scatter input (FSDP2's foreach_reduce;
  //    FSDP1 where it casts to the reduce dtype), read at their width and written at the input's;
  //  - DeepSpeed ZeRO-2 and -3: each gradient copied into the reduce bucket (the ipg buffer).
  // Megatron-LM's weight-gradient GEMMs accumulate into the fp32 grad buffer themselves
  // (gradient_accumulation_fusion, on by default): nothing.
  double micro_step = 0;
  // Bytes per local trainable parameter, once per optimizer step (the micro-step that reduces):
  //  - PyTorch DDP (--zero 0 on several data-parallel ranks): every gradient copied into its bucket
  //    and back after the all-reduce (gradient_as_bucket_view False), 4 accesses;
  //  - DeepSpeed at stage 0 the same (the engine's flatten and copy back), at stage 1 the copy into
  //    the reduce bucket. Megatron-LM reduces its contiguous grad buffer in place: nothing.
  double boundary = 0;
  // Bytes per trainable parameter of the rank's optimizer shard (all of them without ZeRO), once per
  // optimizer step:
  //  - DeepSpeed's 16-bit mode: the gradients' norm over the 16-bit gradients (2), their copy to fp32
  //    (2 + 4), the unscale-and-clip multiply that runs every step whatever the clipping (4 + 4),
  //    and the fp32 masters written back to the 16-bit weights (4 + 2): 22 bytes;
  //  - Megatron-LM under --bf16 and --fp16: the main params written back to the model's (4 + 2);
  //    --fp16 also copies the gradients to fp32 (2 + 4) and unscales them (4 + 4);
  //  - PyTorch's GradScaler under fp16-mixed: unscale_ reads and writes each fp32 gradient (4 + 4);
  //  - --grad-clip: torch's clip_grad_norm_ reads every gradient for the norm and scales it, 3
  //    accesses at the optimizer's gradient width; Megatron-LM reads them for the norm and scales
  //    only above the threshold (the scale not counted); DeepSpeed fp32 runs torch's.
  double step = 0;
};

gradient_traffic gradient_traffic_of(const training_setup& s);

}  // namespace tiletune
