//! The ray core on every instruction set it can take, and on an older CPU.
//!
//! glint is built for x86-64-v2 and picks AVX2 or AVX-512 lane loops at run time
//! (`glint_core::lane_isa`, capped by `GLINT_ISA`). Here one cast of a cluttered scene (every
//! primitive type, a mesh, a floor; packets from one origin and from one origin per ray) is
//! made in child processes on each path this CPU has, and under QEMU's user-mode emulator
//! on a Nehalem (SSE4.2, no AVX: an AVX instruction outside the chosen path dies there with
//! SIGILL) and on a Haswell (AVX2, no AVX-512). Every run must give the same bits. The core
//! loads no MuJoCo, so its test binary runs on a CPU older than MuJoCo's own library needs.
//!
//! The scene and the rays are made without `sin` or `cos`: glibc's libm answers those in the
//! last bit differently on CPUs with and without FMA (it picks its code by CPU too), and the
//! core itself calls none of them.
//!
//! QEMU comes from `scripts/qemu.sh` (Debian's qemu-user-static, pinned, in `.deps/qemu`), or
//! `$GLINT_QEMU`; where it cannot be had, the emulated runs are skipped with the reason printed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use glam::{DMat3, DQuat, DVec3};
use glint_core::{Cast, GeomType, HitsMut, Mesh, Origins, Poses, RayBatch, RayCaster, RayFilter, Scene};

/// The name of the test a child process runs.
const CHILD: &str = "cast_digest_in_a_child";

/// Set in a child process: the digest test runs only there.
const CHILD_ENV: &str = "GLINT_CORE_ISA_CHILD";

/// A closed octahedron as a mesh, for the bottom-level walk.
fn octahedron() -> Mesh {
    let vert =
        vec![[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, -1.0]];
    let face = vec![[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]];
    Mesh::new("octahedron".into(), vert, face, Vec::new()).expect("a valid mesh")
}

/// A floor and 60 geoms of every kind around the origin, turned every which way, on the
/// world body; boxes are most of them, as in a room.
fn cluttered() -> (Scene, Poses) {
    let kinds = [
        GeomType::Box,
        GeomType::Sphere,
        GeomType::Box,
        GeomType::Capsule,
        GeomType::Box,
        GeomType::Cylinder,
        GeomType::Ellipsoid,
        GeomType::Mesh,
    ];
    let mut scene = Scene {
        geom_type: vec![GeomType::Plane],
        geom_size: vec![DVec3::new(0.0, 0.0, 1.0)],
        geom_dataid: vec![-1],
        body_parentid: vec![0],
        body_rootid: vec![0],
        body_weldid: vec![0],
        body_name: vec!["world".into()],
        mesh: vec![octahedron()],
        ..Scene::default()
    };
    let mut placed = vec![(DVec3::new(0.0, 0.0, -2.5), DMat3::IDENTITY)];
    // Scattered by integer steps, turned by quaternions of integer parts (normalized by a
    // square root, which IEEE rounds the same everywhere).
    let step = |k: usize, m: usize, n: usize| ((k * m) % n) as f64 / n as f64 - 0.5;
    for k in 0..60 {
        let kind = kinds[k % kinds.len()];
        scene.geom_type.push(kind);
        scene.geom_dataid.push(if kind == GeomType::Mesh { 0 } else { -1 });
        scene.geom_size.push(DVec3::new(
            0.3 + 0.1 * (k % 4) as f64,
            0.2 + 0.15 * (k % 3) as f64,
            0.25 + 0.05 * (k % 5) as f64,
        ));
        let pos = DVec3::new(10.0 * step(k, 37, 61), 10.0 * step(k, 23, 59), 3.0 * step(k, 11, 13));
        let turn = DQuat::from_xyzw((k % 5) as f64 - 2.0, (k % 7) as f64 - 3.0, (k % 3) as f64, 1.0 + (k % 4) as f64);
        placed.push((pos, DMat3::from_quat(turn.normalize())));
    }
    let n = scene.geom_type.len();
    scene.geom_group = vec![0; n];
    scene.geom_bodyid = vec![0; n];
    scene.geom_contype = vec![1; n];
    scene.geom_conaffinity = vec![1; n];
    scene.geom_matid = vec![-1; n];
    scene.geom_rgba = vec![[1.0; 4]; n];
    scene.geom_name = (0..n).map(|g| format!("g{g}")).collect();
    scene.validate().expect("a valid scene");
    let mut poses = Poses::new(&scene, 1);
    for (g, (pos, rot)) in placed.into_iter().enumerate() {
        (poses.geom_xpos[g], poses.geom_xmat[g]) = (pos, rot);
    }
    (scene, poses)
}

/// A spinning lidar's directions in cast order: 720 bins of 32 channels, each bin a packet.
/// The bins go round the circle by its rational parametrisation (four quarters of
/// `((1 - t²), 2t) / (1 + t²)`), the channels from about -22° to 22°; the lengths vary.
fn spinning() -> Vec<DVec3> {
    let mut dirs = Vec::new();
    for bin in 0..720 {
        let t = (bin % 180) as f64 / 180.0;
        let (c, s) = ((1.0 - t * t) / (1.0 + t * t), 2.0 * t / (1.0 + t * t));
        let (x, y) = match bin / 180 {
            0 => (c, s),
            1 => (-s, c),
            2 => (-c, -s),
            _ => (s, -c),
        };
        for channel in 0..32 {
            dirs.push(DVec3::new(x, y, -0.4 + 0.8 * channel as f64 / 31.0));
        }
    }
    dirs
}

/// FNV-1a over the answers' bits.
fn digest(dist: &[f64], geomid: &[i32], normal: &[DVec3]) -> u64 {
    let bytes = dist.iter().flat_map(|d| d.to_bits().to_le_bytes()).chain(geomid.iter().flat_map(|g| g.to_le_bytes()));
    let bytes = bytes.chain(normal.iter().flat_map(|n| n.to_array()).flat_map(|x| x.to_bits().to_le_bytes()));
    bytes.fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The digest of one cast of the cluttered scene from one origin (batched, packets of 32)
/// and from one origin per ray (prepared), and how many rays hit.
fn cast_digest() -> (u64, usize) {
    let (scene, poses) = cluttered();
    let caster = RayCaster::new(&scene, &poses);
    let filter = RayFilter::default();
    let dirs = spinning();
    let origin = DVec3::new(0.2, -0.1, 0.3);
    let batch = RayBatch { nray: dirs.len(), pnt: &[origin], vec: &dirs, bodyexclude: &[-1] };
    let shared = caster.rays(&scene, &poses, &batch, &filter).expect("good rays");
    // Each ray from its own origin, spread as beams folded by a mirror would be.
    let origins: Vec<DVec3> =
        (0..dirs.len()).map(|k| origin + 0.01 * DVec3::new((k % 7) as f64, (k % 5) as f64, (k % 3) as f64)).collect();
    let (mut dist, mut geomid, mut normal) =
        (vec![0.0; dirs.len()], vec![0; dirs.len()], vec![DVec3::ZERO; dirs.len()]);
    let prepared = caster.prepare(&scene, &poses, &filter).expect("poses fit");
    let cast = Cast {
        world: 0,
        origins: Origins::Each(&origins),
        dirs: &dirs,
        exclude_body: -1,
        skip_geom: -1,
        trusted: false,
    };
    prepared.cast(cast, HitsMut { dist: &mut dist, geomid: &mut geomid, normal: &mut normal }).expect("good rays");
    let hits = shared.geomid.iter().chain(&geomid).filter(|&&g| g >= 0).count();
    let both = digest(&shared.dist, &shared.geomid, &shared.normal) ^ digest(&dist, &geomid, &normal).rotate_left(1);
    (both, hits)
}

/// What a child process prints: the lane path it took and the digest of its cast.
#[test]
#[ignore = "run in child processes by the tests below"]
fn cast_digest_in_a_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let (digest, hits) = cast_digest();
    println!("isa={} digest={digest:016x} hits={hits}", glint_core::lane_isa());
}

/// One child's report.
#[derive(Debug, PartialEq)]
struct Report {
    isa: String,
    digest: String,
    hits: usize,
}

/// Runs this test binary's digest test in a child (under `wrapper`, e.g. QEMU, when given)
/// with `GLINT_ISA=cap`; its report.
fn child(wrapper: &[&str], cap: &str) -> Report {
    let exe = std::env::current_exe().expect("the test binary");
    let mut cmd = Command::new(wrapper.first().copied().unwrap_or(exe.to_str().expect("a UTF-8 path")));
    cmd.args(wrapper.iter().skip(1));
    if !wrapper.is_empty() {
        cmd.arg(&exe);
    }
    let out = cmd
        .args([CHILD, "--exact", "--ignored", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, "1")
        .env("GLINT_ISA", cap)
        .output()
        .expect("the child starts");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{wrapper:?} GLINT_ISA={cap}: the child failed ({:?}): {}\n{text}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // The harness prints the test's name on the same line first.
    let line = text.lines().find_map(|l| l.find("isa=").map(|i| &l[i..]));
    let line = line.unwrap_or_else(|| panic!("no report in:\n{text}"));
    let field = |key: &str| {
        line.split(' ').find_map(|f| f.strip_prefix(key)).unwrap_or_else(|| panic!("no {key} in {line}")).to_string()
    };
    Report { isa: field("isa="), digest: field("digest="), hits: field("hits=").parse().expect("a count") }
}

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// QEMU's x86-64 user-mode emulator: `$GLINT_QEMU`, or the pinned one `scripts/qemu.sh`
/// unpacks (once per process); the reason where there is none.
fn qemu() -> Result<PathBuf, String> {
    static QEMU: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    QEMU.get_or_init(|| {
        if !cfg!(target_arch = "x86_64") {
            return Err("the emulated CPUs are x86-64 ones".into());
        }
        if let Some(path) = std::env::var_os("GLINT_QEMU") {
            return Ok(PathBuf::from(path));
        }
        let out = Command::new("bash").arg(repo().join("scripts/qemu.sh")).output().map_err(|e| e.to_string())?;
        let last = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().to_string();
        match out.status.success() && !last.is_empty() {
            true => Ok(PathBuf::from(last)),
            false => Err(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        }
    })
    .clone()
}

#[test]
fn every_instruction_set_of_this_cpu_gives_the_same_bits() {
    let base = child(&[], "base");
    assert_eq!(base.isa, "base");
    assert!(base.hits > 20_000, "the cast meets the scene: {base:?}");
    for cap in ["avx2", "avx512"] {
        let other = child(&[], cap);
        println!("GLINT_ISA={cap}: took {}", other.isa);
        assert_eq!((&other.digest, other.hits), (&base.digest, base.hits), "{cap} against base");
    }
}

#[test]
fn runs_on_emulated_older_cpus_with_the_same_bits() {
    let qemu = match qemu() {
        Ok(q) => q,
        Err(why) => {
            println!("skipped: QEMU could not be had: {why}");
            return;
        }
    };
    let q = qemu.to_str().expect("a UTF-8 path");
    let here = child(&[], "");
    // Nehalem: SSE4.2, no AVX; Haswell: AVX2, no AVX-512 (QEMU emulates neither AVX-512).
    for (cpu, isa) in [("Nehalem", "base"), ("Haswell", "avx2")] {
        let there = child(&[q, "-cpu", cpu], "");
        assert_eq!(there.isa, isa, "the path taken on a {cpu}");
        assert_eq!(
            (&there.digest, there.hits),
            (&here.digest, here.hits),
            "{cpu} ({isa}) against this CPU ({})",
            here.isa
        );
    }
}
