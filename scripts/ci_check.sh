#!/usr/bin/env bash
# Example CI job for a self-hosted GPU runner: build tiletune, re-measure the
# baseline recorded for this GPU, keep the JUnit report. Exit 1 on a
# regression (SLOWER or INCORRECT), 3 when the baseline is for another GPU.
#   scripts/ci_check.sh profiles/<gpu>.json [report.xml]
set -euo pipefail
cd "$(dirname "$0")/.."
baseline=${1:?usage: scripts/ci_check.sh BASELINE.json [REPORT.xml]}
report=${2:-tiletune-report.xml}
scripts/setup.sh
./build/tiletune devices
./build/tiletune check --baseline "$baseline" --tolerance 0.05 --junit "$report" --out "${report%.xml}.json"
