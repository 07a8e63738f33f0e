# Sourced by the timing scripts (scripts/whatif_bench.sh, tests/examples/status_bench.sh).
# median CMD...: the median wall time in seconds of $runs runs of CMD, its output discarded.
median() {
  local t=()
  for _ in $(seq "$runs"); do
    local s e
    s=$(date +%s.%N)
    "$@" >/dev/null
    e=$(date +%s.%N)
    t+=("$(echo "$e - $s" | bc)")
  done
  printf '%s\n' "${t[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]}'
}
