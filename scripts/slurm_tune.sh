#!/usr/bin/env bash
# Tunes a suite on a Slurm cluster: one array task per shard, each with its own
# tuning database on local disk, then a job that waits for them all
# (--dependency=afterok) and merges the shard databases into one.
#
#   scripts/slurm_tune.sh --suite profiles/suites/llm.json --shards 8 --out /shared/tune-llm \
#       [--gpu h100-sxm] [--local-dir DIR] [--tiletune BIN] [--sbatch-args "--gres=gpu:1 -p gpu"] [-- GEMM-ARGS...]
#
# submits, in effect:
#   sbatch --array=0-7 --gres=gpu:1 -p gpu slurm_tune.sh --task ...          (prints JOBID)
#   sbatch --dependency=afterok:JOBID slurm_tune.sh --merge ...
# Task I runs `tiletune gemm --suite S --shard I/8 --db LOCAL/shard-I.sqlite`
# (LOCAL: --local-dir, else $TMPDIR, else /tmp; a fresh folder per task) and
# copies shard-I.sqlite, shard-I.json and its log into --out, which all nodes
# must see. The merge job writes OUT/tuning.sqlite (tiletune db merge) and
# OUT/best.json and OUT/best_triton.py (tiletune db export). With --gpu NAME the
# shards plan offline (--dry-run --store-plans) for that preset: no GPU needed.
# A task that is run again (sbatch --requeue, or by hand with --task) starts
# from the shard database it copied out before, so it goes on where it stopped.
# GEMM-ARGS go to every `tiletune gemm` (e.g. --budget-s 3600 --search halving).
#
# Exit codes: 0 submitted (or the task or merge succeeded); 2 bad arguments; 3 no sbatch.
set -euo pipefail

usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "slurm_tune.sh: $1" >&2; exit "${2:-2}"; }

mode=submit suite= shards= out= gpu= local_dir= tiletune= sbatch_args= gemm_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --task) mode=task ;;
    --merge) mode=merge ;;
    --suite) suite=${2:?}; shift ;;
    --shards) shards=${2:?}; shift ;;
    --out) out=${2:?}; shift ;;
    --gpu) gpu=${2:?}; shift ;;
    --local-dir) local_dir=${2:?}; shift ;;
    --tiletune) tiletune=${2:?}; shift ;;
    --sbatch-args) sbatch_args=${2?}; shift ;;
    --) shift; gemm_args=("$@"); break ;;
    -h|--help) usage ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done

[ -n "$out" ] || die "--out DIR is missing: the folder every node sees, for the shard databases and the merge"
[[ "$shards" =~ ^[1-9][0-9]*$ ]] || die "--shards '$shards' is invalid: a whole number of shards, 1 or more"
if [ -z "$tiletune" ]; then
  tiletune=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/tiletune
fi

run_task() {
  local i=${SLURM_ARRAY_TASK_ID:?--task runs as a task of a Slurm job array (SLURM_ARRAY_TASK_ID is not set)}
  local base=${local_dir:-${TMPDIR:-/tmp}}
  # Global, not local: the EXIT trap runs after this function has returned.
  work=$(mktemp -d "$base/tiletune-shard-$i.XXXXXX")
  trap 'rm -rf "${work:-}"' EXIT
  local db="$work/shard-$i.sqlite"
  # A task run again resumes from what it copied out before.
  [ -f "$out/shard-$i.sqlite" ] && cp "$out/shard-$i.sqlite" "$db"
  local args=(gemm --suite "$suite" --shard "$i/$shards" --db "$db" --out "$work/shard-$i.json" --quiet)
  [ -n "$gpu" ] && args+=(--gpu "$gpu" --dry-run --store-plans)
  echo "task $i of $shards on $(hostname): $tiletune ${args[*]} ${gemm_args[*]}"
  # Exit 4 (--budget-s spent) still copies out what was tuned: the task run again resumes
  # from it, and the merge (afterok) waits for a complete shard.
  local rc=0
  "$tiletune" "${args[@]}" "${gemm_args[@]}" || rc=$?
  [[ $rc == 0 || $rc == 4 ]] || exit "$rc"
  # Copied in under a temporary name, then renamed: the folder never holds half a database.
  for f in "shard-$i.sqlite" "shard-$i.json"; do
    cp "$work/$f" "$out/.$f.tmp.$$"
    mv -f "$out/.$f.tmp.$$" "$out/$f"
  done
  if ((rc == 4)); then
    echo "task $i stopped by --budget-s: $out/shard-$i.sqlite holds what was tuned; run the task again to resume" >&2
    exit 4
  fi
  echo "task $i done: $out/shard-$i.sqlite"
}

run_merge() {
  local dbs=()
  for ((i = 0; i < shards; i++)); do
    [ -f "$out/shard-$i.sqlite" ] || die "shard $i has no database in $out (its task did not finish)" 3
    dbs+=("$out/shard-$i.sqlite")
  done
  "$tiletune" db merge "${dbs[@]}" --into "$out/tuning.sqlite"
  "$tiletune" db export --db "$out/tuning.sqlite" --format json --out "$out/best.json"
  "$tiletune" db export --db "$out/tuning.sqlite" --format triton --out "$out/best_triton.py"
  echo "merged $shards shard(s) into $out/tuning.sqlite"
}

case "$mode" in
  task) run_task ;;
  merge) run_merge ;;
  submit)
    [ -n "$suite" ] || die "--suite FILE is missing"
    [ -f "$suite" ] || die "--suite $suite: no such file"
    [ -x "$tiletune" ] || die "--tiletune $tiletune: not an executable (build it, or give --tiletune BIN)"
    command -v sbatch >/dev/null || die "sbatch not found: this submits to Slurm (scripts/setup.sh --with-slurm installs it)" 3
    mkdir -p "$out"
    out=$(cd "$out" && pwd)
    suite=$(cd "$(dirname "$suite")" && pwd)/$(basename "$suite")
    common=(--suite "$suite" --shards "$shards" --out "$out" --tiletune "$tiletune")
    [ -n "$gpu" ] && common+=(--gpu "$gpu")
    [ -n "$local_dir" ] && common+=(--local-dir "$local_dir")
    script=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
    # shellcheck disable=SC2086  # --sbatch-args is split into words on purpose
    array=$(sbatch --parsable --array=0-$((shards - 1)) --job-name=tiletune-shard \
      --output="$out/shard-%a.log" $sbatch_args "$script" --task "${common[@]}" -- "${gemm_args[@]}")
    array=${array%%;*}
    merge=$(sbatch --parsable --dependency=afterok:"$array" --job-name=tiletune-merge \
      --output="$out/merge.log" "$script" --merge "${common[@]}")
    merge=${merge%%;*}
    echo "submitted shards as job array $array (tasks 0-$((shards - 1))) and the merge as job $merge"
    echo "array=$array merge=$merge"
    ;;
esac
