"""Shared by the tests: whether torch is here, and say so when it is not."""

import pytest

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def pytest_report_header(config):
    if HAVE_TORCH:
        import torch

        return f"torch {torch.__version__}: the c3.torch tests run"
    return "torch is not installed: the c3.torch tests are SKIPPED (pip install torch to run them)"


needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed (pip install torch)")
