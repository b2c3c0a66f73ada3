#!/usr/bin/env bash
# Replays the hostile inputs of tests/hostile.rs (and tests/hostile/*.rs,
# tests/hostile_packs.rs) on the release binary and
# measures each run: exit code, wall time and peak RSS, against the target
# "a one-line error, exit 2 (1 for a bad flag, 3 for --strict), < 1 s, < 64 MB". The few
# inputs that are legitimately fine must exit 0; their time and memory are
# shown but not judged (they cost what any input of their size costs).
# Each `estimate` case's model is then listed with `c3 shapes` too: the
# listing or a one-line refusal, < 1 s, < 64 MB.
#
# The inputs are made by the test itself: with C3_HOSTILE_DIR set it keeps
# every case's folder there, holding the case's files, `cmd` (c3's arguments,
# one per line) and `expect` (the exit code). Nothing is committed; the
# largest files are sparse.
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
for cmdfile in "$dir"/*/cmd; do
  case_dir=$(dirname "$cmdfile")
  name=$(basename "$case_dir")
  mapfile -t args <"$cmdfile"
  expect=$(cat "$case_dir/expect")
  code=0
  /usr/bin/time -o "$case_dir/time" -f '%e %M' \
    target/release/c3 "${args[@]}" >/dev/null 2>"$case_dir/stderr.release" || code=$?
  # After a non-zero exit, time writes "Command exited with..." first.
  read -r secs kb < <(tail -1 "$case_dir/time")
  mb=$(awk -v kb="$kb" 'BEGIN { printf "%.1f", kb / 1024 }')
  why=()
  [ "$code" -eq "$expect" ] || why+=("exit $code, not $expect")
  if [ "$expect" -ne 0 ]; then
    lines=$(wc -l <"$case_dir/stderr.release")
    [ "$lines" -eq 1 ] || why+=("$lines stderr lines")
    awk -v s="$secs" -v m="$max_s" 'BEGIN { exit !(s < m) }' || why+=(">= ${max_s} s")
    awk -v k="$kb" -v m="$max_mb" 'BEGIN { exit !(k < m * 1024) }' || why+=(">= ${max_mb} MB")
  fi
  total=$((total + 1))
  if [ ${#why[@]} -eq 0 ]; then
    verdict=ok
    [ "$expect" -ne 0 ] || verdict="ok (accepted)"
  else
    verdict="MISS: $(IFS=';'; echo "${why[*]}")"
    missed=$((missed + 1))
  fi
  printf '%-34s %4s %6s %7s %8s  %s\n' "$name" "$code" "$expect" "$secs" "$mb" "$verdict"
done
# `c3 shapes` reads a model as `estimate` does: each case's model listed,
# it must end in the listing (0) or a one-line refusal (2), within the same
# time and memory.
for cmdfile in "$dir"/*/cmd; do
  case_dir=$(dirname "$cmdfile")
  mapfile -t args <"$cmdfile"
  [ "${args[0]}" = estimate ] || continue
  model=""
  for a in "${args[@]:1}"; do
    case "$a" in *.onnx) model=$a ;; esac
  done
  [ -n "$model" ] || continue
  name="shapes:$(basename "$case_dir")"
  code=0
  /usr/bin/time -o "$case_dir/time.shapes" -f '%e %M' \
    target/release/c3 shapes "$model" >/dev/null 2>"$case_dir/stderr.shapes" || code=$?
  read -r secs kb < <(tail -1 "$case_dir/time.shapes")
  mb=$(awk -v kb="$kb" 'BEGIN { printf "%.1f", kb / 1024 }')
  why=()
  case "$code" in
    0) ;;
    2)
      lines=$(wc -l <"$case_dir/stderr.shapes")
      [ "$lines" -eq 1 ] || why+=("$lines stderr lines")
      ;;
    *) why+=("exit $code, not 0 or 2") ;;
  esac
  awk -v s="$secs" -v m="$max_s" 'BEGIN { exit !(s < m) }' || why+=(">= ${max_s} s")
  awk -v k="$kb" -v m="$max_mb" 'BEGIN { exit !(k < m * 1024) }' || why+=(">= ${max_mb} MB")
  total=$((total + 1))
  if [ ${#why[@]} -eq 0 ]; then
    verdict=ok
  else
    verdict="MISS: $(IFS=';'; echo "${why[*]}")"
    missed=$((missed + 1))
  fi
  printf '%-34s %4s %6s %7s %8s  %s\n' "$name" "$code" "0|2" "$secs" "$mb" "$verdict"
done
echo "$((total - missed)) of $total cases as expected (refusals: one line, < ${max_s} s, < ${max_mb} MB)"
[ "$missed" -eq 0 ]
