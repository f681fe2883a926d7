#!/usr/bin/env python3
"""Times torch.matmul on a tiletune suite's problems: the outside check of
tiletune's cuBLAS figure. Writes JSON: one entry per problem with the median
time in microseconds (triton.testing.do_bench when Triton is there, else CUDA
events around each call with the L2 flushed in between).

    scripts/validate/torch_matmul.py profiles/suites/gpu-benchmark.json out/torch.json
"""
import json
import statistics
import sys

import torch

DTYPES = {"f32": torch.float32, "tf32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def operands(p):
    dt = DTYPES[p["dtype"]]
    m, n, k, batch = p["m"], p["n"], p["k"], p.get("batch", 1)
    lay = p.get("layout", "nn")
    # Random, non-zero, and in the layout tiletune uses: 't' is stored transposed.
    def rand(*shape):
        x = torch.rand(*shape, device="cuda", dtype=torch.float32) * 0.98 + 0.02
        x = x * (torch.randint(0, 2, shape, device="cuda") * 2 - 1)
        return x.to(dt)
    a = rand(batch, k, m).transpose(1, 2) if lay[0] == "t" else rand(batch, m, k)
    b = rand(batch, n, k).transpose(1, 2) if lay[1] == "t" else rand(batch, k, n)
    if batch == 1:
        a, b = a[0], b[0]
    return a, b


def time_us(fn, l2_bytes):
    try:
        import triton.testing
        return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3
    except Exception:  # no Triton: events with an explicit flush
        flush = torch.empty(2 * l2_bytes, dtype=torch.uint8, device="cuda")
        for _ in range(10):
            fn()
        times = []
        for _ in range(100):
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        return statistics.median(times)


def main():
    suite = json.load(open(sys.argv[1]))
    out_path = sys.argv[2]
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    results = []
    for p in suite["problems"]:
        torch.backends.cuda.matmul.allow_tf32 = p["dtype"] == "tf32"
        a, b = operands(p)
        us = time_us(lambda: torch.matmul(a, b), l2)
        flops = 2.0 * p["m"] * p["n"] * p["k"] * p.get("batch", 1)
        results.append({"name": p["name"], "problem": p, "median_us": us, "tflops": flops / us / 1e6})
        print(f"{p['name']:40s} {us:10.1f} us {flops / us / 1e6:8.1f} TFLOP/s", flush=True)
    doc = {"schema": "tiletune.torch_matmul/1", "device": props.name, "torch": torch.__version__,
           "cuda": torch.version.cuda, "timer": "triton.testing.do_bench or CUDA events", "results": results}
    json.dump(doc, open(out_path, "w"), indent=2)


if __name__ == "__main__":
    main()
