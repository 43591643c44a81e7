#!/bin/sh
# The man pages the build made (man/): they render without a groff
# warning, and they hold everything their source holds: every option of
# every command's --help in clraid(8), every option of clraid-policyd(8),
# every parameter and action of the agent's meta-data in
# ocf_clraid_clraid(7).  (They are generated from those sources; this
# checks that nothing is lost or mangled on the way.)
. "${top_srcdir:-.}/tests/functions.sh"
requires groff
requires man

# render PAGE: plain text (no hyphenation, wide, so options stay whole)
render() {
    MANWIDTH=200 man -l "$1" 2>"$TESTDIR/man.err" | sed -e 's/.\x08//g'
}
# clean PAGE: groff's warnings on (-ww), none allowed
clean() {
    groff -man -ww -z "$1" 2>"$TESTDIR/groff.err" || fail "$1: groff failed"
    [ ! -s "$TESTDIR/groff.err" ] || { cat "$TESTDIR/groff.err"; fail "$1: groff warnings"; }
}
# covers PAGE WORDS-FILE WHAT: every word of the file appears in the page
covers() {
    render "$1" >"$TESTDIR/page.txt"
    n=0
    while read -r w; do
        grep -qF -- "$w" "$TESTDIR/page.txt" || fail "$1 lacks $3 '$w'"
        n=$((n + 1))
    done <"$2"
    [ "$n" -gt 0 ] || fail "$1: no $3 to look for"
    echo "ok: $1 has all $n $3"
}

page=$top_builddir/man/clraid.8
[ -f "$page" ] || fail "not built: $page"
clean "$page"
: >"$TESTDIR/opts"
for c in $("$CLRAID" --help 2>&1 | awk '/^commands:/ { c = 1; next } c && /^  [a-z]/ { print $1 }'); do
    echo "clraid $c" >>"$TESTDIR/cmds"
    "$CLRAID" "$c" --help 2>&1 | grep -o -- '--[a-z][a-z-]*' >>"$TESTDIR/opts"
done
sort -u "$TESTDIR/opts" -o "$TESTDIR/opts"
covers "$page" "$TESTDIR/opts" "options of the commands' --help"
"$CLRAID" --help 2>&1 | awk '/^commands:/ { c = 1; next } c && /^  [a-z]/ { print $1 }' >"$TESTDIR/cmdnames"
covers "$page" "$TESTDIR/cmdnames" "commands"

page=$top_builddir/man/clraid-policyd.8
if [ -x "$top_builddir/clraid-policyd" ]; then
    [ -f "$page" ] || fail "not built: $page"
    clean "$page"
    "$top_builddir/clraid-policyd" --help 2>&1 | grep -o -- '--[a-z][a-z-]*' | sort -u >"$TESTDIR/popts"
    covers "$page" "$TESTDIR/popts" "options of its --help"
fi

page=$top_builddir/man/ocf_clraid_clraid.7
# where its tools are, the page must have been built
if command -v xsltproc >/dev/null 2>&1 && [ -r /usr/lib/ocf/lib/heartbeat/ocf-shellfuncs ]; then
    [ -f "$page" ] || fail "not built, though xsltproc and resource-agents are here: $page"
fi
if [ -f "$page" ]; then
    clean "$page"
    OCF_ROOT=/usr/lib/ocf "$top_srcdir/ocf/clraid" meta-data >"$TESTDIR/md.xml" || fail "meta-data"
    grep -o '<parameter name="[a-z_]*"' "$TESTDIR/md.xml" | cut -d'"' -f2 >"$TESTDIR/params"
    covers "$page" "$TESTDIR/params" "parameters of the meta-data"
    grep -o '<action name="[a-z-]*"' "$TESTDIR/md.xml" | cut -d'"' -f2 | sort -u >"$TESTDIR/actions"
    covers "$page" "$TESTDIR/actions" "actions of the meta-data"
else
    echo "(no ocf_clraid_clraid.7: configure found no xsltproc or no resource-agents)"
fi
# the check can fail: a page without one option is caught
sed '/--skip-stale/d' "$top_builddir/man/clraid.8" >"$TESTDIR/cut.8"
if (covers "$TESTDIR/cut.8" "$TESTDIR/opts" "options" >/dev/null 2>&1); then
    fail "a page without --skip-stale passed"
fi
echo "ok: a page missing an option is refused"
