#!/bin/sh
# The Debian package (debian/, README.md "Building packages"): built with
# dpkg-buildpackage from a clean copy of the source (`make distdir`, so
# the tarball must carry debian/; the build tree, in-tree in CI and
# read-only in distcheck, is never built in), lintian finds no error in
# it, `dpkg -i` installs it, the installed programs run (clraid, the
# policy daemon, the agent's meta-data, the nbdkit plugin by nbdkit's own
# lookup), and `dpkg --purge` removes every file it installed.
#
# It installs on this host: it refuses (77) where a clraid package or any
# file of the package is already there, so that it never replaces or
# removes someone's install; a trap purges the package if the test stops
# midway.  No randomness.
. "${top_srcdir:-.}/tests/functions.sh"

requires_root
requires make
requires dpkg
requires dpkg-buildpackage
requires dpkg-checkbuilddeps
requires dh
requires dh_autoreconf
requires lintian
requires nbdkit
[ -f "$top_builddir/Makefile" ] || skip "no configured build tree at $top_builddir"

pkg_status() { dpkg-query -W -f '${db:Status-Status}' clraid 2>/dev/null || true; }
st=$(pkg_status)
case $st in
"" | not-installed) ;;
*) skip "a clraid package is on this host (dpkg status: $st): this test would replace and purge it" ;;
esac

# (read from the Makefile, not through make: a make run from make check
# may print its "Entering directory" lines whatever it is told)
version=$(sed -n 's/^VERSION = //p' "$top_builddir/Makefile")
[ -n "$version" ] || fail "no VERSION in $top_builddir/Makefile"
# The make of `make check` must reach neither make below (its jobserver,
# its command-line variables such as TESTS=).
nomake() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$@"; }

# --- a clean copy of the source: what `make dist` would pack ---
src="$TESTDIR/clraid-$version"
t0=$(date +%s)
nomake make -s -C "$top_builddir" distdir distdir="$src" >"$TESTDIR/distdir.log" 2>&1 ||
    { tail -n 20 "$TESTDIR/distdir.log"; fail "make distdir"; }
# distcheck's srcdir is read-only, and so are the files copied from it
chmod -R u+w "$src"
[ -x "$src/debian/rules" ] || fail "make distdir carries no executable debian/rules (EXTRA_DIST)"
cl_version=$(cd "$src" && dpkg-parsechangelog -S Version)
[ "$cl_version" = "$version" ] ||
    fail "debian/changelog is at $cl_version, configure.ac's AC_INIT at $version: add a changelog entry (dch -v $version)"
spec_version=$(sed -n 's/^Version: *//p' "$src/rpm/clraid.spec")
[ "$spec_version" = "$version" ] ||
    fail "rpm/clraid.spec is at Version $spec_version, configure.ac's AC_INIT at $version"
echo "ok: the source copy carries debian/ and rpm/clraid.spec, both at $version"

# Every Build-Depends must be on this host: scripts/install-deps.sh
# installs them, and a package it lacks is a bug there, not a skip.
(cd "$src" && dpkg-checkbuilddeps) >"$TESTDIR/deps.log" 2>&1 ||
    { cat "$TESTDIR/deps.log"; fail "debian/control's Build-Depends are not installed (scripts/install-deps.sh should install them)"; }

# --- build: binary package only, no tests, no debug symbols package ---
t1=$(date +%s)
(cd "$src" && nomake DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=$(nproc)" \
    dpkg-buildpackage -us -uc -b) >"$TESTDIR/build.log" 2>&1 ||
    { tail -n 40 "$TESTDIR/build.log"; fail "dpkg-buildpackage -us -uc -b"; }
t2=$(date +%s)
arch=$(dpkg --print-architecture)
deb="$TESTDIR/clraid_${version}_$arch.deb"
changes="$TESTDIR/clraid_${version}_$arch.changes"
[ -f "$deb" ] || { ls "$TESTDIR" >&2; fail "no $deb"; }
echo "ok: built $(basename "$deb") in $((t2 - t1)) s (source copy $((t1 - t0)) s)"

# --- lintian: no error (warnings are shown, and explained in
# debian/README.source) ---
set +e
lintian "$changes" >"$TESTDIR/lintian.out" 2>"$TESTDIR/lintian.err"
lrc=$?
set -e
t3=$(date +%s)
cat "$TESTDIR/lintian.out"
if grep -q '^E:' "$TESTDIR/lintian.out"; then
    fail "lintian: $(grep -c '^E:' "$TESTDIR/lintian.out") error(s), above"
fi
[ "$lrc" = 0 ] || { cat "$TESTDIR/lintian.err" >&2; fail "lintian exited $lrc"; }
echo "ok: lintian, no error ($(grep -c '^W:' "$TESTDIR/lintian.out" || true) warning(s)) in $((t3 - t2)) s"

# --- install: only where no file of the package is already there ---
dpkg-deb --fsys-tarfile "$deb" | tar -t | sed -n 's|^\./|/|; /[^/]$/p' >"$TESTDIR/files"
[ -s "$TESTDIR/files" ] || fail "no files in $deb"
while read -r f; do
    [ ! -e "$f" ] || skip "$f is already on this host (a make install?): installing the package would replace it"
done <"$TESTDIR/files"
for want in /usr/sbin/clraid /usr/sbin/clraid-policyd /usr/lib/ocf/resource.d/clraid/clraid \
    /usr/share/bash-completion/completions/clraid /usr/share/man/man8/clraid.8.gz \
    /usr/share/man/man8/clraid-policyd.8.gz /usr/share/man/man7/ocf_clraid_clraid.7.gz \
    /usr/share/clraid/crm-templates/pcs-clraid-cpg.sh /usr/share/clraid/crm-templates/crmsh/clraid-cpg \
    /usr/share/doc/clraid/README.md.gz; do
    grep -qx "$want" "$TESTDIR/files" || fail "the package lacks $want"
done
plugin=$(grep '/nbdkit-clraid-plugin\.so$' "$TESTDIR/files") || fail "the package has no nbdkit plugin"
plugindir=$(pkg-config --variable=plugindir nbdkit 2>/dev/null || true)
if [ -n "$plugindir" ]; then
    [ "$plugin" = "$plugindir/nbdkit-clraid-plugin.so" ] || fail "plugin at $plugin, nbdkit's plugindir is $plugindir"
fi
echo "ok: $(wc -l <"$TESTDIR/files") files, none on this host yet"

purge() {
    [ "$(pkg_status)" = not-installed ] || [ -z "$(pkg_status)" ] || dpkg --purge clraid >/dev/null 2>&1
}
cleanup_fn purge
dpkg -i "$deb" >"$TESTDIR/install.log" 2>&1 || { cat "$TESTDIR/install.log"; fail "dpkg -i $(basename "$deb")"; }
[ "$(pkg_status)" = installed ] || fail "after dpkg -i, clraid's status is $(pkg_status)"
t4=$(date +%s)
echo "ok: dpkg -i in $((t4 - t3)) s"

# --- the installed programs ---
/usr/sbin/clraid --version >"$TESTDIR/v" 2>&1 || { cat "$TESTDIR/v"; fail "/usr/sbin/clraid --version"; }
grep -qx "clraid $version" "$TESTDIR/v" || fail "/usr/sbin/clraid --version says: $(cat "$TESTDIR/v")"
/usr/sbin/clraid start --help 2>&1 | tr -d '\n' | grep -qF "($plugin)" ||
    fail "the installed clraid does not look for the installed plugin $plugin"
echo "ok: /usr/sbin/clraid --version: $(cat "$TESTDIR/v"), its plugin $plugin"
/usr/sbin/clraid-policyd --check-settings path_failure_action=fail-disk ||
    fail "/usr/sbin/clraid-policyd --check-settings of a valid setting"
set +e
/usr/sbin/clraid-policyd --check-settings path_failure_action=nonsense 2>/dev/null
prc=$?
set -e
[ "$prc" = 6 ] || fail "/usr/sbin/clraid-policyd --check-settings of a bad setting exited $prc, not 6"
echo "ok: /usr/sbin/clraid-policyd runs (settings checked: 0 and 6)"

agent=/usr/lib/ocf/resource.d/clraid/clraid
OCF_ROOT=/usr/lib/ocf "$agent" meta-data >"$TESTDIR/md.xml" || fail "$agent meta-data exited $?"
grep -q '<resource-agent name="clraid"' "$TESTDIR/md.xml" || fail "$agent meta-data: not the clraid agent"
if command -v xmllint >/dev/null 2>&1; then
    rng="$top_srcdir/tests/pacemaker/ra-api-1.1.rng"
    xmllint --noout --relaxng "$rng" "$TESTDIR/md.xml" 2>"$TESTDIR/err" ||
        { cat "$TESTDIR/err" >&2; fail "$agent meta-data is not valid OCF 1.1"; }
    echo "ok: $agent meta-data, valid OCF 1.1"
else
    echo "ok: $agent meta-data (xmllint not installed: not validated)"
fi

# nbdkit loads the plugin by its name, from its own plugindir
nbdkit --dump-plugin clraid >"$TESTDIR/dump" 2>&1 || { cat "$TESTDIR/dump"; fail "nbdkit --dump-plugin clraid"; }
grep -qx "path=$plugin" "$TESTDIR/dump" || fail "nbdkit loaded clraid from $(sed -n 's/^path=//p' "$TESTDIR/dump"), not $plugin"
grep -qx "version=$version" "$TESTDIR/dump" || fail "the plugin is not at $version: $(grep '^version=' "$TESTDIR/dump")"
echo "ok: nbdkit --dump-plugin clraid loads $plugin"

# --- purge: every file goes ---
dpkg --purge clraid >"$TESTDIR/purge.log" 2>&1 || { cat "$TESTDIR/purge.log"; fail "dpkg --purge clraid"; }
t5=$(date +%s)
st=$(pkg_status)
[ -z "$st" ] || [ "$st" = not-installed ] || fail "after dpkg --purge, clraid's status is $st"
while read -r f; do
    [ ! -e "$f" ] || fail "$f is still there after dpkg --purge"
done <"$TESTDIR/files"
[ ! -e /usr/lib/ocf/resource.d/clraid ] || fail "/usr/lib/ocf/resource.d/clraid is still there after dpkg --purge"
echo "ok: dpkg --purge removed all $(wc -l <"$TESTDIR/files") files in $((t5 - t4)) s"
echo "times (s): source copy $((t1 - t0)), build $((t2 - t1)), lintian $((t3 - t2)), install $((t4 - t3)), checks and purge $((t5 - t4)), total $((t5 - t0))"
