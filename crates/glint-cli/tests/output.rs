//! Every command that prints, with its standard output a closed pipe and `/dev/full`: reports
//! end quietly (a closed pipe) or with an error that says the disk is full; commands that
//! produce data finish it and say their report was lost. None panics. Then `glint points`:
//! its PLY, PCD and KITTI files read with outside tools.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn glint() -> Command {
    Command::new(env!("CARGO_BIN_EXE_glint"))
}

fn example(name: &str) -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", name].iter().collect()
}

fn python() -> PathBuf {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", ".deps", "venv", "bin", "python"].iter().collect();
    assert!(p.exists(), "{} is missing: run `make test`, which installs the pinned Python packages", p.display());
    p
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-output-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// How standard output is broken.
#[derive(Clone, Copy, Debug)]
enum Sink {
    /// A pipe whose reader is already gone.
    ClosedPipe,
    /// `/dev/full`: every write fails with "no space left on device".
    Full,
}

fn run_into(args: &[String], sink: Sink) -> Output {
    let mut cmd = glint();
    cmd.args(args).stderr(Stdio::piped());
    match sink {
        Sink::ClosedPipe => {
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader);
            cmd.stdout(writer);
        }
        Sink::Full => {
            cmd.stdout(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap());
        }
    }
    cmd.output().expect("glint runs")
}

fn ok(args: &[&str]) -> String {
    let o = glint().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{args:?}: {err}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A primitives scene with a recorded session of two short episodes.
struct Fixture {
    dir: PathBuf,
    manifest: String,
    session: String,
}

fn fixture(tag: &str) -> Fixture {
    let dir = temp_dir(tag);
    std::fs::copy(example("primitives.xml"), dir.join("primitives.xml")).unwrap();
    let manifest = dir.join("primitives.toml");
    std::fs::write(
        &manifest,
        "scene = \"primitives.xml\"\n[recorder]\nlidar_runner_hz = 50\n[[lidar]]\nname = \"roof\"\nattach_site = \"lidar\"\npreset = \"velodyne-vlp16\"\n",
    )
    .unwrap();
    let m = manifest.to_string_lossy().into_owned();
    let out = dir.join("sessions");
    ok(&["run", &m, "--seconds", "0.2", "--episodes", "2", "--out", out.to_str().unwrap()]);
    let session = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap().path().to_string_lossy().into_owned();
    Fixture { dir, manifest: m, session }
}

#[test]
fn reports_end_quietly_and_producers_finish_when_nobody_reads() {
    let f = fixture("sinks");
    let primitives = example("primitives.xml").to_string_lossy().into_owned();
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<String>>();
    let reports = [
        s(&["replay", &f.session]),
        s(&["bake", &f.manifest, "--status"]),
        s(&["bench", "rays", &primitives, "--pattern", "vlp16", "--repeats", "5"]),
        s(&["points", &f.session, "--out", "-"]),
    ];
    for args in &reports {
        let o = run_into(args, Sink::ClosedPipe);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{args:?} into a closed pipe: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        let o = run_into(args, Sink::Full);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?} into /dev/full: {err}");
        assert!(err.contains("no space left on device") && !err.contains("panicked"), "{args:?}: {err}");
    }
    for (n, sink) in [Sink::ClosedPipe, Sink::Full].into_iter().enumerate() {
        let out = f.dir.join(format!("produced-{n}"));
        let o = |name: &str| out.join(name).to_string_lossy().into_owned();
        let producers = [
            (s(&["run", &f.manifest, "--seconds", "0.2", "--episodes", "2", "--out", &o("run")]), o("run")),
            (s(&["scan", &f.manifest, "--out", &o("scan")]), o("scan")),
            (s(&["bake", &f.manifest]), f.dir.join("MaterialBakes/scene.lvxb").to_string_lossy().into_owned()),
            (s(&["export", &f.session, "--bake", "scene", "--out", &o("variant")]), o("variant/augmentation.json")),
        ];
        for (args, product) in &producers {
            let o = run_into(args, sink);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "{args:?} into {sink:?}: {err}");
            assert!(err.contains("standard output could not be written"), "{args:?} into {sink:?}: {err}");
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            assert!(Path::new(product).exists(), "{args:?} into {sink:?} did not produce {product}");
        }
        let run = std::fs::read_dir(out.join("run")).unwrap().next().unwrap().unwrap().path();
        let episodes = std::fs::read_to_string(run.join("meta/episodes.jsonl")).unwrap();
        assert_eq!(episodes.lines().count(), 2, "every episode ran: {episodes}");
    }
    std::fs::remove_dir_all(&f.dir).ok();
}

#[test]
fn point_clouds_open_in_outside_readers() {
    let f = fixture("points");
    let out = |name: &str| f.dir.join(name).to_string_lossy().into_owned();
    let said = ok(&["points", &f.session, "--episode", "1", "--out", &out("a.ply")]);
    let count: usize = said.split(' ').next().unwrap().parse().unwrap();
    assert!(count > 10_000, "{said}");
    ok(&["points", &f.session, "--episode", "1", "--format", "pcd", "--out", &out("a.pcd")]);
    ok(&["points", &f.session, "--episode", "1", "--format", "kitti", "--frame", "sensor", "--out", &out("a.bin")]);
    ok(&["points", &f.session, "--episode", "1", "--frame", "sensor", "--out", &out("s.ply")]);
    let script = format!(
        r##"
import numpy as np
from plyfile import PlyData
v = PlyData.read("{ply}")["vertex"]
names = [p.name for p in v.properties]
assert names == ["x", "y", "z", "timestamp", "range", "intensity", "bin", "channel", "geom_id", "echo"], names
s = PlyData.read("{sply}")["vertex"]
r = np.sqrt(s["x"].astype(float)**2 + s["y"]**2 + s["z"]**2)
assert np.allclose(r, s["range"], atol=1e-4), "sensor-frame points lie at their range"
assert len(v) == {count} and (v["echo"] == 0).all() and (v["geom_id"] >= 0).all()
k = np.fromfile("{bin}", dtype="<f4").reshape(-1, 4)
assert k.shape == ({count}, 4), k.shape
assert np.allclose(k[:, :3], np.stack([s["x"], s["y"], s["z"]], axis=1), atol=1e-6)
head = open("{pcd}", "rb").read(400).split(b"DATA binary\n")[0].decode()
fields = dict(l.split(" ", 1) for l in head.splitlines() if not l.startswith("#"))
assert fields["FIELDS"] == "x y z timestamp range intensity bin channel geom_id echo", fields
assert fields["POINTS"] == "{count}" and fields["WIDTH"] == "{count}" and fields["HEIGHT"] == "1"
size = sum(int(x) for x in fields["SIZE"].split())
assert len(open("{pcd}", "rb").read()) == len(head) + len("DATA binary\n") + size * {count}
print("ok")
"##,
        ply = out("a.ply"),
        sply = out("s.ply"),
        bin = out("a.bin"),
        pcd = out("a.pcd"),
    );
    let o = Command::new(python()).args(["-c", &script]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // Wrong input: errors that name the thing.
    for (args, want) in [
        (vec!["points", &f.session, "--episode", "9"], "has no episode 9 of sensor 'roof'"),
        (vec!["points", &f.session, "--sensor", "nose"], "records no sensor 'nose': it has 0 'roof'"),
        (vec!["points", &f.session, "--variant", "nothing"], "the variant has no file"),
    ] {
        let o = glint().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(want) && !err.contains("panicked"), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&f.dir).ok();
}

#[test]
fn resources_are_checked_before_they_are_spent() {
    let dir = temp_dir("memory");
    std::fs::copy(example("primitives.xml"), dir.join("primitives.xml")).unwrap();
    let manifest = dir.join("huge.toml");
    // 256 × 65535 beams a world: about 1.6 GB each, 6.9 TB for 4096 worlds.
    std::fs::write(
        &manifest,
        "scene = \"primitives.xml\"\n[[lidar]]\nattach_site = \"lidar\"\nchannels = 256\nazimuth_bins = 65535\n",
    )
    .unwrap();
    let out = dir.join("out");
    let o = glint()
        .args([
            "run",
            manifest.to_str().unwrap(),
            "--worlds",
            "4096",
            "--seconds",
            "0.1",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("4096 worlds need about") && err.contains("MB more (MemAvailable)") && err.contains("use at most"),
        "{err}"
    );
    assert!(!out.exists(), "nothing was started");
    let primitives = example("primitives.xml");
    let o = glint().args(["bench", "rays", primitives.to_str().unwrap(), "--pattern", "1000000000"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("at most 16777216"), "{err}");
    let o = glint().args(["run", manifest.to_str().unwrap(), "--seed", "-1"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("'-1' is not a seed: give a whole number from 0 to 18446744073709551615"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
