"""Shared by the tests: whether torch is here, and say so when it is not."""

import pytest

# Why the c3.torch tests are skipped, or None when torch imports. A torch that
# is on disk but does not load (a half-finished install, a missing CUDA
# library) raises OSError or worse, not ImportError: that skips them too, and
# the reason says what went wrong.
try:
    import torch  # noqa: F401

    NO_TORCH = None
except ImportError:
    NO_TORCH = "torch is not installed (pip install torch)"
except Exception as err:  # noqa: BLE001
    first = (str(err).splitlines() or [""])[0][:200]
    NO_TORCH = f"torch is installed but does not import ({type(err).__name__}: {first})"
HAVE_TORCH = NO_TORCH is None


def pytest_report_header(config):
    if HAVE_TORCH:
        import torch

        return f"torch {torch.__version__}: the c3.torch tests run"
    return f"{NO_TORCH}: the c3.torch tests are SKIPPED"


needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason=str(NO_TORCH))
