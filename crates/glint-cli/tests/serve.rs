//! `glint serve` and `glint bench serve` from the command line: the server starts on a free
//! loopback port, says where, stops cleanly on SIGINT; its bad arguments and manifests are
//! refused with messages; the benchmark reports well-formed figures. The services themselves
//! are tested through the real Python client in tests/python/.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn glint() -> Command {
    Command::new(env!("CARGO_BIN_EXE_glint"))
}

fn example(name: &str) -> String {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", name].iter().collect();
    p.to_string_lossy().into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-serve-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A manifest over the primitives scene with a small lidar and `extra` appended.
fn manifest(dir: &std::path::Path, extra: &str) -> String {
    let path = dir.join("serve.toml");
    let text = format!(
        "scene = \"{}\"\n[[lidar]]\nattach_site = \"lidar\"\nchannels = 4\nazimuth_bins = 90\n{extra}",
        example("primitives.xml").replace('\\', "/")
    );
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn serve_listens_on_a_free_port_and_stops_on_sigint() {
    let dir = temp_dir("sigint");
    let m = manifest(&dir, "");
    let mut child = glint()
        .args(["serve", &m, "--addr", "127.0.0.1:0", "--pace", "free"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("glint serve starts");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // The listening line is the event waited for; the ceiling only guards against a hang.
    let line = rx.recv_timeout(Duration::from_secs(300)).expect("glint serve says where it listens");
    assert!(line.starts_with("glint serve: listening on 127.0.0.1:"), "{line}");
    let port: u16 = line["glint serve: listening on 127.0.0.1:".len()..].split(' ').next().unwrap().parse().unwrap();
    assert_ne!(port, 0, "the port picked is printed");
    assert!(line.contains("LidarService (all 14 RPCs)"), "{line}");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "a clean stop exits 0: {}", stderr(&out));
    assert!(stderr(&out).contains("SIGINT: stopping"), "{}", stderr(&out));
}

#[test]
fn serve_refuses_bad_manifests_and_addresses() {
    let dir = temp_dir("bad");
    let cases = [
        ("[[observation]]\nname = \"lidar_ranges\"\nbeams = 99999999999\n", "more than any sensor has"),
        ("[[observation]]\nname = \"lidar_range\"\n", "did you mean `lidar_ranges`?"),
        ("[[observation]]\nname = \"lidar_ranges\"\nbeams = 360\nsensor = 3\n", "reads lidar sensor 3"),
        ("[[observation]]\nname = \"joint_positions\"\nbeams = 3\n", "only a lidar_ranges component takes"),
        ("[[observation]]\nname = \"rangefinders\"\nsensor = 0\n", "only a lidar_ranges component takes"),
        ("[[observation]]\nname = \"rangefinder\"\n", "did you mean `rangefinders`?"),
        ("[[observation]]\nname = \"lidar_ranges\"\nbeams = 360\nmaterial = 2\n", "material = 2"),
    ];
    for (extra, expected) in cases {
        let m = manifest(&dir, extra);
        let o = glint().args(["serve", &m, "--addr", "127.0.0.1:0"]).output().unwrap();
        assert!(!o.status.success(), "{extra} should be refused");
        assert!(stderr(&o).contains(expected), "{extra}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"));
    }
    let m = manifest(&dir, "");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let o = glint().args(["serve", &m, "--addr", &addr]).output().unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains(&format!("cannot listen on {addr}")), "{}", stderr(&o));
    let o = glint().args(["serve", &m, "--tls-cert", "x.pem"]).output().unwrap();
    assert!(!o.status.success() && stderr(&o).contains("--tls-key"), "{}", stderr(&o));
}

#[test]
fn a_bad_address_says_what_is_wrong_and_the_form_expected() {
    let dir = temp_dir("addr");
    let m = manifest(&dir, "");
    let cases = [
        ("127.0.0.1:99999", "port 99999 is out of range"),
        ("127.0.0.1:65536", "port 65536 is out of range"),
        ("127.0.0.1:-1", "port '-1' is not a number"),
        ("127.0.0.1", "has no port"),
        ("localhost:50051", "use 127.0.0.1:50051"),
        ("glint.example:50051", "the host 'glint.example' is not an IP address"),
        ("::1:50051", "needs brackets: [::1]:50051"),
    ];
    for (addr, said) in cases {
        let o = glint().args(["serve", &m, "--addr", addr]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{addr} is a usage error: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(&format!("invalid value '{addr}' for '--addr <ADDR>'")) && e.contains(said), "{addr}: {e}");
        assert!(!e.contains("invalid socket address syntax"), "{addr}: {e}");
    }
    let o = glint().args(["serve", &m, "--addr", "127.0.0.1:99999"]).output().unwrap();
    assert!(stderr(&o).contains("a port from 0 to 65535"), "the form expected: {}", stderr(&o));
}

#[test]
fn an_observation_without_beams_warns_once_and_emits_nothing() {
    let dir = temp_dir("nobeams");
    let m = manifest(&dir, "[[observation]]\nname = \"lidar_ranges\"\nbeams = 0\n");
    let o = glint().args(["bench", "serve", &m, "--calls", "1", "--seconds", "0.1", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let warnings = stderr(&o).matches("has no positive `beams`, so it emits nothing").count();
    assert!(warnings >= 1, "{}", stderr(&o));
}

#[test]
fn bench_serve_reports_well_formed_figures() {
    let o = glint()
        .args(["bench", "serve", &example("showroom/showroom.toml"), "--calls", "5", "--seconds", "0.3", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["beams"], 65_536);
    assert!(v["message_bytes"].as_u64().unwrap() > 4 * 65_536 * 4, "all four arrays are in the message");
    // Well-formed figures, not a verdict on speed: tests run beside each other, where a timing
    // ratio is noise (`make bench` measures it).
    for key in [
        "round_trip_s",
        "codec_s",
        "round_trip_over_codec",
        "scans_per_s_one_client",
        "scans_per_s_eight_clients",
        "ticks_per_s_alone",
        "ticks_per_s_serving_idle",
        "serving_over_alone",
        "eight_clients_over_alone",
    ] {
        let x = v[key].as_f64().unwrap_or(f64::NAN);
        assert!(x.is_finite() && x > 0.0, "{key} = {x}");
    }
}
