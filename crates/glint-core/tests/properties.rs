//! Property tests of glint-core's geometry, without MuJoCo: analytic primitives (hits lie on
//! the surface, nudged forward they are inside and nudged back outside, normals are unit and
//! face the ray, rays from inside always hit), closed triangle meshes, and the BVH (valid after
//! build and refit, traversals equal brute force).

use glam::{DMat3, DQuat, DVec3};
use glint_core::{Aabb, Bvh, GeomType, Mesh, intersect_primitive};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig { cases: 256, max_global_rejects: 100_000, ..ProptestConfig::default() }
}

fn vec3(lo: f64, hi: f64) -> impl Strategy<Value = DVec3> {
    (lo..hi, lo..hi, lo..hi).prop_map(|(x, y, z)| DVec3::new(x, y, z))
}

fn unit_vec() -> impl Strategy<Value = DVec3> {
    vec3(-1.0, 1.0).prop_filter("not too short", |v| v.length() > 0.1).prop_map(|v| v.normalize())
}

/// A direction of random length (distances are in units of it), sometimes axis-aligned.
fn direction() -> impl Strategy<Value = DVec3> {
    prop_oneof![
        4 => (unit_vec(), 0.2..5.0).prop_map(|(u, l)| u * l),
        1 => (0usize..3, prop::bool::ANY).prop_map(|(axis, neg)| {
            let mut d = DVec3::ZERO;
            d[axis] = if neg { -1.0 } else { 1.0 };
            d
        }),
    ]
}

fn rotation() -> impl Strategy<Value = DMat3> {
    (unit_vec(), -3.2..3.2).prop_map(|(axis, angle)| DMat3::from_quat(DQuat::from_axis_angle(axis, angle)))
}

fn closed_kind() -> impl Strategy<Value = GeomType> {
    prop_oneof![
        Just(GeomType::Sphere),
        Just(GeomType::Capsule),
        Just(GeomType::Ellipsoid),
        Just(GeomType::Cylinder),
        Just(GeomType::Box),
    ]
}

/// Signed distance to the surface of a primitive in its frame (negative inside); for the
/// ellipsoid a scaled level set with the same sign and zero set.
fn level(kind: GeomType, s: DVec3, p: DVec3) -> f64 {
    match kind {
        GeomType::Plane => p.z,
        GeomType::Sphere => p.length() - s.x,
        GeomType::Capsule => (p - DVec3::new(0.0, 0.0, p.z.clamp(-s.y, s.y))).length() - s.x,
        GeomType::Ellipsoid => ((p / s).length() - 1.0) * s.min_element(),
        GeomType::Cylinder => {
            let d = glam::DVec2::new(p.truncate().length() - s.x, p.z.abs() - s.y);
            d.max_element().min(0.0) + d.max(glam::DVec2::ZERO).length()
        }
        GeomType::Box => {
            let q = p.abs() - s;
            q.max(DVec3::ZERO).length() + q.max_element().min(0.0)
        }
        _ => unreachable!(),
    }
}

/// Half-extents of the primitive's local bounds.
fn half_extent(kind: GeomType, s: DVec3) -> DVec3 {
    match kind {
        GeomType::Sphere => DVec3::splat(s.x),
        GeomType::Capsule => DVec3::new(s.x, s.x, s.x + s.y),
        GeomType::Cylinder => DVec3::new(s.x, s.x, s.y),
        _ => s,
    }
}

#[derive(Debug)]
struct Prim {
    kind: GeomType,
    size: DVec3,
    pos: DVec3,
    rot: DMat3,
}

impl Prim {
    fn local(&self, p: DVec3) -> DVec3 {
        self.rot.transpose() * (p - self.pos)
    }
    fn level(&self, p: DVec3) -> f64 {
        level(self.kind, self.size, self.local(p))
    }
    fn hit(&self, o: DVec3, d: DVec3) -> Option<(f64, DVec3)> {
        intersect_primitive(self.kind, self.size, self.pos, &self.rot, o, d)
    }
    fn radius(&self) -> f64 {
        half_extent(self.kind, self.size).length()
    }
}

fn prim(kind: impl Strategy<Value = GeomType>) -> impl Strategy<Value = Prim> {
    (kind, vec3(0.01, 2.0), vec3(-5.0, 5.0), rotation()).prop_map(|(kind, size, pos, rot)| Prim {
        kind,
        size,
        pos,
        rot,
    })
}

/// Checks a hit of a ray from outside: on the surface, unit normal facing the ray, outside
/// just before it, inside just after it (where the chord through the shape is long enough).
fn check_entry(p: &Prim, o: DVec3, d: DVec3, t: f64, n: DVec3) -> Result<(), TestCaseError> {
    let scale = p.radius() + (o - p.pos).length();
    let (dn, len) = (d.normalize(), d.length());
    let x = o + t * d;
    prop_assert!(t >= 0.0, "negative distance {t}");
    prop_assert!(p.level(x).abs() <= 1e-9 * scale, "hit {x:?} is {} off the surface", p.level(x));
    prop_assert!((n.length() - 1.0).abs() <= 1e-12, "normal {n:?} is not unit");
    prop_assert!(n.dot(dn) <= 1e-9, "normal {n:?} does not face the ray {d:?}");
    let eps = 1e-6 * scale;
    if t * len > eps {
        prop_assert!(p.level(x - eps * dn) > -1e-10 * scale, "just before the hit is inside");
    }
    // The chord: cast back from beyond the shape to find where the ray leaves.
    let far = x + 4.0 * scale * dn;
    let chord = match p.hit(far, -dn) {
        Some((t2, _)) => 4.0 * scale - t2,
        None => 0.0,
    };
    if chord > 4.0 * eps && n.dot(dn) < -1e-3 {
        prop_assert!(p.level(x + eps * dn) < 0.0, "just after the hit is outside (chord {chord})");
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Rays from outside, aimed at the bounds (or anywhere): hits are entries.
    #[test]
    fn primitive_hits_from_outside(
        p in prim(closed_kind()),
        dir in unit_vec(),
        k in 1.05..4.0f64,
        target in vec3(-1.0, 1.0),
        d in direction(),
        aim in prop::bool::weighted(0.8),
        len in 0.2..5.0f64,
    ) {
        let o = p.pos + p.rot * (k * p.radius() * dir);
        prop_assume!(p.level(o) > 0.0);
        let d = if aim {
            (p.pos + p.rot * (target * half_extent(p.kind, p.size)) - o).normalize() * len
        } else {
            d
        };
        if let Some((t, n)) = p.hit(o, d) {
            check_entry(&p, o, d, t, n)?;
        } else if aim {
            // Aimed at a point inside the shape: a miss is only possible when that point
            // is not inside (a corner of the bounds outside a round shape).
            let target = p.pos + p.rot * (target * half_extent(p.kind, p.size));
            prop_assert!(p.level(target) > -1e-9 * p.radius(), "missed a ray aimed at an inside point");
        }
    }

    /// Rays from inside (away from the surface) always hit, on the surface, leaving.
    #[test]
    fn primitive_rays_from_inside_hit(p in prim(closed_kind()), q in vec3(-0.8, 0.8), d in direction()) {
        let local = q * half_extent(p.kind, p.size);
        prop_assume!(level(p.kind, p.size, local) < -0.05 * p.size.min_element());
        let o = p.pos + p.rot * local;
        let hit = p.hit(o, d);
        prop_assert!(hit.is_some(), "a ray from inside missed");
        let (t, n) = hit.unwrap();
        let x = o + t * d;
        let scale = p.radius() + p.pos.length();
        prop_assert!(t > 0.0);
        prop_assert!(p.level(x).abs() <= 1e-9 * scale, "exit {x:?} is {} off the surface", p.level(x));
        prop_assert!((n.length() - 1.0).abs() <= 1e-12);
        prop_assert!(n.dot(d) >= -1e-9 * d.length(), "exit normal {n:?} faces back along {d:?}");
    }

    /// Planes: one-sided, finite ones bounded by their rectangle.
    #[test]
    fn plane_hits(
        half in (0.0..2.0f64, 0.0..2.0f64),
        infinite in prop::bool::ANY,
        pos in vec3(-5.0, 5.0),
        rot in rotation(),
        o_local in vec3(-3.0, 3.0),
        d in direction(),
    ) {
        let size = if infinite { DVec3::new(0.0, 0.0, 1.0) } else { DVec3::new(half.0 + 0.01, half.1 + 0.01, 0.1) };
        let (o, dw) = (pos + rot * o_local, rot * d);
        let hit = intersect_primitive(GeomType::Plane, size, pos, &rot, o, dw);
        let dl = d;
        if o_local.z < 0.0 || dl.z >= 0.0 {
            prop_assert!(hit.is_none(), "hit from behind the plane or going away from it");
        }
        if let Some((t, n)) = hit {
            let x = rot.transpose() * (o + t * dw - pos);
            prop_assert!(x.z.abs() <= 1e-9 * (1.0 + o_local.length()));
            prop_assert!(size.x <= 0.0 || x.x.abs() <= size.x + 1e-12);
            prop_assert!(size.y <= 0.0 || x.y.abs() <= size.y + 1e-12);
            prop_assert!((n - rot.z_axis).length() < 1e-12, "plane normal {n:?} is not the local +Z");
            prop_assert!(n.dot(dw) < 0.0);
        } else if o_local.z > 0.0 && dl.z < -1e-6 {
            let x = o_local + (-o_local.z / dl.z) * dl;
            let inside = |h: f64, v: f64| h <= 0.0 || v.abs() < h * (1.0 - 1e-9);
            prop_assert!(!(inside(size.x, x.x) && inside(size.y, x.y)), "missed the plane at {x:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Meshes.
// ---------------------------------------------------------------------------------------------

/// A closed mesh as vertex and face arrays (counter-clockwise seen from outside).
type MeshData = (Vec<[f32; 3]>, Vec<[u32; 3]>);

/// An icosphere of radius 1 with `levels` subdivisions (20 · 4^levels faces).
fn icosphere(levels: usize) -> MeshData {
    let t = (1.0 + 5f64.sqrt()) / 2.0;
    let mut v: Vec<DVec3> = [
        (-1.0, t, 0.0),
        (1.0, t, 0.0),
        (-1.0, -t, 0.0),
        (1.0, -t, 0.0),
        (0.0, -1.0, t),
        (0.0, 1.0, t),
        (0.0, -1.0, -t),
        (0.0, 1.0, -t),
        (t, 0.0, -1.0),
        (t, 0.0, 1.0),
        (-t, 0.0, -1.0),
        (-t, 0.0, 1.0),
    ]
    .iter()
    .map(|&(x, y, z)| DVec3::new(x, y, z).normalize())
    .collect();
    let mut f: Vec<[u32; 3]> = vec![
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    for _ in 0..levels {
        let mut cache = std::collections::HashMap::new();
        let mut mid = |a: u32, b: u32, v: &mut Vec<DVec3>| {
            *cache.entry((a.min(b), a.max(b))).or_insert_with(|| {
                v.push((v[a as usize] + v[b as usize]).normalize());
                v.len() as u32 - 1
            })
        };
        let mut next = Vec::new();
        for [a, b, c] in f {
            let (ab, bc, ca) = (mid(a, b, &mut v), mid(b, c, &mut v), mid(c, a, &mut v));
            next.extend([[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]);
        }
        f = next;
    }
    (v.iter().map(|p| p.as_vec3().to_array()).collect(), f)
}

/// An axis-aligned box mesh with half-extents `h`.
fn box_mesh(h: DVec3) -> MeshData {
    let v = (0..8)
        .map(|i| {
            let s = |bit: usize| if i & bit != 0 { 1.0 } else { -1.0 };
            [(s(1) * h.x) as f32, (s(2) * h.y) as f32, (s(4) * h.z) as f32]
        })
        .collect();
    // Corners are indexed by bits (x, y, z); each face as two counter-clockwise triangles.
    let f = vec![
        [0, 4, 6],
        [0, 6, 2], // -x
        [1, 3, 7],
        [1, 7, 5], // +x
        [0, 1, 5],
        [0, 5, 4], // -y
        [2, 6, 7],
        [2, 7, 3], // +y
        [0, 2, 3],
        [0, 3, 1], // -z
        [4, 5, 7],
        [4, 7, 6], // +z
    ];
    (v, f)
}

/// A non-convex five-pointed star prism, |z| <= 0.3, outer radius 1, inner 0.4.
fn star_mesh() -> MeshData {
    let mut v = Vec::new();
    for z in [-0.3f32, 0.3] {
        for k in 0..10 {
            let a = std::f32::consts::TAU * k as f32 / 10.0;
            let r = if k % 2 == 0 { 1.0 } else { 0.4 };
            v.push([r * a.cos(), r * a.sin(), z]);
        }
    }
    v.push([0.0, 0.0, -0.3]);
    v.push([0.0, 0.0, 0.3]);
    let mut f = Vec::new();
    for k in 0..10u32 {
        let n = (k + 1) % 10;
        f.extend([[21, 10 + k, 10 + n], [20, n, k], [k, n, 10 + n], [k, 10 + n, 10 + k]]);
    }
    (v, f)
}

fn mesh_of((v, f): MeshData) -> Mesh {
    Mesh::new("test".into(), v, f, Vec::new()).unwrap()
}

fn vertex(m: &Mesh, i: u32) -> DVec3 {
    DVec3::from(m.vert[i as usize].map(f64::from))
}

/// Ray-triangle distance and barycentric coordinates (u, v, 1 - u - v), two-sided, by
/// solving o + t d = a + u (b - a) + v (c - a) with Cramer's rule; `None` when parallel.
fn tri_hit(a: DVec3, b: DVec3, c: DVec3, o: DVec3, d: DVec3) -> Option<(f64, [f64; 3])> {
    let (e1, e2, s) = (b - a, c - a, o - a);
    let det = DMat3::from_cols(-d, e1, e2).determinant();
    if det.abs() < 1e-14 {
        return None;
    }
    let t = DMat3::from_cols(s, e1, e2).determinant() / det;
    let u = DMat3::from_cols(-d, s, e2).determinant() / det;
    let v = DMat3::from_cols(-d, e1, s).determinant() / det;
    Some((t, [u, v, 1.0 - u - v]))
}

/// Checks a mesh hit: the point lies on the reported face, the normal is unit and follows
/// the face's winding.
fn check_mesh_hit(m: &Mesh, o: DVec3, d: DVec3, t: f64, n: DVec3, face: usize) -> Result<(), TestCaseError> {
    let [a, b, c] = m.face[face].map(|i| vertex(m, i));
    let x = o + t * d;
    let wind = (b - a).cross(c - a).normalize();
    prop_assert!((n.length() - 1.0).abs() < 1e-9, "normal {n:?} is not unit");
    prop_assert!((n - wind).length() < 1e-6, "normal {n:?} is not the face's {wind:?}");
    prop_assert!((x - a).dot(wind).abs() < 1e-9 * (1.0 + o.length()), "hit {x:?} is off face {face}'s plane");
    let (_, bary) = tri_hit(a, b, c, o, d).expect("the hit face is not parallel to the ray");
    prop_assert!(bary.iter().all(|&w| w > -1e-7), "hit {x:?} is outside face {face}: {bary:?}");
    Ok(())
}

/// Brute force over all faces: (closest distance over faces hit clearly inside,
/// closest over faces hit within a rounding margin of their edges).
fn brute_force(m: &Mesh, o: DVec3, d: DVec3) -> (Option<f64>, Option<f64>) {
    let (mut robust, mut loose): (Option<f64>, Option<f64>) = (None, None);
    for f in &m.face {
        let [a, b, c] = f.map(|i| vertex(m, i));
        if let Some((t, bary)) = tri_hit(a, b, c, o, d) {
            if t < -1e-9 {
                continue;
            }
            let min = bary.iter().copied().fold(f64::INFINITY, f64::min);
            if min > 1e-7 && t > 1e-9 {
                robust = Some(robust.map_or(t, |r| r.min(t)));
            }
            if min > -1e-7 {
                loose = Some(loose.map_or(t, |r| r.min(t)));
            }
        }
    }
    (robust, loose)
}

/// A test mesh: (name, mesh, whether convex, a map from [-1, 1]^3 to points well inside).
type TestMesh = (&'static str, Mesh, bool, fn(DVec3) -> DVec3);

fn meshes() -> Vec<TestMesh> {
    vec![
        ("icosphere", mesh_of(icosphere(2)), true, |q| 0.49 * q),
        ("box", mesh_of(box_mesh(DVec3::new(0.3, 0.7, 1.1))), true, |q| 0.9 * q * DVec3::new(0.3, 0.7, 1.1)),
        ("star", mesh_of(star_mesh()), false, |q| q * DVec3::new(0.17, 0.17, 0.25)),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// Rays from inside a closed mesh always hit it, on the surface, leaving it.
    #[test]
    fn mesh_rays_from_inside_hit(which in 0usize..3, q in vec3(-1.0, 1.0), d in direction()) {
        let (name, m, convex, inside) = meshes().swap_remove(which);
        let q = inside(q);
        let hit = m.intersect_local(q, d, f64::INFINITY);
        prop_assert!(hit.is_some(), "{name}: a ray from inside at {q:?} along {d:?} missed");
        let (t, n, face) = hit.unwrap();
        prop_assert!(t > 0.0);
        check_mesh_hit(&m, q, d, t, n, face)?;
        if convex {
            prop_assert!(n.dot(d) > 0.0, "{name}: leaving through a face that faces inward");
        }
        let (robust, loose) = brute_force(&m, q, d);
        prop_assert!(loose.is_some_and(|l| t >= l - 1e-9 * t.max(1.0)), "{name}: {t} is nearer than every face");
        prop_assert!(robust.is_none_or(|r| t <= r + 1e-9 * r.max(1.0)), "{name}: {t} is farther than a face at {robust:?}");
    }

    /// Rays from outside: hits lie on the surface, and equal the nearest face by brute force;
    /// `tmax` cuts them off.
    #[test]
    fn mesh_hits_from_outside(
        which in 0usize..3,
        dir in unit_vec(),
        k in 1.5..4.0f64,
        target in vec3(-1.2, 1.2),
        d in direction(),
        aim in prop::bool::weighted(0.7),
        len in 0.2..5.0f64,
    ) {
        let (name, m, convex, _) = meshes().swap_remove(which);
        let b = m.bounds();
        let o = b.center() + k * 0.5 * (b.max - b.min).length() * dir;
        let d = if aim { (target * 0.5 * (b.max - b.min) - o).normalize() * len } else { d };
        let (robust, loose) = brute_force(&m, o, d);
        match m.intersect_local(o, d, f64::INFINITY) {
            Some((t, n, face)) => {
                check_mesh_hit(&m, o, d, t, n, face)?;
                if convex {
                    prop_assert!(n.dot(d) < 0.0, "{name}: entering through a face that faces away");
                }
                prop_assert!(loose.is_some_and(|l| t >= l - 1e-9 * t), "{name}: {t} is nearer than every face");
                prop_assert!(robust.is_none_or(|r| t <= r + 1e-9 * r), "{name}: {t} is farther than a face at {robust:?}");
                prop_assert!(m.intersect_local(o, d, t).is_some(), "{name}: tmax equal to the distance cut the hit off");
                prop_assert!(m.intersect_local(o, d, 0.999 * t).is_none(), "{name}: a hit beyond tmax");
            }
            None => prop_assert!(robust.is_none(), "{name}: missed a face hit at {robust:?}"),
        }
    }
}

#[test]
fn bad_meshes_are_errors() {
    let (v, _) = box_mesh(DVec3::ONE);
    let err = Mesh::new("empty".into(), v.clone(), Vec::new(), Vec::new()).unwrap_err();
    assert!(err.to_string().contains("'empty'") && err.to_string().contains("no faces"), "{err}");
    let err = Mesh::new("dangling".into(), v.clone(), vec![[0, 1, 8]], Vec::new()).unwrap_err();
    assert!(err.to_string().contains("'dangling'") && err.to_string().contains("face 0"), "{err}");
    let mut nan = v;
    nan[3][1] = f32::NAN;
    let err = Mesh::new("nan".into(), nan, vec![[0, 1, 3]], Vec::new()).unwrap_err();
    assert!(err.to_string().contains("'nan'"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// BVH.
// ---------------------------------------------------------------------------------------------

/// `1 / d` per component, with zeros replaced by a huge value of the same sign (as glint's
/// own traversal does).
fn inv_dir(d: DVec3) -> DVec3 {
    let inv = |x: f64| if x.abs() > 1e-300 { 1.0 / x } else { 1e300_f64.copysign(x) };
    DVec3::new(inv(d.x), inv(d.y), inv(d.z))
}

fn boxes(max: usize) -> impl Strategy<Value = Vec<Aabb>> {
    prop::collection::vec(
        (vec3(-10.0, 10.0), vec3(0.0, 1.0), prop::bool::weighted(0.05)).prop_map(|(c, h, flat)| {
            // Some boxes are flat or points.
            let h = if flat { h * DVec3::new(1.0, 0.0, 0.0) } else { h };
            Aabb::from_center_half(c, h)
        }),
        1..max,
    )
}

fn rays(n: usize) -> impl Strategy<Value = Vec<(DVec3, DVec3, f64)>> {
    prop::collection::vec(
        (vec3(-15.0, 15.0), direction(), prop_oneof![Just(f64::INFINITY), 0.0..40.0]).prop_map(|(o, d, t)| (o, d, t)),
        n,
    )
}

/// Checks closest-hit and any-hit traversals of `bvh` against brute force over `boxes`.
fn check_traversals(bvh: &Bvh, boxes: &[Aabb], rays: &[(DVec3, DVec3, f64)]) -> Result<(), TestCaseError> {
    for &(o, d, tmax) in rays {
        let inv = inv_dir(d);
        let brute = boxes.iter().filter_map(|b| b.ray_entry(o, inv, tmax)).fold(f64::INFINITY, f64::min);
        let mut visited = 0;
        let found = bvh.closest(o, inv, tmax, |p, t| {
            visited += 1;
            boxes[p as usize].ray_entry(o, inv, t)
        });
        let expected = if brute.is_finite() { brute } else { tmax };
        prop_assert_eq!(found, expected, "closest entry of ray {:?} + t {:?} (tmax {})", o, d, tmax);
        prop_assert!(visited <= boxes.len());
        let any = bvh.any(o, inv, tmax, |p| boxes[p as usize].ray_entry(o, inv, tmax).is_some());
        prop_assert_eq!(any, brute.is_finite(), "any-hit of ray {:?} + t {:?} (tmax {})", o, d, tmax);
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// A built BVH is valid, holds every primitive once, and its traversals equal brute force.
    #[test]
    fn bvh_build_matches_brute_force(boxes in boxes(200), max_leaf in 1usize..8, rays in rays(32)) {
        let bvh = Bvh::build(&boxes, max_leaf);
        prop_assert!(bvh.validate(&boxes).is_ok(), "{:?}", bvh.validate(&boxes));
        prop_assert_eq!(bvh.len(), boxes.len());
        let mut order = bvh.prim_order().to_vec();
        order.sort_unstable();
        prop_assert!(order.iter().enumerate().all(|(i, &p)| p as usize == i));
        check_traversals(&bvh, &boxes, &rays)?;
    }

    /// After the boxes move, the old tree no longer fits them; refitted it is valid again and
    /// its traversals equal brute force over the moved boxes.
    #[test]
    fn bvh_refit_matches_brute_force(
        boxes in boxes(150),
        moves in prop::collection::vec((vec3(-3.0, 3.0), vec3(0.0, 0.5)), 150),
        teleport in any::<prop::sample::Index>(),
        max_leaf in 1usize..8,
        rays in rays(32),
    ) {
        let bvh = Bvh::build(&boxes, max_leaf);
        let mut moved: Vec<Aabb> = boxes
            .iter()
            .zip(&moves)
            .map(|(b, (shift, grow))| Aabb { min: b.min + *shift - *grow, max: b.max + *shift + *grow })
            .collect();
        // One box goes far away, so some leaf certainly no longer holds it.
        let i = teleport.index(moved.len());
        moved[i] = Aabb { min: moved[i].min + DVec3::splat(1000.0), max: moved[i].max + DVec3::splat(1000.0) };
        prop_assert!(bvh.validate(&moved).is_err(), "the unrefitted tree still validates against moved boxes");
        let mut refitted = bvh.clone();
        refitted.refit(&moved);
        prop_assert!(refitted.validate(&moved).is_ok(), "{:?}", refitted.validate(&moved));
        check_traversals(&refitted, &moved, &rays)?;
        // Refitting back to the original boxes restores a valid tree for them.
        refitted.refit(&boxes);
        prop_assert!(refitted.validate(&boxes).is_ok());
        check_traversals(&refitted, &boxes, &rays)?;
    }
}

#[test]
fn empty_bvh_is_missed() {
    let bvh = Bvh::build(&[], 2);
    assert!(bvh.is_empty() && bvh.validate(&[]).is_ok());
    let t = bvh.closest(DVec3::ZERO, DVec3::ONE, 7.0, |_, _| panic!("no primitives to visit"));
    assert_eq!(t, 7.0);
    assert!(!bvh.any(DVec3::ZERO, DVec3::ONE, f64::INFINITY, |_| panic!("no primitives to visit")));
}

#[test]
fn validate_reports_a_box_outside_its_leaf() {
    let boxes: Vec<Aabb> = (0..50).map(|i| Aabb::from_center_half(DVec3::splat(i as f64), DVec3::splat(0.4))).collect();
    let bvh = Bvh::build(&boxes, 2);
    assert!(bvh.validate(&boxes).is_ok());
    let mut moved = boxes.clone();
    moved[17].max.x += 5.0;
    assert!(bvh.validate(&moved).is_err());
    assert!(bvh.validate(&boxes[..49]).is_err(), "a missing primitive must be reported");
}
