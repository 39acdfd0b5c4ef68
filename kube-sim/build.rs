//! Compiles the Kubernetes `.proto` files in `proto/` into one descriptor set that the protobuf codec
//! (`src/http/protobuf`) loads at run time, with a pure-Rust parser (no `protoc`). Without the `protobuf`
//! feature there is nothing to compile.

#[cfg(feature = "protobuf")]
use std::path::{Path, PathBuf};

#[cfg(feature = "protobuf")]
fn protos(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            protos(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(not(feature = "protobuf"))]
fn main() {
    // Nothing to watch: without this cargo would rerun the script after any change in the package.
    println!("cargo:rerun-if-changed=build.rs");
}

#[cfg(feature = "protobuf")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("proto");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut inputs = Vec::new();
    protos(&root, &mut inputs)?;
    inputs.sort();
    let set = protobuf_parse::Parser::new()
        .pure()
        .include(&root)
        .inputs(&inputs)
        .file_descriptor_set()?;
    let bytes = protobuf::Message::write_to_bytes(&set)?;
    std::fs::write(PathBuf::from(std::env::var("OUT_DIR")?).join("kubernetes.fds"), bytes)?;
    Ok(())
}
