#!/usr/bin/env bash
# Benchmark (not a test; no GPU needed): time to an answer offline, the goals
# of issue 22 on the 2-core machine: the README's main job cold (empty compile
# cache, default jobs) <= 10 s, warm <= 0.5 s, the llm suite cold <= 15 s; and
# the bounded compile recommends what compiling every variant recommends
# (the same job with --compile-all, its time beside).
# Writes profiles/time_to_answer_<host>.json and prints a summary.
#   scripts/bench/bench_time_to_answer.sh [build/tiletune] [work-dir]
#   BENCH_FULL=0 skips the --compile-all runs (minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/tiletune}
work=${2:-$(mktemp -d)}
mkdir -p "$work"
host=$(hostname -s 2>/dev/null || echo host)
job=(gemm --m 4096 --n 4096 --k 4096 --dtype bf16 --layout nt --gpu h100-sxm --dry-run --no-db)

now() { date +%s.%N; }
# timed NAME ARGS...: wall seconds of one run, its JSON in $work/NAME.json.
timed() {
  local name=$1 t0 t1
  shift
  t0=$(now)
  "$bin" "$@" --out "$work/$name.json" >/dev/null 2>"$work/$name.err"
  t1=$(now)
  awk "BEGIN{printf \"%.2f\", $t1 - $t0}"
}

rm -rf "$work/cache-job" "$work/cache-suite" "$work/cache-full"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
job_cold=$(timed job_cold "${job[@]}" --cache-dir "$work/cache-job")
job_warm=$(timed job_warm "${job[@]}" --cache-dir "$work/cache-job")
suite_cold=$(timed suite_cold gemm --suite profiles/suites/llm.json --gpu h100-sxm --dry-run --no-db \
  --cache-dir "$work/cache-suite")
full_cold=null
if [[ ${BENCH_FULL:-1} != 0 ]]; then
  full_cold=$(timed job_full "${job[@]}" --compile-all --cache-dir "$work/cache-full")
fi

python3 - "$work" "$host" "$job_cold" "$job_warm" "$suite_cold" "$full_cold" "$(nproc)" "$load_before" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" <<'EOF'
import json, os, sys, datetime
work, host, job_cold, job_warm, suite_cold, full_cold, cores, load_before, load_after = sys.argv[1:]
load = lambda n: json.load(open(os.path.join(work, n + ".json")))
cold = load("job_cold")
out = {
    "schema": "tiletune.time_to_answer/1",
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "host": host, "cores": int(cores), "tool": cold.get("tool", {}),
    "readme_job": {"cold_s": float(job_cold), "warm_s": float(job_warm),
                   "programs_compiled": cold["compile"]["variants_compiled"],
                   "variants": len(cold["variants"]),
                   "recommended": cold["recommendation"]["id"]},
    "llm_suite_cold_s": float(suite_cold),
}
# Programs the suite compiled afresh (not from the cache): what the cold time is made of, whatever the load.
suite = load("suite_cold")
out["llm_suite_programs_compiled"] = sum(r["compile"]["variants_compiled"] - r["compile"]["cache_hits"]
                                         for r in suite["results"])
# The 1-minute load average before and after (the machine may be shared): figures under load are slower.
out["load_average"] = {"before": load_before, "after": load_after}
if full_cold != "null":
    full = load("job_full")
    out["readme_job"]["compile_all"] = {"cold_s": float(full_cold),
                                        "programs_compiled": full["compile"]["variants_compiled"],
                                        "recommended": full["recommendation"]["id"]}
    out["readme_job"]["same_recommendation"] = full["recommendation"]["id"] == cold["recommendation"]["id"]
path = os.path.join("profiles", f"time_to_answer_{host}.json")
with open(path + ".tmp", "w") as f:
    json.dump(out, f, indent=2)
    f.write("\n")
os.replace(path + ".tmp", path)
print(json.dumps(out, indent=2))
print("wrote", path)
EOF
