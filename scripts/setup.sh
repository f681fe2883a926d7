#!/usr/bin/env bash
# Installs tiletune's build dependencies from Debian's packages (when missing)
# and builds it into build/ (or $BUILD_DIR). The CUDA toolkit must already be
# installed (nvcc on PATH or under /usr/local/cuda).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev libsqlite3-dev zlib1g-dev)
packages+=(clang libclang-rt-14-dev)  # scripts/sanitize.sh: ASan, UBSan, libFuzzer
packages+=(python3-jsonschema)  # tests/schemas: every JSON output against schemas/
# --with-slurm: Slurm's daemons and client (Debian's slurm-wlm) for scripts/slurm_tune.sh and the `slurm` test.
for arg in "$@"; do [ "$arg" = --with-slurm ] && packages+=(slurmctld slurmd slurm-client); done
packages+=(libjs-vega chromium)  # tiletune report: the chart library it inlines; the browser test (label browser)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
command -v nvcc >/dev/null || { echo "setup: the CUDA toolkit (nvcc, NVRTC) is not installed" >&2; exit 3; }

# cuobjdump and nvdisasm (PyPI, run on the CPU): the SASS tests read the kernels' machine code.
# The schema test runs the python3 first on PATH, which may not be Debian's (pyenv): give it jsonschema from PyPI.
if ! python3 -c "import jsonschema" 2>/dev/null; then
  echo "setup: installing jsonschema from PyPI for $(command -v python3)" >&2
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore jsonschema >/dev/null ||
    echo "setup: could not install jsonschema; the schema test will report itself skipped" >&2
fi

if [ ! -x .tools/nvidia/cu13/bin/cuobjdump ] || [ ! -x .tools/nvidia/cu13/bin/nvdisasm ]; then
  echo "setup: installing cuobjdump and nvdisasm from PyPI into .tools/" >&2
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --upgrade --target .tools \
    nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm >/dev/null
fi

build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --parallel
