"""Type stubs of the Rust extension module (src/lib.rs)."""

from typing import Dict, List, Optional, Union

__version__: str

class C3Error(Exception):
    """An error from c3, with the command line's one-line message."""

class InputError(C3Error):
    """A model, trace or rule file c3 cannot read or analyse (exit code 2)."""

class UsageError(C3Error, ValueError):
    """A bad option value (exit code 1)."""

class UnsupportedOpError(C3Error):
    """Operators without a cost rule, with strict=True (exit code 3)."""

def estimate(
    model: Union[str, bytes],
    kind: str,
    name: str,
    *,
    dims: Dict[str, int],
    inputs: Dict[str, List[int]],
    rules: List[str],
    device: Optional[str],
    measured: Optional[str],
    fma: bool,
    attention: str,
    if_branch: str,
    prune: Optional[str],
    weights: Optional[str],
    activations: Optional[str],
    strict: bool,
    format: str,
    unit: str,
    digits: int,
    columns: str,
    parts: str,
    training: bool = ...,
    freeze: List[str] = ...,
    optimizer: Optional[str] = ...,
    master_weights: Optional[str] = ...,
    recompute: List[str] = ...,
    depth: Optional[int] = ...,
) -> str: ...
def cli(args: List[str]) -> str: ...
