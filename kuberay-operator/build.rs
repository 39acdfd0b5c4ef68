//! Relinks the shipped operator when its code layout changes (docs/benchmarks.md, "Code layout").
//!
//! scripts/build-operator links the operator with scripts/link-operator, which places the functions of
//! `KUBERAY_OPERATOR_CODE_ORDER` (kuberay-operator/code-order.txt) first. Cargo does not know the linker
//! reads that file (or what the script does), so this script tells it: a new order or linker script relinks
//! the binary. Other builds are unaffected.

fn main() {
    println!("cargo:rerun-if-env-changed=KUBERAY_OPERATOR_CODE_ORDER");
    if let Some(path) = std::env::var_os("KUBERAY_OPERATOR_CODE_ORDER").filter(|p| !p.is_empty()) {
        println!("cargo:rerun-if-changed={}", path.to_string_lossy());
        // The linker script that applies it (a change to it must relink too).
        println!("cargo:rerun-if-changed=../scripts/link-operator");
    }
}
