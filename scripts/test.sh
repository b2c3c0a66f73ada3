#!/usr/bin/env bash
# Every test of the repository: the Rust suite (`cargo test`), then the Python
# package's tests in a virtual environment it creates (target/py-venv, git-
# ignored) with what they need from the package registry, torch included.
#
#   scripts/test.sh            # both
#   C3_TEST=rust scripts/test.sh     # the Rust suite only
#   C3_TEST=python scripts/test.sh   # the Python tests only
#
# Needs cargo and python3 (3.9 or later, with venv). When torch cannot be
# installed (no wheel for this platform, no network), the c3.torch tests are
# skipped and pytest's header and summary say so; the rest still run.
set -euo pipefail
cd "$(dirname "$0")/.."

what=${C3_TEST:-all}
rust_line=""
if [[ $what == all || $what == rust ]]; then
  log=$(mktemp)
  trap 'rm -f "$log"' EXIT
  cargo test --locked 2>&1 | tee "$log"
  # One line over every test binary and the doc-tests.
  rust_line=$(awk '/^test result:/ { p += $4; f += $6 } END { printf "rust: %d passed, %d failed", p, f }' "$log")
fi

if [[ $what == all || $what == python ]]; then
  python=${PYTHON:-python3}
  venv=target/py-venv
  pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
  # The environment (made when missing) with what every Python test needs.
  base_venv() {
    if [[ ! -x $venv/bin/python ]]; then
      "$python" -m venv "$venv"
    fi
    "${pip[@]}" --upgrade pip maturin pytest pandas onnx onnxruntime
  }
  base_venv
  # torch and the model libraries for the c3.torch tests. PyPI's Linux torch
  # wheel brings its CUDA libraries: torch 2.15 took 5.8 GB in the environment
  # and 8.7 GB of disk at the peak of its first install (downloads in the temp
  # folder, not kept: --no-cache-dir). Without that room, the install is not
  # tried; when it fails, the environment is made again without it, so that no
  # half-installed torch is left to break the imports. Either way the c3.torch
  # tests are skipped and pytest says so.
  imports="import torch, torchvision, transformers, onnxscript"
  need_mb=${C3_TORCH_DISK_MB:-9000}
  if ! "$venv/bin/python" -c "$imports" 2>/dev/null; then
    # The least free space of the two folders the install writes to (empty
    # when df cannot tell: the install is then tried).
    free_mb=$({ df -Pm "$venv" "${TMPDIR:-/tmp}" 2>/dev/null || true; } |
      awk 'NR > 1 && (m == "" || $4 < m) { m = $4 } END { print m }')
    if [[ -n $free_mb ]] && ((free_mb < need_mb)); then
      echo "warning: torch is not installed: $free_mb MB of disk is free and it needs about $need_mb MB (C3_TORCH_DISK_MB); the c3.torch tests will be skipped" >&2
    elif ! "${pip[@]}" --no-cache-dir torch torchvision transformers onnxscript ||
      ! "$venv/bin/python" -c "$imports"; then
      echo "warning: torch could not be installed: $venv is made again without it, and the c3.torch tests will be skipped" >&2
      rm -rf "$venv"
      base_venv
    fi
  fi
  # The package itself, as users install it: the abi3 wheel maturin builds
  # from python/ (scripts/wheel.sh), installed into the environment. A debug
  # build (a release build is minutes longer on a small machine), whose
  # dependencies `cargo test` has just compiled (python/.cargo/config.toml
  # shares the target folder).
  wheel=$(PYTHON="$venv/bin/python" C3_WHEEL_PROFILE=dev scripts/wheel.sh --install "" | tail -n 1)
  # The tests must import that wheel, not the source folder.
  where=$(cd python/tests && ../../"$venv"/bin/python -c "import c3, os; print(os.path.dirname(c3.__file__))")
  case $where in
    "$PWD/$venv"/lib/*/site-packages/c3) echo "python: testing ${wheel##*/}, installed in $where" ;;
    *)
      echo "scripts/test.sh: import c3 finds $where, not the wheel installed in $venv" >&2
      exit 1
      ;;
  esac
  if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
    echo "torch does not import: the c3.torch tests are SKIPPED (see the reasons below)" >&2
  fi
  # Run from python/tests so that `import c3` is the installed package; -rs
  # lists every skipped test with its reason.
  (cd python/tests && ../../"$venv"/bin/python -m pytest -rs .)
fi
[[ -n $rust_line ]] && echo "$rust_line"
exit 0
