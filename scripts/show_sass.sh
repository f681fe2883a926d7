#!/usr/bin/env bash
# Prints the SASS of an exported kernel: scripts/show_sass.sh DIR/ID.cubin [cuobjdump options]
# Uses $CUOBJDUMP, else the cuobjdump that scripts/setup.sh put in .tools/ (from
# PyPI; runs on the CPU, no GPU needed), else the one on PATH.
set -euo pipefail
if [[ $# -lt 1 || $1 == -h || $1 == --help ]]; then
  echo "usage: $0 DIR/ID.cubin [more cuobjdump options]   (a cubin written by tiletune gemm --export DIR)" >&2
  exit 2
fi
cubin=$1
shift
if [[ ! -f $cubin ]]; then
  echo "$0: no file $cubin" >&2
  exit 2
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tool=${CUOBJDUMP:-}
if [[ -z $tool ]]; then
  if [[ -x $repo/.tools/nvidia/cu13/bin/cuobjdump ]]; then
    tool=$repo/.tools/nvidia/cu13/bin/cuobjdump
  elif command -v cuobjdump >/dev/null; then
    tool=$(command -v cuobjdump)
  else
    echo "$0: no cuobjdump: run scripts/setup.sh (it installs nvidia-cuda-cuobjdump into .tools/) or set CUOBJDUMP" >&2
    exit 3
  fi
fi
exec "$tool" -sass "$@" "$cubin"
