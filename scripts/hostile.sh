#!/usr/bin/env bash
# Replays the hostile inputs of tests/hostile.rs (and tests/hostile/*.rs,
# tests/hostile_packs.rs) on the release binary and
# measures each run: exit code, wall time and peak RSS, against the target
# "a one-line error, exit 2 (1 for a bad flag, 3 for --strict), < 1 s, < 64 MB". The few
# inputs that are legitimately fine must exit 0; their time and memory are
# shown but not judged (they cost what any input of their size costs).
# Each `estimate` case's model is then listed with `c3 shapes` and
# annotated with `c3 annotate` too: the listing or the copy, or a one-line
# refusal within the same limits.
#
# The inputs are made by the test itself: with C3_HOSTILE_DIR set it keeps
# every case's folder there, holding the case's files, `cmd` (c3's arguments,
# one per line), `expect` (the exit code) and, for a case that runs under a
# resource limit (a batch whose one model runs out of memory), `ulimit`
# (the limit's flags, `-v 150000`). Nothing is committed; the largest
# files are sparse.
#   scripts/hostile.sh                         # cases in /tmp/c3-hostile
#   C3_HOSTILE_DIR=/some/dir scripts/hostile.sh
# Exits 1 if any case misses the target.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${C3_HOSTILE_DIR:-/tmp/c3-hostile}
rm -rf "$dir"
mkdir -p "$dir"
cargo build --release --quiet --locked
C3_HOSTILE_DIR="$dir" cargo test --release --quiet --locked --test main hostile >/dev/null

max_s=1
max_mb=64
printf '%-34s %4s %6s %7s %8s  %s\n' case exit expect seconds "peak MB" verdict
total=0
missed=0

# judge NAME EXPECT OUT ARG...: runs c3 with ARG..., its time in OUT.time
# and its error output in OUT.stderr, and prints one row. EXPECT is the
# exit code wanted, or several as "0|2"; a refusal (non-zero) must be one
# line within the time and memory; an accepted input is shown, not judged.
# With `limit` set (ulimit's flags), c3 runs under that limit.
limit=""
judge() {
  local name=$1 expect=$2 out=$3 code=0 secs kb mb lines verdict
  shift 3
  local wrap=()
  [ -z "$limit" ] || wrap=(sh -c "ulimit $limit && exec \"\$0\" \"\$@\"")
  /usr/bin/time -o "$out.time" -f '%e %M' \
    "${wrap[@]}" target/release/c3 "$@" >/dev/null 2>"$out.stderr" || code=$?
  # After a non-zero exit, time writes "Command exited with..." first.
  read -r secs kb < <(tail -1 "$out.time")
  mb=$(awk -v kb="$kb" 'BEGIN { printf "%.1f", kb / 1024 }')
  local why=()
  [[ "|$expect|" == *"|$code|"* ]] || why+=("exit $code, not $expect")
  if [ "$code" -ne 0 ]; then
    lines=$(wc -l <"$out.stderr")
    [ "$lines" -eq 1 ] || why+=("$lines stderr lines")
    awk -v s="$secs" -v m="$max_s" 'BEGIN { exit !(s < m) }' || why+=(">= ${max_s} s")
    awk -v k="$kb" -v m="$max_mb" 'BEGIN { exit !(k < m * 1024) }' || why+=(">= ${max_mb} MB")
  fi
  total=$((total + 1))
  if [ ${#why[@]} -eq 0 ]; then
    verdict=ok
    [ "$code" -ne 0 ] || verdict="ok (accepted)"
  else
    verdict="MISS: $(IFS=';'; echo "${why[*]}")"
    missed=$((missed + 1))
  fi
  printf '%-34s %4s %6s %7s %8s  %s\n' "$name" "$code" "$expect" "$secs" "$mb" "$verdict"
}

for cmdfile in "$dir"/*/cmd; do
  case_dir=$(dirname "$cmdfile")
  mapfile -t args <"$cmdfile"
  limit=$(cat "$case_dir/ulimit" 2>/dev/null || true)
  judge "$(basename "$case_dir")" "$(cat "$case_dir/expect")" "$case_dir/release" "${args[@]}"
done
limit=""
# `c3 shapes` and `c3 annotate` read a model as `estimate` does: each
# estimate case's model is listed, and annotated into its own folder, and
# each must give its output or a one-line refusal.
for cmdfile in "$dir"/*/cmd; do
  case_dir=$(dirname "$cmdfile")
  mapfile -t args <"$cmdfile"
  [ "${args[0]}" = estimate ] || continue
  model=""
  for a in "${args[@]:1}"; do
    case "$a" in *.onnx) model=$a ;; esac
  done
  [ -n "$model" ] || continue
  judge "shapes:$(basename "$case_dir")" "0|2" "$case_dir/shapes" shapes "$model"
  judge "annotate:$(basename "$case_dir")" "0|2" "$case_dir/annotate" \
    annotate "$model" -o "$case_dir/annotated.onnx"
done
echo "$((total - missed)) of $total cases as expected (refusals: one line, < ${max_s} s, < ${max_mb} MB)"
[ "$missed" -eq 0 ]
