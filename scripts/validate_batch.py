#!/usr/bin/env python3
"""Validates `tiletune batch` against real training on the local GPU (needs
PyTorch and transformers; runs on the GPU machine). For gpt2, bert-base-uncased
and a small Llama built from their configs with random weights, trains a few
steps (bf16 autocast, fp32 AdamW, SDPA attention) at several micro-batches with
and without gradient checkpointing, and records torch.cuda.max_memory_allocated,
max_memory_reserved and samples/s beside tiletune's predictions.

tiletune predicts peak_allocated_bytes against max_memory_allocated (its
peak_bytes adds allocator slack and the CUDA context on top).

    scripts/validate_batch.py build/tiletune OUT.json [--gpu PRESET]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
import transformers

MODELS = {
    "gpt2": ({"model_type": "gpt2", "vocab_size": 50257, "n_embd": 768, "n_layer": 12, "n_head": 12,
              "n_positions": 1024}, transformers.GPT2LMHeadModel, 1024),
    "bert-base-uncased": ({"model_type": "bert", "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
                           "num_attention_heads": 12, "intermediate_size": 3072, "max_position_embeddings": 512,
                           "type_vocab_size": 2}, transformers.BertForMaskedLM, 512),
    "small-llama": ({"model_type": "llama", "vocab_size": 32000, "hidden_size": 1024, "num_hidden_layers": 8,
                     "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 2816,
                     "max_position_embeddings": 2048, "tie_word_embeddings": False},
                    transformers.LlamaForCausalLM, 1024),
}
BATCHES = [1, 2, 4, 8, 16, 32]


def measure(cls, config, seq, batch, ckpt, steps=5, warmup=2):
    torch.cuda.empty_cache()
    torch.manual_seed(0)
    cfg = transformers.AutoConfig.for_model(**config)
    model = cls._from_config(cfg, attn_implementation="sdpa").cuda()
    model.train()
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    ids = torch.randint(0, config["vocab_size"], (batch, seq), device="cuda")
    torch.cuda.reset_peak_memory_stats()
    try:
        for i in range(warmup + steps):
            if i == warmup:
                torch.cuda.synchronize()
                start = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        return {"allocated": torch.cuda.max_memory_allocated(), "reserved": torch.cuda.max_memory_reserved(),
                "samples_per_s": batch * steps / elapsed}
    except torch.cuda.OutOfMemoryError:
        return {"oom": True}
    finally:
        del model, opt
        torch.cuda.empty_cache()


def predict(binary, config, seq, gpu, ckpt):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
    args = [binary, "batch", "--model", f.name, "--seq-len", str(seq), "--precision", "bf16-mixed",
            "--optimizer", "adamw", "--attention", "flash", "--checkpointing", "on" if ckpt else "off", "--json"]
    args += ["--gpu", gpu] if gpu else []
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    os.unlink(f.name)
    return {c["micro_batch"]: c for c in json.loads(out)["candidates"]}, json.loads(out)


def main():
    binary, out_path = sys.argv[1], sys.argv[2]
    gpu = sys.argv[sys.argv.index("--gpu") + 1] if "--gpu" in sys.argv else None
    report = {"schema": "tiletune.batch_validation/1", "device": torch.cuda.get_device_name(0),
              "torch": torch.__version__, "transformers": transformers.__version__,
              "predicted_measure": "peak_allocated_bytes vs torch.cuda.max_memory_allocated", "models": []}
    for name, (config, cls, seq) in MODELS.items():
        entry = {"model": name, "seq_len": seq, "runs": []}
        for ckpt in (False, True):
            predicted, plan = predict(binary, config, seq, gpu, ckpt)
            for b in BATCHES:
                m = measure(cls, config, seq, b, ckpt)
                p = predicted.get(b)
                row = {"micro_batch": b, "checkpointing": ckpt, "measured": m,
                       "predicted_allocated": p and p["peak_allocated_bytes"], "predicted_fits": p and p["fits"],
                       "predicted_samples_per_s": p and p["samples_per_s"]}
                if p and not m.get("oom"):
                    row["memory_error"] = p["peak_allocated_bytes"] / m["allocated"] - 1
                    row["throughput_error"] = p["samples_per_s"] / m["samples_per_s"] - 1
                entry["runs"].append(row)
                print(name, b, "ckpt" if ckpt else "", json.dumps(row), flush=True)
                if m.get("oom"):
                    break
        fitted = [r for r in entry["runs"] if not r["measured"].get("oom")]
        if fitted:
            best = max(fitted, key=lambda r: r["measured"]["samples_per_s"])
            entry["measured_best"] = {"micro_batch": best["micro_batch"], "checkpointing": best["checkpointing"]}
        report["models"].append(entry)
    json.dump(report, open(out_path, "w"), indent=2)


if __name__ == "__main__":
    main()
