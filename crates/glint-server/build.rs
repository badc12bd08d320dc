//! Compiles glint's hazel.rpc `.proto` files with protox (no `protoc` needed): Rust types and
//! tonic services, and the encoded descriptor set the reflection service serves.

use std::path::PathBuf;

use prost::Message;

const PROTOS: &[&str] = &["common.proto", "media.proto", "mujoco.proto", "agent.proto", "lidar.proto", "camera.proto"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("proto");
    for p in PROTOS {
        println!("cargo:rerun-if-changed={}", dir.join(p).display());
    }
    let fds = protox::compile(PROTOS, [&dir])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("hazel_rpc_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .codec_path("crate::codec::ScanCodec")
        .compile_fds(fds)?;
    Ok(())
}
