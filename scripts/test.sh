#!/usr/bin/env bash
# Everything CI runs, on a machine with or without a GPU: build (scripts/setup.sh),
# every ctest test (unit, cli, compile, fuzz replays; GPU tests skip without a GPU),
# then the sanitizer and fuzzing pass (scripts/sanitize.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --with-slurm  # Slurm for the `slurm` test (a one-node cluster on localhost)
ctest --test-dir build --output-on-failure -j2
scripts/sanitize.sh
