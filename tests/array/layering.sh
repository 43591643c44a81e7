#!/bin/sh
# make check: the files of engine/array call each other one way only
# (doc/architecture.md §5).  Computed from the sources: file G depends on
# file F when G names a function or object that F defines (not static).
# The graph must have no cycle; tsort finds one if it exists.  The order
# found is printed lowest first.  The check itself is checked: the same
# graph with one edge added from the lowest file to the highest must be
# refused.
#
# Usage: layering.sh [DIR]   (default: engine/array of the source tree)
set -eu
dir="${1:-${srcdir:-.}/engine/array}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

[ -d "$dir" ] || { echo "layering: no directory $dir" >&2; exit 1; }

# symbols defined by each file: external definitions start in column 0
# ("type name(" or "const struct x name ="), never with "static"
for f in "$dir"/*.c; do
    b=$(basename "$f" .c)
    grep -E '^[a-z]' "$f" | grep -v -E '^(static|typedef|struct [a-z_]+ \{|enum|#)' |
        sed -n -E 's/^[^(=]*[ *]([a-z_][a-z_0-9]*)[[:space:]]*(\(|=).*/\1/p' |
        sort -u > "$tmp/$b.def"
done

# edges "user provider" (tsort: the provider comes after the user; we
# print the order reversed, lowest first)
: > "$tmp/edges"
for f in "$dir"/*.c; do
    b=$(basename "$f" .c)
    echo "$b $b" >> "$tmp/edges"
    for d in "$tmp"/*.def; do
        p=$(basename "$d" .def)
        [ "$p" = "$b" ] && continue
        [ -s "$d" ] || continue
        if grep -q -w -F -f "$d" "$f"; then
            echo "$b $p" >> "$tmp/edges"
            echo "  $b -> $p: $(grep -o -w -F -f "$d" "$f" | sort -u | tr '\n' ' ')" >> "$tmp/why"
        fi
    done
done

echo "engine/array dependencies (file -> files it calls):"
cat "$tmp/why" 2>/dev/null || true
if ! tsort "$tmp/edges" > "$tmp/order" 2> "$tmp/loop"; then
    echo "FAIL: engine/array files call each other in a cycle:" >&2
    cat "$tmp/loop" >&2
    exit 1
fi
echo "layers, lowest first: $(tac "$tmp/order" | tr '\n' ' ')"

# the check can fail: the lowest file calling the highest is a cycle
low=$(tail -n 1 "$tmp/order")
high=$(head -n 1 "$tmp/order")
if [ "$low" != "$high" ]; then
    { cat "$tmp/edges"; echo "$low $high"; } > "$tmp/edges2"
    if tsort "$tmp/edges2" > /dev/null 2>&1; then
        echo "FAIL: an injected edge $low -> $high was not seen as a cycle" >&2
        exit 1
    fi
    echo "self-check: an injected edge $low -> $high is refused"
fi
echo "PASS: no cycle between the files of engine/array"
