#!/usr/bin/env python3
"""Prints the summary of a GPU validation run: per problem, tiletune's best
variant, TFLOP/s, % of peak, ratio to cuBLASLt (same run), and the agreement
of tiletune's cuBLASLt time with torch.matmul's. Also writes rows for the
results table of docs/benchmarks.md (markdown) to OUT/results_table.md.

    scripts/validate/summarize_gpu_run.py OUT/gemm-benchmark.json OUT/torch.json OUT
"""
import json
import sys


def main():
    gemm = json.load(open(sys.argv[1]))
    torch_runs = {r["name"]: r for r in json.load(open(sys.argv[2]))["results"]} if len(sys.argv) > 2 else {}
    out_dir = sys.argv[3] if len(sys.argv) > 3 else "."
    device = gemm["device"]["name"]
    date = gemm["tool"]["date"][:10]
    rows = []
    print(f"{'problem':36} {'best variant':26} {'TFLOP/s':>8} {'%peak':>6} {'vs cuBLAS':>9} {'cuBLAS us':>10} {'torch us':>9} {'agree':>6}")
    for r in gemm["results"]:
        rec = r.get("recommendation")
        ref = r["reference"].get("median_us")
        t = torch_runs.get(r["name"], {}).get("median_us")
        agree = f"{100 * (ref / t - 1):+.1f}%" if ref and t else "-"
        if rec:
            print(f"{r['name']:36} {rec['id']:26} {rec['tflops']:8.1f} {rec['percent_of_peak']:6.1f} "
                  f"{rec['vs_reference']:9.2f} {ref:10.1f} {t or 0:9.1f} {agree:>6}")
            rows.append(f"| {r['name']} | {rec['id']} | {rec['tflops']:.1f} | {rec['percent_of_peak']:.0f}% | "
                        f"{rec['vs_reference']:.2f} | {date} | {device} |")
        else:
            print(f"{r['name']:36} {'none':26}")
    with open(f"{out_dir}/results_table.md", "w") as f:
        f.write("| problem | best variant | TFLOP/s | % of peak | vs cuBLAS | date | device |\n|---|---|---|---|---|---|---|\n")
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
