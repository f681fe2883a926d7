#!/usr/bin/env bash
# ctest label `slurm`: scripts/slurm_tune.sh on a one-node Slurm cluster started
# here on localhost (slurmctld and slurmd from Debian's slurm-wlm, with a
# generated slurm.conf), a small offline suite in 3 shards; the merged database
# must answer every problem. Skips (exit 77) where Slurm is not installed
# (scripts/setup.sh --with-slurm) or this is not root (slurmd runs jobs as their user).
#   tests/slurm/slurm_tune_test.sh TILETUNE_BINARY SOURCE_DIR
set -euo pipefail
tiletune=${1:?tiletune binary}
src=${2:?source dir}

for tool in slurmctld slurmd sbatch squeue scontrol; do
  if ! command -v "$tool" >/dev/null && [ ! -x "/usr/sbin/$tool" ]; then
    echo "SKIP: Slurm is not installed ($tool missing): scripts/setup.sh --with-slurm installs slurm-wlm"
    exit 77
  fi
done
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: starting slurmd needs root (it runs jobs as their user)"
  exit 77
fi
export PATH=$PATH:/usr/sbin

work=$(mktemp -d /tmp/tiletune-slurm-test.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

host=$(hostname -s)
cpus=$(nproc)
# Ports away from Slurm's defaults (6817/6818), so a real cluster on this host is left alone.
port=$((17000 + RANDOM % 2000))
mkdir -p "$work/state" "$work/spool" "$work/out" "$work/local"
# Debian's slurm-wlm 22.05 ships auth/none and cred/none (no munge daemon needed for a
# cluster of one host). ProctrackType=proctrack/pgid and TaskPlugin=task/none need no cgroups.
cat > "$work/slurm.conf" <<CONF
ClusterName=tiletune-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$work/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >"$work/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$host" >"$work/slurmd.out" 2>&1 &
pids+=($!)

fail() {
  echo "FAIL: $1"
  for f in slurmctld.out slurmctld.log slurmd.out slurmd.log out/shard-0.log out/merge.log; do
    [ -f "$work/$f" ] && { echo "--- $f"; tail -20 "$work/$f"; }
  done
  exit 1
}

for _ in $(seq 1 60); do
  sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)' && break
  sleep 1
done
sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)' || fail "the node did not come up"

cat > "$work/suite.json" <<'JSON'
{"schema": "tiletune.suite/1", "name": "slurm", "problems": [
  {"name": "a", "m": 64, "n": 64, "k": 64, "dtype": "f32", "layout": "nn"},
  {"name": "b", "m": 96, "n": 64, "k": 64, "dtype": "f32", "layout": "nn"},
  {"name": "c", "m": 128, "n": 64, "k": 64, "dtype": "f32", "layout": "nn"},
  {"name": "d", "m": 64, "n": 128, "k": 64, "dtype": "f32", "layout": "nn"}]}
JSON
export XDG_CACHE_HOME=$work/cache
submitted=$("$src/scripts/slurm_tune.sh" --suite "$work/suite.json" --shards 3 --out "$work/out" --gpu h100-sxm \
  --local-dir "$work/local" --tiletune "$tiletune" --sbatch-args "--cpus-per-task=1") || fail "submission failed"
echo "$submitted"
merge=$(echo "$submitted" | sed -n 's/.*merge=\([0-9]*\).*/\1/p')
[ -n "$merge" ] || fail "no merge job id in: $submitted"

# Wait for the merge job to leave the queue (afterok: it runs once all 3 shards succeeded).
for _ in $(seq 1 600); do
  state=$(squeue -h -j "$merge" -o "%T %r" 2>/dev/null || true)
  [ -n "$state" ] || break
  case "$state" in *DependencyNeverSatisfied*) fail "a shard failed, so the merge can never run ($state)" ;; esac
  sleep 1
done
[ -f "$work/out/tuning.sqlite" ] || fail "no merged database (merge job $merge did not run or failed)"
for i in 0 1 2; do
  [ -f "$work/out/shard-$i.sqlite" ] || fail "shard $i left no database"
done
ls "$work/local" | grep -q . && fail "a task left its local folder behind"

answers=$("$tiletune" gemm --suite "$work/suite.json" --gpu h100-sxm --dry-run --store-plans \
  --db "$work/out/tuning.sqlite" --json --quiet) || fail "gemm on the merged database failed"
python3 - "$answers" <<'PY' || fail "the merged database does not answer every problem"
import json, sys
j = json.loads(sys.argv[1])
names = [r["name"] for r in j["results"] if r.get("tuning_db", {}).get("answered")]
print("answered from the merged database:", names)
sys.exit(0 if sorted(names) == ["a", "b", "c", "d"] else 1)
PY
python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['configs']; print(len(c), 'configs in best.json'); sys.exit(len(c) != 4)" \
  "$work/out/best.json" || fail "best.json does not hold 4 configs"
echo "PASS: 3 shards as a Slurm job array, merged by a dependent job; every problem answered"
