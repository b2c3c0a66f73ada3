"""``c3.torch.profile``: a forward pass timed layer by layer, as a profile
``c3 estimate TRACE --profile FILE`` joins to the layers of the trace the
same pass gives (``c3.torch.trace``).

The PyTorch profiler records the passes; the layers' ranges are named by the
hook's layer names, so the join is by name:

- ``c3.pass``: a pass under the hook, each operator the hook records inside
  a range ``c3.layer <name>`` (the hook's own work falls between ranges);
- ``c3.run``: a pass without the hook, whose time is the run's time.

The file is the profiler's Chrome trace with those ranges renamed, and a
``c3`` entry saying what ran it.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Dict, Optional, Union

import torch

from . import CostHook

#: What a timed call's range is named before its number (renamed after).
CALL = "c3.call "
#: The range of a pass under the hook, and of a pass without it.
PASS = "c3.pass"
RUN = "c3.run"
#: What a layer's range is named, before the layer's name.
LAYER = "c3.layer "


def profile(
    path: Union[str, "os.PathLike[str]"],
    model: Any,
    *args: Any,
    runs: int = 10,
    trace: Optional[Union[str, "os.PathLike[str]"]] = None,
    **kwargs: Any,
) -> Dict[str, Any]:
    """Times ``model(*args, **kwargs)`` layer by layer on the CPU, in
    ``torch.no_grad()``, and writes the profile to ``path``; with ``trace``,
    also writes the operator trace of the same layers there (what
    ``c3.torch.trace`` writes). Returns the profile as a dict.

    ``runs`` passes are timed each way (under the hook, per layer; and
    plain, for the run's time), each after one untimed pass; c3 drops the
    first of each when it reads the profile.
    """
    if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
        raise ValueError(f"runs must be a positive integer, not {runs!r}")
    hook = CostHook()
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.no_grad():
        # One pass to name the layers: the call numbers repeat each pass.
        hook._timing = True
        with hook:
            model(*args, **kwargs)
        layers = list(hook.layers)
        named = hook.trace["layers"]
        names = {}
        for n, first in hook._first.items():
            nxt = hook._first.get(n + 1, len(layers))
            if first < len(layers) and nxt > first:
                names[n] = named[first]["name"]
        with torch.profiler.profile(activities=activities) as prof:
            for _ in range(runs + 1):
                # A hook of its own each pass: it numbers the calls as the
                # first one did.
                timed = CostHook()
                timed._timing = True
                with torch.profiler.record_function(PASS), timed:
                    model(*args, **kwargs)
            for _ in range(runs + 1):
                with torch.profiler.record_function(RUN):
                    model(*args, **kwargs)
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(raw)
        with open(raw, encoding="utf-8") as f:
            data = json.load(f)
    kept = []
    for e in data.get("traceEvents", []):
        name = e.get("name", "")
        if isinstance(name, str) and name.startswith(CALL):
            try:
                n = int(name[len(CALL):])
            except ValueError:
                continue
            if n not in names:
                continue  # a call that recorded no layer (a view, a constant)
            e = dict(e, name=LAYER + names[n])
        kept.append(e)
    data["traceEvents"] = kept
    data["c3"] = {"threads": torch.get_num_threads(), "device": "cpu", "torch": torch.__version__}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    if trace is not None:
        with open(trace, "w", encoding="utf-8") as f:
            json.dump(hook.trace, f)
    return data
