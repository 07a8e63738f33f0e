#!/usr/bin/env bash
# The test command: installs everything the tests need on a fresh machine (Debian packages, the
# reference libclassad venv, the reference HTCondor chroot), checks formatting and lints
# (rustfmt, clippy with warnings as errors, missing docs included), then runs every test and
# the main job as a smoke test (scripts/smoke.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# A one-off build has no use for incremental state, which doubled target/ (CI once ran out of disk).
export CARGO_INCREMENTAL=0
df -h . | tail -1 | awk '{print "disk: " $4 " free of " $2}'
scripts/deps.sh python3-venv debootstrap
scripts/reference.sh all
trap 'scripts/reference.sh unmount' EXIT
# Style and lints first: they fail in seconds where the tests take minutes.
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast
else
  cargo test --workspace --no-fail-fast
fi
cargo test --workspace --doc
# The main job, end to end: scripts/run.sh's pool runs a real job for an ordinary user.
scripts/smoke.sh
