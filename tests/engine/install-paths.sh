#!/bin/sh
# make install DESTDIR=...: every file lands where Pacemaker, nbdkit and
# the operator look for it, whatever the prefix (configure --with-ocf-root,
# --with-nbdkit-plugindir), and the installed clraid looks for the
# installed plugin (not the build tree's).  The paths are read from the
# Makefile configure wrote; nothing outside DESTDIR is touched.
. "${top_srcdir:-.}/tests/functions.sh"

requires make
mk="$top_builddir/Makefile"
[ -f "$mk" ] || skip "no configured build tree at $top_builddir"
var() { # the value of a make variable, expanded
    make -s --no-print-directory -C "$top_builddir" -f - print-var V="$1" <<EOF
include Makefile
print-var: ; @echo \$(\$(V))
EOF
}
sbindir=$(var sbindir)
plugindir=$(var plugindir)
ocfdir=$(var ocfdir)
tpldir=$(var crmtemplatesdir)
compdir=$(var bashcompletiondir)
man8=$(var man8dir)
ocfroot=$(var OCF_ROOT_DIR)
echo "sbindir $sbindir, plugindir $plugindir, ocfdir $ocfdir, templates $tpldir"
[ "$ocfdir" = "$ocfroot/resource.d/clraid" ] || fail "ocfdir $ocfdir is not under the OCF root $ocfroot"
want_plugindir=$(pkg-config --variable=plugindir nbdkit 2>/dev/null || true)
if grep -q -- "--with-nbdkit-plugindir" "$top_builddir/config.log"; then
    echo "(configured with --with-nbdkit-plugindir: $plugindir)"
elif [ -n "$want_plugindir" ]; then
    [ "$plugindir" = "$want_plugindir" ] || fail "plugindir $plugindir, nbdkit's own is $want_plugindir"
fi

dest="$TESTDIR/root"
make -s -C "$top_builddir" install DESTDIR="$dest" >"$TESTDIR/install.log" 2>&1 ||
    { tail -n 20 "$TESTDIR/install.log"; fail "make install DESTDIR=$dest"; }
for f in "$sbindir/clraid" "$plugindir/nbdkit-clraid-plugin.so" "$ocfdir/clraid" \
    "$tpldir/pcs-clraid-cpg.sh" "$tpldir/pcs-clraid-dlm.sh" "$tpldir/crmsh/clraid-cpg" \
    "$tpldir/crmsh/clraid-dlm" "$compdir/clraid" "$man8/clraid.8"; do
    [ -e "$dest$f" ] || fail "not installed: $f"
    echo "ok: $f"
done
[ -x "$dest$ocfdir/clraid" ] || fail "the agent is not executable"
[ -x "$dest$sbindir/clraid" ] || fail "clraid is not executable"
if grep -q "^#define HAVE_POLICYD\b" "$top_builddir/config.h" 2>/dev/null ||
    [ -x "$top_builddir/clraid-policyd" ]; then
    [ -x "$dest$sbindir/clraid-policyd" ] || fail "clraid-policyd not installed in $sbindir"
    echo "ok: $sbindir/clraid-policyd"
fi

# The installed programs run: the version, the agent's meta-data.
"$dest$sbindir/clraid" --version >"$TESTDIR/v" || fail "installed clraid --version"
grep -q "^clraid [0-9]" "$TESTDIR/v" || fail "version: $(cat "$TESTDIR/v")"
OCF_ROOT=/usr/lib/ocf "$dest$ocfdir/clraid" meta-data >"$TESTDIR/md" || fail "installed agent meta-data"
grep -q '<resource-agent name="clraid"' "$TESTDIR/md" || fail "meta-data: not the clraid agent"
# ... and the installed clraid looks for the installed plugin, not the
# build tree's (it has no config.status beside it)
"$dest$sbindir/clraid" start --help 2>&1 | tr -d '\n' | grep -q "($plugindir/nbdkit-clraid-plugin.so)" ||
    fail "installed clraid does not name $plugindir/nbdkit-clraid-plugin.so"
echo "ok: installed clraid $(cat "$TESTDIR/v"), its plugin path $plugindir/nbdkit-clraid-plugin.so, the agent's meta-data"
