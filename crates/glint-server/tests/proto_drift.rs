//! glint's `.proto` files against the ones inside the `luckyrobots` 0.5.0 wheel (installed in
//! `.deps/venv` by `make pydeps`): every message, enum and RPC glint declares must have the
//! wheel's names, field numbers, types, labels and optional presence, or the client's stubs
//! would mis-parse glint's answers.

use std::collections::HashMap;
use std::path::PathBuf;

use prost::Message;
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorSet, ServiceDescriptorProto};

/// The wheel's proto folder: `$GLINT_LUCKYROBOTS_PROTO`, or the one in `.deps/venv`.
fn wheel_proto_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("GLINT_LUCKYROBOTS_PROTO") {
        return dir.into();
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lib = root.join(".deps/venv/lib");
    let found = std::fs::read_dir(&lib).ok().and_then(|entries| {
        entries
            .filter_map(Result::ok)
            .map(|e| e.path().join("site-packages/luckyrobots/grpc/proto"))
            .find(|p| p.is_dir())
    });
    found.unwrap_or_else(|| {
        panic!(
            "the luckyrobots 0.5.0 wheel's .proto files are not in {}: run `make pydeps` (or set \
             GLINT_LUCKYROBOTS_PROTO to its luckyrobots/grpc/proto folder)",
            lib.display()
        )
    })
}

struct Declared {
    messages: HashMap<String, DescriptorProto>,
    enums: HashMap<String, EnumDescriptorProto>,
    services: HashMap<String, ServiceDescriptorProto>,
}

fn collect_message(prefix: &str, m: &DescriptorProto, out: &mut Declared) {
    let name = format!("{prefix}.{}", m.name());
    for nested in &m.nested_type {
        collect_message(&name, nested, out);
    }
    for e in &m.enum_type {
        out.enums.insert(format!("{name}.{}", e.name()), e.clone());
    }
    out.messages.insert(name, m.clone());
}

fn declared(set: &FileDescriptorSet) -> Declared {
    let mut out = Declared { messages: HashMap::new(), enums: HashMap::new(), services: HashMap::new() };
    for file in &set.file {
        let package = format!(".{}", file.package());
        for m in &file.message_type {
            collect_message(&package, m, &mut out);
        }
        for e in &file.enum_type {
            out.enums.insert(format!("{package}.{}", e.name()), e.clone());
        }
        for s in &file.service {
            out.services.insert(format!("{package}.{}", s.name()), s.clone());
        }
    }
    out
}

/// glint's hazel.rpc declarations (its own `glint.rpc` extensions are not the wheel's).
fn ours() -> Declared {
    let mut set =
        FileDescriptorSet::decode(glint_server::proto::FILE_DESCRIPTOR_SET).expect("glint's descriptor set decodes");
    let before = set.file.len();
    set.file.retain(|f| f.package() != "glint.rpc");
    assert_eq!(before - set.file.len(), 1, "glint's extensions are one file, glint.proto");
    declared(&set)
}

fn wheel() -> Declared {
    let dir = wheel_proto_dir();
    let files: Vec<String> = std::fs::read_dir(&dir)
        .expect("the wheel's proto folder reads")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".proto"))
        .collect();
    declared(&protox::compile(&files, [&dir]).expect("the wheel's .proto files compile"))
}

/// A field as the wire sees it: number, type, type name, label, oneof, proto3 optional, packed.
fn field_key(f: &prost_types::FieldDescriptorProto) -> String {
    format!(
        "{} = {} type {:?} {} label {:?} oneof {:?} optional {:?}",
        f.name(),
        f.number(),
        f.r#type(),
        f.type_name(),
        f.label(),
        f.oneof_index,
        f.proto3_optional
    )
}

#[test]
fn every_message_glint_declares_matches_the_wheel() {
    let (ours, wheel) = (ours(), wheel());
    assert!(ours.messages.len() > 30, "glint declares its messages");
    for (name, m) in &ours.messages {
        let w = wheel.messages.get(name).unwrap_or_else(|| panic!("the wheel has no message {name}"));
        let mine: Vec<String> = m.field.iter().map(field_key).collect();
        let theirs: Vec<String> = w.field.iter().map(field_key).collect();
        assert_eq!(mine, theirs, "message {name} drifted from the wheel's");
        let oneofs = |d: &DescriptorProto| d.oneof_decl.iter().map(|o| o.name().to_string()).collect::<Vec<_>>();
        assert_eq!(oneofs(m), oneofs(w), "message {name}'s oneofs drifted");
    }
}

#[test]
fn every_enum_glint_declares_matches_the_wheel() {
    let (ours, wheel) = (ours(), wheel());
    for (name, e) in &ours.enums {
        let w = wheel.enums.get(name).unwrap_or_else(|| panic!("the wheel has no enum {name}"));
        let values =
            |e: &EnumDescriptorProto| e.value.iter().map(|v| (v.name().to_string(), v.number())).collect::<Vec<_>>();
        assert_eq!(values(e), values(w), "enum {name} drifted");
    }
}

#[test]
fn every_rpc_glint_serves_is_the_wheels() {
    let (ours, wheel) = (ours(), wheel());
    for (name, s) in &ours.services {
        let w = wheel.services.get(name).unwrap_or_else(|| panic!("the wheel has no service {name}"));
        for m in &s.method {
            let theirs = w
                .method
                .iter()
                .find(|t| t.name() == m.name())
                .unwrap_or_else(|| panic!("the wheel's {name} has no RPC {}", m.name()));
            let key = |m: &prost_types::MethodDescriptorProto| {
                (m.input_type().to_string(), m.output_type().to_string(), m.client_streaming(), m.server_streaming())
            };
            assert_eq!(key(m), key(theirs), "{name}.{} drifted", m.name());
        }
    }
    // LidarService is served whole: all fourteen of the wheel's RPCs.
    let lidar = |d: &Declared| {
        let mut names: Vec<String> =
            d.services[".hazel.rpc.LidarService"].method.iter().map(|m| m.name().to_string()).collect();
        names.sort();
        names
    };
    assert_eq!(lidar(&ours), lidar(&wheel));
    assert_eq!(lidar(&ours).len(), 14);
    // CameraService: everything but StreamCamera (frames come with Step), SetCameraConfig
    // among them with the wheel's request and ack.
    let camera = &ours.services[".hazel.rpc.CameraService"];
    let names: Vec<&str> = camera.method.iter().map(|m| m.name()).collect();
    assert_eq!(names, ["ListCameras", "GetCameraConfig", "SetCameraConfig"]);
    for message in [".hazel.rpc.SetCameraConfigRequest", ".hazel.rpc.CameraConfigAck", ".hazel.rpc.CameraConfig"] {
        assert!(ours.messages.contains_key(message), "{message}");
    }
}
