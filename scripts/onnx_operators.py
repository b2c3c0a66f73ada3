#!/usr/bin/env python3
"""Write the list of ONNX operators that c3's rule coverage test walks.

Where the list comes from
-------------------------
Every operator schema registered in the ``onnx`` Python package, version
1.23.2 (the version the conformance fixtures use; the script refuses another
unless ``--allow-other-version`` is given), as returned by
``onnx.defs.get_all_schemas_with_history()``.  That call gives one schema per
(domain, operator, since_version); this script keeps, for each (domain,
operator), the schema with the newest since_version and records whether that
schema is marked deprecated (``OpSchema.deprecated``).

The domains kept are those of the ONNX standard itself: ai.onnx (the default
domain, written as an empty field), ai.onnx.ml, ai.onnx.preview.training and
ai.onnx.preview.  Any other domain the package might register is refused with
an error, so a new one is noticed rather than silently dropped.

What is written
---------------
``tests/fixtures/onnx_operators.txt`` (or ``--out``): comment lines starting
with ``#`` (the onnx version and a column legend), then one line per
(domain, operator), sorted by domain then operator name, with four
tab-separated fields::

    <domain>\t<op>\t<newest since_version>\t<deprecated: yes|no>

e.g. ``\tUpsample\t10\tyes`` or ``ai.onnx.ml\tTreeEnsemble\t5\tno``.

How to run
----------
From the repository root::

    python3 -m venv /tmp/venv-onnx
    /tmp/venv-onnx/bin/pip install onnx==1.23.2
    /tmp/venv-onnx/bin/python scripts/onnx_operators.py
"""

from __future__ import annotations

import argparse
import sys

import onnx
from onnx import defs

EXPECTED_ONNX_VERSION = "1.23.2"
DOMAINS = {"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training", "ai.onnx.preview"}


def newest_schemas() -> dict[tuple[str, str], defs.OpSchema]:
    """The newest schema of every (domain, op); ai.onnx is written as ""."""
    newest: dict[tuple[str, str], defs.OpSchema] = {}
    for schema in defs.get_all_schemas_with_history():
        if schema.domain not in DOMAINS:
            raise SystemExit(f"error: unexpected domain {schema.domain!r} ({schema.name})")
        domain = "" if schema.domain == "ai.onnx" else schema.domain
        key = (domain, schema.name)
        if key not in newest or schema.since_version > newest[key].since_version:
            newest[key] = schema
    return newest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="tests/fixtures/onnx_operators.txt")
    ap.add_argument("--allow-other-version", action="store_true")
    args = ap.parse_args()
    if onnx.__version__ != EXPECTED_ONNX_VERSION and not args.allow_other_version:
        print(
            f"error: onnx {onnx.__version__} installed, the list is made with "
            f"{EXPECTED_ONNX_VERSION} (--allow-other-version to go on)",
            file=sys.stderr,
        )
        return 2

    newest = newest_schemas()
    lines = [
        f"# Every operator schema of the onnx Python package {onnx.__version__}",
        "# (onnx.defs.get_all_schemas_with_history), newest version of each.",
        "# Written by scripts/onnx_operators.py; do not edit by hand.",
        "# domain (empty = ai.onnx)\top\tnewest since_version\tdeprecated",
    ]
    for (domain, op), schema in sorted(newest.items()):
        deprecated = "yes" if schema.deprecated else "no"
        lines.append(f"{domain}\t{op}\t{schema.since_version}\t{deprecated}")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")

    by_domain: dict[str, int] = {}
    for domain, _ in newest:
        by_domain[domain or "ai.onnx"] = by_domain.get(domain or "ai.onnx", 0) + 1
    deprecated = sorted(f"{d or 'ai.onnx'}::{o}" for (d, o), s in newest.items() if s.deprecated)
    print(f"{len(newest)} operators written to {args.out}: {by_domain}")
    print(f"deprecated: {', '.join(deprecated)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
