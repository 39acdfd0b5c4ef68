#!/usr/bin/env bash
# Installs Debian's redis-server, for the tests that run KubeRay's external-Redis GCS fault tolerance sample with
# real Ray: kube-sim maps the sample's `redis` image to the host directory whose `bin/` holds redis-server
# (`--image-host redis=<dir>`).
#
# The package comes from the Debian archive through apt-get, at the version pinned below, and only when
# redis-server is missing. The package's maintainer scripts would start a system-wide redis daemon; a
# temporary policy-rc.d (only when the host has none) stops them from starting any service, so the only
# redis-server processes are the ones kube-sim's pods run.
#
# Usage: scripts/install-redis.sh        installs if needed, then prints the image directory (e.g. /usr) on stdout
#
# Idempotent and safe to run concurrently (an flock serialises installers); a second run only re-checks the
# version. Needs root and apt-get the first time. Exits non-zero with a message on stderr when anything is
# missing or does not match.
set -euo pipefail

# The Debian 12 package installed when redis-server is missing. Bump it when the archive replaces it (a
# security update); the first line of `apt-cache policy redis-server` shows the candidate.
readonly REDIS_DEB_VERSION="5:7.0.15-1~deb12u7"
# What an installed redis-server must report (`redis-server --version`): the pinned package's upstream series.
readonly REDIS_SERIES="7.0."

die() {
    echo "install-redis.sh: $*" >&2
    exit 1
}

# True when redis-server is on PATH and reports the pinned series.
redis_installed() {
    command -v redis-server >/dev/null || return 1
    [[ "$(redis-server --version 2>/dev/null)" == *"v=$REDIS_SERIES"* ]]
}

command -v flock >/dev/null || die "'flock' is required but not on PATH"
exec 9>"${TMPDIR:-/tmp}/kuberay-install-redis.lock"
flock 9

if ! redis_installed; then
    command -v apt-get >/dev/null || die "redis-server is missing and there is no apt-get to install it"
    [[ "$(id -u)" == 0 ]] || die "redis-server is missing; installing it needs root"
    policy=/usr/sbin/policy-rc.d
    if [[ ! -e "$policy" ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod +x "$policy"
        trap 'rm -f "$policy"' EXIT
    fi
    echo "install-redis.sh: installing redis-server=$REDIS_DEB_VERSION (from the Debian archive)" >&2
    apt_install() {
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "redis-server=$REDIS_DEB_VERSION" "redis-tools=$REDIS_DEB_VERSION" >&2
    }
    apt_install || { apt-get update -q >&2 && apt_install; } ||
        die "apt-get install redis-server=$REDIS_DEB_VERSION failed (is the Debian archive reachable? has the pin moved?)"
fi

redis_installed || die "redis-server is not the pinned $REDIS_SERIES* series: $(redis-server --version 2>&1 || true)"
# The image directory: the parent of the bin/ that holds redis-server.
dirname "$(dirname "$(readlink -f "$(command -v redis-server)")")"
