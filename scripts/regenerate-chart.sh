#!/usr/bin/env bash
# Regenerates the Helm chart's generated files from the code, then the plain manifests and the chart README:
#   helm-chart/kuberay-operator/crds/*.yaml               `kuberay-operator crd`, one file per CRD
#   helm-chart/kuberay-operator/templates/_rbac_rules.tpl `kuberay-operator rbac --helm-template`
#   deploy/kuberay-operator.yaml                          `helm template` of the chart with its defaults
#   helm-chart/kuberay-operator/README.md                 scripts/chart-readme.py from values.yaml
# kuberay-operator/tests/helm_chart.rs fails when any of them is out of date.
#
# Usage: scripts/regenerate-chart.sh   (builds the operator in debug; installs helm and PyYAML on first use)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
chart="$repo_root/helm-chart/kuberay-operator"
cd "$repo_root"

cargo build --quiet -p kuberay-operator
operator="$repo_root/target/debug/kuberay-operator"
helm_bin="$(scripts/install-tools.sh)/helm"
venv_bin="$(scripts/install-kubernetes-validate.sh)"

rm -f "$chart"/crds/*.yaml
"$operator" crd | "$venv_bin/python" -c '
import sys
docs = sys.stdin.read().split("---\n")[1:]
for doc in docs:
    plural = next(l.split(":", 1)[1].strip() for l in doc.splitlines() if l.strip().startswith("plural:"))
    with open(sys.argv[1] + "/ray.io_" + plural + ".yaml", "w") as f:
        f.write("---\n" + doc)
' "$chart/crds"
"$operator" rbac --helm-template >"$chart/templates/_rbac_rules.tpl"
"$helm_bin" template kuberay-operator "$chart" --namespace default >"$repo_root/deploy/kuberay-operator.yaml"
"$venv_bin/python" scripts/chart-readme.py "$chart" >"$chart/README.md"
# The manifests subcommand embeds deploy/kuberay-operator.yaml: rebuild so it prints the new render.
cargo build --quiet -p kuberay-operator
echo "regenerate-chart.sh: regenerated the chart's CRDs, RBAC rules, README and deploy/kuberay-operator.yaml" >&2
