//! Relinks the operator when its code layout changes (docs/benchmarks.md, "Code layout").
//!
//! scripts/build-operator links the shipped operator with scripts/link-operator, which places the functions of
//! kuberay-operator/code-order.txt first. Cargo does not know the linker reads that file (or what the script
//! does), so this script tells it: a new order or linker script rebuilds the binary. The files are watched in
//! every build, not only the shipped one: the shipped build and a plain `cargo build --release` share this build
//! script's unit, and watching only under scripts/build-operator's environment would rerun it on every switch
//! between the two.

fn main() {
    println!("cargo:rerun-if-changed=code-order.txt");
    println!("cargo:rerun-if-changed=../scripts/link-operator");
}
