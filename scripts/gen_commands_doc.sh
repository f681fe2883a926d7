#!/usr/bin/env bash
# Writes docs/commands.md from the binary's own help, so the page cannot drift from the CLI:
#   scripts/gen_commands_doc.sh BIN OUT            e.g. build/tiletune docs/commands.md
#   scripts/gen_commands_doc.sh --check BIN FILE   exit 1 (with a diff) when FILE is not what BIN writes
# Commands and their subcommands (db import, db merge, ...) are discovered from each help's
# "Subcommands:" section; hidden ones (the worker) are not listed there and are left out.
set -euo pipefail

usage() { echo "usage: $0 [--check] BIN OUT" >&2; exit 2; }
check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi
[ $# -eq 2 ] || usage
bin=$1 out=$2
[ -x "$bin" ] || { echo "gen_commands_doc: $bin is not an executable" >&2; exit 2; }

# The names listed under "Subcommands:" in a help text: lines indented by exactly two spaces
# (a description that wraps is indented further).
subcommands_of() {
  awk '/^[Ss]ubcommands:$/ {on = 1; next}
       on && /^[^ ]/ {on = 0}
       on && /^  [A-Za-z][A-Za-z0-9_-]*( |$)/ {print $1}'
}

# Trailing blanks (CLI11 pads its columns) are stripped so the page diffs cleanly.
help_of() { "$bin" "$@" --help | sed 's/[[:space:]]*$//'; }

write_command() {  # $@: the command words after "tiletune" (none for the top level)
  local text name
  text=$(help_of "$@")
  printf '\n## %s\n\n```text\n%s\n```\n' "$(printf '%s' "tiletune${*:+ $*}")" "$text"
  for name in $(printf '%s\n' "$text" | subcommands_of); do
    write_command "$@" "$name"
  done
}

generate() {
  cat <<'EOF'
# tiletune commands

Every command's `--help`, as the binary prints it. This page is generated: do not
edit it; after changing a command's help, run

    scripts/gen_commands_doc.sh build/tiletune docs/commands.md

(the ctest `cli.commands_doc` fails while it is out of date). What the commands do
in more detail: [gemm.md](gemm.md), [batch.md](batch.md), [fleet.md](fleet.md),
[ci.md](ci.md), [json.md](json.md).
EOF
  write_command
}

tmp=$(mktemp "${TMPDIR:-/tmp}/commands.md.XXXXXX")
trap 'rm -f "$tmp"' EXIT
generate >"$tmp"

if ((check)); then
  if ! diff -u "$out" "$tmp"; then
    echo "gen_commands_doc: $out is out of date with $bin --help." >&2
    echo "Run: scripts/gen_commands_doc.sh build/tiletune docs/commands.md (and commit it)" >&2
    exit 1
  fi
  exit 0
fi
chmod 644 "$tmp"
mv "$tmp" "$out"
trap - EXIT
