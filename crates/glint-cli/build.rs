//! Adds an absolute rpath to MuJoCo's library (fetched into the workspace's `.deps/`) so
//! the `glint` binary also runs when copied out of `target/` (the `$ORIGIN` rpath set in
//! `.cargo/config.toml` only works in place).

use std::path::PathBuf;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let Ok(manifest) = std::env::var("CARGO_MANIFEST_DIR") else { return };
    let lib = PathBuf::from(manifest).join("../../.deps/mujoco/lib");
    if let Ok(abs) = lib.canonicalize() {
        println!("cargo::rustc-link-arg-bins=-Wl,-rpath,{}", abs.display());
    }
}
