#!/usr/bin/env bash
# Installs real Ray (`ray[default,serve]`, pinned) into a Python virtualenv, for the tests that compare the hollow
# Ray with the real one and for running Ray pods as host processes (`kube-sim serve --image-host
# rayproject/ray=<venv>`).
#
# Every package comes from PyPI through pip, at the versions pinned in scripts/ray-constraints.txt (Ray itself
# and everything it pulls in), so two installs resolve the same set. The venv is built in a private directory
# and moved into place only after `ray --version` reports the pinned version; a stamp file records what was
# installed, so a second run only re-checks it.
#
# Usage: scripts/install-ray.sh        installs if needed, then prints the venv directory on stdout
# Environment:
#   KUBERAY_RAY_VENV   where the venv goes (default: <repo>/target/ray-venv); Ray's CLI is $KUBERAY_RAY_VENV/bin/ray
#   KUBERAY_PYTHON     the Python that builds the venv (default: python3; Ray 2.60 wheels cover 3.10-3.13)
#
# Idempotent and safe to run concurrently (an flock serialises installers). Exits non-zero with a message on
# stderr when anything is missing or does not match.
set -euo pipefail

readonly RAY_VERSION="2.60.0"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
constraints="$repo_root/scripts/ray-constraints.txt"
venv="${KUBERAY_RAY_VENV:-$repo_root/target/ray-venv}"
python="${KUBERAY_PYTHON:-python3}"

die() {
    echo "install-ray.sh: $*" >&2
    exit 1
}

# What a finished install records: the Ray version and the constraints it was resolved against.
wanted_stamp() {
    echo "ray[default,serve]==$RAY_VERSION"
    sha256sum <"$constraints" | cut -d' ' -f1
}

# True when the venv in $1 holds the pinned Ray (package metadata only: quick, for a re-run).
ray_installed() {
    local dir="$1"
    [[ -x "$dir/bin/ray" && -x "$dir/bin/python" ]] || return 1
    [[ "$(cat "$dir/.kuberay-stamp" 2>/dev/null)" == "$(wanted_stamp)" ]] || return 1
    [[ "$("$dir/bin/python" -c 'import importlib.metadata as m; print(m.version("ray"))' 2>/dev/null)" == "$RAY_VERSION" ]]
}

# True when the venv in $1 runs the pinned Ray with the dashboard and Serve importable (slow: imports Ray).
ray_runs() {
    local dir="$1" reported
    reported="$("$dir/bin/ray" --version 2>/dev/null)" || return 1
    [[ "$reported" == *"version $RAY_VERSION"* ]] || return 1
    "$dir/bin/python" -c 'import ray.dashboard, ray.serve, aiohttp' 2>/dev/null
}

command -v flock >/dev/null || die "'flock' is required but not on PATH"
command -v "$python" >/dev/null || die "'$python' is required but not on PATH (set KUBERAY_PYTHON)"
[[ -f "$constraints" ]] || die "missing $constraints"
"$python" -c 'import sys, venv; sys.exit(0 if (3, 10) <= sys.version_info[:2] <= (3, 13) else 1)' ||
    die "$python is not Python 3.10-3.13 with the venv module (Ray $RAY_VERSION needs one; set KUBERAY_PYTHON)"

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9

if ! ray_installed "$venv"; then
    # A venv's scripts carry its absolute path, so it is built in place; a failed build leaves nothing behind.
    rm -rf "$venv"
    trap 'rm -rf "$venv"' ERR
    echo "install-ray.sh: installing ray[default,serve]==$RAY_VERSION into $venv (from PyPI)" >&2
    "$python" -m venv "$venv" || { rm -rf "$venv"; die "$python -m venv $venv failed"; }
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        --constraint "$constraints" "ray[default,serve]==$RAY_VERSION" >&2 ||
        { rm -rf "$venv"; die "pip install ray[default,serve]==$RAY_VERSION failed (is PyPI reachable?)"; }
    ray_runs "$venv" || { rm -rf "$venv"; die "the installed venv does not run Ray $RAY_VERSION with dashboard and Serve"; }
    wanted_stamp >"$venv/.kuberay-stamp"
    trap - ERR
    echo "install-ray.sh: installed Ray $RAY_VERSION into $venv" >&2
fi

ray_installed "$venv" || die "Ray $RAY_VERSION is not installed in $venv"
echo "$venv"
