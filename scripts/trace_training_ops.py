#!/usr/bin/env python3
"""What eager PyTorch really runs in one training step, op by op (a tool, not a test).

Builds a small Llama-architecture model from a config, sets it up the way
scripts/validate_batch.py does (optionally peft LoRA on every linear layer of
the blocks with fp32 adapters on a frozen 16-bit base, autocast for the -mixed
precisions, gradient checkpointing), runs one step (forward, loss, backward,
AdamW) on the CPU under a TorchDispatchMode, and writes what ran: per phase,
the kernel-launching aten ops (views excluded), the bytes they read and wrote
(GEMMs apart, with their M, N, K), and the op names. `tiletune batch --json`
on the same config.json counts the same things (`time.kernels`,
`time.memory_bound_bytes`): tests/unit/training_trace_test.cpp holds the two
against each other from the recorded JSON, so torch is needed only to record.

    python3 scripts/trace_training_ops.py --out profiles/training_traces/llama-lora16-bf16-mixed.json \
        --precision bf16-mixed --lora 16 [--ckpt] [--config-out tests/data/llama_small/config.json]

Needs torch, transformers (and peft for --lora) from PyPI. The CPU's autocast
and SDPA kernels stand in for CUDA's: the op sequence is the same up to the
attention kernel's name.
"""
import argparse
import collections
import json
import sys

VIEW_OPS = {"view", "_unsafe_view", "t", "transpose", "permute", "expand", "unsqueeze", "squeeze", "slice",
            "select", "as_strided", "alias", "detach", "reshape", "split", "split_with_sizes", "unbind",
            "chunk", "narrow", "_reshape_alias", "view_as", "lift_fresh", "_to_copy_noop", "empty", "empty_like",
            "empty_strided", "new_empty", "new_empty_strided", "unfold", "diagonal", "expand_as", "contiguous_noop",
            "is_same_size", "_has_compatible_shallow_copy_type", "set_", "resize_", "_local_scalar_dense",
            "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "dim", "size", "stride", "numel",
            "is_nonzero", "item", "equal", "lift", "clone_noop", "zeros_like_noop", "_foreach_empty"}
GEMM_OPS = {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_addmm_activation"}


def tensor_bytes(x):
    import torch
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(tensor_bytes(y) for y in x)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--config-out", help="also write the model's config.json (for tiletune batch --model)")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--intermediate", type=int, default=1408)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=1000)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--mb", type=int, default=2)
    ap.add_argument("--precision", choices=["bf16-mixed", "bf16", "fp32"], default="bf16-mixed")
    ap.add_argument("--lora", type=int, default=0)
    ap.add_argument("--ckpt", action="store_true")
    a = ap.parse_args()

    import torch
    import transformers
    from torch.utils._python_dispatch import TorchDispatchMode

    cfg = dict(model_type="llama", hidden_size=a.hidden, intermediate_size=a.intermediate,
               num_hidden_layers=a.layers, num_attention_heads=a.heads, num_key_value_heads=a.kv_heads,
               vocab_size=a.vocab, max_position_embeddings=4096, rms_norm_eps=1e-5, tie_word_embeddings=False,
               hidden_act="silu", attention_bias=False, mlp_bias=False, rope_theta=10000.0)
    if a.config_out:
        json.dump(cfg, open(a.config_out, "w"), indent=2)
    config = transformers.AutoConfig.for_model(**cfg)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
    # As scripts/validate_batch.py sets a run up.
    if a.precision == "bf16":
        model = model.to(torch.bfloat16)
    if a.lora:
        import peft
        if a.precision != "fp32":
            model = model.to(torch.bfloat16)
        model = peft.get_peft_model(model, peft.LoraConfig(r=a.lora, lora_alpha=2 * a.lora, lora_dropout=0.0,
                                                           target_modules="all-linear"))
        for p in model.parameters():
            if p.requires_grad:
                p.data = p.data.float()
    model.train()
    if a.ckpt:
        model.gradient_checkpointing_enable()
        if a.lora:
            model.enable_input_require_grads()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5, fused=True)
    ids = torch.randint(0, a.vocab, (a.mb, a.seq))
    autocast = a.precision == "bf16-mixed"

    phase = ["forward"]
    rows = collections.defaultdict(lambda: {"kernels": 0, "bytes": 0, "ops": collections.Counter(), "gemms": []})

    class Trace(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            if name in VIEW_OPS:
                return out
            r = rows[phase[0]]
            r["kernels"] += 1
            r["ops"][name] += 1
            if name in GEMM_OPS:
                shapes = [list(x.shape) for x in args if isinstance(x, torch.Tensor)]
                r["gemms"].append({"op": name, "shapes": shapes, "dtype": str(out.dtype).replace("torch.", "")})
            else:
                r["bytes"] += tensor_bytes(list(args)) + tensor_bytes(out)
            return out

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = model(input_ids=ids, labels=ids)
        phase[0] = "backward"
        out.loss.backward()
        phase[0] = "optimizer"
        opt.step()
        opt.zero_grad(set_to_none=True)
        phase[0] = "forward"

    step()  # the first step allocates the optimizer's states
    rows.clear()
    with Trace():
        step()
    result = {"schema": "tiletune.training_trace/1", "config": cfg,
              "setup": {"seq": a.seq, "mb": a.mb, "precision": a.precision, "lora": a.lora, "ckpt": a.ckpt,
                        "lora_target_modules": "all-linear", "optimizer": "adamw fused"},
              "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                           "python": sys.version.split()[0]},
              "phases": {}}
    if a.lora:
        import peft
        result["versions"]["peft"] = peft.__version__
    for k, r in rows.items():
        result["phases"][k] = {"kernels": r["kernels"], "gemm_kernels": len(r["gemms"]),
                               "non_gemm_bytes": r["bytes"], "ops": dict(r["ops"].most_common()),
                               "gemms": r["gemms"]}
    json.dump(result, open(a.out, "w"), indent=1)
    for k, r in result["phases"].items():
        print(f"{k:10} kernels {r['kernels']:6d} (gemm {r['gemm_kernels']:4d})  non-GEMM bytes {r['non_gemm_bytes'] / 1e6:10.1f} MB")


if __name__ == "__main__":
    main()
