//! `glint scan --material` on the showroom: the PLY holds the measured returns (noisy ranges,
//! a mirror's phantoms behind it, second echoes as extra points), the range image follows
//! `--colour-by`, and a bake of another scene is refused unless allowed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn glint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_glint")).args(args).output().expect("glint runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `glint ARGS`, which must succeed; returns its standard output.
fn ok(args: &[&str]) -> String {
    let o = glint(args);
    assert!(o.status.success(), "glint {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// The repository's pinned Python (plyfile, numpy), installed by `make test`.
fn python() -> PathBuf {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", ".deps", "venv", "bin", "python"].iter().collect();
    assert!(p.exists(), "{} is missing: run `make test`, which installs the pinned Python packages", p.display());
    p
}

/// Runs a Python script that must succeed; returns its standard output.
fn py(script: &str) -> String {
    let o = Command::new(python()).args(["-c", script]).output().expect("python runs");
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

/// A copy of the showroom in a fresh folder of its own.
fn showroom(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-material-scan-{tag}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["showroom.xml", "showroom.toml"] {
        let from: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", "showroom", f].iter().collect();
        std::fs::copy(from, dir.join(f)).unwrap();
    }
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Reads both PLYs in Python and checks what the material one must show. The mirror is the
/// panel whose face is the plane y = 4 (facing the lidar at y = 0), x in [-2, 1].
const CHECKS: &str = r#"
import sys, plyfile, numpy as np
clean = plyfile.PlyData.read(sys.argv[1])['vertex']
mat = plyfile.PlyData.read(sys.argv[2])['vertex']
names = [p.name for p in mat.properties]
assert names == ['x', 'y', 'z', 'range', 'channel', 'bin', 'geom', 'timestamp', 'intensity', 'reflectivity', 'echo'], names
assert [p.name for p in clean.properties] == names[:8]
channels = int(sys.argv[3])
beam = lambda v: v['bin'].astype(np.int64) * channels + v['channel'].astype(np.int64)
cb, mb = beam(clean), beam(mat)
# Every material point lies on its beam at its booked range from the sensor (0, 0, 1.2).
xyz = np.stack([mat['x'], mat['y'], mat['z']], 1) - np.array([0.0, 0.0, 1.2])
assert np.abs(np.linalg.norm(xyz, axis=1) - mat['range']).max() < 2e-3
# The mirror's beams: their clean points lie on its face, their phantoms behind it.
on_mirror = (np.abs(clean['y'] - 4.0) < 0.01) & (clean['x'] > -2) & (clean['x'] < 1)
mirror = np.bincount(clean['geom'][on_mirror]).argmax()
assert on_mirror.sum() > 1000
assert clean['y'][clean['geom'] == mirror].max() < 4.03, 'the panel is 2 cm thick'
folded = np.isin(mb, cb[clean['geom'] == mirror]) & (mat['echo'] == 0) & (mat['geom'] != mirror)
assert folded.sum() > 1000, folded.sum()
assert mat['y'][folded].min() > 4.0, ('a phantom in front of the mirror', mat['y'][folded].min())
# Noise: the same beam on the same geom measures another range than the clean one.
crange = dict(zip(cb, clean['range'])); cgeom = dict(zip(cb, clean['geom']))
first = np.where(mat['echo'] == 0)[0]
same = [i for i in first if cgeom[mb[i]] == mat['geom'][i]]
d = np.array([mat['range'][i] - crange[mb[i]] for i in same])
assert len(same) > 10000 and (np.abs(d) > 1e-4).mean() > 0.5 and np.abs(d).max() < 0.5, (len(same), np.abs(d).max())
# Second echoes: extra points with echo = 1, on the same beam as its first echo.
assert set(np.unique(mat['echo'])) == {0, 1}
second = np.where(mat['echo'] == 1)[0]
assert np.all(mat['intensity'][second] == -1) and np.all(mat['geom'][second] == -1)
dir_of = {mb[i]: xyz[i] / np.linalg.norm(xyz[i]) for i in first}
cos = [np.dot(xyz[i] / np.linalg.norm(xyz[i]), dir_of[mb[i]]) for i in second if mb[i] in dir_of]
assert len(cos) == len(second) and min(cos) > 0.9999, min(cos)
print(len(second))
"#;

#[test]
fn material_scan_writes_measured_returns_phantoms_behind_the_mirror_and_second_echoes() {
    let dir = showroom("ply");
    let m = dir.join("showroom.toml");
    ok(&["bake", s(&m)]);
    let (clean, mat) = (dir.join("clean"), dir.join("mat"));
    ok(&["scan", s(&m), "--size", "256", "--out", s(&clean)]);
    let text = ok(&["scan", s(&m), "--material", "--size", "256", "--out", s(&mat)]);
    let second: usize =
        text.split(" second echoes").next().unwrap().rsplit(' ').next().unwrap().parse().expect("a count");
    assert!(second > 100, "{text}");
    let (clean_ply, mat_ply) = (clean.join("roof.ply"), mat.join("roof.ply"));
    assert_ne!(std::fs::read(&clean_ply).unwrap(), std::fs::read(&mat_ply).unwrap());
    let out = py(&format!(
        "import sys\nsys.argv = ['', r'{}', r'{}', '64']\n{CHECKS}",
        clean_ply.display(),
        mat_ply.display()
    ));
    assert_eq!(out.trim(), second.to_string(), "every second echo the scan reports is a PLY point");
    // The measurement shows in the range image too.
    let range = |d: &Path| image::open(d.join("roof-range.png")).unwrap().to_rgb8();
    assert_ne!(range(&clean), range(&mat));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_range_image_follows_colour_by_for_clean_and_material_scans() {
    let dir = showroom("range");
    let m = dir.join("showroom.toml");
    ok(&["bake", s(&m)]);
    let image = |mode: &str, material: bool| {
        let out = dir.join(format!("{mode}-{material}"));
        // The same mode is drawn again below: --force replaces its files.
        let mut args = vec!["scan", s(&m), "--size", "64", "--colour-by", mode, "--out", s(&out), "--force"];
        if material {
            args.push("--material");
        }
        ok(&args);
        let img = image::open(out.join("roof-range.png")).unwrap().to_rgb8();
        assert_eq!(img.dimensions(), (1024, 64));
        img
    };
    for material in [false, true] {
        let by_range = image("range", material);
        for mode in ["height", "channel", "azimuth", "solid"] {
            assert_ne!(image(mode, material), by_range, "{mode}, material {material}");
        }
        let solid = image("solid", material);
        assert!(solid.pixels().all(|p| p.0 == [0, 0, 0] || p.0 == [0, 200, 0]), "solid is flat green");
        assert!(solid.pixels().any(|p| p.0 == [0, 200, 0]));
    }
    // A material mode draws real values with --material, flat green without.
    let intensity = image("intensity", true);
    assert!(intensity.pixels().filter(|p| p.0 != [0, 0, 0] && p.0 != [0, 200, 0]).count() > 1000);
    assert_eq!(image("intensity", false), image("solid", false));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bake_of_another_scene_is_reported_and_refused_for_material_scans() {
    let dir = showroom("mismatch");
    let m = dir.join("showroom.toml");
    ok(&["bake", s(&m)]);
    let status = glint(&["bake", s(&m), "--status"]);
    assert!(status.status.success(), "{}", stderr(&status));
    assert!(stdout(&status).contains("matches_scene = true") && stdout(&status).contains("stale = false"));

    // The hedge grows: the scene's geometry is not the one baked.
    let xml = dir.join("showroom.xml");
    let text = std::fs::read_to_string(&xml).unwrap();
    let grown =
        text.replacen(r#"size="1.5 0.3 0.7" pos="5.0 -4.9 0.7""#, r#"size="1.5 0.3 0.9" pos="5.0 -4.9 0.9""#, 1);
    assert_ne!(grown, text, "the showroom's hedge moved");
    std::fs::write(&xml, grown).unwrap();
    let status = glint(&["bake", s(&m), "--status"]);
    assert_eq!(status.status.code(), Some(1), "{}", stdout(&status));
    assert!(stdout(&status).contains("valid = true") && stdout(&status).contains("matches_scene = false"));
    let err = stderr(&status);
    assert!(err.contains("does not match the scene: it was made from another scene"), "{err}");
    assert!(err.contains("run `glint bake"), "{err}");

    let o = glint(&["scan", s(&m), "--material", "--size", "64", "--out", s(&dir.join("refused"))]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("does not match the scene") && err.contains("--allow-mismatch"), "{err}");
    assert!(!dir.join("refused").exists(), "nothing is written");
    let o = glint(&["scan", s(&m), "--material", "--allow-mismatch", "--size", "64", "--out", s(&dir.join("allowed"))]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("warning: the bake 'showroom'") && stderr(&o).contains("does not match the scene"));
    let err = glint(&["scan", s(&m), "--allow-mismatch"]);
    assert!(!err.status.success() && stderr(&err).contains("--material"), "{}", stderr(&err));

    // Baking again matches; a material edit then makes it stale, which also exits 1.
    ok(&["bake", s(&m)]);
    assert!(glint(&["bake", s(&m), "--status"]).status.success());
    let toml = std::fs::read_to_string(&m).unwrap().replacen("preset = \"vegetation\"", "preset = \"diffuse\"", 1);
    std::fs::write(&m, toml).unwrap();
    let status = glint(&["bake", s(&m), "--status"]);
    assert_eq!(status.status.code(), Some(1));
    assert!(stdout(&status).contains("matches_scene = true") && stdout(&status).contains("stale = true"));
    assert!(stderr(&status).contains("is stale: the scene's materials"), "{}", stderr(&status));
    std::fs::remove_dir_all(&dir).ok();
}
