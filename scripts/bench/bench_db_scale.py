#!/usr/bin/env python3
"""The tuning database at fleet scale (issue 41): builds databases of 1k, 10k
and 100k records and times what a user does with them.

    scripts/bench/bench_db_scale.py build/tiletune profiles/db_scale.json [--sizes 1000 10000 100000]

The records are synthetic but of the real shape: one measured suite result of
an H200 (profiles/measured/h200-2026-11-26/session3, TinyLlama's q_proj
forward: the result, its top variants and their rows) filed under 10 GPU
types and distinct problems (M and N varied, the times kept, so no figure beats
the GPU's limits), stored with `tiletune db import` in batches. Timed, each the
median of 5 runs of the command as a user types it:
  repeat   `gemm --gpu h200 ...` answered from the database (offline, same GPU model)
  list     `db list --limit 50`
  export   `db export --format triton`
  merge    `db merge` of the two halves (each built like the whole) into a new file
and the file's bytes per record. Writes OUT (JSON) and prints a table.
"""
import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BASE = os.path.join(ROOT, "profiles/measured/h200-2026-11-26/session3/model-tinyllama-1.1b-train.json")
GPU_TYPES = 10


def problem_of(i):
    # Distinct (GPU type, M, N): M 64..8192, N 16.. up to 2048 (K 2048), never larger than the base problem.
    j = i // GPU_TYPES
    return 64 * (1 + j % 128), 16 * (1 + j // 128)


def suites(count, offset=0):
    """The records as suite results, one suite per GPU type (a suite file has one device)."""
    base = json.load(open(BASE))
    result = base["results"][0]
    header = {k: base[k] for k in ("schema", "tool", "device", "mode")}
    per_gpu = {g: [] for g in range(GPU_TYPES)}
    for i in range(offset, offset + count):
        g = i % GPU_TYPES
        m, n = problem_of(i)
        r = copy.deepcopy(result)
        p = r["problem"]
        p["m"], p["n"] = m, n
        p["flops"] = 2.0 * m * n * p["k"]
        p["operand_bytes"] = 2 * (m * p["k"] + p["k"] * n + m * n)
        r["name"] = f"synthetic {i}"
        # The TFLOP/s the new problem's FLOPs over the kept times give (readers refuse a figure that
        # disagrees with its time).
        for v in [r.get("recommendation")] + r.get("variants", []):
            if isinstance(v, dict) and v.get("tflops") and (v.get("median_us") or v.get("predicted_us")):
                v["tflops"] = p["flops"] / (v.get("median_us") or v["predicted_us"]) / 1e6
        per_gpu[g].append(r)
    out = []
    for g, results in per_gpu.items():
        if not results:
            continue
        s = copy.deepcopy(header)
        s["schema"] = "tiletune.gemm-suite/1"
        if g:  # GPU type 0 is the H200 itself, the others GPUs without a preset
            s["device"]["name"] = f"synthetic GPU {g}"
            s["device"]["preset"] = None
        s["results"] = results
        out.append(s)
    return out


def build(tiletune, db, count, offset, work):
    batch = 5000
    for start in range(offset, offset + count, batch):
        files = []
        for k, s in enumerate(suites(min(batch, offset + count - start), start)):
            f = os.path.join(work, f"import-{k}.json")
            json.dump(s, open(f, "w"))
            files.append(f)
        subprocess.run([tiletune, "db", "import", "--db", db, *files], check=True, stdout=subprocess.DEVNULL)
        for f in files:
            os.remove(f)


def timed(cmd, runs=5, before=None):
    times = []
    for _ in range(runs):
        if before:
            before()
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if out.returncode != 0:
            sys.exit(f"failed ({out.returncode}): {' '.join(cmd)}\n{out.stderr[-2000:]}")
    return statistics.median(times), out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tiletune")
    ap.add_argument("out")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    a = ap.parse_args()
    tiletune = os.path.abspath(a.tiletune)
    rows = []
    with tempfile.TemporaryDirectory(prefix="tiletune-dbscale-") as work:
        env_cache = os.path.join(work, "cache")
        os.environ["XDG_CACHE_HOME"] = env_cache  # no file of the user's cache is touched
        for size in a.sizes:
            db = os.path.join(work, f"db-{size}.sqlite3")
            halves = [os.path.join(work, f"half-{size}-{h}.sqlite3") for h in (0, 1)]
            t0 = time.perf_counter()
            build(tiletune, db, size, 0, work)
            build_s = time.perf_counter() - t0
            build(tiletune, halves[0], size // 2, 0, work)
            build(tiletune, halves[1], size - size // 2, size // 2, work)
            m, n = problem_of(0)
            repeat_s, out = timed([tiletune, "gemm", "--gpu", "h200", "--m", str(m), "--n", str(n), "--k", "2048",
                                   "--dtype", "bf16", "--layout", "nt", "--db", db, "--json", "--quiet"])
            answered = json.loads(out.stdout).get("tuning_db", {}).get("answered", False)
            list_s, _ = timed([tiletune, "db", "list", "--db", db, "--limit", "50"])
            export_s, _ = timed([tiletune, "db", "export", "--db", db, "--format", "triton",
                                 "--out", os.path.join(work, "export.py")], runs=3)
            merged = os.path.join(work, "merged.sqlite3")

            def fresh():
                for suffix in ("", "-wal", "-shm"):
                    if os.path.exists(merged + suffix):
                        os.remove(merged + suffix)
            merge_s, _ = timed([tiletune, "db", "merge", *halves, "--into", merged], runs=3, before=fresh)
            size_bytes = os.path.getsize(db)
            row = {"records": size, "build_s": round(build_s, 2), "repeat_answer_s": round(repeat_s, 4),
                   "answered_from_db": answered, "db_list_limit_50_s": round(list_s, 4),
                   "export_triton_s": round(export_s, 3), "merge_two_halves_s": round(merge_s, 3),
                   "file_bytes": size_bytes, "bytes_per_record": round(size_bytes / size)}
            rows.append(row)
            print(json.dumps(row), flush=True)
            for f in [db, *halves, merged]:
                for suffix in ("", "-wal", "-shm"):
                    if os.path.exists(f + suffix):
                        os.remove(f + suffix)
    version = subprocess.run([tiletune, "--version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if commit.returncode == 0:
        version += f" ({commit.stdout.strip()})"
    doc = {"schema": "tiletune.db-scale/1", "tool": version, "machine": f"{os.cpu_count()} cores",
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "record": "a measured suite result (TinyLlama q_proj forward on an H200, its top variants) under 10 GPU "
                     "types and distinct problems; full results off",
           "goals": {"records": 100000, "repeat_answer_s": 0.05, "db_list_limit_50_s": 0.1, "export_triton_s": 10,
                     "merge_two_halves_s": 60, "bytes_per_record": 8192},
           "results": rows}
    json.dump(doc, open(a.out, "w"), indent=2)
    print(f"{'records':>8} {'repeat':>8} {'list 50':>8} {'export':>8} {'merge':>8} {'B/record':>9}")
    for r in rows:
        print(f"{r['records']:>8} {r['repeat_answer_s']:>8.3f} {r['db_list_limit_50_s']:>8.3f} "
              f"{r['export_triton_s']:>8.2f} {r['merge_two_halves_s']:>8.2f} {r['bytes_per_record']:>9}")


if __name__ == "__main__":
    main()
