#!/usr/bin/env python3
"""Fits the constants of `tiletune batch` that the formulas cannot derive to
real training steps (training_calibration.jsonl, written by
scripts/validate/validate_batch.py) and prints them with the per-configuration errors.

    scripts/calibrate/fit_batch_calibration.py build/tiletune \
        profiles/measured/h100-2026-11-22/batch/training_calibration.jsonl [--gpu h100-sxm] \
        [--measured profiles/measured/h100-2026-11-22/batch/batch-*.json]

Memory: library_workspace_bytes = the median of max_allocated minus the
modelled tensors (the binary's own workspace term taken out);
cuda_context_bytes = the median of device_used_end - max_reserved;
allocator slack: over the transient part (max_allocated minus weights,
optimizer states and workspace, which are allocated once and never freed),
the largest without checkpointing; with checkpointing, what remains beyond
that as a share of the gradients' bytes, the largest (issue 21).
Time: step = GEMMs + optimizer + memory_bound_bytes / (share * bandwidth)
+ kernels * launch_us, with bytes from the binary and GEMM times from
--measured files (`tiletune batch` run on the same GPU: cuBLASLt times; the
rows with no such file are left out) or else from the binary's model; share
and launch_us minimise the squared log error of tokens/s (grid).
"""
import json
import math
import statistics
import subprocess
import sys

PRESETS = {"gpt2": "gpt2", "tinyllama-11b": "tinyllama-1.1b"}


# The recording's loop runs backward and opt.step() without clipping: --grad-clip off.
def plan(binary, row, gpu):
    args = [binary, "batch", "--model", row.get("config") or PRESETS[row["model"]], "--seq-len", str(row["seq"]),
            "--gpu", gpu, "--precision", row["precision"], "--checkpointing", "on" if row["ckpt"] else "off",
            "--global-batch", str(row["mb"]), "--lora-rank", str(row.get("lora", 0)), "--grad-clip", "off", "--json"]
    if row.get("lora_dropout", 0) > 0:
        args[-1:-1] = ["--lora-dropout", str(row["lora_dropout"])]
    j = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    return j, next(c for c in j["candidates"] if c["micro_batch"] == row["mb"])


def main():
    binary, data = sys.argv[1], sys.argv[2]
    gpu = sys.argv[sys.argv.index("--gpu") + 1] if "--gpu" in sys.argv else "h100-sxm"
    measured = []
    if "--measured" in sys.argv:
        measured = [json.load(open(f)) for f in sys.argv[sys.argv.index("--measured") + 1:] if not f.startswith("--")]
    rows = [json.loads(line) for line in open(data) if line.strip() and "max_allocated" in line]
    plans = [plan(binary, r, gpu) for r in rows]
    bandwidth = plans[0][0]["gpu"]["memory_bandwidth_gbs"] * 1e9
    residual = [r["max_allocated"] - c["peak_allocated_bytes"] + j["memory"]["library_workspace_bytes"]
                for r, (j, c) in zip(rows, plans)]

    def measured_gemm_ms(row):
        # A measured-mode plan of the same model, sequence, GEMM dtype and policy.
        dtype = "f32" if row["precision"] == "fp32" else "16"
        for m in measured:
            same_dtype = (m["setup"]["precision"] == "fp32") == (dtype == "f32")
            if m["setup"]["seq_len"] != row["seq"] or not same_dtype or m["model"]["parameters"] != row["params"]:
                continue
            for c in m["candidates"]:
                if c["micro_batch"] == row["mb"] and c["checkpointing"] == row["ckpt"]:
                    return c["time"]["gemm_ms"]
        return None

    if measured:
        keep = [i for i, r in enumerate(rows) if measured_gemm_ms(r) is not None]
        for i in keep:
            plans[i][1]["time"]["gemm_ms"] = measured_gemm_ms(rows[i])
        print(f"time fitted on {len(keep)} rows with cuBLASLt GEMM times")
        fit_rows, fit_plans = [rows[i] for i in keep], [plans[i] for i in keep]
    else:
        fit_rows, fit_plans = rows, plans
    print("memory residual MiB (measured - modelled):", [round(x / 2**20) for x in residual])
    print("library_workspace_bytes (median, whole MiB):", int(statistics.median(residual)) // 2**20 * 2**20)
    print("cuda_context_bytes (median):", int(statistics.median(r["device_used_end"] - r["max_reserved"] for r in rows)))
    def held(j):
        m = j["memory"]
        return m["weights_bytes"] + m["optimizer_bytes"] + m["library_workspace_bytes"]
    plain = [(r["max_reserved"] - r["max_allocated"]) / (r["max_allocated"] - held(j))
             for r, (j, _) in zip(rows, plans) if not r["ckpt"]]
    print("allocator slack over the transient part, no checkpointing:", [round(x, 3) for x in plain])
    transient = math.ceil(max(plain) * 100) / 100
    print(f"allocator_slack_of_transient {transient}")
    ckpt = [((r["max_reserved"] - r["max_allocated"]) - transient * (r["max_allocated"] - held(j))) /
            j["memory"]["gradients_bytes"] for r, (j, _) in zip(rows, plans) if r["ckpt"]]
    print("checkpointing: the rest over the gradients:", [round(x, 3) for x in ckpt])
    print(f"allocator_slack_ckpt_of_gradients {math.ceil(max(ckpt) * 100) / 100}")
    best = None
    for share in [x / 100 for x in range(20, 101)]:
        for launch in [x / 2 for x in range(0, 61)]:
            err = 0
            for r, (_, c) in zip(fit_rows, fit_plans):
                t = c["time"]
                ms = t["gemm_ms"] + t["optimizer_ms_per_global_step"] + \
                    t["memory_bound_bytes"] / (share * bandwidth) * 1e3 + t["kernels"] * launch * 1e-3
                err += math.log(r["seq"] * r["mb"] / (ms * 1e-3) / r["tokens_per_s"]) ** 2
            if best is None or err < best[0]:
                best = (err, share, launch)
    _, share, launch = best
    print(f"elementwise_bandwidth_share {share}  launch_us {launch}")
    for r, (_, c) in zip(fit_rows, fit_plans):
        t = c["time"]
        ms = t["gemm_ms"] + t["optimizer_ms_per_global_step"] + \
            t["memory_bound_bytes"] / (share * bandwidth) * 1e3 + t["kernels"] * launch * 1e-3
        tps = r["seq"] * r["mb"] / (ms * 1e-3)
        print(f'{r["model"]:14s} mb{r["mb"]:<3d} {r["precision"]:10s} ckpt={int(r["ckpt"])} '
              f'tokens/s {tps:8.0f} vs {r["tokens_per_s"]:8.0f} ({(tps / r["tokens_per_s"] - 1) * 100:+.1f}%)')


if __name__ == "__main__":
    main()
