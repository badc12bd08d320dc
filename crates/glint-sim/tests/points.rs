//! The pyarrow + numpy block of `docs/recording.md` ("Points from any recording"), run on a
//! recording of a spinning unit, a Mid-360 and an L1 on the moving showroom robot, gives the
//! world-frame points glint's live scans held, tick by tick.

use std::path::PathBuf;
use std::process::Command;

use glint_sim::{RecordingOptions, SimOptions, Simulation};

fn root() -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "..", ".."].iter().collect()
}

/// The documented block, from the line after its marker to the end of its code fence.
fn documented_snippet() -> String {
    let doc = std::fs::read_to_string(root().join("docs/recording.md")).unwrap();
    let after = doc.split("<!-- points-snippet -->").nth(1).expect("docs/recording.md marks the points snippet");
    let code = after.split("```python\n").nth(1).unwrap();
    code.split("\n```").next().unwrap().to_string()
}

#[test]
fn the_documented_snippet_reproduces_glints_world_points() {
    let dir = std::env::temp_dir().join(format!("glint-points-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let showroom = root().join("examples/showroom");
    std::fs::copy(showroom.join("showroom.xml"), dir.join("showroom.xml")).unwrap();
    let mut text = std::fs::read_to_string(showroom.join("showroom.toml")).unwrap();
    for (name, preset) in [("mid", "livox-mid360"), ("l1", "unitree-l1")] {
        text.push_str(&format!("\n[[lidar]]\nname = \"{name}\"\nattach_site = \"lidar\"\npreset = \"{preset}\"\n"));
    }
    let manifest = dir.join("showroom.toml");
    std::fs::write(&manifest, text).unwrap();

    let mut sim = Simulation::from_manifest(&manifest, SimOptions::default()).unwrap();
    let session = sim.arm_recording(&RecordingOptions { out: Some(dir.join("sessions")), episodes: 1 }).unwrap();
    let sensors = sim.lidar_count();
    assert_eq!(sensors, 3);
    let mut expected: Vec<Vec<f64>> = vec![Vec::new(); sensors];
    let mut beams = Vec::new();
    // 0.3 s at 50 Hz: three cycles of each 10 Hz Livox pattern, the robot moving throughout.
    for _ in 0..15 {
        sim.step(None).unwrap();
        for (s, points) in expected.iter_mut().enumerate() {
            let lidar = sim.lidar(s).unwrap();
            lidar.last_tick_beams(0, &mut beams).unwrap();
            let scan = lidar.scan(0).unwrap();
            let surfaces = scan.surfaces.as_ref().expect("a recording keeps the surfaces");
            for &k in &beams {
                if scan.range[k as usize] >= 0.0 {
                    points.extend(surfaces.point[k as usize].map(f64::from));
                }
            }
        }
    }
    sim.stop_recording(glint_record::EpisodeStatus::Complete).unwrap();

    let script = format!("{}\npoints.astype('<f8').tofile(sys.argv[2])\n", documented_snippet());
    let python: PathBuf = root().join(".deps/venv/bin/python");
    assert!(python.exists(), "{} is missing: run `make test`", python.display());
    for (s, name) in ["roof", "mid", "l1"].iter().enumerate() {
        let lidar = session.join(format!("data/chunk-000/lidar-{name}-000.parquet"));
        let out = dir.join(format!("{name}.f64"));
        let o = Command::new(&python).arg("-c").arg(&script).arg(&lidar).arg(&out).output().unwrap();
        assert!(o.status.success(), "the snippet failed on {name}: {}", String::from_utf8_lossy(&o.stderr));
        let got: Vec<f64> =
            std::fs::read(&out).unwrap().chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect();
        let want = &expected[s];
        assert_eq!(got.len(), want.len(), "{name}: as many points as live hits");
        assert!(want.len() > 3 * 1000, "{name}: {} coordinates", want.len());
        let worst = got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(worst < 2e-3, "{name}: a point is {worst} m from glint's");
    }
    std::fs::remove_dir_all(&dir).ok();
}
