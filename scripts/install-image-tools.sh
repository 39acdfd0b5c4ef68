#!/usr/bin/env bash
# Installs the container tools scripts/build-image and the image checks use: buildah (builds the image
# offline), podman and runc (run it), from Debian's packages.
#
# Usage: scripts/install-image-tools.sh   (as root; idempotent: does nothing when all three are on PATH)
set -euo pipefail

missing=()
for tool in buildah podman runc; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
    [[ "$(id -u)" == 0 ]] || { echo "install-image-tools.sh: ${missing[*]} missing; run as root to install" >&2; exit 1; }
    echo "install-image-tools.sh: installing ${missing[*]} from Debian's packages" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
for tool in buildah podman runc; do
    command -v "$tool" >/dev/null || { echo "install-image-tools.sh: $tool is still missing" >&2; exit 1; }
done
