#!/usr/bin/env bash
# Records profiles/training_traces/: what eager PyTorch runs and allocates in
# one training step of two small Llama-architecture models, for
# tests/cli/training_trace_cli_test.cpp. Needs torch, transformers and peft
# from PyPI (python3 -m pip install torch transformers peft); runs on the CPU,
# about 15 minutes on two cores.
#   scripts/calibrate/record_training_traces.sh [PYTHON]
set -euo pipefail
py=${1:-python3}
here=$(cd "$(dirname "$0")" && pwd)
out=$here/../../profiles/training_traces
mkdir -p "$out"
trace() {  # name, then trace_training_ops.py's arguments
  local name=$1
  shift
  echo "== $name"
  "$py" "$here/trace_training_ops.py" --memory --out "$out/$name.json" "$@"
}
# "small": 2 layers, h 512, ffn 1408, GQA 8/2, vocab 1000, 4 x 512 tokens.
for p in bf16 bf16-mixed fp32; do
  for lora in 0 16; do
    for ckpt in off on; do
      [[ $p == fp32 && $ckpt == on ]] && continue
      [[ $lora == 0 && $p == bf16 && $ckpt == on ]] && continue
      trace "llama-small-lora$lora-$p-ckpt$ckpt" --precision "$p" --lora "$lora" $([[ $ckpt == on ]] && echo --ckpt) \
        --seq 512 --mb 4
    done
  done
done
# "wide": a 7-8B model's proportions (ffn 3.5 h, GQA 4:1) at h 1024, vocab 8000, 2 x 256 tokens.
for p in bf16 bf16-mixed; do
  for ckpt in off on; do
    trace "llama-wide-lora16-$p-ckpt$ckpt" --precision "$p" --lora 16 $([[ $ckpt == on ]] && echo --ckpt) \
      --layers 2 --hidden 1024 --intermediate 3584 --heads 16 --kv-heads 4 --vocab 8000 --seq 256 --mb 2
  done
done
