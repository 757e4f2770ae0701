#!/usr/bin/env bash
# `PROGRAM --help` lists the program's own flags, grouped under its flag file's base name (never a
# build path), and `--version` prints "<name> <version>".
# Usage: program_help_test.sh PROGRAM FLAG_FILE FLAG...
set -uo pipefail
program=$1 flag_file=$2
shift 2
name=$(basename "$program")
help=$("$program" --help 2>&1)
fail=0
grep -q "No flags matched" <<<"$help" && { echo "FAIL: $name --help matched no flags"; fail=1; }
grep -qx "  Flags from $flag_file:" <<<"$help" || { echo "FAIL: no 'Flags from $flag_file:' heading"; fail=1; }
if grep "Flags from" <<<"$help" | grep -q "/"; then
  echo "FAIL: a path in the help: $(grep 'Flags from' <<<"$help" | grep '/')"; fail=1
fi
for flag in "$@"; do
  grep -q -- "--$flag " <<<"$help" || { echo "FAIL: --$flag missing from $name --help"; fail=1; }
done
version=$("$program" --version 2>&1)
[[ "$version" =~ ^$name\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "FAIL: --version printed '$version'"; fail=1; }
[ "$fail" = 0 ] && echo "ok: $name --help lists ${*} under $flag_file; --version '$version'"
exit "$fail"
