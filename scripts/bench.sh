#!/usr/bin/env bash
# Times whole `c3 estimate` runs (wall time, CPU time and peak RSS) on
# generated models: a ~550 MB VGG16 with embedded weights and
# transformer-shaped graphs of 1k, 10k and 100k nodes. Models go to
# ${BENCH_DIR:-/tmp/c3-bench}; nothing is committed. Needs Python with `onnx`
# and `numpy` (pip install onnx numpy), and GNU time (/usr/bin/time).
#   scripts/bench.sh              # the full report (Markdown), 7 runs each
#   FORMAT=json RUNS=5 scripts/bench.sh
#   C3=/path/to/c3 scripts/bench.sh   # time another build
#   PERF=1 scripts/bench.sh       # also `perf stat -r 10` on the 100k graph
# Wall time on a shared machine includes waiting for a core; CPU time
# (user + sys) does not.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BENCH_DIR:-/tmp/c3-bench}
python=${PYTHON:-python3}
runs=${RUNS:-7}
format=${FORMAT:-md}
c3=${C3:-target/release/c3}
if [ -z "${C3:-}" ]; then cargo build --release --quiet; fi
"$python" scripts/gen_bench_models.py "$dir" 1000 10000 100000 >/dev/null
median() { sort -n | sed -n "$(( (runs + 1) / 2 ))p"; }
printf '%-20s %12s %9s %9s %9s %12s\n' model bytes "best (s)" "median" "cpu (s)" "peak RSS MB"
for m in vgg16 transformer_1000 transformer_10000 transformer_100000; do
  f="$dir/$m.onnx"
  walls=(); cpus=(); max_rss=0
  for _ in $(seq "$runs"); do
    out=$( { /usr/bin/time -f '%e %U %S %M' "$c3" estimate "$f" --format "$format" -o /dev/null; } 2>&1 >/dev/null | tail -1)
    read -r wall user sys rss <<<"$out"
    walls+=("$wall")
    cpus+=("$(echo "$user + $sys" | bc -l)")
    if [ "$rss" -gt "$max_rss" ]; then max_rss=$rss; fi
  done
  best=$(printf '%s\n' "${walls[@]}" | sort -n | head -1)
  printf '%-20s %12s %9s %9s %9.2f %12.1f\n' "$m" "$(stat -c %s "$f")" "$best" \
    "$(printf '%s\n' "${walls[@]}" | median)" "$(printf '%s\n' "${cpus[@]}" | median)" \
    "$(echo "$max_rss/1024" | bc -l)"
done
if [ -n "${PERF:-}" ]; then
  perf stat -r 10 "$c3" estimate "$dir/transformer_100000.onnx" --format "$format" -o /dev/null 2>&1 >/dev/null |
    grep -E 'task-clock|elapsed'
fi
