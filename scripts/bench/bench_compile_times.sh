#!/usr/bin/env bash
# Benchmark (not a test; no GPU): per-family, per-phase NVRTC compile time of a
# sample of variants, before and after the code-preserving knobs (issue 22
# part 3), with a SASS identity check per knob and family. Adds a "phases"
# section to profiles/compile_times_<host>.json (the rest is bench_compile.sh's)
# and exits 1 when a knob that tiletune turns on by default changed the SASS.
#   scripts/bench/bench_compile_times.sh [build/tiletune] [rounds] [variants-per-family]
# Needs cuobjdump ($CUOBJDUMP, .tools/ from scripts/setup.sh, or PATH).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/tiletune}
rounds=${2:-3}
per_family=${3:-3}
host=$(hostname -s 2>/dev/null || echo host)
out=profiles/compile_times_$host.json
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tool=${CUOBJDUMP:-}
[[ -z $tool && -x .tools/nvidia/cu13/bin/cuobjdump ]] && tool=$PWD/.tools/nvidia/cu13/bin/cuobjdump
[[ -z $tool ]] && tool=$(command -v cuobjdump || true)
[[ -z $tool ]] && { echo "$0: no cuobjdump (scripts/setup.sh installs one into .tools/, or set CUOBJDUMP)" >&2; exit 3; }
nvrtc=${NVRTC_LIBRARY:-}
for cand in /usr/local/cuda/lib64/libnvrtc.so /usr/local/cuda/lib64/libnvrtc.so.13; do
  [[ -z $nvrtc && -e $cand ]] && nvrtc=$cand
done
[[ -z $nvrtc ]] && { echo "$0: no libnvrtc.so (set NVRTC_LIBRARY)" >&2; exit 3; }
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# The sample: per dtype, the tiles of the 4096^3 nt search space that the model
# leaves in play (compiled or bounded), one per program, spread evenly.
for dtype in f32 tf32 f16 bf16; do
  args=(gemm --m 4096 --n 4096 --k 4096 --dtype "$dtype" --layout nt --gpu h100-sxm --dry-run --no-db
        --cache-dir "$work/cache")
  "$bin" "${args[@]}" --json >"$work/plan_$dtype.json" 2>/dev/null
  ids=$(python3 - "$work/plan_$dtype.json" "$per_family" <<'PY'
import json, re, sys
plan, n = json.load(open(sys.argv[1])), int(sys.argv[2])
by_family, programs = {}, set()
for v in plan["variants"]:
    program = re.sub(r"_g\d+[mn]$", "", v["id"])  # rasterization copies compile to one program
    if (v["status"] == "ok" or v.get("constraint") == "model_bound") and program not in programs:
        programs.add(program)
        by_family.setdefault(v["id"].split("_")[0], []).append(v["id"])
pick = []
for ids in by_family.values():
    pick += [ids[round(i * (len(ids) - 1) / max(n - 1, 1))] for i in range(min(n, len(ids)))]
print(",".join(dict.fromkeys(pick)))
PY
)
  "$bin" "${args[@]}" --only "$ids" --top 100 --export "$work/export_$dtype" >/dev/null 2>"$work/export_$dtype.err" ||
    { cat "$work/export_$dtype.err" >&2; exit 1; }
done

python3 - "$work" "$nvrtc" >"$work/spec.json" <<'PY'
import glob, json, os, sys
work, nvrtc = sys.argv[1:]
families = {}
for dtype in ["f32", "tf32", "f16", "bf16"]:
    for manifest in sorted(glob.glob(f"{work}/export_{dtype}/*.json")):
        m = json.load(open(manifest))
        vid = os.path.basename(manifest)[:-5]
        opts = [o for o in m["compile"]["nvrtc_options"] if not o.startswith("--gpu-architecture=")]
        families.setdefault(f"{vid.split('_')[0]} {dtype}", []).append(
            {"id": vid, "source": manifest[:-5] + ".cu", "arch": m["arch"], "options": opts})
# issue 22's table (NVRTC --time, one thread, median ms, total of the three phases)
table = {"simt f32": 697, "mma bf16": 578, "mma f16": 480, "mma tf32": 553,
         "wgmma bf16": 1174, "wgmma f16": 1136, "wgmma tf32": 1406}
print(json.dumps({"nvrtc_library": nvrtc, "families": families, "issue_table": table}))
PY
python3 scripts/bench/bench_compile_times.py "$work/spec.json" "$work/phases.json" "$rounds" "$tool"

python3 - "$work/phases.json" "$out" "$host" "$(nproc)" "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" \
  "$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)" <<'PY'
import datetime, json, os, sys
phases_path, out, host, cores, load_before, load_after, commit = sys.argv[1:]
phases = json.load(open(phases_path))
# The knobs src/cuda/nvrtc_compiler.cpp turns on by default (kept in step by hand).
default_on = ["minimal"]
doc = {}
if os.path.exists(out):
    doc = json.load(open(out))
if doc.get("schema") != "tiletune.compile_bench/1":
    doc = {"schema": "tiletune.compile_bench/1", "host": host, "cpu_cores": int(cores)}
doc["phases"] = {
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "commit": commit, "nvrtc": phases["nvrtc"], "cpu_cores": int(cores),
    "under_load": True,
    "load_average": {"before": load_before, "after": load_after},
    "method": "NVRTC --time phases (front end, NVVM optimise + PTX, ptxas), one thread, sources from "
              "tiletune gemm --export of 4096^3 nt, A/B interleaved with the order flipped each round, medians; "
              "sass_identical: cuobjdump -sass instructions and encodings per kernel, nothing else ignored",
    "default_on": default_on,
    "families": phases["results"],
}
bad = [f"{r['family']} {k}" for r in phases["results"] for k in default_on if not r["knobs"][k]["sass_identical"]]
doc["phases"]["sass_identical"] = not bad
with open(out + ".tmp", "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
os.replace(out + ".tmp", out)
print("wrote", out)
if bad:
    print("SASS differs with a default knob:", ", ".join(bad), file=sys.stderr)
    sys.exit(1)
PY
