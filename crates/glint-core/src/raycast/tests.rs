use glam::{DMat3, DVec3};

use super::{Cast, CastOne, HitsMut, Origins, PreparedRays, RayBatch, RayCaster, RayFilter};
use crate::primitives;
use crate::{CoreError, GeomType, Poses, Scene};

/// A checked cast in world 0 that ignores no body and passes through no geom.
fn cast<'a>(origins: Origins<'a>, dirs: &'a [DVec3]) -> Cast<'a> {
    Cast { world: 0, origins, dirs, exclude_body: -1, skip_geom: -1, trusted: false }
}

/// One ray in world 0 that ignores no body and passes through no geom.
fn one(origin: DVec3, dir: DVec3) -> CastOne {
    CastOne { world: 0, origin, dir, exclude_body: -1, skip_geom: -1 }
}

fn out<'a>(dist: &'a mut [f64], geomid: &'a mut [i32], normal: &'a mut [DVec3]) -> HitsMut<'a> {
    HitsMut { dist, geomid, normal }
}

/// One sphere of radius 1 at (0, 0, 5), on the world body.
fn sphere_scene() -> (Scene, Poses) {
    let scene = Scene {
        geom_type: vec![GeomType::Sphere],
        geom_size: vec![DVec3::new(1.0, 0.0, 0.0)],
        geom_group: vec![0],
        geom_bodyid: vec![0],
        geom_contype: vec![1],
        geom_conaffinity: vec![1],
        geom_dataid: vec![-1],
        geom_matid: vec![-1],
        geom_rgba: vec![[1.0; 4]],
        geom_name: vec!["ball".into()],
        body_parentid: vec![0],
        body_rootid: vec![0],
        body_weldid: vec![0],
        body_name: vec!["world".into()],
        ..Scene::default()
    };
    scene.validate().unwrap();
    let mut poses = Poses::new(&scene, 1);
    poses.geom_xpos[0] = DVec3::new(0.0, 0.0, 5.0);
    (scene, poses)
}

/// Rays from their own origins through a box's corners, tangent to its bounding sphere
/// (where MuJoCo's pre-test, not the box, decides), in packets of shared signs: the box
/// tests on lanes answer as single rays do.
#[test]
fn rays_grazing_box_corners_see_what_single_rays_see() {
    use rand::{Rng, SeedableRng};
    let (mut scene, mut poses) = sphere_scene();
    scene.geom_type[0] = GeomType::Box;
    scene.geom_size[0] = DVec3::new(0.25, 0.5, 0.75);
    poses.geom_xpos[0] = DVec3::ZERO;
    let caster = RayCaster::new(&scene, &poses);
    let prepared = caster.prepare(&scene, &poses, &RayFilter::default()).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(52);
    let mut sign = || if rng.gen_bool(0.5) { 1.0 } else { -1.0 };
    let corner = DVec3::new(0.25 * sign(), 0.5 * sign(), 0.75 * sign());
    let (mut origins, mut dirs) = (Vec::new(), Vec::new());
    for k in 0..4000 {
        let a = k as f64 * 0.618;
        let across = DVec3::new(a.cos(), a.sin(), (3.0 * a).cos()).cross(corner).normalize();
        // Same signs for whole runs, so they go as packets.
        let d = if across.x < 0.0 { -across } else { across };
        origins.push(corner - 2.0 * d);
        dirs.push(d);
    }
    let mut order: Vec<usize> = (0..dirs.len()).collect();
    order.sort_by_key(|&k| (dirs[k].y < 0.0, dirs[k].z < 0.0));
    let (origins, dirs): (Vec<DVec3>, Vec<DVec3>) = order.iter().map(|&k| (origins[k], dirs[k])).unzip();
    let half = scene.geom_size[0];
    let sphere_decides = match_single_rays(&prepared, half, Origins::Each(&origins), &dirs, "own origins");
    assert!(sphere_decides > 0, "no ray where the bounding sphere decides");
    // From one origin, as packets: fans tangent to the bounding sphere at the corner.
    let mut sphere_decides = 0;
    for k in 0..200 {
        let a = k as f64 * 0.618;
        let across = DVec3::new(a.cos(), a.sin(), (3.0 * a).cos()).cross(corner).normalize();
        let origin = corner + 2.0 * across;
        let side = across.cross(corner).normalize();
        let dirs: Vec<DVec3> = (0..32).map(|r| corner + side * (r as f64 - 16.0) * 1e-12 - origin).collect();
        sphere_decides += match_single_rays(&prepared, half, Origins::Shared(origin), &dirs, &format!("fan {k}"));
    }
    assert!(sphere_decides > 0, "no ray from a shared origin where the bounding sphere decides");
    // From one origin, as packets of beams (the box on all lanes at once): straight at each
    // corner, edge midpoint and face centre, and a hair to either side of each, from outside
    // and from inside the box.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(53);
    for origin in [DVec3::new(2.0, 1.5, 1.0), DVec3::new(-1.5, 0.7, -2.5), DVec3::new(0.1, -0.2, 0.3)] {
        let mut dirs = Vec::new();
        for k in 0..27 {
            let t = DVec3::new((k % 3) as f64 - 1.0, ((k / 3) % 3) as f64 - 1.0, (k / 9) as f64 - 1.0);
            for _ in 0..8 {
                let hair = DVec3::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0));
                let scale = [0.0, 1e-12, 1e-9, 1e-3][rng.gen_range(0..4)];
                dirs.push((t * scene.geom_size[0] + hair * scale - origin).normalize());
            }
        }
        dirs.sort_by_key(|d| (d.x < 0.0, d.y < 0.0, d.z < 0.0));
        match_single_rays(&prepared, half, Origins::Shared(origin), &dirs, &format!("from {origin}"));
    }
}

/// Casts `dirs` from `origins` through `prepared` and checks every answer against the same
/// ray cast alone (the geom hit, and its distance and normal to the bit; `what` names the
/// rays in a failure). Returns how many rays the box of half sizes `half` at the world
/// origin would be hit by, yet MuJoCo's bounding-sphere test turns away.
fn match_single_rays(prepared: &PreparedRays, half: DVec3, origins: Origins, dirs: &[DVec3], what: &str) -> usize {
    let n = dirs.len();
    let (mut dist, mut geomid, mut normal) = (vec![0.0; n], vec![0; n], vec![DVec3::ZERO; n]);
    prepared.cast(cast(origins, dirs), out(&mut dist, &mut geomid, &mut normal)).unwrap();
    let mut sphere_decides = 0;
    for k in 0..n {
        let origin = match origins {
            Origins::Shared(o) => o,
            Origins::Each(os) => os[k],
        };
        let one = prepared.cast_one(one(origin, dirs[k]));
        assert_eq!(geomid[k], one.map_or(-1, |h| h.geomid), "{what}, ray {k}");
        if let Some(one) = one {
            assert_eq!((dist[k], normal[k]), (one.dist, one.normal), "{what}, ray {k}");
        }
        let bare = primitives::box_local(half, origin, dirs[k]).is_some();
        sphere_decides += usize::from(bare && one.is_none());
    }
    sphere_decides
}

#[test]
fn a_bad_ray_deep_in_a_large_batch_is_named() {
    let (scene, poses) = sphere_scene();
    let caster = RayCaster::new(&scene, &poses);
    let mut dirs = vec![DVec3::Z; 10_000];
    let filter = RayFilter::default();
    let cast = |pnt: &[DVec3], vec: &[DVec3]| {
        caster.rays(&scene, &poses, &RayBatch { nray: 10_000, pnt, vec, bodyexclude: &[] }, &filter)
    };
    let hits = cast(&[DVec3::ZERO], &dirs).unwrap();
    assert!(hits.dist.iter().all(|&d| d == 4.0));
    dirs[7_777] = DVec3::new(f64::NAN, 0.0, 1.0);
    let err = cast(&[DVec3::ZERO], &dirs).unwrap_err();
    assert!(matches!(err, CoreError::BadDirection { index: 7_777, .. }), "{err}");
    dirs[7_777] = DVec3::Z;
    let mut origins = vec![DVec3::ZERO; 10_000];
    origins[9_999].x = f64::INFINITY;
    let err = cast(&origins, &dirs).unwrap_err();
    assert!(err.to_string().contains("ray 9999 starts at"), "{err}");
}

#[test]
fn packets_and_single_rays_agree() {
    let (scene, poses) = sphere_scene();
    let caster = RayCaster::new(&scene, &poses);
    // A fan of coherent rays (packets) and the same rays one by one.
    let dirs: Vec<DVec3> =
        (0..64).map(|k| DVec3::new(0.005 * (k as f64 - 32.0), 0.01 * (k % 8) as f64, 1.0).normalize()).collect();
    let batch = RayBatch { nray: dirs.len(), pnt: &[DVec3::new(0.1, 0.0, 0.0)], vec: &dirs, bodyexclude: &[] };
    let hits = caster.rays(&scene, &poses, &batch, &RayFilter::default()).unwrap();
    for (i, &d) in dirs.iter().enumerate() {
        let one = caster.ray(&scene, &poses, 0, DVec3::new(0.1, 0.0, 0.0), d, &RayFilter::default(), -1).unwrap();
        assert_eq!((hits.dist[i], hits.geomid[i]), (one.dist, one.geomid));
        assert!((hits.normal[i] - one.normal).length() < 1e-15);
    }
    assert!(hits.geomid.iter().filter(|&&g| g == 0).count() > 30);
}

#[test]
fn prepared_casts_match_batched_casts_and_name_bad_input() {
    let (scene, poses) = sphere_scene();
    let caster = RayCaster::new(&scene, &poses);
    let dirs: Vec<DVec3> =
        (0..100).map(|k| DVec3::new(0.01 * (k as f64 - 50.0), 0.02 * (k % 7) as f64, 1.0).normalize()).collect();
    let origin = DVec3::new(0.2, -0.1, 0.0);
    let filter = RayFilter::default();
    let batch = RayBatch { nray: dirs.len(), pnt: &[origin], vec: &dirs, bodyexclude: &[-1] };
    let want = caster.rays(&scene, &poses, &batch, &filter).unwrap();
    let prepared = caster.prepare(&scene, &poses, &filter).unwrap();
    let (mut dist, mut geomid, mut normal) = (vec![0.0; 100], vec![0; 100], vec![DVec3::ZERO; 100]);
    prepared.cast(cast(Origins::Shared(origin), &dirs), out(&mut dist, &mut geomid, &mut normal)).unwrap();
    assert_eq!((dist, geomid, normal), (want.dist, want.geomid.clone(), want.normal));
    assert!(want.geomid.contains(&0) && want.geomid.contains(&-1));
    // The sphere's own body excluded: nothing is hit.
    let (mut dist, mut geomid, mut normal) = (vec![0.0; 100], vec![0; 100], vec![DVec3::ZERO; 100]);
    prepared
        .cast(
            Cast { exclude_body: 0, ..cast(Origins::Shared(origin), &dirs) },
            out(&mut dist, &mut geomid, &mut normal),
        )
        .unwrap();
    assert!(geomid.iter().all(|&g| g == -1));
    // So is it when the sphere itself is skipped, in packets and one ray at a time.
    prepared
        .cast(Cast { skip_geom: 0, ..cast(Origins::Shared(origin), &dirs) }, out(&mut dist, &mut geomid, &mut normal))
        .unwrap();
    assert!(geomid.iter().all(|&g| g == -1));
    assert_eq!(prepared.cast_one(CastOne { skip_geom: 0, ..one(origin, DVec3::Z) }), None);
    assert_eq!(prepared.cast_one(one(origin, DVec3::Z)).map(|h| h.geomid), Some(0));

    let mut bad = dirs.clone();
    bad[42] = DVec3::ZERO;
    let err = prepared.cast(cast(Origins::Shared(origin), &bad), out(&mut dist, &mut geomid, &mut normal)).unwrap_err();
    assert!(matches!(err, CoreError::BadDirection { index: 42, .. }), "{err}");
    let err = prepared
        .cast(Cast { world: 1, ..cast(Origins::Shared(origin), &dirs) }, out(&mut dist, &mut geomid, &mut normal))
        .unwrap_err();
    assert!(matches!(err, CoreError::NoSuchWorld { world: 1, nworld: 1 }), "{err}");
    let err =
        prepared.cast(cast(Origins::Shared(origin), &dirs), out(&mut dist[..5], &mut geomid, &mut normal)).unwrap_err();
    assert!(err.to_string().contains("dist"), "{err}");
}

/// Primitives of every kind scattered around the origin, turned every which way, and a
/// floor plane, all on the world body.
/// Puts every geom of `scene` (types, sizes and data ids set) on the world body in group 0,
/// colliding, white, without a material, named `g<id>`; checks the scene.
fn on_world_body(scene: &mut Scene) {
    let n = scene.geom_type.len();
    scene.geom_group = vec![0; n];
    scene.geom_bodyid = vec![0; n];
    scene.geom_contype = vec![1; n];
    scene.geom_conaffinity = vec![1; n];
    scene.geom_matid = vec![-1; n];
    scene.geom_rgba = vec![[1.0; 4]; n];
    scene.geom_name = (0..n).map(|g| format!("g{g}")).collect();
    scene.validate().unwrap();
}

fn cluttered_scene() -> (Scene, Poses) {
    let kinds = [GeomType::Box, GeomType::Sphere, GeomType::Capsule, GeomType::Cylinder, GeomType::Ellipsoid];
    let mut scene = Scene {
        geom_type: vec![GeomType::Plane],
        geom_size: vec![DVec3::new(0.0, 0.0, 1.0)],
        body_parentid: vec![0],
        body_rootid: vec![0],
        body_weldid: vec![0],
        body_name: vec!["world".into()],
        ..Scene::default()
    };
    let mut placed = vec![(DVec3::new(0.0, 0.0, -3.0), DMat3::IDENTITY)];
    for k in 0..40 {
        let f = k as f64;
        scene.geom_type.push(kinds[k % kinds.len()]);
        scene.geom_size.push(DVec3::new(0.3 + 0.1 * (k % 4) as f64, 0.2 + 0.15 * (k % 3) as f64, 0.25));
        let pos = DVec3::new(6.0 * (0.7 * f).sin(), 6.0 * (1.3 * f).cos(), 2.0 * (0.37 * f).sin());
        placed.push((pos, DMat3::from_euler(glam::EulerRot::ZYX, 0.4 * f, 0.9 * f, 0.2 * f)));
    }
    scene.geom_dataid = vec![-1; scene.geom_type.len()];
    on_world_body(&mut scene);
    let mut poses = Poses::new(&scene, 1);
    for (g, (pos, rot)) in placed.into_iter().enumerate() {
        (poses.geom_xpos[g], poses.geom_xmat[g]) = (pos, rot);
    }
    (scene, poses)
}

#[test]
fn rays_each_from_its_own_origin_see_what_single_rays_see() {
    let (scene, poses) = cluttered_scene();
    let caster = RayCaster::new(&scene, &poses);
    let prepared = caster.prepare(&scene, &poses, &RayFilter::default()).unwrap();
    // Fans of coherent directions (packets), each ray from its own origin, spread as
    // beams refracted at a water surface would be (and wider).
    let mut seen = [0usize; 2];
    for fan in 0..24 {
        let (yaw, pitch) = (0.27 * fan as f64, 0.3 * ((fan % 5) as f64 - 2.0));
        let spread = 0.05 * (fan % 4) as f64;
        let (mut origins, mut dirs) = (Vec::new(), Vec::new());
        for k in 0..96 {
            let (a, b) = (yaw + 0.01 * (k % 12) as f64, pitch + 0.012 * (k / 12) as f64);
            dirs.push(DVec3::new(a.cos() * b.cos(), a.sin() * b.cos(), b.sin()));
            let wobble = DVec3::new((k % 7) as f64, (k % 5) as f64 - 2.0, (k % 3) as f64 - 1.0);
            origins.push(DVec3::new(0.3, -0.2, 0.1) + wobble * spread);
        }
        let n = dirs.len();
        let (mut dist, mut geomid, mut normal) = (vec![0.0; n], vec![0; n], vec![DVec3::ZERO; n]);
        prepared.cast(cast(Origins::Each(&origins), &dirs), out(&mut dist, &mut geomid, &mut normal)).unwrap();
        for k in 0..n {
            let one = prepared.cast_one(one(origins[k], dirs[k]));
            assert_eq!(geomid[k], one.map_or(-1, |h| h.geomid), "fan {fan} ray {k}");
            if let Some(one) = one {
                assert_eq!((dist[k], normal[k]), (one.dist, one.normal), "fan {fan} ray {k}");
            }
            seen[usize::from(geomid[k] >= 0)] += 1;
        }
    }
    assert!(seen[0] > 500 && seen[1] > 500, "hits and misses both tested: {seen:?}");

    let (mut dist, mut geomid, mut normal) = (vec![0.0; 2], vec![0; 2], vec![DVec3::ZERO; 2]);
    let dirs = [DVec3::X, DVec3::Y];
    let err = prepared.cast(cast(Origins::Each(&[DVec3::ZERO]), &dirs), out(&mut dist, &mut geomid, &mut normal));
    assert!(err.unwrap_err().to_string().contains("origins"));
    let bad = [DVec3::ZERO, DVec3::NAN];
    assert!(prepared.cast(cast(Origins::Each(&bad), &dirs), out(&mut dist, &mut geomid, &mut normal)).is_err());
}

/// A ray cast on one geom alone finds that geom's surface as the scene's cast does (to the
/// bit), whatever lies in front of it; nothing past its reach, nothing the filter leaves
/// out, nothing for a geom or world that does not exist.
#[test]
fn a_ray_on_one_geom_alone_finds_its_surface_as_the_scene_cast_does() {
    let (scene, poses) = cluttered_scene();
    let caster = RayCaster::new(&scene, &poses);
    let prepared = caster.prepare(&scene, &poses, &RayFilter::default()).unwrap();
    let origin = DVec3::new(0.3, -0.2, 0.1);
    let mut met = 0;
    for k in 0..400 {
        let (a, b) = (0.0157 * k as f64, 0.6 * ((k % 9) as f64 / 4.0 - 1.0));
        let ray = one(origin, DVec3::new(a.cos() * b.cos(), a.sin() * b.cos(), b.sin()));
        let Some(hit) = prepared.cast_one(ray) else { continue };
        let g = hit.geomid as usize;
        assert_eq!(prepared.cast_geom(ray, g, f64::INFINITY), Some(hit), "ray {k}");
        assert_eq!(prepared.cast_geom(ray, g, hit.dist * (1.0 + 1e-9)), Some(hit), "ray {k}");
        assert_eq!(prepared.cast_geom(ray, g, hit.dist * (1.0 - 1e-9)), None, "ray {k}: past its reach");
        // Behind the first surface: the geom it hides is still found alone.
        let behind = prepared.cast_one(CastOne { skip_geom: hit.geomid, ..ray });
        if let Some(behind) = behind.filter(|h| h.geomid != 0) {
            let alone = prepared.cast_geom(ray, behind.geomid as usize, f64::INFINITY);
            assert_eq!(alone.map(|h| h.geomid), Some(behind.geomid), "ray {k}");
            assert!(alone.unwrap().dist <= behind.dist, "ray {k}");
        }
        met += 1;
    }
    assert!(met > 100, "{met} rays met a geom");
    let down = one(DVec3::ZERO, DVec3::NEG_Z);
    assert_eq!(prepared.cast_geom(down, 0, f64::INFINITY).map(|h| h.dist), Some(3.0), "the plane");
    let no_static = caster.prepare(&scene, &poses, &RayFilter { flg_static: false, ..RayFilter::default() }).unwrap();
    assert_eq!(no_static.cast_geom(down, 0, f64::INFINITY), None, "a geom the filter leaves out");
    assert_eq!(prepared.cast_geom(down, scene.ngeom(), f64::INFINITY), None, "no such geom");
    assert_eq!(prepared.cast_geom(CastOne { world: 1, ..down }, 0, f64::INFINITY), None, "no such world");
}

/// The trusted casts answer good rays as the checked ones do, and bad rays (which they
/// do not look for) without panicking, in packets and one by one.
#[test]
fn trusted_casts_answer_as_checked_ones_and_survive_bad_rays() {
    let (scene, poses) = cluttered_scene();
    let caster = RayCaster::new(&scene, &poses);
    let prepared = caster.prepare(&scene, &poses, &RayFilter::default()).unwrap();
    let dirs: Vec<DVec3> = (0..200)
        .map(|k| {
            let (a, b) = (0.031 * k as f64, 0.2 * ((k % 9) as f64 - 4.0) / 4.0);
            DVec3::new(a.cos() * b.cos(), a.sin() * b.cos(), b.sin())
        })
        .collect();
    let origins: Vec<DVec3> = (0..200).map(|k| DVec3::new(0.1, -0.2, 0.05 * (k % 5) as f64)).collect();
    let n = dirs.len();
    let answers = |trusted: bool, each: bool, origins: &[DVec3], dirs: &[DVec3]| {
        let (mut dist, mut geomid, mut normal) = (vec![0.0; n], vec![0; n], vec![DVec3::ZERO; n]);
        // Shared origins pass through geom 3; rays from their own origins through none.
        let (origins, skip_geom) = if each { (Origins::Each(origins), -1) } else { (Origins::Shared(origins[0]), 3) };
        let done =
            prepared.cast(Cast { skip_geom, trusted, ..cast(origins, dirs) }, out(&mut dist, &mut geomid, &mut normal));
        done.map(|()| (dist, geomid, normal))
    };
    for each in [false, true] {
        let checked = answers(false, each, &origins, &dirs).unwrap();
        assert_eq!(answers(true, each, &origins, &dirs).unwrap(), checked);
        assert!(checked.1.iter().any(|&g| g >= 0) && checked.1.contains(&-1));
    }
    let mut bad_dirs = dirs.clone();
    let mut bad_origins = origins.clone();
    for k in (0..n).step_by(3) {
        bad_dirs[k] = [DVec3::ZERO, DVec3::NAN, DVec3::INFINITY][k / 3 % 3];
        bad_origins[k] = DVec3::new(f64::NAN, 0.0, f64::NEG_INFINITY);
    }
    for each in [false, true] {
        assert!(answers(false, each, &bad_origins, &bad_dirs).is_err());
        assert!(answers(true, each, &bad_origins, &bad_dirs).is_ok());
    }
}

/// Worlds with their own geometry (sizes, types, an empty slot, an invisible geom) answer
/// every ray as a one-world caster over a scene holding that geometry does, packets and
/// single rays alike, while worlds that agree share one set.
#[test]
fn worlds_with_their_own_shapes_see_only_their_own() {
    use std::sync::Arc;

    use crate::Shapes;
    let (scene, one_poses) = cluttered_scene();
    let nworld = 4;
    let mut poses = Poses::new(&scene, nworld);
    let n = scene.ngeom();
    for w in 0..nworld {
        poses.geom_xpos[w * n..(w + 1) * n].copy_from_slice(&one_poses.geom_xpos);
        poses.geom_xmat[w * n..(w + 1) * n].copy_from_slice(&one_poses.geom_xmat);
    }
    let base = Arc::new(Shapes::of(&scene));
    let mut bigger = Shapes::of(&scene);
    bigger.geom_size.iter_mut().skip(1).for_each(|s| *s *= 1.7);
    let mut retyped = Shapes::of(&scene);
    for g in (1..n).step_by(3) {
        retyped.geom_type[g] = GeomType::Sphere;
    }
    retyped.geom_visible[5] = false;
    let worlds = [base.clone(), Arc::new(bigger), Arc::new(retyped), Arc::new(Shapes::of(&scene))];
    let mut caster = RayCaster::new(&scene, &poses);
    caster.set_shapes(&scene, &poses, &worlds).unwrap();
    assert_eq!(caster.distinct_shapes(), 3, "worlds 0 and 3 agree");
    caster.refit(&poses);
    let dirs: Vec<DVec3> = (0..2000)
        .map(|k| {
            let (a, b) = (0.0031 * k as f64 * 7.0, 0.6 * ((k as f64) * 0.013).sin());
            DVec3::new(a.cos() * b.cos(), a.sin() * b.cos(), b.sin())
        })
        .collect();
    let origin = DVec3::new(0.2, 0.1, 0.3);
    let mut differs = 0;
    for (w, shapes) in worlds.iter().enumerate() {
        let mut alone = scene.clone();
        (alone.geom_type, alone.geom_size) = (shapes.geom_type.clone(), shapes.geom_size.clone());
        for g in 0..n {
            alone.geom_rgba[g][3] = f32::from(u8::from(shapes.geom_visible[g]));
        }
        let single = RayCaster::new(&alone, &one_poses);
        let reference = single.prepare(&alone, &one_poses, &RayFilter::default()).unwrap();
        let batched = caster.prepare(&scene, &poses, &RayFilter::default()).unwrap();
        let (mut d0, mut g0, mut n0) = (vec![0.0; dirs.len()], vec![0; dirs.len()], vec![DVec3::ZERO; dirs.len()]);
        let (mut d1, mut g1, mut n1) = (d0.clone(), g0.clone(), n0.clone());
        reference.cast(cast(Origins::Shared(origin), &dirs), out(&mut d0, &mut g0, &mut n0)).unwrap();
        let mut c = cast(Origins::Shared(origin), &dirs);
        c.world = w;
        batched.cast(c, out(&mut d1, &mut g1, &mut n1)).unwrap();
        assert_eq!((&g0, &d0), (&g1, &d1), "world {w}");
        for (i, &dir) in dirs.iter().enumerate().step_by(37) {
            let hit = batched.cast_one(CastOne { world: w, ..one(origin, dir) });
            assert_eq!(hit.map_or(-1, |h| h.geomid), g0[i], "world {w}, single ray {i}");
        }
        if w > 0 && w < 3 {
            let base_hits = caster.prepare(&scene, &poses, &RayFilter::default()).unwrap();
            let (mut d2, mut g2, mut n2) = (d0.clone(), g0.clone(), n0.clone());
            base_hits.cast(cast(Origins::Shared(origin), &dirs), out(&mut d2, &mut g2, &mut n2)).unwrap();
            differs += usize::from(d2 != d1);
        }
    }
    assert_eq!(differs, 2, "the randomized worlds see something else than world 0");
}

#[test]
fn shapes_naming_missing_meshes_or_bad_sizes_are_refused() {
    use std::sync::Arc;

    use crate::Shapes;
    let (scene, poses) = sphere_scene();
    let mut caster = RayCaster::new(&scene, &poses);
    let mut bad = Shapes::of(&scene);
    bad.geom_type[0] = GeomType::Mesh;
    bad.geom_dataid[0] = 3;
    let e = caster.set_shapes(&scene, &poses, &[Arc::new(bad)]).unwrap_err().to_string();
    assert!(e.contains("geom_dataid") && e.contains("refers to 3"), "{e}");
    let mut negative = Shapes::of(&scene);
    negative.geom_size[0].x = -1.0;
    let e = caster.set_shapes(&scene, &poses, &[Arc::new(negative)]).unwrap_err().to_string();
    assert!(e.contains("geom_size"), "{e}");
    let e = caster.set_shapes(&scene, &poses, &[]).unwrap_err().to_string();
    assert!(e.contains("one per world"), "{e}");
}

/// The sphere scene with a square skin at height `z` across the z axis, bound to the world.
fn sphere_under_skin(z: f32) -> (Scene, Poses) {
    let (mut scene, poses) = sphere_scene();
    let skin = crate::Skin {
        name: "sheet".into(),
        rgba: [1.0; 4],
        matid: -1,
        vert: vec![[-1.0, -1.0, z], [1.0, -1.0, z], [1.0, 1.0, z], [-1.0, 1.0, z]],
        face: vec![[0, 1, 2], [0, 2, 3]],
        bones: vec![crate::SkinBone {
            body: 0,
            bindpos: [0.0; 3],
            bindquat: [1.0, 0.0, 0.0, 0.0],
            vert: vec![0, 1, 2, 3],
            weight: vec![1.0; 4],
        }],
        ..crate::Skin::default()
    };
    scene.skin.push(skin);
    scene.validate().unwrap();
    (scene, poses)
}

#[test]
fn admitted_skins_are_met_before_the_geoms_behind_them() {
    let (scene, poses) = sphere_under_skin(2.0);
    let caster = RayCaster::new(&scene, &poses);
    let skins = vec![crate::SkinSurface::pose_world(&scene, &poses, 0)];
    let up = one(DVec3::ZERO, DVec3::Z);
    let plain = caster.prepare(&scene, &poses, &RayFilter::default()).unwrap();
    assert_eq!(plain.cast_one(up).map(|h| h.geomid), Some(0), "without skins the sphere is met");
    let with = caster.prepare(&scene, &poses, &RayFilter::default()).unwrap().with_skins(&skins, vec![true]);
    let hit = with.cast_one(up).unwrap();
    assert_eq!((hit.geomid, hit.dist), (1, 2.0), "the skin is geom ngeom + 0");
    assert_eq!(hit.normal, DVec3::Z);
    // Packets answer as single rays do; a ray past the sheet's edge meets nothing.
    let dirs = [DVec3::Z, DVec3::new(0.1, 0.0, 1.0), DVec3::new(0.0, 0.9, 1.0)];
    let (mut dist, mut geomid, mut normal) = (vec![0.0; 3], vec![0; 3], vec![DVec3::ZERO; 3]);
    with.cast(cast(Origins::Shared(DVec3::ZERO), &dirs), out(&mut dist, &mut geomid, &mut normal)).unwrap();
    assert_eq!(geomid, [1, 1, -1]);
    for (r, d) in dirs.iter().enumerate() {
        let single = with.cast_one(one(DVec3::ZERO, *d)).map_or((-1.0, -1), |h| (h.dist, h.geomid));
        assert_eq!(single, (dist[r], geomid[r]));
    }
    // Skipped (a continuation past it), or not admitted, it is not met.
    assert_eq!(with.cast_one(CastOne { skip_geom: 1, ..up }).map(|h| h.geomid), Some(0));
    let refused = caster.prepare(&scene, &poses, &RayFilter::default()).unwrap().with_skins(&skins, vec![false]);
    assert_eq!(refused.cast_one(up).map(|h| h.geomid), Some(0));
    // Behind the sphere, the sphere wins.
    let (scene, poses) = sphere_under_skin(8.0);
    let skins = vec![crate::SkinSurface::pose_world(&scene, &poses, 0)];
    let behind = caster.prepare(&scene, &poses, &RayFilter::default()).unwrap().with_skins(&skins, vec![true]);
    assert_eq!(behind.cast_one(up).map(|h| (h.geomid, h.dist)), Some((0, 4.0)));
}

/// A cast within a reach answers the closest hit where it is nearer than the reach and a
/// miss where it is not, in packets (shared and own origins) and one by one, planes included.
#[test]
fn casts_within_a_reach_see_only_what_lies_nearer() {
    let (scene, poses) = cluttered_scene();
    let caster = RayCaster::new(&scene, &poses);
    let prepared = caster.prepare(&scene, &poses, &RayFilter::default()).unwrap();
    let mut checked = [0usize; 2];
    for fan in 0..16 {
        let (yaw, pitch) = (0.39 * fan as f64, 0.25 * ((fan % 5) as f64 - 2.0));
        let dirs: Vec<DVec3> = (0..96)
            .map(|k| {
                let (a, b) = (yaw + 0.01 * (k % 12) as f64, pitch + 0.012 * (k / 12) as f64);
                // Lengths other than 1: distances are in units of the direction.
                DVec3::new(a.cos() * b.cos(), a.sin() * b.cos(), b.sin()) * (0.5 + (k % 3) as f64)
            })
            .collect();
        // Mixed: a single ray (a run of one) and the fan as packets, from one origin and each
        // from its own.
        let origins: Vec<DVec3> = (0..dirs.len()).map(|k| DVec3::new(0.3, -0.2, 0.1 + 0.001 * k as f64)).collect();
        for each in [false, true] {
            let o = if each { Origins::Each(&origins) } else { Origins::Shared(origins[0]) };
            let n = dirs.len();
            let (mut dist, mut geomid, mut normal) = (vec![0.0; n], vec![0; n], vec![DVec3::ZERO; n]);
            prepared.cast(cast(o, &dirs), out(&mut dist, &mut geomid, &mut normal)).unwrap();
            let reach = 2.0 + fan as f64;
            let (mut d2, mut g2, mut n2) = (vec![0.0; n], vec![0; n], vec![DVec3::ZERO; n]);
            prepared.cast_within(cast(o, &dirs), reach, out(&mut d2, &mut g2, &mut n2)).unwrap();
            for k in 0..n {
                if geomid[k] >= 0 && dist[k] < reach {
                    assert_eq!((g2[k], d2[k], n2[k]), (geomid[k], dist[k], normal[k]), "fan {fan} ray {k}");
                    checked[1] += 1;
                } else {
                    assert_eq!(g2[k], -1, "fan {fan} ray {k}: {} beyond the reach {reach}", dist[k]);
                    checked[0] += 1;
                }
            }
        }
    }
    assert!(checked[0] > 300 && checked[1] > 300, "hits and cut-off rays both tested: {checked:?}");
    let (mut dist, mut geomid, mut normal) = (vec![0.0; 1], vec![0; 1], vec![DVec3::ZERO; 1]);
    for bad in [0.0, -1.0, f64::NAN] {
        let e = prepared.cast_within(
            cast(Origins::Shared(DVec3::ZERO), &[DVec3::X]),
            bad,
            out(&mut dist, &mut geomid, &mut normal),
        );
        assert!(e.unwrap_err().to_string().contains("reach"), "{bad}");
    }
}

/// A wavy sheet of `n × n` quads (two triangles each, edges shared, so rays meet edges and
/// vertices) and a closed octahedron, as mesh geoms at two poses each, over a plane; and a
/// pyramid apart.
fn mesh_scene() -> (Scene, Poses) {
    let n = 24;
    let mut vert = Vec::new();
    for j in 0..=n {
        for i in 0..=n {
            let (x, y) = (i as f32 / n as f32 - 0.5, j as f32 / n as f32 - 0.5);
            vert.push([x, y, 0.1 * (7.0 * x).sin() * (5.0 * y).cos()]);
        }
    }
    let at = |i: u32, j: u32| j * (n + 1) + i;
    let mut face = Vec::new();
    for j in 0..n {
        for i in 0..n {
            face.push([at(i, j), at(i + 1, j), at(i + 1, j + 1)]);
            face.push([at(i, j), at(i + 1, j + 1), at(i, j + 1)]);
        }
    }
    let sheet = crate::Mesh::new("sheet".into(), vert, face, Vec::new()).unwrap();
    let octa_vert =
        vec![[0.3, 0.0, 0.0], [-0.3, 0.0, 0.0], [0.0, 0.3, 0.0], [0.0, -0.3, 0.0], [0.0, 0.0, 0.3], [0.0, 0.0, -0.3]];
    let octa_face = vec![[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]];
    let octahedron = crate::Mesh::new("octahedron".into(), octa_vert, octa_face, Vec::new()).unwrap();
    // A pyramid whose four sides start at the apex: a ray down its axis meets all four at
    // the apex at exactly the same distance (u = v = 0, det = ±2).
    let pyramid_vert =
        vec![[0.0, 0.0, 0.0], [1.0, 1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, -1.0], [1.0, -1.0, -1.0]];
    let pyramid_face = vec![[0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 1], [1, 4, 3], [1, 3, 2]];
    let pyramid = crate::Mesh::new("pyramid".into(), pyramid_vert, pyramid_face, Vec::new()).unwrap();
    let mut scene = Scene {
        geom_type: vec![
            GeomType::Plane,
            GeomType::Mesh,
            GeomType::Mesh,
            GeomType::Mesh,
            GeomType::Mesh,
            GeomType::Mesh,
        ],
        geom_size: vec![DVec3::new(0.0, 0.0, 1.0), DVec3::ONE, DVec3::ONE, DVec3::ONE, DVec3::ONE, DVec3::ONE],
        geom_dataid: vec![-1, 0, 1, 0, 1, 2],
        mesh: vec![sheet, octahedron, pyramid],
        body_parentid: vec![0],
        body_rootid: vec![0],
        body_weldid: vec![0],
        body_name: vec!["world".into()],
        ..Scene::default()
    };
    on_world_body(&mut scene);
    let mut poses = Poses::new(&scene, 1);
    let placed = [
        (DVec3::new(0.0, 0.0, -1.0), DMat3::IDENTITY),
        (DVec3::new(0.0, 0.0, 2.0), DMat3::from_euler(glam::EulerRot::ZYX, 0.3, 0.2, -0.1)),
        (DVec3::new(0.2, 0.1, 1.2), DMat3::from_euler(glam::EulerRot::ZYX, 0.7, -0.4, 0.9)),
        (DVec3::new(-0.3, 0.2, 2.6), DMat3::from_euler(glam::EulerRot::ZYX, 2.0, 0.5, 0.3)),
        (DVec3::new(0.1, -0.35, 1.6), DMat3::from_euler(glam::EulerRot::ZYX, -0.6, 1.1, 0.0)),
        (DVec3::new(5.0, 0.0, 0.0), DMat3::IDENTITY),
    ];
    for (g, (pos, rot)) in placed.into_iter().enumerate() {
        (poses.geom_xpos[g], poses.geom_xmat[g]) = (pos, rot);
    }
    (scene, poses)
}

/// Packets walk a mesh's BVH together (each node's boxes and each leaf's triangles on all
/// the rays that reach them): every ray's answer equals its own walk's to the bit, from a
/// shared origin (a camera's rays) and from each ray's own (shadow rays), through the
/// sheet's shared edges and vertices and the octahedron's front and back faces.
#[test]
fn packets_through_meshes_see_what_single_rays_see() {
    let (scene, poses) = mesh_scene();
    let caster = RayCaster::new(&scene, &poses);
    let prepared = caster.prepare(&scene, &poses, &RayFilter::default()).unwrap();
    let mut seen = [0usize; 5];
    for tile in 0..36 {
        let (u0, v0) = (-0.6 + 0.2 * (tile % 6) as f64, -0.6 + 0.2 * (tile / 6) as f64);
        // A tile of an image looking up the z axis, 8 × 8 rays; the sheet's grid lines lie
        // on some of them exactly (0.5 / 24 apart at the sheet's height).
        let dirs: Vec<DVec3> =
            (0..64).map(|k| DVec3::new(u0 + 0.025 * (k % 8) as f64, v0 + 0.025 * (k / 8) as f64, 1.0)).collect();
        let shared = DVec3::new(0.01 * (tile % 3) as f64, 0.0, 0.0);
        let wobble = |k: usize| DVec3::new(0.002 * (k % 5) as f64, -0.003 * (k % 7) as f64, 0.01 * (k % 3) as f64);
        let origins: Vec<DVec3> = (0..dirs.len()).map(|k| shared + wobble(k)).collect();
        for each in [false, true] {
            let n = dirs.len();
            let (mut dist, mut geomid, mut normal) = (vec![0.0; n], vec![0; n], vec![DVec3::ZERO; n]);
            let from = if each { Origins::Each(&origins) } else { Origins::Shared(shared) };
            prepared.cast(cast(from, &dirs), out(&mut dist, &mut geomid, &mut normal)).unwrap();
            for k in 0..n {
                let o = if each { origins[k] } else { shared };
                let single = prepared.cast_one(one(o, dirs[k]));
                assert_eq!(geomid[k], single.map_or(-1, |h| h.geomid), "tile {tile} ray {k} own origins {each}");
                if let Some(h) = single {
                    assert_eq!((dist[k].to_bits(), normal[k]), (h.dist.to_bits(), h.normal), "tile {tile} ray {k}");
                    seen[h.geomid as usize] += 1;
                }
            }
        }
    }
    assert!(seen[1..5].iter().all(|&s| s > 50), "every mesh geom met by many rays: {seen:?}");
    // Down the pyramid's axis, in a packet with rays beside it: the four sides tie at the
    // apex, and the first of them in the mesh's own order is the answer, as one by one.
    let apex_up = DVec3::new(5.0, 0.0, 3.0);
    let dirs: Vec<DVec3> = (0..8).map(|k| DVec3::new(0.01 * (k % 4) as f64, 0.01 * (k / 4) as f64, -1.0)).collect();
    let (mut dist, mut geomid, mut normal) = (vec![0.0; 8], vec![0; 8], vec![DVec3::ZERO; 8]);
    prepared.cast(cast(Origins::Shared(apex_up), &dirs), out(&mut dist, &mut geomid, &mut normal)).unwrap();
    let single = prepared.cast_one(one(apex_up, dirs[0])).unwrap();
    assert_eq!((dist[0], geomid[0], normal[0]), (3.0, 5, single.normal));
    assert_eq!(single.normal, DVec3::new(0.0, 1.0, 1.0).normalize(), "the first side, (apex, +x+y, −x+y)");
}
