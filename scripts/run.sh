#!/usr/bin/env bash
# The main job. At this stage: builds the workspace and evaluates a job against a slot with the
# ClassAd library, as an admin would with classad_eval.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cargo build --release -q -p cmctl
slot=$(mktemp); job=$(mktemp); trap 'rm -f "$slot" "$job"' EXIT
printf 'Cpus = 8\nMemory = 16384\nRequirements = TARGET.RequestCpus <= MY.Cpus\n' > "$slot"
printf 'RequestCpus = 4\nRequestMemory = 2048\nRequirements = TARGET.Memory >= MY.RequestMemory\n' > "$job"
target/release/cmctl eval --my "$job" --target "$slot" 'MY.Requirements' 'TARGET.Cpus - MY.RequestCpus'
