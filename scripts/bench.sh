#!/usr/bin/env bash
# Times c3 beside ONNX's own shape inference and onnx-tool, side by side in
# one run, on generated models (scripts/gen_bench_models.py: a VGG16 with its
# 553 MB of embedded weights and GPT-2-style graphs of 1,113, 11,103 and
# 111,003 nodes, the last with 609 MB of embedded weights; on request, by
# name in MODELS, convnet_100000, 100,001 nodes with 100,001 small weights,
# gpt_100000_ext and gpt_10000_ext, the 111k and 11k graphs with their
# weights as external data, and gpt_sym_100000 and llama_sym_100000,
# decoders of 100k nodes and 65-70k initializers whose batch and sequence
# sizes are symbolic, as torch.onnx.export writes Hugging Face's: GPT-2's
# and Llama's shape arithmetic, every small shape constant an initializer
# of its own; any gpt_sym_<N> or llama_sym_<N> is made of about N nodes).
# A MODELS entry that names an .onnx file is timed as it is (real exports:
# the repository's weight-stripped ones, or any other), under its file name.
# Models go to ${BENCH_DIR:-/tmp/c3-bench}; nothing is committed.
#
# Every tool is timed as a whole process, as a user runs it:
#   c3 estimate --format json | --format md, c3 shapes --format json
#   c3 shapes -o FILE (ONNX's job: the model written back with its shapes,
#     flushed to disk before it is renamed into place)
#   python -c 'onnx.shape_inference.infer_shapes_path(MODEL, OUT)'
#   python -c 'onnx_tool.model_profile(MODEL)'
# Each row: median wall time, median CPU time (user + sys), on a warm page
# cache (the file read whole first), the largest peak RSS (mapped file pages
# included) and, on a cold page cache (the file's
# pages dropped with posix_fadvise(DONTNEED) before one more run), the bytes
# read from disk, each process timed by scripts/timed.py (wait4, to the
# microsecond). Then start-up: CPU and wall time of `c3 estimate` on a 4 KB
# model (medians of 200 runs) and its instructions; callgrind's instruction
# counts of c3 on the 11k and 111k graphs (which do not vary from run to
# run) and their ratio.
#
# Needs Python with `onnx`, `numpy` and `onnx-tool` (pip install onnx numpy
# onnx-tool) and, for the instruction counts, valgrind.
#   scripts/bench.sh                  # the full report (Markdown)
#   RUNS=7 TOOL_RUNS=1 scripts/bench.sh
#   MODELS="gpt_100000" scripts/bench.sh
#   MODELS="convnet_100000 gpt_100000_ext gpt_10000_ext" scripts/bench.sh   # other shapes
#   MODELS="gpt_sym_100000 llama_sym_100000" scripts/bench.sh   # symbolic sizes
#     # c3 estimate refuses a size left symbolic (it names the --dim to
#     # give), so a user binds them: the generated decoders are estimated
#     # with --dim batch=1 --dim seq=128 (SYM_DIMS), unless DIMS is set;
#     # ONNX's inference and `c3 shapes` keep them symbolic
#   MODELS="gpt_1000_ext gpt_3000_ext gpt_10000_ext gpt_30000_ext gpt_100000_ext" \
#     ONE_CORE=0 CALLGRIND=0 STARTUP=0 scripts/bench.sh   # external data, size by size
#   MODELS="tests/fixtures/exports/mvit.onnx tests/fixtures/exports/ssdlite.onnx" scripts/bench.sh
#   C3=/path/to/c3 scripts/bench.sh  # time another build
#   CALLGRIND=0 COLD=0 TOOLS=0 scripts/bench.sh   # c3's timings only
#   ONE_CORE=0 scripts/bench.sh       # without the one-core row
#   STARTUP=0 | STARTUP_RUNS=1000 scripts/bench.sh
#   ONNX_TOOL_ALL=1 scripts/bench.sh  # onnx-tool on gpt_100000 too (hours)
#   ONNX_TOOL=0 MODELS="big.onnx" scripts/bench.sh   # onnx-tool left out
#   DIMS="batch=1 seq=128" MODELS="export.onnx" scripts/bench.sh
#     # a model with symbolic sizes: c3 estimate gets --dim for each (shapes,
#     # like ONNX's inference, keeps them symbolic), and onnx-tool is given
#     # zero inputs of the bound sizes; every model of the run must name them
# Wall time on a shared machine includes waiting for a core; CPU time does
# not, and instruction counts do not depend on load at all. The row "c3
# estimate --format json, one core" holds c3 to one CPU (taskset -c 0):
# the pace of a run on a machine whose cores are busy with something else,
# when c3's second thread gains nothing; its ratio to ONNX is printed too.
# Pages another process has mapped are not dropped: a cold figure far below
# the model's records means the file was in use meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BENCH_DIR:-/tmp/c3-bench}
python=${PYTHON:-python3}
runs=${RUNS:-5}
tool_runs=${TOOL_RUNS:-3}
models=${MODELS:-"vgg16 gpt_1000 gpt_10000 gpt_100000"}
c3=${C3:-target/release/c3}
# DIMS="NAME=N ...": symbolic sizes bound for c3 estimate (`--dim`) and,
# as inputs of those sizes, for onnx-tool. The generated decoders with
# symbolic sizes (gpt_sym_<N>, llama_sym_<N>) get SYM_DIMS when DIMS is
# not set.
dims=${DIMS:-}
sym_dims=${SYM_DIMS:-"batch=1 seq=128"}

# dims_of NAME: the sizes bound for a MODELS entry.
dims_of() {
  if [ -z "$dims" ] && [[ "$1" =~ ^(gpt|llama)_sym_[0-9]+$ ]]; then
    echo "$sym_dims"
  else
    echo "$dims"
  fi
}
if [ -z "${C3:-}" ]; then cargo build --release --quiet; fi
# shellcheck disable=SC2086
"$python" scripts/gen_bench_models.py "$dir" 1000 10000 100000 \
  $(printf '%s\n' $models | grep -E '^(convnet_100000|gpt_[0-9]+_ext|(gpt|llama)_sym_[0-9]+)$' || true) >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$dir/inferred.onnx" "$dir/c3-inferred.onnx"' EXIT

# file_of NAME: the model a MODELS entry names (a path ending in .onnx, or
# a generated model's name).
file_of() {
  case $1 in
    *.onnx) echo "$1" ;;
    *) echo "$dir/$1.onnx" ;;
  esac
}

# beyond_10000 NAME: a generated model of more than 10,000 (GPT) or
# 100,000 (convnet) units, where onnx-tool is not run.
beyond_10000() {
  [[ "$1" =~ ^gpt_([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -gt 10000 ] || [[ "$1" == *100000* ]]
}

# tool_inputs FILE NAME=N...: the model's inputs (its weights aside), each
# symbolic size bound as given, as JSON {name: [shape, numpy dtype]} for
# onnx-tool; read before onnx-tool is timed.
tool_inputs() {
  "$python" -c 'import json, sys, onnx
from onnx import helper
m = onnx.load(sys.argv[1], load_external_data=False)
bound = dict(kv.split("=", 1) for kv in sys.argv[2:])
weights = {t.name for t in m.graph.initializer}
inputs = {}
for i in m.graph.input:
    if i.name in weights:
        continue
    t = i.type.tensor_type
    shape = [d.dim_value if d.HasField("dim_value") else int(bound[d.dim_param]) for d in t.shape.dim]
    inputs[i.name] = [shape, helper.tensor_dtype_to_np_dtype(t.elem_type).name]
print(json.dumps(inputs))' "$@"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

drop_cache() {
  "$python" -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$1"
}

# failed_row MODEL LABEL REASON: the row of a tool that did not run.
failed_row() {
  printf '| %s | %s | failed: %s | | | |\n' "${1##*/}" "$2" "$3"
}

# measure LABEL MODEL N CMD... : one Markdown row from N runs (plus a cold one)
measure() {
  local label=$1 model=$2 n=$3
  shift 3
  local cold="" file
  file=$(file_of "$model")
  # Every tool's timed runs start with the whole file in the page cache:
  # the previous row's cold run dropped its pages, and c3 reads back only
  # its metadata, so the next tool's first runs read the weights from disk
  # (in rounds five to eight that gave ONNX a cold start: 3.2-5.1 s on the
  # 111k graph against 1.9-2.4 s warm).
  cat "$file" >/dev/null
  if ! "$python" scripts/timed.py "$n" "$@" >"$tmp/t" 2>"$tmp/err"; then
    failed_row "$model" "$label" "$(tail -1 "$tmp/err" | cut -c1-80)"
    return
  fi
  if [ "${COLD:-1}" != 0 ]; then
    drop_cache "$file"
    "$python" scripts/timed.py 1 "$@" >"$tmp/cold" 2>/dev/null || true
    cold=$(awk '{ printf "%.1f", $5 * 512 / 1000000 }' "$tmp/cold")
  fi
  local wall cpu max_rss
  wall=$(awk '{ print $1 }' "$tmp/t" | median)
  cpu=$(awk '{ print $2 + $3 }' "$tmp/t" | median)
  max_rss=$(awk '$4 > m { m = $4 } END { print m }' "$tmp/t")
  printf '| %s | %s | %.3f | %.3f | %.0f | %s |\n' "${model##*/}" "$label" "$wall" "$cpu" \
    "$(echo "$max_rss / 1024" | bc -l)" "$cold"
  echo "$model $label $wall" >>"$tmp/walls"
}

echo "c3: $("$c3" --version), $runs runs each (onnx and onnx-tool: $tool_runs); $(nproc) cores"
echo
echo '| model | tool | wall (s, median) | CPU (s, median) | peak RSS (MB) | read cold (MB) |'
echo '|---|---|--:|--:|--:|--:|'
for m in $models; do
  f=$(file_of "$m")
  model_dims=$(dims_of "$m")
  dim_args=()
  for kv in $model_dims; do dim_args+=(--dim "$kv"); done
  measure "c3 estimate --format json" "$m" "$runs" "$c3" estimate "$f" --format json ${dim_args[@]+"${dim_args[@]}"}
  measure "c3 estimate --format md" "$m" "$runs" "$c3" estimate "$f" --format md ${dim_args[@]+"${dim_args[@]}"}
  measure "c3 shapes --format json" "$m" "$runs" "$c3" shapes "$f" --format json
  # ONNX's own job: the model written back with its inferred shapes.
  measure "c3 shapes -o" "$m" "$runs" "$c3" shapes "$f" -o "$dir/c3-inferred.onnx" --force
  if [ "${ONE_CORE:-1}" != 0 ] && command -v taskset >/dev/null; then
    measure "c3 estimate --format json, one core" "$m" "$runs" taskset -c 0 "$c3" estimate "$f" --format json ${dim_args[@]+"${dim_args[@]}"}
  fi
  if [ "${TOOLS:-1}" != 0 ]; then
    measure "onnx infer_shapes_path" "$m" "$tool_runs" "$python" -c \
      'import sys, onnx; onnx.shape_inference.infer_shapes_path(sys.argv[1], sys.argv[2])' \
      "$f" "$dir/inferred.onnx"
    # onnx-tool grows faster than linearly: 64 s on gpt_10000, so well
    # over an hour on the 100k-node models; it is left out beyond
    # gpt_10000, and wherever ONNX_TOOL=0 (a large model of another name).
    if [ "${ONNX_TOOL:-1}" = 0 ] || { beyond_10000 "$m" && [ -z "${ONNX_TOOL_ALL:-}" ]; }; then
      :
    elif [ -n "$model_dims" ]; then
      # Inputs of the bound sizes, as onnx-tool takes them (zeros).
      # shellcheck disable=SC2086
      if inputs=$(tool_inputs "$f" $model_dims 2>"$tmp/err"); then
        measure "onnx_tool.model_profile" "$m" "$tool_runs" "$python" -c \
          'import json, sys, numpy, onnx_tool
inputs = {k: numpy.zeros(s, dtype=t) for k, (s, t) in json.loads(sys.argv[2]).items()}
onnx_tool.model_profile(sys.argv[1], dynamic_shapes=inputs)' "$f" "$inputs"
      else
        failed_row "$m" "onnx_tool.model_profile" \
          "inputs of the DIMS sizes: $(tail -1 "$tmp/err" | cut -c1-60)"
      fi
    else
      measure "onnx_tool.model_profile" "$m" "$tool_runs" "$python" -c \
        'import sys, onnx_tool; onnx_tool.model_profile(sys.argv[1])' "$f"
    fi
  fi
done
for m in $models; do
  c=$(awk -v m="$m" '$1 == m && $2 == "c3" && $3 == "estimate" && $5 == "json" { print $NF }' "$tmp/walls")
  one=$(awk -v m="$m" '$1 == m && $2 == "c3" && $5 == "json," && $6 == "one" { print $NF }' "$tmp/walls")
  o=$(awk -v m="$m" '$1 == m && $3 == "infer_shapes_path" { print $NF }' "$tmp/walls")
  t=$(awk -v m="$m" '$1 == m && $2 == "onnx_tool.model_profile" { print $NF }' "$tmp/walls")
  w=$(awk -v m="$m" '$1 == m && $2 == "c3" && $3 == "shapes" && $4 == "-o" { print $NF }' "$tmp/walls")
  if [ -n "$c" ] && [ -n "$o" ]; then
    printf '%s: c3 estimate --format json is %.1fx faster than infer_shapes_path' "${m##*/}" "$(echo "$o / $c" | bc -l)"
    if [ -n "$w" ]; then printf ' (c3 shapes -o, the same job, %.1fx)' "$(echo "$o / $w" | bc -l)"; fi
    if [ -n "$t" ]; then printf ', %.0fx faster than onnx-tool' "$(echo "$t / $c" | bc -l)"; fi
    if [ -n "$one" ]; then printf '; on one core %.0fx faster than infer_shapes_path' "$(echo "$o / $one" | bc -l)"; fi
    echo
  fi
done

# Start-up: a whole estimate of a 4 KB model, where the fixed costs
# (loading, the allocator, compiling the few rules it uses) are all there is.
if [ "${STARTUP:-1}" != 0 ]; then
  small=examples/onnx/light_bvlc_alexnet.onnx
  n=${STARTUP_RUNS:-200}
  "$python" scripts/timed.py "$n" "$c3" estimate "$small" >"$tmp/s"
  cpu=$(awk '{ print ($2 + $3) * 1000 }' "$tmp/s" | median)
  wall=$(awk '{ print $1 * 1000 }' "$tmp/s" | median)
  rss=$(awk '$4 > m { m = $4 } END { print m / 1024 }' "$tmp/s")
  echo
  printf 'start-up, c3 estimate %s (%s bytes), %s runs: CPU %.2f ms, wall %.2f ms (medians), peak RSS %.0f MB' \
    "$small" "$(wc -c <"$small")" "$n" "$cpu" "$wall" "$rss"
  if [ "${CALLGRIND:-1}" != 0 ]; then
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$c3" estimate "$small" >/dev/null 2>"$tmp/cg" || true
    printf ', %s instructions' "$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/cg")"
  fi
  echo
fi

if [ "${CALLGRIND:-1}" != 0 ]; then
  echo
  echo '| c3 command | gpt_10000 (instructions) | gpt_100000 | ratio |'
  echo '|---|--:|--:|--:|'
  for cmd in "estimate --format json" "estimate --format md" "shapes --format json"; do
    counts=()
    for m in gpt_10000 gpt_100000; do
      # shellcheck disable=SC2086
      valgrind --tool=callgrind --callgrind-out-file=/dev/null "$c3" $cmd "$dir/$m.onnx" \
        >/dev/null 2>"$tmp/cg" || true
      counts+=("$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/cg")")
    done
    if [ -z "${counts[0]}" ] || [ -z "${counts[1]}" ]; then
      printf '| %s | %s | %s | failed: %s |\n' "$cmd" "${counts[0]}" "${counts[1]}" "$(tail -1 "$tmp/cg")"
      continue
    fi
    printf '| %s | %s | %s | %.2f |\n' "$cmd" "${counts[0]}" "${counts[1]}" \
      "$(echo "${counts[1]} / ${counts[0]}" | bc -l)"
  done
fi
