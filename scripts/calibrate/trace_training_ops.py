#!/usr/bin/env python3
"""What eager PyTorch really runs in one training step, op by op (a tool, not a test).

Builds a small Llama-architecture model from a config, sets it up the way
scripts/validate/validate_batch.py does (optionally peft LoRA on every linear layer of
the blocks with fp32 adapters on a frozen 16-bit base, autocast for the -mixed
precisions, gradient checkpointing), runs one step (forward, loss, backward,
AdamW) on the CPU under a TorchDispatchMode, and writes what ran: per phase,
the kernel-launching aten ops (views excluded), the bytes they read and wrote
(GEMMs apart, with their M, N, K), and the op names. `tiletune batch --json`
on the same config.json counts the same things (`time.kernels`,
`time.memory_bound_bytes`): tests/unit/training_trace_test.cpp holds the two
against each other from the recorded JSON, so torch is needed only to record.

    python3 scripts/calibrate/trace_training_ops.py --out profiles/training_traces/llama-lora16-bf16-mixed.json \
        --precision bf16-mixed --lora 16 [--ckpt] [--config-out tests/data/llama_small/config.json]

--family gpt2 builds a GPT-2 (MHA, learned positions, LayerNorm, gelu_new,
tied head) of the same width instead; --attention eager runs transformers'
eager attention (eager_attention_forward in the family's modeling file) in
place of SDPA. Dropout (--dropout, GPT-2's attn/resid/embd_pdrop) runs as
CUDA runs it: torch.native_dropout, one kernel keeping a bool mask, where the
CPU's own F.dropout would draw a mask in the input's dtype over three ops.

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


def peak_memory(torch, model, opt, step, ids):
    """Bytes allocated at the peak of one more step, and in which phase.

    The profiler's CPU memory events carry the allocator's running total of
    what was allocated since profiling began and is still alive; what was
    alive before (weights, optimizer states, the batch; gradients are None
    after zero_grad(set_to_none)) is summed from the tensors themselves.
    """
    import os
    import tempfile
    from torch.profiler import ProfilerActivity, profile, record_function

    seen = set()

    def held(t):
        if t is None or not isinstance(t, torch.Tensor):
            return 0
        s = t.untyped_storage()
        if s.data_ptr() in seen:
            return 0
        seen.add(s.data_ptr())
        return s.nbytes()

    start = sum(held(p) + held(p.grad) for p in model.parameters()) + held(ids)
    start += sum(held(v) for st in opt.state.values() for v in st.values())
    names = {"forward": "tt_forward", "backward": "tt_backward", "optimizer": "tt_optimizer"}
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        with record_function("tt_step"):
            step(lambda phase: record_function(names[phase]))
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    prof.export_chrome_trace(path)
    events = json.load(open(path))["traceEvents"]
    if os.environ.get("TRACE_KEEP_PROFILE"):  # for reading the step's timeline by hand
        os.replace(path, os.environ["TRACE_KEEP_PROFILE"])
    else:
        os.unlink(path)
    spans = {e["name"]: (e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") in names.values()}
    # CPU kernels of a binary op on mixed dtypes (a bf16 tensor plus an fp32
    # one) promote the input in a temporary copy (TensorIterator's
    # compute_types on CPU); CUDA's kernels cast as they load, allocating
    # nothing. Such copies (a _to_copy directly inside the binary op) are left
    # out of the running total, so the total is what CUDA would allocate.
    ops = sorted((e for e in events if e.get("cat") == "cpu_op"), key=lambda e: (e["ts"], -e.get("dur", 0)))
    memory = sorted((e for e in events if e.get("name") == "[memory]" and "Total Allocated" in e.get("args", {})),
                    key=lambda e: e["ts"])
    promoting = {"aten::add", "aten::sub", "aten::mul", "aten::div", "aten::add_", "aten::mul_", "aten::where"}
    stack, i, skipped, promoted = [], 0, {}, 0
    timeline = []  # (ts, CUDA-equivalent total, innermost op)
    for e in memory:
        while i < len(ops) and ops[i]["ts"] <= e["ts"]:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] < ops[i]["ts"]:
                stack.pop()
            stack.append(ops[i])
            i += 1
        while stack and stack[-1]["ts"] + stack[-1]["dur"] < e["ts"]:
            stack.pop()
        chain = [o["name"] for o in reversed(stack)]
        size, addr = e["args"]["Bytes"], e["args"]["Addr"]
        if size > 0 and "aten::_to_copy" in chain:
            outer = [o for o in chain[chain.index("aten::_to_copy") + 1:] if o != "aten::to"]
            if outer and outer[0] in promoting:
                skipped[addr] = size
                promoted += size
        elif size < 0 and addr in skipped:
            promoted -= skipped.pop(addr)
        timeline.append((e["ts"], e["args"]["Total Allocated"] - promoted, chain[0] if chain else None))
    peaks, peak_op = {}, {}
    for ts, total, op in timeline:
        for phase, key in names.items():
            lo, hi = spans[key]
            if lo <= ts <= hi and total > peaks.get(phase, -1):
                peaks[phase], peak_op[phase] = total, op
    phase = max(peaks, key=peaks.get)
    peak_op = peak_op[phase]
    return {"start_bytes": start, "peak_bytes": start + peaks[phase], "peak_phase": phase, "peak_op": peak_op,
            "phase_peak_bytes": {k: start + v for k, v in peaks.items()},
            "means": "torch.cuda.max_memory_allocated's CPU twin: bytes of live tensors at the step's peak "
                     "(no allocator rounding, no cuBLAS workspace; the CPU's dtype-promotion copies left out)"}


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
    ap.add_argument("--family", choices=["llama", "gpt2"], default="llama")
    ap.add_argument("--attention", choices=["sdpa", "eager"], default="sdpa",
                    help="transformers' attn_implementation")
    ap.add_argument("--dropout", type=float, default=0.0, help="gpt2: attn_pdrop, resid_pdrop and embd_pdrop")
    ap.add_argument("--lora", type=int, default=0)
    ap.add_argument("--ckpt", action="store_true")
    ap.add_argument("--memory", action="store_true",
                    help="also record the step's peak of allocated bytes (torch.cuda.max_memory_allocated's CPU twin)")
    a = ap.parse_args()
    if a.dropout and a.family != "gpt2":
        ap.error("--dropout sets GPT-2's dropouts (--family gpt2)")

    import torch
    import transformers
    from torch.utils._python_dispatch import TorchDispatchMode

    if a.family == "gpt2":
        # n_inner is --intermediate; GPT-2's heads are all key/value heads (--kv-heads is not read).
        cfg = dict(model_type="gpt2", n_embd=a.hidden, n_inner=a.intermediate, n_layer=a.layers, n_head=a.heads,
                   vocab_size=a.vocab, n_positions=1024, activation_function="gelu_new", attn_pdrop=a.dropout,
                   resid_pdrop=a.dropout, embd_pdrop=a.dropout, tie_word_embeddings=True)
    else:
        cfg = dict(model_type="llama", hidden_size=a.hidden, intermediate_size=a.intermediate,
                   num_hidden_layers=a.layers, num_attention_heads=a.heads, num_key_value_heads=a.kv_heads,
                   vocab_size=a.vocab, max_position_embeddings=4096, rms_norm_eps=1e-5, tie_word_embeddings=False,
                   hidden_act="silu", attention_bias=False, mlp_bias=False, rope_theta=10000.0)
    heads, kv_heads = (a.heads, a.heads) if a.family == "gpt2" else (a.heads, a.kv_heads)
    if a.config_out:
        json.dump(cfg, open(a.config_out, "w"), indent=2)
    config = transformers.AutoConfig.for_model(**cfg)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation=a.attention)
    if a.dropout > 0:
        # CUDA's F.dropout is native_dropout (a bool mask kept; Dropout.cpp,
        # is_fused_kernel_acceptable); the CPU's draws the mask in the input's
        # dtype over bernoulli_, div_ and mul. Run CUDA's here.
        plain_dropout = torch.nn.functional.dropout

        def cuda_dropout(input, p=0.5, training=True, inplace=False):
            if training and 0 < p < 1 and not inplace:
                return torch.native_dropout(input, p, True)[0]
            return plain_dropout(input, p, training, inplace)

        torch.nn.functional.dropout = cuda_dropout
    # As scripts/validate/validate_batch.py sets a run up.
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
    if a.precision == "bf16-mixed":
        # CUDA's autocast runs pow in fp32 (autocast_mode.cpp, its fp32 list);
        # the CPU's leaves it in 16 bits. GPT-2's gelu_new calls torch.pow on a
        # 16-bit activation: cast it as CUDA would (LlamaRMSNorm's pow reads
        # fp32 already, so Llama's traces are unchanged).
        plain_pow = torch.pow

        def cuda_autocast_pow(input, *args, **kwargs):
            if (torch.is_autocast_enabled("cpu") and isinstance(input, torch.Tensor)
                    and input.dtype in (torch.bfloat16, torch.float16)):
                input = input.float()
            return plain_pow(input, *args, **kwargs)

        torch.pow = cuda_autocast_pow
    model.train()
    if a.ckpt:
        model.gradient_checkpointing_enable()
        if a.lora:
            model.enable_input_require_grads()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5, fused=True)
    ids = torch.randint(0, a.vocab, (a.mb, a.seq))
    autocast = a.precision == "bf16-mixed"

    phase = ["forward"]
    rows = collections.defaultdict(lambda: {"kernels": 0, "bytes": 0, "ops": collections.Counter(),
                                            "op_bytes": collections.Counter(), "gemms": []})

    import os
    listing = bool(os.environ.get("TRACE_LIST_OPS"))

    class Trace(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            if name in VIEW_OPS:
                return out
            r = rows[phase[0]]
            if listing:  # TRACE_LIST_OPS=1: every kernel, for reading the op sequence by hand
                def desc(x):
                    return f"{str(x.dtype).replace('torch.', '')}{list(x.shape)}" if isinstance(x, torch.Tensor) else ""
                ins = [desc(x) for x in args if isinstance(x, torch.Tensor)]
                outs = [desc(x) for x in (out if isinstance(out, (list, tuple)) else [out]) if isinstance(x, torch.Tensor)]
                print(f"{phase[0]:9} {name:32} {' '.join(ins)} -> {' '.join(outs)}", file=sys.stderr)
            r["kernels"] += 1
            r["ops"][name] += 1
            if name in GEMM_OPS:
                shapes = [list(x.shape) for x in args if isinstance(x, torch.Tensor)]
                r["gemms"].append({"op": name, "shapes": shapes, "dtype": str(out.dtype).replace("torch.", "")})
            else:
                moved = tensor_bytes(list(args)) + tensor_bytes(out)
                r["bytes"] += moved
                r["op_bytes"][name] += moved
            return out

    import contextlib
    from torch.nn.attention import SDPBackend, sdpa_kernel

    # Which SDPA kernel CUDA would run (torch/csrc/.../sdp_utils.cpp): flash
    # takes 16-bit inputs only and memory-efficient attention no grouped
    # query heads (enable_gqa), so fp32 with GQA falls back to the math
    # kernel, which computes every score and keeps the probabilities. The
    # CPU's own flash kernel takes fp32 with GQA: force math there to trace
    # what the GPU runs.
    math_attention = a.attention == "sdpa" and a.precision == "fp32" and kv_heads < heads
    attention = (lambda: sdpa_kernel([SDPBackend.MATH])) if math_attention else contextlib.nullcontext

    def step(mark=lambda phase: contextlib.nullcontext()):
        with mark("forward"), attention(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = model(input_ids=ids, labels=ids)
        phase[0] = "backward"
        with mark("backward"), attention():
            out.loss.backward()
        phase[0] = "optimizer"
        with mark("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
        phase[0] = "forward"

    step()  # the first step allocates the optimizer's states
    rows.clear()
    with Trace():
        step()
    memory = peak_memory(torch, model, opt, step, ids) if a.memory else None
    result = {"schema": "tiletune.training_trace/1", "config": cfg,
              "setup": {"seq": a.seq, "mb": a.mb, "precision": a.precision, "lora": a.lora, "ckpt": a.ckpt,
                        "lora_target_modules": "all-linear", "optimizer": "adamw fused",
                        "attention": "eager" if a.attention == "eager" else
                        "sdpa math (as CUDA runs fp32 with GQA)" if math_attention else "sdpa fused"},
              "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                           "python": sys.version.split()[0]},
              "phases": {}}
    if a.lora:
        import peft
        result["versions"]["peft"] = peft.__version__
    if memory:
        result["memory"] = memory
    for k, r in rows.items():
        result["phases"][k] = {"kernels": r["kernels"], "gemm_kernels": len(r["gemms"]),
                               "non_gemm_bytes": r["bytes"], "ops": dict(r["ops"].most_common()),
                               "op_bytes": dict(r["op_bytes"].most_common()),
                               "gemms": r["gemms"]}
    json.dump(result, open(a.out, "w"), indent=1)
    if memory:
        print(f"peak allocated {memory['peak_bytes'] / 2**20:.2f} MiB in {memory['peak_phase']} "
              f"(held at the step's start {memory['start_bytes'] / 2**20:.2f} MiB)")
    for k, r in result["phases"].items():
        print(f"{k:10} kernels {r['kernels']:6d} (gemm {r['gemm_kernels']:4d})  non-GEMM bytes {r['non_gemm_bytes'] / 1e6:10.1f} MB")


if __name__ == "__main__":
    main()
