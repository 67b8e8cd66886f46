#!/bin/sh
# scripts/deps.sh - install the Debian packages Sluice needs to build, test
# and run, when any is missing. Idempotent and quiet when all are present.
# SERVERS are only for the tests: OpenStack Swift with its s3api middleware
# (a real S3-compatible server on loopback, for --storage s3://) and the
# memcached it needs, and PostgreSQL 15 (postgres_output and
# postgres_cdc_input tests; psql, psycopg2 and psycopg 3 also drive --pg, the wire
# protocol, in test_pgwire.py); installed without recommends. librdkafka-dev is
# the Kafka client (kafka_input, kafka_output; its mock cluster serves the
# tests). clang and its runtime libraries build the libFuzzer targets
# (`make fuzz`, fuzz/README.md). chromium (headless) and node with npm run
# the web console's browser tests (tests/e2e/test_console.py installs
# playwright-core from npm into build/test-cache/); node and npm are
# installed only when no node is on PATH. tzdata is the time zone database
# (/usr/share/zoneinfo) that TIMESTAMP WITH TIME ZONE reads (src/expr/tz.c).
set -e
PKGS="gcc make pkg-config clang libclang-rt-14-dev libcjson-dev libxxhash-dev libmicrohttpd-dev libzstd-dev liblz4-dev libcmocka-dev sqlite3 python3-pytest python3-requests nettle-dev libcurl4-openssl-dev librdkafka-dev zlib1g-dev openmpi-bin libopenmpi-dev iproute2 openssl libpq-dev libgnutls28-dev libpcre2-dev tzdata"
SERVERS="swift swift-proxy swift-object swift-container swift-account memcached zstd postgresql postgresql-client python3-psycopg2 python3-psycopg chromium"
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || SERVERS="$SERVERS nodejs npm"
missing_of() {
    m=""
    for p in $1; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            m="$m $p"
        fi
    done
    echo "$m"
}
missing=$(missing_of "$PKGS")
missing_srv=$(missing_of "$SERVERS")
[ -z "$missing" ] && [ -z "$missing_srv" ] && exit 0
echo "sluice: installing missing Debian packages:$missing$missing_srv"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
[ -n "$missing" ] && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
[ -n "$missing_srv" ] && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    --no-install-recommends $missing_srv
exit 0
