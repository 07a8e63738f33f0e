#!/usr/bin/env bash
# The main job as a smoke test (run by scripts/test.sh, so CI runs it): starts scripts/run.sh
# without its demo workload, submits one real job as an ordinary Unix user through cmctl,
# waits until it completes with its output back in the user's directory, then stops the pool
# with SIGTERM and checks that it stopped cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
run=$(mktemp -d /tmp/aerie-smoke.XXXXXX)
port=${AERIE_SMOKE_PORT:-7600}
AERIE_PROFILE=${AERIE_PROFILE:-debug} AERIE_DEMO=0 AERIE_RUN_DIR="$run" AERIE_BASE_PORT=$port \
  AERIE_NEGOTIATOR_INTERVAL=2 AERIE_NEGOTIATOR_CYCLE_DELAY=1 \
  scripts/run.sh >"$run/run.out" 2>&1 &
pid=$!
fail() {
  echo "smoke test failed: $*" >&2
  echo "--- run.sh" >&2; cat "$run/run.out" >&2 || true
  for f in "$run"/ap.log "$run"/exec1.log "$run"/cm1.log; do echo "--- $f" >&2; tail -30 "$f" >&2 || true; done
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  exit 1
}
for _ in $(seq 1 900); do [ -S "$run/ap.sock" ] && [ -f "$run/env" ] && break; sleep 1; done
[ -S "$run/ap.sock" ] || fail "the access point's socket never appeared"
# shellcheck disable=SC1091
. "$run/env"
# An ordinary user: the smoke user when run as root (created once), else whoever runs this.
if [ "$(id -u)" = 0 ]; then
  user=aerie-smoke
  id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
  as() { runuser -u "$user" -- env "PATH=$PATH" "AERIE_AP_SOCKET=$AERIE_AP_SOCKET" "AERIE_CMS=$AERIE_CMS" "$@"; }
else
  user=$(id -un)
  as() { "$@"; }
fi
jobdir=$run/job
mkdir -p "$jobdir"
chown "$user" "$jobdir"
cat >"$jobdir/job.sub" <<SUB
executable = /bin/echo
transfer_executable = false
arguments = hello from the smoke test
initialdir = $jobdir
output = out.txt
error = err.txt
queue
SUB
(cd "$jobdir" && as cmctl submit job.sub) || fail "cmctl submit as $user"
for _ in $(seq 1 180); do
  if as cmctl history -af ClusterId JobStatus ExitCode 2>/dev/null | grep -q '^1 4 0$'; then break; fi
  sleep 1
done
as cmctl history -af ClusterId JobStatus ExitCode | grep -q '^1 4 0$' || fail "the job did not complete: $(as cmctl q -nobatch 2>&1)"
grep -q '^hello from the smoke test$' "$jobdir/out.txt" || fail "the output did not come back: $(cat "$jobdir/out.txt" 2>&1)"
[ "$(stat -c %U "$jobdir/out.txt")" = "$user" ] || fail "the output file is not $user's"
as cmctl q -nobatch >/dev/null || fail "cmctl q"
kill -TERM "$pid"
for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
kill -0 "$pid" 2>/dev/null && fail "run.sh did not stop within 30 s of SIGTERM"
wait "$pid" 2>/dev/null || true
grep -q "^Stopped" "$run/run.out" || fail "run.sh did not say it stopped"
rm -rf "$run"
echo "smoke test: the main job ran a real job for $user and stopped cleanly"
