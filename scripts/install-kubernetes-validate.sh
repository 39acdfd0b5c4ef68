#!/usr/bin/env bash
# Installs PyPI's kubernetes-validate (Kubernetes JSON schemas per release, strict mode) into a virtual
# environment under target/, for the Helm chart tests, which validate every rendered object against the
# Kubernetes 1.32 schemas. The same venv runs scripts/chart-readme.py (kubernetes-validate brings PyYAML).
#
# Usage: scripts/install-kubernetes-validate.sh    installs if needed, then prints the venv's bin directory
# Environment:
#   KUBERAY_VALIDATE_VENV   where the venv lives (default: <repo>/target/tools/kubernetes-validate)
#
# Idempotent and safe to run concurrently (an flock serialises installers). Exits non-zero with a message
# on stderr when python3, its venv module or the package cannot be had.
set -euo pipefail

readonly PACKAGE_VERSION="1.37.0"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${KUBERAY_VALIDATE_VENV:-$repo_root/target/tools/kubernetes-validate}"

die() {
    echo "install-kubernetes-validate.sh: $*" >&2
    exit 1
}

# True when the venv runs the pinned kubernetes-validate with PyYAML importable.
installed_ok() {
    [[ -x "$venv/bin/kubernetes-validate" ]] || return 1
    [[ "$("$venv/bin/python" -c 'import importlib.metadata as m, yaml; print(m.version("kubernetes-validate"))' \
        2>/dev/null)" == "$PACKAGE_VERSION" ]]
}

command -v python3 >/dev/null || die "'python3' is required but not on PATH"
command -v flock >/dev/null || die "'flock' is required but not on PATH"

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9

if ! installed_ok; then
    rm -rf "$venv"
    python3 -m venv "$venv" || die "python3 -m venv $venv failed (is python3's venv module installed?)"
    echo "install-kubernetes-validate.sh: installing kubernetes-validate==$PACKAGE_VERSION into $venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$PACKAGE_VERSION" >&2 ||
        die "pip install kubernetes-validate==$PACKAGE_VERSION failed (is PyPI reachable?)"
fi

installed_ok || die "kubernetes-validate $PACKAGE_VERSION is not runnable from $venv"
echo "$venv/bin"
