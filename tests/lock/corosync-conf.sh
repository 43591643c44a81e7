# shellcheck shell=sh
# clr_corosync_conf3 CLUSTER PREFIX LOGFILE: on stdout, the corosync.conf
# of a three-node test cluster: n1..n3 at PREFIX.1 .. PREFIX.3 (addresses
# inside the test's own network namespaces), knet without crypto, a 1 s
# token so that a lost node is seen within a few seconds.
clr_corosync_conf3() {
	cat <<CONF
totem {
	version: 2
	cluster_name: $1
	transport: knet
	crypto_cipher: none
	crypto_hash: none
	token: 1000
}
logging {
	to_stderr: no
	to_logfile: yes
	logfile: $3
	to_syslog: no
	timestamp: hires
}
quorum {
	provider: corosync_votequorum
}
nodelist {
CONF
	for _i in 1 2 3; do
		printf '\tnode {\n\t\tname: n%s\n\t\tnodeid: %s\n\t\tring0_addr: %s.%s\n\t}\n' \
			"$_i" "$_i" "$2" "$_i"
	done
	echo "}"
}
