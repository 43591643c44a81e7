# shellcheck shell=bash
# The User-Mode Linux harness: boots instances of Debian's UML kernel (a real
# Linux 6.1 with md, raid1/10/456, md-cluster and the DLM as modules) over
# member files of ours, runs a script inside each and reads back its result
# lines.  Source it after tests/functions.sh (bash), then:
#
#   uml_init                          # SKIPs (77) with the reason if UML cannot run
#   uml_run NAME SCRIPT FILE...       # boot, run SCRIPT inside, power off;
#                                     # returns SCRIPT's status
#   uml_r NAME KEY                    # value of the result line "R KEY value"
#
# Several instances on one private network (namespace + bridge + taps):
#
#   uml_net n1 n2                     # 10.77.0.1, 10.77.0.2 ... (UML_NODES)
#   uml_start n1 SCRIPT FILE...       # in the background, on the network
#   uml_wait n1 [SECONDS]             # its SCRIPT's status
#   uml_kill n1                       # power loss: SIGKILL every process of it
#
# Files are attached as ubd devices (/dev/ubda, /dev/ubdb, ... inside) with
# no host lock, so several instances can share one member file.  SCRIPT runs
# under /bin/sh with guest-functions.sh's helpers at "$UML_LIB".  Console
# output of NAME is in $UML_DIR/NAME.console.
#
# One UML test runs at a time on a machine: uml_init waits for the others
# (a lock file in TMPDIR).  Environment: UML_MEM (default 384M),
# UML_TIMEOUT (seconds per instance, default 420: a guard against a hung
# instance, not a time limit of the test; a three-node run takes one to
# two minutes, and more on a busy CI), UML_HOSTDIRS (host dirs the guests need writable, e.g. the
# build tree; the work dir always is), UML_KEEP=DIR (copy the consoles and
# the guests' logs there at exit).

UML_KERNEL=${UML_KERNEL:-/usr/bin/linux.uml}
UML_MEM=${UML_MEM:-384M}
UML_TIMEOUT=${UML_TIMEOUT:-420}
UML_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
UML_NS=""
UML_NODES=""
UML_PRELOAD=""

# uml_modver: the version of the UML kernel's module tree.
uml_modver() {
    local d
    for d in /usr/lib/uml/modules/*/; do
        [ -e "$d/modules.dep" ] || [ -d "$d/kernel" ] || continue
        basename "$d"
        return 0
    done
    return 1
}

# uml_init: checks that UML can run here (or SKIPs with the reason), makes
# the work dir $UML_DIR and the module tree the guests load from.
uml_init() {
    local ver
    [ -x "$UML_KERNEL" ] || skip "User-Mode Linux is not installed ($UML_KERNEL; apt-get install user-mode-linux)"
    ver=$(uml_modver) || skip "no UML kernel modules in /usr/lib/uml/modules (package user-mode-linux)"
    command -v modprobe >/dev/null || skip "modprobe is not installed (package kmod)"
    [ -w /dev/shm ] || skip "/dev/shm is not writable: UML keeps its memory there"
    # UML's memory is a file in TMPDIR or /dev/shm that it maps PROT_EXEC
    if ! grep -qs ' /dev/shm tmpfs ' /proc/mounts; then
        skip "/dev/shm is not a tmpfs: UML cannot map its memory"
    fi
    # One UML test at a time on this machine.  Side by side under
    # `make -j2`, two of them booted five or six instances on two cores:
    # the guests' corosync lost its token (a "stateful merge" that ended
    # dlm_controld), and their wall-clock bounds (hang guards) measured
    # each other's load.  make runs them one after another (local.mk); the
    # lock covers runs outside make.  It is fd 9, which the instances do
    # not inherit (9>&-).
    command -v flock >/dev/null || skip "flock is not installed (package util-linux)"
    exec 9>"${TMPDIR:-/var/tmp}/clraid-uml-tests.lock"
    local t0
    t0=$(date +%s)
    flock -w 1500 9 || fail "uml: another UML test held ${TMPDIR:-/var/tmp}/clraid-uml-tests.lock for 25 minutes"
    [ "$(($(date +%s) - t0))" -lt 2 ] || echo "uml: waited $(($(date +%s) - t0)) s for another UML test"
    UML_DIR=$TESTDIR/uml
    mkdir -p "$UML_DIR/umid" "$UML_DIR/modroot/lib/modules"
    ln -sfn "/usr/lib/uml/modules/$ver" "$UML_DIR/modroot/lib/modules/$ver"
    cleanup_fn uml_cleanup
    # one probe boot: a kernel that cannot start here (no ptrace, seccomp
    # in a container ...) is a SKIP, not a failure
    printf 'echo "R probe ok"\n' >"$UML_DIR/probe.sh"
    if ! _uml_probe; then
        # a host whose XSAVE area (AMX) is larger than UML 6.1's buffer:
        # every instance dies at its first context switch, unless the
        # uml_xstate.so shim widens UML's FPU writes (see its source)
        if tr -d '\r' <"$UML_DIR/probe.console" | grep -q 'ptrace set fp regs failed, errno = 14'; then
            local shim=${top_builddir:-}/tests/uml/.libs/uml_xstate.so
            [ -e "$shim" ] || skip "UML 6.1 cannot save this CPU's FPU state (AMX) and $shim is not built: make check builds it"
            UML_PRELOAD=$shim
            if _uml_probe; then
                echo "uml: this CPU's XSAVE area is larger than UML 6.1's; instances run with LD_PRELOAD=$shim"
                return 0
            fi
        fi
        tail -n 5 "$UML_DIR/probe.console" 2>/dev/null | sed 's/^/  probe: /'
        skip "a User-Mode Linux instance does not boot here (see above)"
    fi
}

# _uml_probe: one boot that prints a result line and powers off.
_uml_probe() {
    uml_run probe "$UML_DIR/probe.sh" >/dev/null 2>&1 && [ "$(uml_r probe probe)" = ok ]
}

# _uml_hostdirs: the host dirs each guest mounts writable besides the work
# dir: UML_HOSTDIRS plus the source and build trees (a tree under /tmp or
# /run would be hidden by the guest's own tmpfs otherwise).
_uml_hostdirs() {
    local d out=""
    for d in ${UML_HOSTDIRS:-} "$UML_LIB" "${top_srcdir:-}" "${top_builddir:-}"; do
        [ -n "$d" ] || continue
        d=$(cd "$d" && pwd) || continue
        case " $out " in *" $d "*) ;; *) out="$out $d" ;; esac
    done
    echo "${out# }" | tr ' ' ','
}

# _uml_cmdline NAME SCRIPT FILE...: the kernel command line words.
_uml_cmdline() {
    local name=$1 script=$2 i=0 f
    shift 2
    UML_CMD=()
    [ -z "$UML_PRELOAD" ] || UML_CMD=(env "LD_PRELOAD=$UML_PRELOAD")
    # shellcheck disable=SC2054  # commas belong to con0=null,fd:1
    UML_CMD+=("$UML_KERNEL" "mem=$UML_MEM" rootfstype=hostfs rootflags=/ ro
        "init=$UML_LIB/uml-init.sh" "umid=$name" "uml_dir=$UML_DIR/umid"
        con=null con0=null,fd:1 loglevel=4
        "UML_WORK=$UML_DIR" "UML_TEST=$script" "UML_LIB=$UML_LIB" "NODE=$name"
        "UML_HOSTDIRS=$(_uml_hostdirs)")
    for f in "$@"; do
        [ -e "$f" ] || fail "uml: member file $f does not exist"
        # c: no host lock, so that several instances share the file
        UML_CMD+=("ubd${i}c=$f")
        i=$((i + 1))
    done
}

# uml_run NAME SCRIPT FILE...: boots NAME, runs SCRIPT inside, waits for
# the power-off.  Returns SCRIPT's exit status (124: timed out, 125: the
# instance died before SCRIPT ended).
uml_run() {
    local name=$1 rc
    _uml_cmdline "$@"
    date +%s >"$UML_DIR/$name.t0"
    # the instance's console is its stdout; UML's own ptrace children
    # follow its process group, which setsid makes ours to kill
    timeout -s KILL "$UML_TIMEOUT" setsid "${UML_CMD[@]}" </dev/null 9>&- \
        >"$UML_DIR/$name.console" 2>&1 || true
    rc=$(_uml_exit "$name")
    uml_reap "$name"
    return "$rc"
}

# _uml_exit NAME: the status the script reported, or 125.
_uml_exit() {
    local v
    v=$(tr -d '\r' <"$UML_DIR/$1.console" 2>/dev/null | sed -n 's/^UML-EXIT \([0-9]*\)$/\1/p' | tail -n 1)
    echo "${v:-125}"
}

# uml_results NAME: the "R ..." lines NAME printed (without the "R ").
uml_results() { tr -d '\r' <"$UML_DIR/$1.console" | sed -n 's/^R //p'; }
# uml_r NAME KEY: the value of NAME's last result line "R KEY value".
uml_r() { uml_results "$1" | awk -v k="$2" '$1 == k { $1 = ""; sub(/^ /, ""); v = $0 } END { print v }'; }
# uml_console_tail NAME [N]: the end of NAME's console, for a failure.
# It says how long NAME ran, against UML_TIMEOUT: an instance killed by
# that guard ends without reporting (status 125).
uml_console_tail() {
    local t0
    t0=$(cat "$UML_DIR/$1.t0" 2>/dev/null)
    echo "--- console of $1 (tail; it ran $(($(date +%s) - ${t0:-0})) s, UML_TIMEOUT is $UML_TIMEOUT s):"
    tr -d '\r' <"$UML_DIR/$1.console" | grep -v '^ \[<' | tail -n "${2:-40}"
}

# ---- several instances on a private network -----------------------------

# uml_net NAME...: a private network namespace with a bridge (10.77.0.254)
# and one tap per instance; instance k (in the order given) gets 10.77.0.k.
# Sets UML_NODES="n1:10.77.0.1 ...", which the guests' cluster config reads.
uml_net() {
    local k=0 n
    requires_root
    [ -c /dev/net/tun ] || skip "no /dev/net/tun: UML's network needs tap devices"
    UML_NS=clraid-uml-$$
    ip netns add "$UML_NS" || fail "ip netns add $UML_NS"
    cleanup_fn uml_net_cleanup
    ip -n "$UML_NS" link set lo up
    ip -n "$UML_NS" link add br0 type bridge
    ip -n "$UML_NS" addr add 10.77.0.254/24 dev br0
    ip -n "$UML_NS" link set br0 up
    UML_NODES=""
    for n in "$@"; do
        k=$((k + 1))
        ip netns exec "$UML_NS" ip tuntap add "tap-$n" mode tap || fail "tap for $n"
        ip -n "$UML_NS" link set "tap-$n" master br0 up
        UML_NODES="$UML_NODES $n:10.77.0.$k"
    done
    UML_NODES=${UML_NODES# }
}

uml_net_cleanup() { [ -n "$UML_NS" ] && ip netns del "$UML_NS" 2>/dev/null; UML_NS=""; return 0; }

# _uml_ip NAME: NAME's address from UML_NODES.
_uml_ip() {
    local e
    for e in $UML_NODES; do
        [ "${e%%:*}" = "$1" ] && { echo "${e#*:}"; return 0; }
    done
    return 1
}

# uml_start NAME SCRIPT FILE...: boots NAME in the background, on the
# network of uml_net if NAME is one of its instances.
uml_start() {
    local name=$1 ip mac k
    _uml_cmdline "$@"
    if ip=$(_uml_ip "$name"); then
        k=${ip##*.}
        mac=$(printf '02:00:00:77:00:%02x' "$k")
        UML_CMD+=("IP=$ip" "UML_NODES=${UML_NODES// /,}" "CLUSTER=${UML_CLUSTER:-clraiduml}"
            "vec0:transport=tap,ifname=tap-$name,mac=$mac")
        UML_CMD=(ip netns exec "$UML_NS" "${UML_CMD[@]}")
    fi
    date +%s >"$UML_DIR/$name.t0"
    timeout -s KILL "$UML_TIMEOUT" setsid "${UML_CMD[@]}" </dev/null 9>&- \
        >"$UML_DIR/$name.console" 2>&1 &
    echo $! >"$UML_DIR/$name.bgpid"
}

# uml_wait NAME [SECONDS]: waits until NAME powers off (default
# UML_TIMEOUT); returns its script's status (124 if it was still running).
uml_wait() {
    local name=$1 n=$((${2:-$UML_TIMEOUT} * 5)) p
    p=$(cat "$UML_DIR/$name.bgpid")
    while kill -0 "$p" 2>/dev/null; do
        n=$((n - 1))
        if [ "$n" -le 0 ]; then
            uml_kill "$name"
            return 124
        fi
        sleep 0.2
    done
    wait "$p" 2>/dev/null || true
    uml_reap "$name"
    return "$(_uml_exit "$name")"
}

# uml_wait_line NAME REGEX [SECONDS]: waits until NAME's console has a
# line matching REGEX (e.g. a result line the script prints when ready).
uml_wait_line() {
    local name=$1 re=$2 n=$((${3:-60} * 5)) p
    p=$(cat "$UML_DIR/$name.bgpid")
    while ! tr -d '\r' <"$UML_DIR/$name.console" 2>/dev/null | grep -qE "$re"; do
        n=$((n - 1))
        if [ "$n" -le 0 ] || ! kill -0 "$p" 2>/dev/null; then
            uml_console_tail "$name"
            fail "$name: no line /$re/ on its console"
        fi
        sleep 0.2
    done
}

# _uml_pids NAME: the host processes of instance NAME (the kernel and its
# ptrace children, and the timeout that bounds them).
# Every one of them was forked from the kernel process, so it carries the
# kernel's command line with this run's umid= and uml_dir=; the session is
# a second net for one caught between fork and exec.
_uml_pids() {
    local pid
    pgrep -f -- "umid=$1 uml_dir=$UML_DIR/umid( |\$)" || true
    pid=$(cat "$UML_DIR/umid/$1/pid" 2>/dev/null) || return 0
    [ -n "$pid" ] || return 0
    ps -e -o pid=,sid= | awk -v s="$pid" '$2 == s { print $1 }'
    echo "$pid"
}

# uml_kill NAME: power loss, at once: SIGKILL every process of NAME.
uml_kill() {
    local p
    for p in $(_uml_pids "$1"); do kill -9 "$p" 2>/dev/null || true; done
    uml_reap "$1"
}

# uml_reap NAME: make sure nothing of NAME is left running.
uml_reap() {
    local p i=0
    for p in $(_uml_pids "$1"); do kill -9 "$p" 2>/dev/null || true; done
    while [ -n "$(_uml_pids "$1" | while read -r p; do kill -0 "$p" 2>/dev/null && echo "$p"; done)" ]; do
        i=$((i + 1))
        [ "$i" -lt 100 ] || break
        sleep 0.05
    done
    rm -rf "$UML_DIR/umid/$1"
}

uml_cleanup() {
    local d
    if [ -n "${UML_KEEP:-}" ]; then
        mkdir -p "$UML_KEEP" && cp -r "$UML_DIR"/*.console "$UML_DIR"/*.log "$UML_DIR"/*.out \
            "$UML_DIR"/*.sh "$UML_KEEP"/ 2>/dev/null
    fi
    for d in "$UML_DIR"/umid/*/; do
        [ -d "$d" ] && uml_reap "$(basename "$d")"
    done
    uml_net_cleanup
    return 0
}
