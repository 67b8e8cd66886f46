#!/bin/sh
# shellcheck disable=SC2015  # "[ a ] && [ b ] || die" is intended
# scripts/netns-hosts.sh - "simulated hosts" for multi-host tests: Linux
# network namespaces joined by a bridge, one namespace per host, so that Open
# MPI (or any program) can run one process per host with all traffic over
# virtual links. Needs root (CAP_SYS_ADMIN + CAP_NET_ADMIN), iproute2, unshare.
#
# Usage:
#   netns-hosts.sh up N [PREFIX [NET]]   create hosts PREFIX1..PREFIXN
#   netns-hosts.sh down [PREFIX]         remove them (idempotent)
#   netns-hosts.sh cut I [PREFIX]        partition host I (its link goes down)
#   netns-hosts.sh heal I [PREFIX]       reconnect host I
#
# PREFIX defaults to "slh". It must match [a-z][a-z0-9_-]* and end with a
# letter, '-' or '_' (so "sl" + host 12 cannot be mistaken for "sl1" + host 2),
# at most 16 characters. Interface names never contain the prefix (see below),
# so IFNAMSIZ is not a constraint on it.
#
# Layout:
#   namespace PREFIXbr   bridge br0, ports p1..pN
#   namespace PREFIXi    lo + eth1 = 10.251.NET.i/24 (peer of PREFIXbr:pi)
# The veth pairs are created directly inside the namespaces
# (`ip link add eth1 netns A type veth peer name pI netns B`), so nothing ever
# appears in the root namespace and no interface name can clash with another
# prefix. The root namespace has no address or route into 10.251.NET.0/24.
#
# NET (the third octet) is the optional 4th argument, 1..250; by default it
# is derived from PREFIX: (cksum of PREFIX) mod 250 + 1. Two prefixes that
# hash to the same NET do not conflict anyway: every prefix has its own
# bridge namespace, i.e. its own isolated L2 network; NET only keeps the
# addresses of concurrent groups distinct for readability (tcpdump, logs).
#
# `up` first tears down any existing group with the same PREFIX, then writes
# into DIR (default /tmp/sluice-netns-PREFIX, or $SLUICE_NETNS_DIR; no
# whitespace allowed):
#   hostfile   one line per host: "ADDR slots=1"
#   hosts      one line per host: "ADDR NAME" (for reference / /etc/hosts)
#   agent.sh   ssh stand-in for Open MPI's plm_rsh_agent: skips leading option
#              args, takes HOST (an address or a host name), and runs the rest
#              of the arguments as a shell command inside that host's
#              namespace, with the hostname set to the namespace name (own UTS
#              namespace): exec ip netns exec NS unshare --uts /bin/sh -c
#              "hostname NS; $*"
#   mca        mpirun options, one MCA option per line, each line being the
#              three words "--mca KEY VALUE" (so `mpirun $(cat DIR/mca) ...`
#              works in a shell); none of the values contain whitespace:
#                --mca plm_rsh_agent DIR/agent.sh
#                --mca plm_rsh_no_tree_spawn 1
#                --mca oob_tcp_if_include 10.251.NET.0/24
#                --mca btl self,vader,tcp
#                --mca btl_tcp_if_include 10.251.NET.0/24
#                --mca mpi_yield_when_idle 1
#   env        the same options as environment assignments
#              (OMPI_MCA_KEY=VALUE, one per line)
# and prints a summary ending in a "run:" line showing how to start a command
# on host 1 (mpirun must itself run inside host 1, see RECIPES.md).
#
# mpi_yield_when_idle=1 matters: all "hosts" share the real cores, but Open
# MPI sees N hosts x 1 slot and believes it is not oversubscribed, so ranks
# would busy-poll and starve the veth softirq processing (60-90 ms per 1 MiB
# alltoall instead of ~1 ms). plm_rsh_no_tree_spawn=1 makes mpirun call the
# agent for every other host itself (no orted-launches-orted tree).
#
# `down` kills (TERM, then KILL after ~0.5 s) every process still inside the
# group's namespaces - e.g. the orted (started with --daemonize, so they are
# orphans) and ranks left over from an mpirun that was killed -
# then deletes the namespaces (which destroys the veths and the bridge) and
# removes the files above from DIR (DIR itself if then empty).
#
# `cut I` sets the bridge-side port pI down: host I keeps its address and
# route but its eth1 loses carrier; packets in both directions are silently
# dropped (like pulling the cable at the switch). Established TCP connections
# see no error, they just stall and retransmit. `heal I` sets the port up.

set -u

die() { echo "netns-hosts.sh: $*" >&2; exit 1; }
usage() {
    sed -n '7,11p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

check_prefix() {
    case $1 in
        ''|[!a-z]*|*[!a-z0-9_-]*) die "invalid prefix '$1' (want [a-z][a-z0-9_-]*)" ;;
        *[0-9]) die "invalid prefix '$1': must not end with a digit" ;;
    esac
    [ ${#1} -le 16 ] || die "prefix '$1' longer than 16 characters"
}

netdir() {
    d=${SLUICE_NETNS_DIR:-/tmp/sluice-netns-$1}
    case $d in *[[:space:]]*) die "directory '$d' contains whitespace" ;; esac
    echo "$d"
}

# Namespaces that belong to prefix $1: PREFIXbr and PREFIX<digits>.
list_ns() {
    ip netns list 2>/dev/null | while read -r name _rest; do
        case $name in
            "$1"br) echo "$name" ;;
            "$1"*)
                num=${name#"$1"}
                case $num in ''|*[!0-9]*) ;; *) echo "$name" ;; esac ;;
        esac
    done
}

# Pids of all processes inside the namespaces $1 (exited zombies are not
# listed: they have already left their namespaces).
ns_pids() {
    for ns in $1; do ip netns pids "$ns" 2>/dev/null; done | tr '\n' ' '
}

# shellcheck disable=SC2086  # pid lists are split on purpose
do_down() {
    p=$1
    nss=$(list_ns "$p")
    if [ -n "$nss" ]; then
        pids=$(ns_pids "$nss")
        sig=TERM n=0
        while [ -n "${pids% }" ] && [ $n -lt 30 ]; do
            # TERM first; after ~0.5 s, KILL whatever is still there
            # (an orted orphaned by a killed mpirun sometimes ignores TERM).
            [ $n -eq 10 ] && sig=KILL
            [ $n -eq 0 ] || [ $n -eq 10 ] && kill -$sig $pids 2>/dev/null
            sleep 0.05; n=$((n + 1))
            pids=$(ns_pids "$nss")
        done
        [ -z "${pids% }" ] || echo "netns-hosts.sh: warning: processes survive in $p namespaces: $pids" >&2
        for ns in $nss; do ip netns del "$ns" 2>/dev/null; done
    fi
    d=$(netdir "$p") || exit 1
    if [ -d "$d" ]; then
        rm -f "$d/hostfile" "$d/hosts" "$d/agent.sh" "$d/mca" "$d/env"
        rmdir "$d" 2>/dev/null
    fi
    return 0
}

do_up() {
    n=$1; p=$2; net=$3
    case $n in ''|*[!0-9]*) die "N must be a number, got '$n'" ;; esac
    [ "$n" -ge 1 ] && [ "$n" -le 250 ] || die "N must be in 1..250, got $n"
    if [ -z "$net" ]; then
        h=$(printf %s "$p" | cksum | cut -d' ' -f1)
        net=$((h % 250 + 1))
    fi
    case $net in ''|*[!0-9]*) die "NET must be a number, got '$net'" ;; esac
    [ "$net" -ge 1 ] && [ "$net" -le 250 ] || die "NET must be in 1..250, got $net"
    command -v ip >/dev/null 2>&1 || die "'ip' (iproute2) not found"
    command -v unshare >/dev/null 2>&1 || die "'unshare' (util-linux) not found"
    subnet=10.251.$net.0/24
    d=$(netdir "$p") || exit 1

    do_down "$p"
    br=${p}br
    if ! err=$(ip netns add "$br" 2>&1); then
        die "cannot create network namespaces ('ip netns add $br' failed: $err); need root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and kernel netns support"
    fi
    trap 'do_down "$p"' EXIT
    trap 'exit 1' INT TERM HUP
    run() { "$@" || die "failed: $*"; }
    run ip -n "$br" link set lo up
    run ip -n "$br" link add br0 type bridge
    run ip -n "$br" link set br0 up
    i=1
    while [ "$i" -le "$n" ]; do
        ns=$p$i
        run ip netns add "$ns"
        run ip link add eth1 netns "$ns" type veth peer name "p$i" netns "$br"
        run ip -n "$br" link set "p$i" master br0
        run ip -n "$br" link set "p$i" up
        run ip -n "$ns" link set lo up
        run ip -n "$ns" addr add "10.251.$net.$i/24" dev eth1
        run ip -n "$ns" link set eth1 up
        i=$((i + 1))
    done

    mkdir -p "$d" || die "cannot create $d"
    : > "$d/hostfile"; : > "$d/hosts"
    cases=
    i=1
    while [ "$i" -le "$n" ]; do
        echo "10.251.$net.$i slots=1" >> "$d/hostfile"
        echo "10.251.$net.$i $p$i" >> "$d/hosts"
        cases="$cases    10.251.$net.$i|$p$i) ns=$p$i ;;
"
        i=$((i + 1))
    done
    cat > "$d/agent.sh" <<EOF
#!/bin/sh
# ssh stand-in for Open MPI (plm_rsh_agent), generated by netns-hosts.sh for
# hosts ${p}1..$p$n. Called as: agent.sh [options] HOST command args...
# Like ssh, the command words are joined with spaces and run by a shell.
while [ \$# -gt 0 ]; do
    case \$1 in -*) shift ;; *) break ;; esac
done
[ \$# -ge 1 ] || { echo "agent.sh: no host given" >&2; exit 255; }
host=\$1; shift
case \$host in
$cases    *) echo "agent.sh: unknown host '\$host'" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" unshare --uts /bin/sh -c "hostname \$ns; \$*"
EOF
    chmod 755 "$d/agent.sh"
    {
        echo "--mca plm_rsh_agent $d/agent.sh"
        echo "--mca plm_rsh_no_tree_spawn 1"
        echo "--mca oob_tcp_if_include $subnet"
        echo "--mca btl self,vader,tcp"
        echo "--mca btl_tcp_if_include $subnet"
        echo "--mca mpi_yield_when_idle 1"
    } > "$d/mca"
    while read -r _m k v; do echo "OMPI_MCA_$k=$v"; done < "$d/mca" > "$d/env"
    for f in hostfile hosts agent.sh mca env; do
        [ -s "$d/$f" ] || die "could not write $d/$f"
    done
    trap - EXIT INT TERM HUP

    echo "hosts:$(while read -r a h; do printf ' %s=%s' "$h" "$a"; done < "$d/hosts")"
    echo "bridge: $br"
    echo "subnet: $subnet"
    echo "dir: $d"
    echo "hostfile: $d/hostfile"
    echo "mca: $(tr '\n' ' ' < "$d/mca" | sed 's/ $//')"
    echo "run: ip netns exec ${p}1 unshare --uts sh -c 'hostname ${p}1; exec CMD'"
}

do_link() {
    state=$1; i=$2; p=$3
    case $i in ''|*[!0-9]*) die "host index must be a number, got '$i'" ;; esac
    ip netns pids "$p$i" >/dev/null 2>&1 || die "no host $p$i (not up?)"
    ip -n "${p}br" link set "p$i" "$state" || die "cannot set $p$i's link $state"
}

[ $# -ge 1 ] || usage
cmd=$1; shift
case $cmd in
    up)
        [ $# -ge 1 ] && [ $# -le 3 ] || usage
        p=${2:-slh}; check_prefix "$p"
        do_up "$1" "$p" "${3:-}" ;;
    down)
        [ $# -le 1 ] || usage
        p=${1:-slh}; check_prefix "$p"
        do_down "$p" ;;
    cut|heal)
        [ $# -ge 1 ] && [ $# -le 2 ] || usage
        p=${2:-slh}; check_prefix "$p"
        if [ "$cmd" = cut ]; then do_link down "$1" "$p"; else do_link up "$1" "$p"; fi ;;
    -h|--help|help) usage ;;
    *) usage ;;
esac
