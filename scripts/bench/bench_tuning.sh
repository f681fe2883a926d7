#!/usr/bin/env bash
# Benchmark (not a test; needs a GPU): how long tuning takes, against the goals
# of issue 12 on an H100: at most 8 s per shape for the default search cold
# (compile cache and tuning database empty, compile included), under 1 s for a
# repeat (answered from the tuning database), and the 12-problem
# profiles/suites/gpu-benchmark.json in under 90 s. Also times --search
# exhaustive on the same shapes, for the speedup and to check that both pick
# the same variant or one within the measured noise.
# Writes profiles/tuning_times_<gpu>_<date>.json and prints a summary.
#   scripts/bench/bench_tuning.sh [build/tiletune] [out-dir]
#   BENCH_SHAPES="0 3" (indices into the shapes below; default all),
#   BENCH_STRATEGIES="halving" (default "halving exhaustive"), BENCH_SUITE=0 (skip the suite)
# Each step is time-limited (timeout) and logs into the out-dir as it goes.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/tiletune}
work=${2:-$(mktemp -d)}
mkdir -p "$work"
shapes=("4096 4096 4096 bf16 nt" "8192 8192 8192 bf16 nt" "4096 4096 4096 f32 nn" "128 4096 4096 bf16 nt"
        "4096 128256 4096 bf16 nt")

now() { date +%s.%N; }
# run NAME LIMIT_S ARGS...: times one tiletune run, keeps its JSON and stderr, never stops the script.
run() {
  local name=$1 limit=$2; shift 2
  local t0 t1 rc=0
  t0=$(now)
  timeout "$limit" "$bin" "$@" --out "$work/$name.json" 2>"$work/$name.err" >/dev/null || rc=$?
  t1=$(now)
  echo "{\"name\": \"$name\", \"rc\": $rc, \"wall_s\": $(awk "BEGIN{print $t1 - $t0}"), \"limit_s\": $limit}" >>"$work/runs.jsonl"
  echo "$name: rc $rc in $(awk "BEGIN{print $t1 - $t0}") s" | tee -a "$work/log.txt"
}

: >"$work/runs.jsonl"
for i in ${BENCH_SHAPES:-${!shapes[@]}}; do
  read -r m n k dt lay <<<"${shapes[$i]}"
  tag="${m}x${n}x${k}-${dt}-${lay}"
  for strategy in ${BENCH_STRATEGIES:-halving exhaustive}; do
    # Cold: a fresh compile cache and a fresh database.
    cache="$work/cache-$tag-$strategy"
    rm -rf "$cache"
    args=(gemm --m "$m" --n "$n" --k "$k" --dtype "$dt" --layout "$lay" --search "$strategy"
          --cache-dir "$cache" --db "$cache/tuning.sqlite3")
    run "cold-$strategy-$tag" 300 "${args[@]}"
    [ "$strategy" = halving ] && run "repeat-$strategy-$tag" 60 "${args[@]}"
  done
done
# The suite, cold and then repeated.
suite_cache="$work/cache-suite"
rm -rf "$suite_cache"
[ "${BENCH_SUITE:-1}" = 0 ] || run suite-cold 600 gemm --suite profiles/suites/gpu-benchmark.json --cache-dir "$suite_cache" --db "$suite_cache/tuning.sqlite3"
[ "${BENCH_SUITE:-1}" = 0 ] || run suite-repeat 120 gemm --suite profiles/suites/gpu-benchmark.json --cache-dir "$suite_cache" --db "$suite_cache/tuning.sqlite3"

python3 - "$work" <<'PY'
import datetime, json, os, re, sys
work = sys.argv[1]
runs = [json.loads(l) for l in open(f"{work}/runs.jsonl")]
def load(name):
    try:
        return json.load(open(f"{work}/{name}.json"))
    except (OSError, ValueError):
        return None
def pick(doc):
    if not doc or not doc.get("recommendation"):
        return None, None
    return doc["recommendation"]["id"], doc["recommendation"].get("median_us")
shapes = {}
for r in runs:
    m = re.match(r"(cold|repeat)-(halving|exhaustive)-(.*)", r["name"])
    if not m:
        continue
    kind, strategy, tag = m.groups()
    doc = load(r["name"])
    row = shapes.setdefault(tag, {"shape": tag})
    entry = {"wall_s": r["wall_s"], "rc": r["rc"]}
    if doc:
        entry["recommended"], entry["median_us"] = pick(doc)
        if "search" in doc:
            entry["variants_timed"] = doc["search"]["variants_timed"]
            entry["variants_eligible"] = doc["search"]["variants_eligible"]
            entry["stages"] = doc["search"]["stages"]
        entry["compile_wall_ms"] = doc.get("compile", {}).get("wall_ms")
        entry["answered_from_db"] = doc.get("tuning_db", {}).get("answered", False)
    row[f"{kind}_{strategy}"] = entry
suite = {r["name"]: r for r in runs if r["name"].startswith("suite")}
dev = None
for r in runs:
    d = load(r["name"])
    if d and "device" in d:
        dev = d["device"]; tool = d.get("tool", {}); break
name = re.sub(r"[^a-z0-9]+", "-", (dev or {}).get("name", "gpu").lower()).strip("-")
date = datetime.datetime.now(datetime.timezone.utc)
doc = {"schema": "tiletune.tuning_bench/1", "date": date.isoformat(timespec="seconds"),
       "device": dev, "tool": tool if dev else None,
       "goals": {"cold_default_s_per_shape": 8, "repeat_s": 1, "suite_s": 90},
       "shapes": list(shapes.values()),
       "suite": {"cold_wall_s": suite.get("suite-cold", {}).get("wall_s"), "cold_rc": suite.get("suite-cold", {}).get("rc"),
                 "repeat_wall_s": suite.get("suite-repeat", {}).get("wall_s")}}
out = f"profiles/tuning_times_{name}_{date:%Y-%m-%d}.json"
tmp = out + ".tmp"
json.dump(doc, open(tmp, "w"), indent=2)
os.replace(tmp, out)
print(f"{'shape':28} {'halving cold s':>14} {'repeat s':>9} {'exhaustive s':>13} {'timed':>9}  same pick")
for r in shapes.values():
    h, rep, ex = r.get("cold_halving", {}), r.get("repeat_halving", {}), r.get("cold_exhaustive", {})
    timed = f"{h.get('variants_timed', '-')}/{h.get('variants_eligible', '-')}"
    print(f"{r['shape']:28} {h.get('wall_s', float('nan')):14.1f} {rep.get('wall_s', float('nan')):9.2f} "
          f"{ex.get('wall_s', float('nan')):13.1f} {timed:>9}  {h.get('recommended') == ex.get('recommended')}")
print(f"suite cold {doc['suite']['cold_wall_s']} s (rc {doc['suite']['cold_rc']}), repeat {doc['suite']['repeat_wall_s']} s")
print(f"wrote {out}")
PY
