#!/usr/bin/env bash
# Records profiles/training_traces/: what eager PyTorch runs and allocates in
# one training step of two small Llama-architecture models, for
# tests/cli/training_trace_cli_test.cpp. Needs torch, transformers and peft
# from PyPI (python3 -m pip install torch transformers peft); runs on the CPU,
# about 15 minutes on two cores (the eager-attention ones: about 10 more).
#   scripts/calibrate/record_training_traces.sh [PYTHON] [all|sdpa|eager]
set -euo pipefail
py=${1:-python3}
which=${2:-all}
here=$(cd "$(dirname "$0")" && pwd)
out=$here/../../profiles/training_traces
mkdir -p "$out"
trace() {  # name, then trace_training_ops.py's arguments
  local name=$1
  shift
  echo "== $name"
  "$py" "$here/trace_training_ops.py" --memory --out "$out/$name.json" "$@"
}
if [[ $which != eager ]]; then
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
fi
[[ $which == sdpa ]] && exit 0
# Eager attention (issue 39: transformers' eager_attention_forward in place of
# SDPA). The "small" Llama (GQA 8/2: repeat_kv copies, fp32 softmax) and a
# GPT-2 of its width (MHA, softmax in the scores' dtype, dropout 0.1 as CUDA
# runs it: a bool mask per score).
small="--seq 512 --mb 4 --attention eager"
for p in bf16 bf16-mixed fp32; do
  trace "llama-small-eager-lora0-$p-ckptoff" $small --precision "$p"
done
trace llama-small-eager-lora0-bf16-mixed-ckpton $small --precision bf16-mixed --ckpt
trace llama-small-eager-lora16-bf16-ckptoff $small --precision bf16 --lora 16
trace llama-small-eager-lora16-bf16-mixed-ckpton $small --precision bf16-mixed --lora 16 --ckpt
trace llama-small-eager-lora16-fp32-ckptoff $small --precision fp32 --lora 16
gpt2="--family gpt2 --intermediate 2048 --dropout 0.1"
for p in bf16 fp32; do
  trace "gpt2-small-eager-lora0-$p-ckptoff" $small $gpt2 --precision "$p"
done
# open/: GPT-2 where the planner is off outside attention (not held by a test;
# docs/batch.md#eager-attention): under autocast and with checkpointing, SDPA
# and eager alike, dropout 0 (the CPU's SDPA would run dropout its own way).
out=$out/open
mkdir -p "$out"
for at in sdpa eager; do
  trace "gpt2-small-$at-lora0-bf16-mixed-ckptoff" --seq 512 --mb 4 --attention $at --family gpt2 --intermediate 2048 \
    --precision bf16-mixed
  trace "gpt2-small-$at-lora0-bf16-ckpton" --seq 512 --mb 4 --attention $at --family gpt2 --intermediate 2048 \
    --precision bf16 --ckpt
done
