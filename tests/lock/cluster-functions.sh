# Shared helpers for the lock service tests and benchmark on a private
# corosync.  Source it, then call clr_enter_ns "$@" first: it re-runs the
# script inside a private network and mount namespace, so the corosync we
# start is the only one our clients can reach (libqb IPC uses abstract unix
# sockets, which are per network namespace) and nothing on the host is
# touched (/var/lib/corosync, /run and /dev/shm are private, /etc is never
# used), and two runs can coexist.

# shellcheck source=tests/lock/corosync-conf.sh
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lock/corosync-conf.sh"
clr_skip() { echo "SKIP: $*"; exit 77; }

clr_enter_ns() {
	if [ -z "${CLR_IN_NS:-}" ]; then
		[ "$(id -u)" = 0 ] || clr_skip "needs root for unshare"
		for c in corosync corosync-quorumtool unshare ip mount; do
			command -v $c >/dev/null 2>&1 || clr_skip "$c not installed"
		done
		CLR_IN_NS=1 exec unshare -n -m --propagation private "$0" "$@"
	fi
	ip link set lo up || exit 99
}

# clr_start_corosync: sets T (work dir) and COROSYNC_PID.
clr_start_corosync() {
	T=$(mktemp -d /tmp/clraid-lock.XXXXXX) || exit 99
	mkdir -p "$T/var-lib-corosync" "$T/run"
	mount --bind "$T/var-lib-corosync" /var/lib/corosync || exit 99
	# corosync's pid lock file lives in /run: private, so runs coexist
	mount --bind "$T/run" /run || exit 99
	mount -t tmpfs -o mode=1777 tmpfs /dev/shm || exit 99
	cat >"$T/corosync.conf" <<CONF
totem {
	version: 2
	cluster_name: clraidlocktest
	transport: knet
	crypto_cipher: none
	crypto_hash: none
}
logging {
	to_stderr: no
	to_logfile: yes
	logfile: $T/corosync.log
	to_syslog: no
	timestamp: hires
}
quorum {
	provider: corosync_votequorum
	${CLR_QUORUM_EXTRA:-}
}
nodelist {
	node {
		name: $(hostname)
		nodeid: 1
		ring0_addr: 127.0.0.1
		quorum_votes: ${CLR_NODE_VOTES:-1}
	}
}
CONF
	corosync -f -c "$T/corosync.conf" >"$T/corosync.out" 2>&1 &
	COROSYNC_PID=$!
	trap clr_cleanup EXIT
	for _i in $(seq 100); do
		if corosync-quorumtool -s 2>/dev/null | grep -q 'Quorate: *Yes'; then
			return 0
		fi
		sleep 0.1
	done
	echo "corosync did not become quorate"; cat "$T/corosync.out"
	exit 99
}

CLR_PIDS=""
# clr_bg NAME CMD...: run a member in the background, output in $T/NAME.out
clr_bg() {
	_n=$1; shift
	"$@" >"$T/$_n.out" 2>"$T/$_n.err" &
	eval "PID_$_n=\$!"
	CLR_PIDS="$CLR_PIDS $!"
}

# clr_wait_for FILE PATTERN [SECONDS]
clr_wait_for() {
	_t=$(( ${3:-20} * 10 ))
	while [ $_t -gt 0 ]; do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
		_t=$((_t - 1))
	done
	echo "timeout waiting for '$2' in $1"; cat "$1"; return 1
}

clr_cleanup() {
	for p in $CLR_PIDS; do kill -9 "$p" 2>/dev/null; done
	if [ -n "${COROSYNC_PID:-}" ]; then
		kill "$COROSYNC_PID" 2>/dev/null
		wait "$COROSYNC_PID" 2>/dev/null
	fi
	umount /dev/shm 2>/dev/null
	umount /run 2>/dev/null
	umount /var/lib/corosync 2>/dev/null
	if [ -n "${T:-}" ] && [ -z "${CLR_KEEP:-}" ]; then rm -rf "$T"; fi
}
