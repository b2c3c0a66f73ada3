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
  if [[ ! -x $venv/bin/python ]]; then
    "$python" -m venv "$venv"
  fi
  pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
  "${pip[@]}" --upgrade pip maturin pytest pandas onnx
  # torch and the model libraries for the c3.torch tests; PyPI's Linux torch
  # wheel brings its CUDA libraries (several GB, ~10 minutes the first time).
  if ! "${pip[@]}" torch torchvision transformers onnxscript; then
    echo "warning: torch could not be installed: the c3.torch tests will be skipped" >&2
  fi
  # The package itself, from python/: an editable debug build (`pip install
  # ./python` makes a release build, minutes longer on a small machine), whose
  # dependencies `cargo test` has just compiled (python/.cargo/config.toml
  # shares the target folder).
  (cd python && VIRTUAL_ENV="$PWD/../$venv" "../$venv/bin/maturin" develop --quiet)
  if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
    echo "torch is not installed: the c3.torch tests are SKIPPED (see the reasons below)" >&2
  fi
  # Run from python/tests so that `import c3` is the installed package; -rs
  # lists every skipped test with its reason.
  (cd python/tests && ../../"$venv"/bin/python -m pytest -rs .)
fi
[[ -n $rust_line ]] && echo "$rust_line"
exit 0
