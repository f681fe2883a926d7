#!/usr/bin/env bash
# Remakes docs/report/*.png: `tiletune report` pages of the four kinds of result,
# drawn by Chromium headless from the recorded H100 results in profiles/.
# The comparison packs the 7 problems measured on both 2026-11-22 and
# 2026-11-23 into one suite file per day (the measurements as recorded) and
# compares them with `tiletune compare`.
# Usage: scripts/report_screenshots.sh [BUILD_DIR]   (needs chromium, libjs-vega, python3)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build}/tiletune")
export PATH="$(dirname "$bin"):$PATH"  # the page header shows the command as a user would type it
out=docs/report
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
ln -s "$PWD/profiles" "$work/profiles"

python3 - "$work" <<'EOF'
import json, os, sys
work = sys.argv[1]
def pack(day, names):
    results, header = [], None
    for n in names:
        d = json.load(open(f"profiles/measured/h100-{day}/gemm/{n}"))
        header = header or {k: d[k] for k in ("tool", "device", "mode")}
        body = {k: v for k, v in d.items() if k not in ("schema", "tool", "device")}
        body["name"] = n[:-5]
        results.append(body)
    suite = {"schema": "tiletune.gemm-suite/1", **header, "suite": {"name": f"h100-{day}", "file": "packed"},
             "results": results, "complete": True, "not_run": []}
    json.dump(suite, open(f"{work}/{day}.json", "w"))
both = sorted(set(os.listdir("profiles/measured/h100-2026-11-22/gemm")) & set(os.listdir("profiles/measured/h100-2026-11-23/gemm")))
pack("2026-11-22", both)
pack("2026-11-23", both)
EOF
# From inside the scratch folder, so the page names the two days' files, not a /tmp path.
(cd "$work" && tiletune compare 2026-11-22.json 2026-11-23.json --out compare.json >/dev/null) || [ $? -eq 1 ]

shot() {  # NAME HEIGHT FILE...
  local name=$1 height=$2
  shift 2
  # From the scratch folder, with profiles/ linked in: the header names repository paths, not /tmp.
  (cd "$work" && tiletune report "$@" --out "$name.html" >/dev/null)
  chromium --headless --disable-gpu --no-sandbox --no-first-run --user-data-dir="$work/profile" --hide-scrollbars \
    --virtual-time-budget=15000 --window-size=1000,"$height" --screenshot="$out/$name.png" "file://$work/$name.html" 2>/dev/null
  echo "wrote $out/$name.png"
}
shot gemm 2900 profiles/measured/h100-2026-11-23/gemm/4096x4096x4096-bf16-nt.json
shot suite 1250 profiles/baselines/h100-sxm.json
shot batch 1700 profiles/measured/h100-2026-11-23/batch/batch-gpt2.json
shot compare 700 compare.json
