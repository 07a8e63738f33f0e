#!/usr/bin/env bash
# Installs the reference oracles the differential tests compare against, outside the work tree
# (so a clone can always be removed: the chroot has /proc and /dev mounted while tests run):
#   $AERIE_REFERENCE_DIR/venv           HTCondor's libclassad (the `htcondor` wheel, 23.x)
#   $AERIE_REFERENCE_DIR/htcondor-root  the real HTCondor 23.9.6 in a Debian trixie chroot
#   usage: scripts/reference.sh [classad|htcondor|all|unmount]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tools=${AERIE_SHARED_DIR:-$here/../shared}/tools
dir=${AERIE_REFERENCE_DIR:-/var/lib/aerie-reference}
mkdir -p "$dir"
what=${1:-all}
if [ "$what" = classad ] || [ "$what" = all ]; then
  "$tools/reference-classad.sh" "$dir/venv"
fi
if [ "$what" = htcondor ] || [ "$what" = all ]; then
  ROOT="$dir/htcondor-root" "$tools/reference-htcondor.sh" setup
fi
if [ "$what" = unmount ]; then
  for m in proc dev; do
    mountpoint -q "$dir/htcondor-root/$m" 2>/dev/null && umount -l "$dir/htcondor-root/$m" || true
  done
fi
