//! Points the extension at MuJoCo's library where the Rust build finds it: the checkout's
//! `.deps/mujoco/lib`, fetched once by `scripts/fetch-mujoco.sh` (run here when missing, so
//! `pip install ./crates/glint-py` works from a fresh clone). The rpath is absolute: the
//! installed module loads that library wherever site-packages is; `glint/__init__.py` says
//! what to do when it is gone.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = crate_dir.join("../..");
    let lib = root.join(".deps/mujoco/lib");
    println!("cargo:rerun-if-changed={}", lib.display());
    if !lib.join("libmujoco.so").exists() {
        let script = root.join("scripts/fetch-mujoco.sh");
        let ok = Command::new("bash").arg(&script).status().map(|s| s.success()).unwrap_or(false);
        if !ok {
            println!(
                "cargo:warning=MuJoCo's library is not in {} and {} could not fetch it: run `make deps` in the glint checkout",
                lib.display(),
                script.display()
            );
        }
    }
    let lib = lib.canonicalize().unwrap_or(lib);
    println!("cargo:rustc-link-arg-cdylib=-Wl,-rpath,{}", lib.display());
}
