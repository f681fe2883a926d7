#!/usr/bin/env python3
"""The host's part of an eager training step (a tool, not a test).

An eager step is issued op by op by Python, the dispatcher and autograd's
engine; the GPU cannot run ahead of that. When the kernels are short (small
micro-batches, checkpointing's second forward in Python, LoRA's many small
adapter ops) the step takes as long as the host needs to issue it, whatever
the GPU could do. This script measures that issuing time on this machine's
CPU: it builds the configuration of scripts/validate/validate_batch.py (same model
classes, peft LoRA on every linear layer with fp32 adapters, autocast,
gradient checkpointing, fused AdamW, the same step) with the real number of
layers and modules but tiny widths (8 per head, 256-token vocabulary, 32
tokens), so the CPU kernels themselves cost next to nothing, runs it
single-threaded, and records the median step time and the medians of its
forward (to the loss), backward, and optimizer step with zero_grad.

A CPU run has no CUDA launches and a different processor, so its times are
not the GPU machine's: `tiletune batch` takes the structure from here (how
the host time grows with forward ops, backward ops, recompute and adapters)
and one scale from the steps measured on the H100 whose kernels were short
(profiles/host_time/README.md).

    scripts/calibrate/measure_host_time.py OUT.jsonl            # every configuration
    scripts/calibrate/measure_host_time.py OUT.jsonl --only gpt2 tinyllama-1.1b

Needs torch, transformers and peft from PyPI.
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "validate"))
from validate_batch import SUITE_CONFIGS  # noqa: E402

# (name, precision, checkpointing, lora rank): the calibration set's and the
# validation suite's configurations.
CONFIGS = [
    ("gpt2", "bf16-mixed", False, 0), ("gpt2", "bf16-mixed", True, 0), ("gpt2", "bf16", False, 0),
    ("gpt2", "fp32", False, 0),
    ("bert-base-uncased", "bf16-mixed", False, 0), ("bert-base-uncased", "bf16-mixed", True, 0),
    ("tinyllama-1.1b", "bf16-mixed", False, 0), ("tinyllama-1.1b", "bf16-mixed", True, 0),
    ("tinyllama-1.1b", "bf16", True, 0),
    ("tinyllama-1.1b", "bf16", False, 16), ("tinyllama-1.1b", "bf16", True, 16),
    ("llama-tied-1b", "bf16-mixed", False, 0), ("llama-tied-1b", "bf16-mixed", True, 16),
    ("llama-3-8b", "bf16", False, 16), ("llama-3-8b", "bf16", True, 16), ("llama-3-8b", "bf16-mixed", False, 16),
    ("llama-3-8b", "bf16-mixed", True, 16), ("llama-3-8b", "bf16", False, 0),
    ("mistral-7b", "bf16", False, 8), ("tinyllama-1.1b", "bf16", False, 0), ("llama-tied-1b", "bf16-mixed", True, 0),
    ("qwen2.5-0.5b", "fp32", False, 0), ("qwen2.5-0.5b", "bf16-mixed", True, 0),
]
SEQ, HEAD_WIDTH, VOCAB = 4, 2, 32


def tiny(config_json):
    """The same modules and layer count, every width made small."""
    c = dict(config_json)
    heads = c.get("num_attention_heads", c.get("n_head", 12))
    width = heads * HEAD_WIDTH
    for key in ("hidden_size", "n_embd"):
        if key in c:
            c[key] = width
    if "intermediate_size" in c:
        c["intermediate_size"] = 4 * width
    if "head_dim" in c:
        c["head_dim"] = HEAD_WIDTH
    c["vocab_size"] = VOCAB
    return c


def measure(name, precision, ckpt, lora, steps):
    import torch
    import transformers

    torch.set_num_threads(1)
    config = transformers.AutoConfig.for_model(**tiny(SUITE_CONFIGS[name]))
    cls = transformers.AutoModelForMaskedLM if config.model_type == "bert" else transformers.AutoModelForCausalLM
    torch.manual_seed(0)
    model = cls.from_config(config, attn_implementation="sdpa")
    if precision == "bf16" or (lora and precision != "fp32"):
        model = model.to(torch.bfloat16)
    if lora:
        import peft
        model = peft.get_peft_model(model, peft.LoraConfig(r=lora, lora_alpha=2 * lora, lora_dropout=0.0,
                                                           target_modules="all-linear"))
        for p in model.parameters():
            if p.requires_grad:
                p.data = p.data.float()
    model.train()
    if ckpt:
        model.gradient_checkpointing_enable()
        if lora:
            model.enable_input_require_grads()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5, fused=True)
    ids = torch.randint(0, VOCAB, (1, SEQ))
    autocast = precision == "bf16-mixed"

    def step():
        """Seconds of the forward (to the loss), the backward and the optimizer step."""
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = model(input_ids=ids, labels=ids)
        t1 = time.perf_counter()
        out.loss.backward()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return t1 - t0, t2 - t1, time.perf_counter() - t2

    for _ in range(2):
        step()
    phases = [step() for _ in range(steps)]
    times = [sum(p) for p in phases]
    forward, backward, optimizer = (1e3 * statistics.median(p) for p in zip(*phases))
    layers = getattr(config, "num_hidden_layers", getattr(config, "n_layer", 0))
    return {"model": name, "precision": precision, "ckpt": ckpt, "lora": lora, "layers": layers,
            "host_ms_median": 1e3 * statistics.median(times), "host_ms_min": 1e3 * min(times),
            "forward_ms": forward, "backward_ms": backward, "optimizer_ms": optimizer, "steps": steps,
            "torch": torch.__version__, "transformers": transformers.__version__}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--only", nargs="*", help="model names to measure")
    ap.add_argument("--steps", type=int, default=7)
    a = ap.parse_args()
    rows = [c for c in CONFIGS if not a.only or c[0] in a.only]
    tmp = a.out + ".partial"
    with open(tmp, "w") as f:
        for i, c in enumerate(rows):
            row = measure(*c, a.steps)
            if "peft" in sys.modules:
                row["peft"] = sys.modules["peft"].__version__
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(f"[{i + 1}/{len(rows)}] {c}: {row['host_ms_median']:.1f} ms", file=sys.stderr)
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
