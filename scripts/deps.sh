#!/bin/sh
# scripts/deps.sh - install the Debian packages Sluice needs to build, test
# and run, when any is missing. Idempotent and quiet when all are present.
set -e
PKGS="gcc make pkg-config libcjson-dev libxxhash-dev libmicrohttpd-dev libzstd-dev libcmocka-dev sqlite3 python3-pytest python3-requests nettle-dev"
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
echo "sluice: installing missing Debian packages:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
