#!/usr/bin/env bash
# Differential scenario for `cmctl what-if --userprio`: what a real `condor_userprio -l` dump
# means. Four submitters get factors, real priorities, floors, ceilings and usage through the
# real condor_userprio; the scenario prints the real table (`-allusers -all`) and, with DUMP
# set, writes the `-l` and `-l -modular` dumps and that table there.
# In those dumps `Priority` is the *effective* priority (real priority times the factor), as
# the table's "Effective Priority" column shows. Aerie's expectation
# (cli/src/userprio/tests.rs `real_userprio_dumps_read_and_write_back_as_condor_userprio`): reading either
# dump gives each submitter the effective priority of the real table.
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root DUMP=dir tests/reference/negotiator/userprio_import.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
start_pool
write_slots "$ads" 4
$T advertise "$ads"
# name:factor:real priority:floor:ceiling:accumulated usage (hours)
for spec in ann:1000:7:0:-1:12 ben:2000:3:2:8:40 cat:500:12:0:3:0 dan:10000:0.5:1:-1:100; do
  IFS=: read -r u f p fl ce acc <<<"$spec"
  $T tool condor_userprio -setfactor "$u@ref.test" "$f" >/dev/null
  $T tool condor_userprio -setprio "$u@ref.test" "$p" >/dev/null
  $T tool condor_userprio -setfloor "$u@ref.test" "$fl" >/dev/null
  $T tool condor_userprio -setceil "$u@ref.test" "$ce" >/dev/null
  $T tool condor_userprio -setaccum "$u@ref.test" "$acc" >/dev/null
done
$T tool condor_userprio -allusers -all
if [ -n "${DUMP:-}" ]; then
  mkdir -p "$DUMP"
  $T tool condor_userprio -l -allusers > "$DUMP/userprio.txt"
  $T tool condor_userprio -l -modular -allusers > "$DUMP/userprio-modular.txt"
  $T tool condor_userprio -allusers -all > "$DUMP/table.txt"
fi
$T pool-down
