#!/usr/bin/env bash
# Benchmark (not a test): NVRTC compile time per variant, cold cache with one
# job and warm cache, for one problem per dtype on one preset. Writes
# profiles/compile_times_<host>.json and prints a summary.
#   scripts/bench/bench_compile.sh [build/tiletune] [preset]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/tiletune}
preset=${2:-h100-sxm}
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
out=profiles/compile_times_$(hostname -s).json
runs=()
for dtype in f32 tf32 f16 bf16; do
  args=(gemm --m 4096 --n 4096 --k 4096 --dtype "$dtype" --layout nt --gpu "$preset" --dry-run --json --jobs 1)
  "$bin" "${args[@]}" --cache-dir "$cache" >"$cache/cold_$dtype.json"
  "$bin" "${args[@]}" --cache-dir "$cache" >"$cache/warm_$dtype.json"
  runs+=("$dtype")
done
python3 - "$cache" "$out" "$preset" "$(nproc)" "${runs[@]}" <<'PY'
import json, statistics, sys, datetime, platform
cache, out, preset, cores, dtypes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
rows = []
for d in dtypes:
    cold = json.load(open(f"{cache}/cold_{d}.json"))
    warm = json.load(open(f"{cache}/warm_{d}.json"))
    ms = [v["compile"]["ms"] for v in cold["variants"] if "compile" in v and not v["compile"]["cached"]]
    n = warm["compile"]["variants_compiled"]
    assert warm["compile"]["cache_hits"] == n, "the second run should hit the cache for every variant"
    rows.append({"dtype": d, "variants": len(ms), "cold_median_ms": statistics.median(ms),
                 "cold_p90_ms": sorted(ms)[int(0.9 * (len(ms) - 1))], "cold_max_ms": max(ms),
                 "warm_ms_per_variant": warm["compile"]["wall_ms"] / n,
                 "nvrtc": cold["tool"]["nvrtc"]})
doc = {"schema": "tiletune.compile_bench/1", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
       "host": platform.node(), "cpu_cores": cores, "preset": preset, "jobs": 1,
       "problem": "4096x4096x4096 nt", "goal": {"cold_median_ms": 150, "warm_ms_per_variant": 5}, "results": rows}
import os
try:  # keep the per-phase section scripts/bench/bench_compile_times.sh adds
    doc["phases"] = json.load(open(out))["phases"]
except (OSError, ValueError, KeyError):
    pass
tmp = out + ".tmp"
json.dump(doc, open(tmp, "w"), indent=2)
import os; os.replace(tmp, out)
print(f"{'dtype':6} {'variants':>8} {'cold median ms':>15} {'cold p90 ms':>12} {'warm ms/variant':>16}")
for r in rows:
    print(f"{r['dtype']:6} {r['variants']:8} {r['cold_median_ms']:15.1f} {r['cold_p90_ms']:12.1f} {r['warm_ms_per_variant']:16.2f}")
print(f"wrote {out}")
PY
