#!/usr/bin/env bash
# Lists the dependencies between c3's top-level modules (every `crate::X`
# named in src/X.rs or src/X/**, unit tests at a file's bottom left out) and
# fails if they form a cycle. Usage: scripts/module_graph.sh [--quiet]
set -euo pipefail
cd "$(dirname "$0")/.."

edges=$(
    for f in $(find src -name '*.rs' | sort); do
        rel=${f#src/}
        from=${rel%%/*}
        from=${from%.rs}
        case $from in lib | main) continue ;; esac
        # Stop at the unit tests: they may reach anywhere.
        awk '/^#\[cfg\(test\)\]/ { exit } { print }' "$f" |
            grep -v '^\s*//' |
            grep -o 'crate::[a-z_][a-z0-9_]*' |
            sed "s/^crate::/$from /" || true
    done | awk '$1 != $2' | sort -u
)

[ "${1:-}" = --quiet ] || printf '%s\n' "$edges"

# tsort prints the modules of a cycle on stderr and exits non-zero.
if ! printf '%s\n' "$edges" | tsort >/dev/null 2>/tmp/module_graph.$$; then
    echo "import cycle between top-level modules:" >&2
    cat /tmp/module_graph.$$ >&2
    rm -f /tmp/module_graph.$$
    exit 1
fi
rm -f /tmp/module_graph.$$
