#!/usr/bin/env python3
"""Measures real training steps on the local GPU the way the calibration set
of `tiletune batch` was measured, and appends them to a JSONL file that
scripts/calibrate/fit_batch_calibration.py and the unit tests read
(profiles/measured/<gpu>-<date>/batch/training_calibration.jsonl).

Method (the same as profiles/measured/h100-2026-11-22/batch/): the model is
built from its config.json with random weights, attn_implementation="sdpa",
labels = input ids (the model's own loss), torch.optim.AdamW(fused=True,
lr=1e-5); bf16-mixed = fp32 weights under torch.autocast(bfloat16); bf16 =
the model in bf16 (grads and AdamW states follow); fp32 = no autocast;
checkpointing = model.gradient_checkpointing_enable(). One warm-up step, then
torch.cuda.reset_peak_memory_stats(), then 4 timed steps (forward, backward,
optimizer step, zero_grad(set_to_none)), each bracketed by synchronize. The
model's output object is kept until after backward (as a training script
that reads the logits would), so its logits count in the peak. Each
configuration runs in a fresh process, so peaks and the allocator's state do
not carry over.

Fields: model, config, seq, mb, precision, ckpt, lora, params, trainable,
max_allocated, max_reserved (PyTorch's peaks over the timed steps),
device_used_before_model, device_used_end (whole device via cudaMemGetInfo,
CUDA context included), step_s_median, step_s_min, tokens_per_s, torch,
transformers, device; {"oom": true} when it ran out of memory.

    scripts/validate/validate_batch.py OUT.jsonl --config gpt2.json --name gpt2 --seq 1024 \
        --mb 8 16 --precision bf16-mixed --ckpt off on [--lora 16] [--tiletune build/tiletune]
    scripts/validate/validate_batch.py OUT.jsonl --suite      # GPT-2, a tied Llama, BERT (MLM), LoRA, fp32, MoE
    scripts/validate/validate_batch.py OUT.jsonl --suite --only mixtral-4layer olmoe-1b-7b   # a part of it

--tiletune BINARY also prints `tiletune batch --gpu PRESET` (offline) against
each measurement: peak_allocated_bytes vs max_allocated, tokens/s vs tokens/s.
Needs PyTorch and transformers (peft for --lora); written for a GPU machine.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# Configurations of other families than the calibration's GPT-2 and
# TinyLlama, to check that the formulas generalise: an encoder (BERT, MLM
# loss over all tokens), a decoder with tied embeddings, and LoRA.
SUITE_CONFIGS = {
    "gpt2": {"model_type": "gpt2", "vocab_size": 50257, "n_embd": 768, "n_layer": 12, "n_head": 12,
             "n_positions": 1024},
    "bert-base-uncased": {"model_type": "bert", "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
                          "num_attention_heads": 12, "intermediate_size": 3072, "max_position_embeddings": 512,
                          "type_vocab_size": 2},
    "llama-tied-1b": {"model_type": "llama", "vocab_size": 128256, "hidden_size": 2048, "num_hidden_layers": 16,
                      "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192,
                      "max_position_embeddings": 131072, "tie_word_embeddings": True},
}
# Mixture-of-experts configurations: the published config.json files kept in
# tests/fuzz/seeds/model_config/ (read at run time), and a 4-layer Mixtral of
# full width that trains on one 80 GB GPU. Dense LoRA on 1-8B Llama/Mistral
# (bf16 base, fp32 adapters, rank 8-16), and fp32 with a 152k tied vocabulary.
SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fuzz", "seeds", "model_config")


def seed_config(name):
    with open(os.path.join(SEEDS, name)) as f:
        return json.load(f)


SUITE_CONFIGS.update({
    "llama-3-8b": {"model_type": "llama", "vocab_size": 128256, "hidden_size": 4096, "num_hidden_layers": 32,
                   "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
                   "max_position_embeddings": 8192, "tie_word_embeddings": False},
    "mistral-7b": {"model_type": "mistral", "vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": 32,
                   "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
                   "max_position_embeddings": 32768, "tie_word_embeddings": False},
    "tinyllama-1.1b": {"model_type": "llama", "vocab_size": 32000, "hidden_size": 2048, "num_hidden_layers": 22,
                       "num_attention_heads": 32, "num_key_value_heads": 4, "intermediate_size": 5632,
                       "max_position_embeddings": 2048, "tie_word_embeddings": False},
    "qwen2.5-0.5b": {"model_type": "qwen2", "vocab_size": 151936, "hidden_size": 896, "num_hidden_layers": 24,
                     "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864,
                     "max_position_embeddings": 32768, "tie_word_embeddings": True},
    "mixtral-4layer": dict(seed_config("mixtral-8x7b.json"), num_hidden_layers=4),
    "olmoe-1b-7b": seed_config("olmoe-1b-7b.json"),
    "qwen1.5-moe-a2.7b": seed_config("qwen1.5-moe-a2.7b.json"),
    "deepseek-v2-lite": seed_config("deepseek-v2-lite.json"),
})
SUITE = [
    ("gpt2", 1024, [4, 8, 16], "bf16-mixed", [False, True], 0),
    ("gpt2", 1024, [8], "bf16", [False], 0),
    ("bert-base-uncased", 512, [16, 32], "bf16-mixed", [False, True], 0),
    ("llama-tied-1b", 2048, [2, 4], "bf16-mixed", [False, True], 0),
    ("llama-tied-1b", 2048, [4], "bf16-mixed", [True], 16),
    # LoRA (issue 19: tokens/s and peak memory of the adapter path)
    ("llama-3-8b", 2048, [1, 2, 4], "bf16", [False], 16),
    ("llama-3-8b", 2048, [2], "bf16-mixed", [False, True], 16),
    ("mistral-7b", 2048, [2], "bf16", [False], 8),
    ("tinyllama-1.1b", 2048, [4, 8], "bf16", [False], 16),
    # fp32 with a 152k tied vocabulary (the logits/loss path in fp32)
    ("qwen2.5-0.5b", 1024, [4, 8], "fp32", [False], 0),
    # mixture of experts
    ("mixtral-4layer", 2048, [1, 2], "bf16", [True], 0),
    ("olmoe-1b-7b", 2048, [1, 2], "bf16", [True], 0),
    ("qwen1.5-moe-a2.7b", 2048, [1, 2], "bf16", [False, True], 16),
    ("deepseek-v2-lite", 2048, [1], "bf16", [True], 16),
]


def measure_one(spec):
    """Runs in a child process: one configuration, one JSON line on stdout."""
    import torch
    import transformers

    torch.cuda.init()
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    used_before = total - free
    config = transformers.AutoConfig.for_model(**spec["config_json"])
    if config.model_type in ("bert", "roberta"):
        cls = transformers.AutoModelForMaskedLM
    else:
        cls = transformers.AutoModelForCausalLM
    torch.manual_seed(0)
    precision = spec["precision"]
    # Built on the GPU in the dtype it trains in (a frozen 16-bit base under LoRA): the
    # random initialisation of an 8B model on the host took minutes, longer than the step.
    bf16_weights = precision == "bf16" or (spec["lora"] and precision != "fp32")
    with torch.device("cuda"):
        model = cls.from_config(config, attn_implementation="sdpa",
                                torch_dtype=torch.bfloat16 if bf16_weights else torch.float32)
    if spec["lora"]:
        import peft  # LoRA on every linear layer of the blocks, as tiletune assumes
        lora = peft.LoraConfig(r=spec["lora"], lora_alpha=2 * spec["lora"],
                               lora_dropout=spec.get("lora_dropout", 0.0),
                               target_modules="all-linear")
        model = peft.get_peft_model(model, lora)
        for p in model.parameters():
            if p.requires_grad:
                p.data = p.data.float()  # fp32 adapters
    model = model.cuda()
    model.train()
    if spec["ckpt"]:
        model.gradient_checkpointing_enable()
        if spec["lora"]:
            model.enable_input_require_grads()
    params = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5, fused=True)
    ids = torch.randint(0, config.vocab_size, (spec["mb"], spec["seq"]), device="cuda")
    autocast = precision in ("bf16-mixed", "fp16-mixed")
    dtype = torch.bfloat16 if precision == "bf16-mixed" else torch.float16
    scaler = torch.amp.GradScaler("cuda") if precision == "fp16-mixed" else None

    def step():
        with torch.autocast("cuda", dtype=dtype, enabled=autocast):
            out = model(input_ids=ids, labels=ids)
        loss = out.loss
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        opt.zero_grad(set_to_none=True)
        del out, loss

    row = {"model": spec["name"], "config": spec.get("config_path"), "seq": spec["seq"], "mb": spec["mb"],
           "precision": precision, "ckpt": spec["ckpt"], "lora": spec["lora"],
           "lora_dropout": spec.get("lora_dropout", 0.0), "params": params,
           "trainable": trainable}
    try:
        step()  # warm-up: kernels loaded, AdamW states created
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        times = []
        for _ in range(4):
            torch.cuda.synchronize()
            start = time.perf_counter()
            step()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
    except torch.cuda.OutOfMemoryError:
        row["oom"] = True
        return row
    free, total = torch.cuda.mem_get_info()
    row.update({"max_allocated": torch.cuda.max_memory_allocated(), "max_reserved": torch.cuda.max_memory_reserved(),
                "device_used_before_model": used_before, "device_used_end": total - free,
                "step_s_median": statistics.median(times), "step_s_min": min(times),
                "tokens_per_s": spec["mb"] * spec["seq"] / statistics.median(times),
                "torch": torch.__version__, "transformers": transformers.__version__,
                "device": torch.cuda.get_device_name()})
    return row


def run_child(spec):
    out = subprocess.run([sys.executable, __file__, "--one", json.dumps(spec)], capture_output=True, text=True)
    if out.returncode != 0:
        return {"model": spec["name"], "seq": spec["seq"], "mb": spec["mb"], "precision": spec["precision"],
                "ckpt": spec["ckpt"], "lora": spec["lora"], "error": out.stderr.strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def tiletune_prediction(binary, gpu, spec):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec["config_json"], f)
    try:
        args = [binary, "batch", "--model", f.name, "--seq-len", str(spec["seq"]), "--gpu", gpu,
                "--precision", spec["precision"], "--optimizer", "adamw", "--attention", "flash",
                "--checkpointing", "on" if spec["ckpt"] else "off", "--global-batch", str(spec["mb"]),
                "--lora-rank", str(spec["lora"]), "--json"]
        if spec.get("lora_dropout", 0.0) > 0:
            args[-1:-1] = ["--lora-dropout", str(spec["lora_dropout"])]
        j = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    finally:
        os.unlink(f.name)
    return next(c for c in j["candidates"] if c["micro_batch"] == spec["mb"])


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        print(json.dumps(measure_one(json.loads(sys.argv[2]))))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="JSONL file to append to")
    ap.add_argument("--suite", action="store_true", help="the built-in set: other families, LoRA, fp32, MoE")
    ap.add_argument("--only", nargs="+", metavar="NAME",
                    help="with --suite: only these models (" + ", ".join(sorted(SUITE_CONFIGS)) + ")")
    ap.add_argument("--config", help="a Hugging Face config.json")
    ap.add_argument("--name", help="the model's name in the output (default: the config's file name)")
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--mb", type=int, nargs="+", default=[8])
    ap.add_argument("--precision", nargs="+", default=["bf16-mixed"],
                    choices=["fp32", "bf16-mixed", "bf16", "fp16-mixed"])
    ap.add_argument("--ckpt", nargs="+", default=["off"], choices=["off", "on"])
    ap.add_argument("--lora", type=int, default=0, help="LoRA rank on every linear layer (needs peft)")
    ap.add_argument("--lora-dropout", type=float, default=0.0, help="peft's lora_dropout (with --lora)")
    ap.add_argument("--tiletune", help="a tiletune binary: print its offline prediction beside each run")
    ap.add_argument("--gpu", default="h100-sxm", help="the preset for --tiletune")
    a = ap.parse_args()

    specs = []
    if a.suite:
        for name, seq, mbs, precision, ckpts, lora in SUITE:
            if a.only and name not in a.only:
                continue
            for ckpt in ckpts:
                for mb in mbs:
                    specs.append({"name": name, "config_json": SUITE_CONFIGS[name], "seq": seq, "mb": mb,
                                  "precision": precision, "ckpt": ckpt, "lora": lora})
    elif a.config:
        config_json = json.load(open(a.config))
        name = a.name or os.path.splitext(os.path.basename(a.config))[0]
        for precision in a.precision:
            for ckpt in a.ckpt:
                for mb in a.mb:
                    specs.append({"name": name, "config_path": a.config, "config_json": config_json, "seq": a.seq,
                                  "mb": mb, "precision": precision, "ckpt": ckpt == "on", "lora": a.lora,
                                  "lora_dropout": a.lora_dropout})
    else:
        ap.error("give --config or --suite")

    with open(a.out, "a") as out:
        for spec in specs:
            row = run_child(spec)
            out.write(json.dumps(row) + "\n")
            out.flush()
            line = f'{row["model"]} seq {row["seq"]} mb {row["mb"]} {row["precision"]} ckpt={row["ckpt"]} lora={row["lora"]}: '
            if "max_allocated" not in row:
                print(line + ("out of memory" if row.get("oom") else f'failed: {row.get("error")}'))
                continue
            line += f'{row["max_allocated"] / 2**30:.2f} GiB allocated, {row["tokens_per_s"]:.0f} tokens/s'
            if a.tiletune:
                c = tiletune_prediction(a.tiletune, a.gpu, spec)
                line += (f' | tiletune {c["peak_allocated_bytes"] / 2**30:.2f} GiB '
                         f'({(c["peak_allocated_bytes"] / row["max_allocated"] - 1) * 100:+.1f}%), '
                         f'{c["tokens_per_s"]:.0f} tokens/s ({(c["tokens_per_s"] / row["tokens_per_s"] - 1) * 100:+.1f}%)')
            print(line, flush=True)


if __name__ == "__main__":
    main()
