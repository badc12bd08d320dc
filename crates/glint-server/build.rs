//! Compiles glint's hazel.rpc `.proto` files with protox (no `protoc` needed): Rust types and
//! tonic services, and the encoded descriptor set the reflection service serves. The services
//! answer `GetLidarScan` with glint's own type, written from the loop's shared snapshot
//! (`src/scan.rs`); the plain `LidarScanResponse` is generated on its own beside them.

use std::path::PathBuf;

use prost::Message;

const PROTOS: &[&str] =
    &["common.proto", "media.proto", "mujoco.proto", "agent.proto", "lidar.proto", "camera.proto", "glint.proto"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("proto");
    for p in PROTOS {
        println!("cargo:rerun-if-changed={}", dir.join(p).display());
    }
    let fds = protox::compile(PROTOS, [&dir])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("hazel_rpc_descriptor.bin"), fds.encode_to_vec())?;
    let mut plain = fds.clone();
    plain.file.retain(|f| f.name() == "lidar.proto");
    for file in &mut plain.file {
        file.service.clear();
        file.message_type.retain(|m| m.name() == "LidarScanResponse");
        // Its comments' locations index the whole file.
        file.source_code_info = None;
    }
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .codec_path("crate::codec::ScanCodec")
        .extern_path(".hazel.rpc.LidarScanResponse", "crate::scan::ScanAnswer")
        .compile_fds(fds)?;
    let plain_dir = out.join("plain");
    std::fs::create_dir_all(&plain_dir)?;
    tonic_prost_build::configure().build_client(false).build_server(false).out_dir(plain_dir).compile_fds(plain)?;
    Ok(())
}
