//! glint against MuJoCo's `mj_ray`, ray by ray: every geom type (random rays from outside and
//! inside, and targeted edge cases), randomized mixed scenes (single rays and lidar packets),
//! the example scenes, filters, refits, multiple worlds, any-hit queries and bad input.

mod common;

use common::*;
use glam::DVec3;
use glint_core::{GeomType, RayFilter};
use rand::Rng;

// ---------------------------------------------------------------------------------------------
// 1. Per geom type.
// ---------------------------------------------------------------------------------------------

/// A non-convex five-pointed star prism, written with explicit vertices and faces
/// (counter-clockwise seen from outside).
fn star_prism() -> (String, String) {
    let mut v = Vec::new();
    let ring = |z: f64, v: &mut Vec<[f64; 3]>| {
        for k in 0..10 {
            let a = std::f64::consts::TAU * k as f64 / 10.0;
            let r = if k % 2 == 0 { 1.0 } else { 0.4 };
            v.push([r * a.cos(), r * a.sin(), z]);
        }
    };
    ring(-0.3, &mut v); // 0..10 bottom
    ring(0.3, &mut v); // 10..20 top
    v.push([0.0, 0.0, -0.3]); // 20 bottom centre
    v.push([0.0, 0.0, 0.3]); // 21 top centre
    let mut f = Vec::new();
    for k in 0..10 {
        let n = (k + 1) % 10;
        f.push([21, 10 + k, 10 + n]);
        f.push([20, n, k]);
        f.push([k, n, 10 + n]);
        f.push([k, 10 + n, 10 + k]);
    }
    let vs = v.iter().map(|p| format!("{} {} {}", p[0], p[1], p[2])).collect::<Vec<_>>().join("  ");
    let fs = f.iter().map(|t| format!("{} {} {}", t[0], t[1], t[2])).collect::<Vec<_>>().join("  ");
    (vs, fs)
}

/// Elevations in [0, 1] with three decimals, from a seed.
fn elevations(seed: u64, n: usize) -> String {
    let mut r = rng(seed);
    (0..n).map(|_| format!("{:.3}", r.gen_range(0.0..1.0))).collect::<Vec<_>>().join(" ")
}

fn assets() -> String {
    let (sv, sf) = star_prism();
    format!(
        "<mesh name='star' vertex='{sv}' face='{sf}' scale='1.3 0.7 1.1'/>
         <mesh name='hull' vertex='0 0 0  1 0 0  0 1 0  0 0 1  1 1 1  0.8 0.2 0.9'/>
         <hfield name='h5x9' nrow='5' ncol='9' size='1.2 0.8 0.4 0.15' elevation='{}'/>
         <hfield name='h9x5' nrow='9' ncol='5' size='0.8 1.2 0.4 0.15' elevation='{}'/>
         <hfield name='h8x8' nrow='8' ncol='8' size='1 1 0.5 0.2' elevation='{}'/>",
        elevations(59, 45),
        elevations(95, 45),
        elevations(88, 64)
    )
}

/// One geom on a rotated, translated body (the geom rotated and offset within it too).
fn rotated(geom: &str) -> Setup {
    setup_xml(&format!(
        "<mujoco><compiler angle='degree'/><asset>{}</asset><worldbody>
           <body pos='0.3 -0.2 0.5' euler='20 -35 50'>
             <geom {geom} pos='0.1 0.05 -0.05' euler='10 0 30'/>
           </body>
         </worldbody></mujoco>",
        assets()
    ))
}

/// One geom, unrotated, at an exactly representable position: local coordinates of rays given
/// in the geom frame survive the round trip exactly, so tangency and edge cases are exact.
fn aligned(geom: &str) -> Setup {
    setup_xml(&format!(
        "<mujoco><asset>{}</asset><worldbody>
           <body pos='0.5 -0.25 1'><geom {geom}/></body>
         </worldbody></mujoco>",
        assets()
    ))
}

/// Maps local rays of geom 0 to the world.
fn to_world(s: &Setup, rays: &[(DVec3, DVec3)]) -> Vec<(DVec3, DVec3)> {
    let (pos, rot) = s.geom_frame(0, 0);
    rays.iter().map(|&(p, v)| (pos + rot * p, rot * v)).collect()
}

fn check(s: &Setup, local_rays: &[(DVec3, DVec3)]) -> Report {
    compare(s, &to_world(s, local_rays), &RayFilter::default(), -1)
}

/// Rays as (origin, direction).
type Rays = Vec<(DVec3, DVec3)>;

/// Random rays at geom 0: from outside its bounding sphere (aimed at its bounds, at points
/// inside it, or anywhere), and from inside it in random directions.
fn random_rays(s: &Setup, seed: u64, n: usize) -> (Rays, Rays) {
    let scene = s.scene();
    let mut r = rng(seed);
    let bounds = scene
        .geom_local_bounds(0)
        .unwrap_or(glint_core::Aabb { min: DVec3::new(-3.0, -3.0, -1.0), max: DVec3::new(3.0, 3.0, 1.0) });
    let (center, radius) = (bounds.center(), 0.5 * (bounds.max - bounds.min).length());
    let pool: Vec<DVec3> = (0..500).map(|_| sample_inside(&mut r, scene, 0, 0.0)).collect();
    let outside = (0..n)
        .map(|_| {
            let o = if scene.geom_type[0] == GeomType::Plane {
                DVec3::new(r.gen_range(-3.0..3.0), r.gen_range(-3.0..3.0), r.gen_range(0.01..3.0))
            } else {
                center + radius * r.gen_range(1.02..3.0) * unit(&mut r)
            };
            let target = match r.gen_range(0..10) {
                0..5 => point_in_box(&mut r, bounds.min, bounds.max),
                5..8 => pool[r.gen_range(0..pool.len())],
                _ => o + unit(&mut r),
            };
            (o, maybe_scaled(&mut r, (target - o).normalize()))
        })
        .collect();
    let inside = (0..n)
        .map(|_| {
            let o = sample_inside(&mut r, scene, 0, 0.0);
            let d = unit(&mut r);
            (o, maybe_scaled(&mut r, d))
        })
        .collect();
    (outside, inside)
}

/// Rays that start exactly (up to rounding) on the surface: from the hit points of rays that
/// MuJoCo says hit, in random directions.
fn surface_rays(s: &Setup, seed: u64, n: usize) -> Vec<(DVec3, DVec3)> {
    use glint_mujoco::MujocoRays;
    let (outside, _) = random_rays(s, seed, 4 * n);
    let mut r = rng(seed + 1);
    let (pos, rot) = s.geom_frame(0, 0);
    let mut out = Vec::new();
    for (o, v) in to_world(s, &outside) {
        let m = s.batch.mj_ray(0, o, v, &RayFilter::default(), -1);
        if m.geomid >= 0 {
            let p = o + m.dist * v;
            out.push((rot.transpose() * (p - pos), unit(&mut r)));
            if out.len() == n {
                break;
            }
        }
    }
    out
}

/// The ≥20 000 random rays from outside and from inside, and the rays from the surface
/// (whose tolerated disagreements the caller gives).
fn random_parity(f: &mut Families, name: &str, s: &Setup, seed: u64, surface: (usize, usize, usize)) {
    let (outside, inside) = random_rays(s, seed, 20_000);
    let out = check(s, &outside);
    f.parity(&format!("{name} from outside"), &out);
    f.check(out.hits > 2_000, || format!("{name}: too few rays from outside hit ({})", out.hits));
    let ins = check(s, &inside);
    f.parity(&format!("{name} from inside"), &ins);
    if s.scene().geom_type[0] != GeomType::Plane {
        // Closed shapes: every ray from inside leaves through the surface.
        f.check(ins.hits == ins.rays, || format!("{name}: {} rays from inside missed", ins.rays - ins.hits));
    } else {
        // Planes are one-sided: rays from behind never hit.
        f.check(ins.hits == 0, || format!("{name}: {} rays from behind the plane hit", ins.hits));
    }
    let surf = check(s, &surface_rays(s, seed, 2_000));
    f.exact(&format!("{name} from the surface"), &surf, surface.0, surface.1, surface.2);
}

fn sign(r: &mut impl Rng) -> f64 {
    if r.gen_bool(0.5) { 1.0 } else { -1.0 }
}

/// Rays tangent to a sphere of radius `rad` around `c` (local), and offset from tangency by
/// relative amounts `offsets`.
fn sphere_tangents(r: &mut impl Rng, c: DVec3, rad: f64, n: usize, offsets: &[f64]) -> Vec<(DVec3, DVec3)> {
    let mut rays = Vec::new();
    for _ in 0..n {
        let nrm = unit(r);
        let t = nrm.cross(unit(r)).normalize();
        for &k in offsets {
            rays.push((c + (1.0 + k) * rad * nrm - 2.0 * rad * t, t));
        }
    }
    rays
}

#[test]
fn plane() {
    let mut f = Families::default();
    for (name, g) in
        [("infinite plane", "type='plane' size='0 0 1'"), ("finite plane", "type='plane' size='1.5 0.75 0.1'")]
    {
        random_parity(&mut f, name, &rotated(g), 1, (0, 0, 0));
        let s = aligned(g);
        random_parity(&mut f, &format!("aligned {name}"), &s, 2, (0, 0, 0));
        let mut r = rng(3);
        // Parallel to the plane (above, in and below it): lvec.z = 0 is never a hit.
        let parallel: Vec<_> = (0..2000)
            .map(|i| {
                let z = [0.5, 0.0, -0.5][i % 3];
                let d = DVec3::new(r.gen_range(-1.0..1.0), r.gen_range(-1.0..1.0), 0.0).normalize();
                (DVec3::new(r.gen_range(-2.0..2.0), r.gen_range(-2.0..2.0), z), d)
            })
            .collect();
        let rep = check(&s, &parallel);
        f.exact(&format!("{name}: parallel"), &rep, 0, 0, 0);
        f.check(rep.hits == 0, || format!("{name}: a ray parallel to the plane hit"));
        // Down onto the rectangle's border and corners (inclusive), and just outside.
        let mut border = Vec::new();
        for k in [1.0, 1.0 - f64::EPSILON, 1.0 + 2.0 * f64::EPSILON, 0.5] {
            for (x, y) in [(1.5, 0.0), (-1.5, 0.3), (0.7, 0.75), (0.2, -0.75), (1.5, 0.75), (-1.5, -0.75)] {
                border.push((DVec3::new(k * x, k * y, 1.0), DVec3::NEG_Z));
                border.push((DVec3::new(k * x, k * y, 1.0), DVec3::new(0.1, -0.2, -1.0)));
            }
        }
        let rep = check(&s, &border);
        f.exact(&format!("{name}: border"), &rep, 0, 0, 0);
        if name.starts_with("finite") {
            f.check(rep.hits > 0 && rep.hits < rep.rays, || format!("{name}: border rays all hit or all missed"));
        }
        // Starting on the plane going down (t = 0) or up (miss); directions whose z component
        // is just above or below -mjMINVAL.
        let mut on = Vec::new();
        for i in 0..500 {
            let o = DVec3::new(r.gen_range(-1.4..1.4), r.gen_range(-0.7..0.7), 0.0);
            let mut d = unit(&mut r);
            if i % 2 == 0 {
                d.z = -d.z.abs();
            }
            on.push((o, d));
        }
        for dz in [-1e-16, -9e-16, -1e-15, -1.1e-15, -2e-15, -1e-14, -1e-12] {
            on.push((DVec3::new(0.0, 0.0, 1e-15), DVec3::new(1.0, 0.0, dz)));
            on.push((DVec3::new(0.0, 0.0, 0.5), DVec3::new(0.0, 1.0, dz)));
        }
        let rep = check(&s, &on);
        f.exact(&format!("{name}: on the plane and near-parallel"), &rep, 0, 0, 0);
    }
    f.finish();
}

#[test]
fn sphere() {
    let mut f = Families::default();
    for (name, g) in [("sphere", "type='sphere' size='0.75'"), ("tiny sphere", "type='sphere' size='1e-3'")] {
        random_parity(&mut f, name, &rotated(g), 10, (0, 0, 0));
        let s = aligned(g);
        random_parity(&mut f, &format!("aligned {name}"), &s, 11, (0, 0, 0));
        let rad = s.scene().geom_size[0].x;
        let mut r = rng(12);
        // Clearly off tangency (1e-6 relative), inside and outside.
        let rays = sphere_tangents(&mut r, DVec3::ZERO, rad, 2000, &[-1e-6, 1e-6]);
        f.exact(&format!("{name}: 1e-6 from tangent"), &check(&s, &rays), 0, 0, 0);
    }
    f.finish();
}

#[test]
fn capsule() {
    let mut f = Families::default();
    for (name, g) in [
        ("capsule", "type='capsule' size='0.5 0.75'"),
        // MuJoCo rejects a zero half-length; 1e-9 is a sphere with a seam at its equator.
        ("capsule of near-zero length", "type='capsule' size='0.5 1e-9'"),
    ] {
        random_parity(&mut f, name, &rotated(g), 20, (0, 0, 0));
        let s = aligned(g);
        random_parity(&mut f, &format!("aligned {name}"), &s, 21, (0, 0, 0));
        let sz = s.scene().geom_size[0];
        let (rad, h) = (sz.x, sz.y);
        let mut r = rng(22);
        // Parallel to the axis, inside the radius, just inside it and just outside. (Exactly
        // at the radius the ray is tangent to the caps: see `tangent_families`.)
        let mut rays = Vec::new();
        for _ in 0..500 {
            let phi = r.gen_range(0.0..std::f64::consts::TAU);
            for k in [r.gen_range(0.0..1.0), 1.0 - 1e-6, 1.0 + 1e-12] {
                let (x, y) = (k * rad * phi.cos(), k * rad * phi.sin());
                rays.push((DVec3::new(x, y, -3.0), DVec3::Z));
                rays.push((DVec3::new(x, y, 3.0), DVec3::NEG_Z));
            }
        }
        f.exact(&format!("{name}: along the axis"), &check(&s, &rays), 0, 0, 0);
        // Across the seams between the round side and the caps, perpendicular to the axis.
        let mut rays = Vec::new();
        for _ in 0..1000 {
            let phi = r.gen_range(0.0..std::f64::consts::TAU);
            let d = DVec3::new(phi.cos(), phi.sin(), 0.0);
            let z = sign(&mut r) * h * [1.0, 1.0 - f64::EPSILON, 1.0 + f64::EPSILON][r.gen_range(0..3)];
            let off = DVec3::new(-phi.sin(), phi.cos(), 0.0) * r.gen_range(-0.9 * rad..0.9 * rad);
            rays.push((off - 3.0 * d + DVec3::new(0.0, 0.0, z), d));
        }
        f.exact(&format!("{name}: across the seams"), &check(&s, &rays), 0, 0, 0);
    }
    f.finish();
}

#[test]
fn ellipsoid() {
    let mut f = Families::default();
    for (name, g) in [
        ("ellipsoid", "type='ellipsoid' size='0.5 0.75 0.25'"),
        ("flat ellipsoid", "type='ellipsoid' size='0.5 0.5 1e-3'"),
    ] {
        random_parity(&mut f, name, &rotated(g), 30, (0, 0, 0));
        let s = aligned(g);
        random_parity(&mut f, &format!("aligned {name}"), &s, 31, (0, 0, 0));
        let size = s.scene().geom_size[0];
        let mut r = rng(32);
        // In the equatorial plane (through the flat ellipsoid's thin rim), and straight down
        // through points just inside the rim.
        let mut rays = Vec::new();
        for _ in 0..1000 {
            let phi = r.gen_range(0.0..std::f64::consts::TAU);
            let d = DVec3::new(phi.cos(), phi.sin(), 0.0);
            let off = DVec3::new(-phi.sin(), phi.cos(), 0.0) * r.gen_range(-0.4..0.4);
            rays.push((off - 2.0 * d, d));
            let k = 1.0 - 10f64.powf(r.gen_range(-6.0..-2.0));
            rays.push((DVec3::new(k * size.x * phi.cos(), k * size.y * phi.sin(), 1.0), DVec3::NEG_Z));
        }
        f.exact(&format!("{name}: equatorial and near the rim"), &check(&s, &rays), 0, 0, 0);
    }
    f.finish();
}

#[test]
fn cylinder() {
    let mut f = Families::default();
    for (name, g) in
        [("cylinder", "type='cylinder' size='0.5 0.75'"), ("thin cylinder", "type='cylinder' size='0.5 1e-4'")]
    {
        random_parity(&mut f, name, &rotated(g), 40, (0, 0, 0));
        let s = aligned(g);
        random_parity(&mut f, &format!("aligned {name}"), &s, 41, (0, 0, 0));
        let sz = s.scene().geom_size[0];
        let (rad, h) = (sz.x, sz.y);
        let mut r = rng(42);
        // Parallel to the axis (inside the radius, on the rim, just outside), and in the
        // planes of the caps.
        let mut rays = Vec::new();
        for _ in 0..500 {
            let phi = r.gen_range(0.0..std::f64::consts::TAU);
            for k in [r.gen_range(0.0..1.0), 1.0, 1.0 + 1e-12] {
                let (x, y) = (k * rad * phi.cos(), k * rad * phi.sin());
                rays.push((DVec3::new(x, y, -2.0), DVec3::Z));
                rays.push((DVec3::new(x, y, 2.0), DVec3::NEG_Z));
            }
            let d = DVec3::new(phi.cos(), phi.sin(), 0.0);
            let off = DVec3::new(-phi.sin(), phi.cos(), 0.0) * r.gen_range(-rad..rad);
            rays.push((off - 2.0 * d + DVec3::new(0.0, 0.0, h), d));
            rays.push((off - 2.0 * d + DVec3::new(0.0, 0.0, -h), d));
        }
        for (x, y) in [(rad, 0.0), (0.0, -rad), (-rad, 0.0)] {
            rays.push((DVec3::new(x, y, -2.0), DVec3::Z));
        }
        f.exact(&format!("{name}: along the axis and in the cap planes"), &check(&s, &rays), 0, 0, 0);
    }
    f.finish();
}

#[test]
fn box_geom() {
    let mut f = Families::default();
    for (name, g) in [("box", "type='box' size='0.25 0.5 0.75'"), ("very thin box", "type='box' size='0.5 0.25 1e-4'")]
    {
        random_parity(&mut f, name, &rotated(g), 50, (0, 0, 0));
        let s = aligned(g);
        random_parity(&mut f, &format!("aligned {name}"), &s, 51, (0, 0, 0));
        let size = s.scene().geom_size[0];
        let mut r = rng(52);
        // In the plane of a face (grazing it), in random in-plane directions.
        let mut rays = Vec::new();
        for _ in 0..1000 {
            let axis = r.gen_range(0..3);
            let mut d = unit(&mut r);
            d[axis] = 0.0;
            let d = d.normalize();
            let mut p = DVec3::ZERO;
            p[axis] = sign(&mut r) * size[axis];
            let (j, k) = ((axis + 1) % 3, (axis + 2) % 3);
            p[j] = r.gen_range(-size[j]..size[j]);
            p[k] = r.gen_range(-size[k]..size[k]);
            rays.push((p - 3.0 * d, d));
        }
        f.exact(&format!("{name}: along a face plane"), &check(&s, &rays), 0, 0, 0);
        // Parallel to faces: axis-aligned directions from outside, within and at the extent.
        let mut rays = Vec::new();
        for _ in 0..1000 {
            let axis = r.gen_range(0..3);
            let mut o = point_in_box(&mut r, -size, size);
            if r.gen_bool(0.3) {
                let j = (axis + 1) % 3;
                o[j] = sign(&mut r) * size[j];
            }
            o[axis] = 3.0 * sign(&mut r);
            let mut d = DVec3::ZERO;
            d[axis] = -o[axis].signum();
            rays.push((o, d));
        }
        f.exact(&format!("{name}: parallel to faces"), &check(&s, &rays), 0, 0, 0);
    }
    f.finish();
}

/// Rays along a box's edges and across them (entering exactly at an edge, or only touching
/// it), where MuJoCo tests all six faces with inclusive bounds and keeps the first of equal
/// distances in the order -X, +X, -Y, +Y, -Z, +Z.
#[test]
fn box_edges() {
    let mut f = Families::default();
    for (name, g) in [("box", "type='box' size='0.25 0.5 0.75'"), ("very thin box", "type='box' size='0.5 0.25 1e-4'")]
    {
        let s = aligned(g);
        let size = s.scene().geom_size[0];
        let mut r = rng(53);
        // Along an edge, and across edges (entering there, or only touching the edge).
        let mut rays = Vec::new();
        for sx in [-1.0, 1.0] {
            for sy in [-1.0, 1.0] {
                let e = DVec3::new(sx * size.x, sy * size.y, 0.0);
                rays.push((e - DVec3::new(0.0, 0.0, 2.0), DVec3::Z));
                rays.push((e + DVec3::new(0.0, 0.0, 2.0), DVec3::NEG_Z));
                rays.push((e - DVec3::new(2.0, 2.0, 0.0), DVec3::new(1.0, 1.0, 0.0)));
                rays.push((e - DVec3::new(2.0, -2.0, 0.0), DVec3::new(1.0, -1.0, 0.0)));
                let e = DVec3::new(sx * size.x, 0.0, sy * size.z);
                rays.push((e - DVec3::new(0.0, 2.0, 0.0), DVec3::Y));
            }
        }
        for _ in 0..1000 {
            let axis = r.gen_range(0..3);
            let mut e = size * DVec3::new(sign(&mut r), sign(&mut r), sign(&mut r));
            e[axis] = r.gen_range(-size[axis]..size[axis]);
            let d = unit(&mut r);
            rays.push((e - 3.0 * d, d));
        }
        f.exact(&format!("{name}: along and across edges"), &check(&s, &rays), 0, 0, 0);
    }
    f.finish();
}

/// The smallest cases of `box_edges`: a ray touching the box's (+X, -Y) edge, which MuJoCo
/// reports on the +X face; and a ray that only grazes an edge, which MuJoCo hits.
#[test]
fn box_edge_minimal() {
    let s = aligned("type='box' size='0.25 0.5 0.75'");
    let rays = [
        // MuJoCo: distance 2 on +X. glint: distance 2 on -Y.
        (DVec3::new(-1.25, -2.75, 1.0), DVec3::new(1.0, 1.0, 0.0)),
        // MuJoCo: distance 3 on +X. glint: miss.
        (
            DVec3::new(-0.7669859543480293, 1.7508004221981395, -1.0141705638740044),
            DVec3::new(0.5056619847826764, -0.7528188803678907, 0.4213901879580014),
        ),
    ];
    assert_exact("edge rays", &compare(&s, &rays, &RayFilter::default(), -1), 0, 0, 0);
}

/// Tolerated (geom, distance, normal) disagreements of one family.
type Tol = (usize, usize, usize);

/// Triangle surfaces (meshes, height fields) are where glint's ray-triangle test and MuJoCo's
/// differ in rounding: MuJoCo's `ray_triangle` projects the triangle onto a basis orthogonal
/// to the ray and solves a 2-D barycentric system, glint uses Möller-Trumbore. Both agree on
/// every random ray, but not on degenerate ones: a ray that starts on the surface (t ≈ 0, so
/// the sign of a rounding error decides), passes exactly through an edge or vertex shared by
/// several triangles (one test can let it slip through the crack, or report the same distance
/// on a neighbouring triangle with another normal), or lies in a triangle's plane. The counts
/// below are exact for the seeded rays; any change in either algorithm shows up here.
#[test]
fn mesh() {
    let mut f = Families::default();
    // (name, geom, from the surface rotated, from the surface aligned, vertices and edges,
    // in face planes)
    let cases: [(&str, &str, Tol, Tol, Tol, Tol); 2] = [
        // The star's faces are axis-aligned or vertical in the mesh frame, where both tests
        // compute the same sign for t ≈ 0; its vertex rays slip through cracks 6 times in
        // glint (which then hits the far side) and take a neighbour's normal once.
        ("scaled star mesh", "type='mesh' mesh='star'", (0, 0, 0), (0, 0, 0), (0, 6, 1), (0, 1, 0)),
        // The hull's faces are oblique, so rays from its surface round differently.
        ("hull mesh", "type='mesh' mesh='hull'", (26, 8, 0), (46, 45, 0), (9, 2, 5), (1, 0, 0)),
    ];
    for (name, g, surf_rot, surf_aligned, vertices, planes) in cases {
        random_parity(&mut f, name, &rotated(g), 60, surf_rot);
        let s = aligned(g);
        random_parity(&mut f, &format!("aligned {name}"), &s, 61, surf_aligned);
        let mesh = &s.scene().mesh[s.scene().geom_dataid[0] as usize];
        let v = |i: u32| DVec3::from(mesh.vert[i as usize].map(f64::from));
        let mut r = rng(62);
        // Through vertices and edges (shared by several triangles).
        let mut rays = Vec::new();
        for tri in &mesh.face {
            for k in 0..3 {
                let (a, b) = (v(tri[k]), v(tri[(k + 1) % 3]));
                for p in [a, 0.5 * (a + b), a + 0.25 * (b - a)] {
                    let d = unit(&mut r);
                    rays.push((p - 3.0 * d, d));
                }
            }
        }
        let (g0, d0, n0) = vertices;
        f.exact(&format!("{name}: through vertices and edges"), &check(&s, &rays), g0, d0, n0);
        // In the plane of a face, and along the mesh's local axes.
        let mut rays = Vec::new();
        for tri in &mesh.face {
            let (a, b, c) = (v(tri[0]), v(tri[1]), v(tri[2]));
            let n = (b - a).cross(c - a).normalize();
            let p = a + 0.3 * (b - a) + 0.3 * (c - a);
            let d = n.cross(unit(&mut r)).normalize();
            rays.push((p - 3.0 * d, d));
        }
        let b = mesh.bounds();
        for _ in 0..1000 {
            let axis = r.gen_range(0..3);
            let mut o = point_in_box(&mut r, b.min, b.max);
            o[axis] = 3.0 * sign(&mut r);
            let mut d = DVec3::ZERO;
            d[axis] = -o[axis].signum();
            rays.push((o, d));
        }
        let (g0, d0, n0) = planes;
        f.exact(&format!("{name}: in face planes, along axes"), &check(&s, &rays), g0, d0, n0);
    }
    f.finish();
}

/// Rays (geom frame) whose horizontal path runs exactly along a grid line of `hf` (a row or a
/// column) or along a cell's diagonal (the edge MuJoCo splits it by), descending or rising at
/// random slopes, from above the terrain or from below it.
fn grid_line_rays(hf: &glint_core::Hfield, r: &mut impl Rng, n: usize) -> Vec<(DVec3, DVec3)> {
    let [sx, sy, sz, base] = hf.size;
    let (dx, dy) = (2.0 * sx / (hf.ncol - 1) as f64, 2.0 * sy / (hf.nrow - 1) as f64);
    (0..n)
        .map(|_| {
            let slope = r.gen_range(-1.5..1.5);
            let z = if slope < 0.0 { sz + r.gen_range(0.0..0.5) } else { -base + r.gen_range(-0.5..0.5 * sz) };
            let (col, row) = (r.gen_range(0..hf.ncol), r.gen_range(0..hf.nrow));
            let (x, y) = (col as f64 * dx - sx, row as f64 * dy - sy);
            let (o, h) = match r.gen_range(0..3) {
                // Along a column line x = const, or a row line y = const, from outside the grid.
                0 => {
                    let s = sign(r);
                    (DVec3::new(x, -s * (sy + 0.5), z), s * DVec3::Y)
                }
                1 => {
                    let s = sign(r);
                    (DVec3::new(-s * (sx + 0.5), y, z), s * DVec3::X)
                }
                // From grid vertex (col, row) along the cells' split diagonal.
                _ => (DVec3::new(x, y, z), sign(r) * DVec3::new(dx, dy, 0.0)),
            };
            (o, (h + DVec3::new(0.0, 0.0, slope)).normalize())
        })
        .collect()
}

/// Height fields, ray for ray equal to `mj_ray` with no tolerance: glint tests their
/// triangles with MuJoCo's own `ray_triangle` in its arithmetic, places the base and top boxes
/// as `mj_rayHfield` does, and gives equal distances to the triangle MuJoCo's loop meets
/// first. The degenerate rays are all here: from the surface (the sign of a rounding error
/// decides), vertical through grid vertices, along grid lines and cell diagonals (shared
/// edges, where a ray may slip through or land on either triangle), and in the planes of the
/// side walls.
#[test]
fn hfield() {
    let mut f = Families::default();
    for (name, g) in [
        ("5x9 height field", "type='hfield' hfield='h5x9'"),
        ("9x5 height field", "type='hfield' hfield='h9x5'"),
        ("8x8 height field", "type='hfield' hfield='h8x8'"),
    ] {
        random_parity(&mut f, name, &rotated(g), 70, (0, 0, 0));
        let s = aligned(g);
        random_parity(&mut f, &format!("aligned {name}"), &s, 71, (0, 0, 0));
        let hf = &s.scene().hfield[s.scene().geom_dataid[0] as usize];
        let [sx, sy, sz, base] = hf.size;
        let (dx, dy) = (2.0 * sx / (hf.ncol - 1) as f64, 2.0 * sy / (hf.nrow - 1) as f64);
        let mut r = rng(72);
        // Vertical rays through grid vertices, along grid lines, on cell diagonals.
        let mut rays = Vec::new();
        for row in 0..hf.nrow {
            for col in 0..hf.ncol {
                let (x, y) = (col as f64 * dx - sx, row as f64 * dy - sy);
                let u = r.gen_range(0.0..1.0);
                for (x, y) in [(x, y), (x + u * dx, y), (x, y + u * dy), (x + u * dx, y + u * dy)] {
                    if x.abs() <= sx && y.abs() <= sy {
                        rays.push((DVec3::new(x, y, 2.0), DVec3::NEG_Z));
                        rays.push((DVec3::new(x, y, -2.0), DVec3::Z));
                    }
                }
            }
        }
        f.exact(&format!("{name}: vertical through the grid"), &check(&s, &rays), 0, 0, 0);
        // Slanted rays exactly along grid lines and cell diagonals (in their vertical planes),
        // in the aligned geom and in the rotated one.
        let along = grid_line_rays(hf, &mut r, 3000);
        f.exact(&format!("{name}: along grid lines"), &check(&s, &along), 0, 0, 0);
        f.exact(&format!("{name}: along grid lines, rotated"), &check(&rotated(g), &along), 0, 0, 0);
        // Horizontal rays (parallel to the base) at random heights, and at the top (z = 0)
        // and bottom of the base box.
        let horizontal = |r: &mut rand_chacha::ChaCha8Rng, z: f64| {
            let phi = r.gen_range(0.0..std::f64::consts::TAU);
            let d = DVec3::new(phi.cos(), phi.sin(), 0.0);
            (DVec3::new(r.gen_range(-sx..sx), r.gen_range(-sy..sy), z) - 3.0 * d, d)
        };
        let rays: Vec<_> = (0..2000)
            .map(|_| {
                let z = r.gen_range(-base..sz);
                horizontal(&mut r, z)
            })
            .collect();
        f.exact(&format!("{name}: horizontal"), &check(&s, &rays), 0, 0, 0);
        let rays: Vec<_> = (0..2000).map(|i| horizontal(&mut r, if i % 2 == 0 { 0.0 } else { -base })).collect();
        f.exact(&format!("{name}: horizontal at the base's faces"), &check(&s, &rays), 0, 0, 0);
        // In the planes of the side walls, along them.
        let rays: Vec<_> = (0..2000)
            .map(|_| {
                let z = r.gen_range(-base..sz);
                if r.gen_bool(0.5) {
                    (DVec3::new(sign(&mut r) * sx, -3.0, z), DVec3::Y)
                } else {
                    (DVec3::new(-3.0, sign(&mut r) * sy, z), DVec3::X)
                }
            })
            .collect();
        f.exact(&format!("{name}: along the side walls"), &check(&s, &rays), 0, 0, 0);
        // Into the side walls from outside, below the surface profile and above it.
        let mut rays = Vec::new();
        for _ in 0..2000 {
            let (o, d) = match r.gen_range(0..4) {
                0 => (DVec3::new(-3.0, r.gen_range(-sy..sy), r.gen_range(-base..sz)), DVec3::X),
                1 => (DVec3::new(3.0, r.gen_range(-sy..sy), r.gen_range(-base..sz)), DVec3::NEG_X),
                2 => (DVec3::new(r.gen_range(-sx..sx), -3.0, r.gen_range(-base..sz)), DVec3::Y),
                _ => (DVec3::new(r.gen_range(-sx..sx), 3.0, r.gen_range(-base..sz)), DVec3::NEG_Y),
            };
            let tilt = DVec3::new(r.gen_range(-0.2..0.2), r.gen_range(-0.2..0.2), r.gen_range(-0.2..0.2));
            rays.push((o, (d + tilt).normalize()));
        }
        f.exact(&format!("{name}: into the side walls"), &check(&s, &rays), 0, 0, 0);
    }
    f.finish();
}

/// Rays tangent to the curved surfaces, where the discriminant of the quadratic is zero up to
/// rounding. MuJoCo 3.17's `ray_quad` rejects only a negative discriminant (a ray at exactly
/// zero hits, one at -8.9e-16 misses), unlike older MuJoCo's `det < mjMINVAL`; a glint that
/// kept the old threshold would miss tangent rays MuJoCo hits.
fn tangent_families(f: &mut Families) {
    for (name, g) in [("sphere", "type='sphere' size='0.75'"), ("tiny sphere", "type='sphere' size='1e-3'")] {
        let s = aligned(g);
        let rad = s.scene().geom_size[0].x;
        let mut r = rng(12);
        let rays = sphere_tangents(&mut r, DVec3::ZERO, rad, 2000, &[0.0]);
        f.exact(&format!("{name}: tangent"), &check(&s, &rays), 0, 0, 0);
        let rays = sphere_tangents(&mut r, DVec3::ZERO, rad, 1000, &[-1e-12, -1e-15, 1e-15, 1e-12]);
        f.exact(&format!("{name}: within 1e-12 of tangent"), &check(&s, &rays), 0, 0, 0);
        let mut rays = Vec::new();
        for (n, t) in [(DVec3::X, DVec3::Y), (DVec3::Y, DVec3::Z), (DVec3::Z, DVec3::X), (DVec3::NEG_X, DVec3::NEG_Z)] {
            for o in [rad * n - 2.0 * rad * t, rad * n, rad * n + 2.0 * rad * t] {
                rays.push((o, t));
            }
        }
        f.exact(&format!("{name}: axis tangents (discriminant exactly 0)"), &check(&s, &rays), 0, 0, 0);
    }
    for (name, g) in
        [("capsule", "type='capsule' size='0.5 0.75'"), ("short capsule", "type='capsule' size='0.5 1e-9'")]
    {
        let s = aligned(g);
        let sz = s.scene().geom_size[0];
        let (rad, h) = (sz.x, sz.y);
        let mut r = rng(22);
        let mut rays = Vec::new();
        for z in [0.0, 0.3 * h, h, -h, 0.999 * h] {
            rays.push((DVec3::new(rad, -2.0, z), DVec3::Y));
            rays.push((DVec3::new(-rad, 2.0, z), DVec3::NEG_Y));
            rays.push((DVec3::new(-2.0, rad, z), DVec3::X));
        }
        // Parallel to the axis at exactly the radius: tangent to both caps.
        for _ in 0..500 {
            let phi = r.gen_range(0.0..std::f64::consts::TAU);
            rays.push((DVec3::new(rad * phi.cos(), rad * phi.sin(), -3.0), DVec3::Z));
        }
        rays.extend(sphere_tangents(&mut r, DVec3::new(0.0, 0.0, h), rad, 500, &[0.0]));
        rays.extend(sphere_tangents(&mut r, DVec3::new(0.0, 0.0, -h), rad, 500, &[0.0]));
        for _ in 0..1000 {
            let phi = r.gen_range(0.0..std::f64::consts::TAU);
            let p = DVec3::new(rad * phi.cos(), rad * phi.sin(), r.gen_range(-h..=h));
            let t = DVec3::new(-phi.sin(), phi.cos(), r.gen_range(-0.5..0.5)).normalize();
            rays.push((p - 2.0 * t, t));
        }
        f.exact(&format!("{name}: tangent"), &check(&s, &rays), 0, 0, 0);
    }
    for (name, g) in [
        ("ellipsoid", "type='ellipsoid' size='0.5 0.75 0.25'"),
        ("flat ellipsoid", "type='ellipsoid' size='0.5 0.5 1e-3'"),
    ] {
        let s = aligned(g);
        let size = s.scene().geom_size[0];
        let mut r = rng(32);
        let rays: Vec<_> = (0..2000)
            .map(|_| {
                // Tangent to the unit sphere in scaled coordinates.
                let n = unit(&mut r);
                let t = (size * n.cross(unit(&mut r))).normalize();
                (size * n - 2.0 * t, t)
            })
            .collect();
        f.exact(&format!("{name}: tangent"), &check(&s, &rays), 0, 0, 0);
    }
    for (name, g) in
        [("cylinder", "type='cylinder' size='0.5 0.75'"), ("thin cylinder", "type='cylinder' size='0.5 1e-4'")]
    {
        let s = aligned(g);
        let sz = s.scene().geom_size[0];
        let (rad, h) = (sz.x, sz.y);
        let mut r = rng(42);
        let mut rays = Vec::new();
        for z in [0.0, 0.5 * h, h, -h] {
            rays.push((DVec3::new(rad, -2.0, z), DVec3::Y));
            rays.push((DVec3::new(-2.0, -rad, z), DVec3::X));
        }
        for _ in 0..2000 {
            let phi = r.gen_range(0.0..std::f64::consts::TAU);
            let p = DVec3::new(rad * phi.cos(), rad * phi.sin(), r.gen_range(-h..=h));
            let t = DVec3::new(-phi.sin(), phi.cos(), r.gen_range(-0.5..0.5)).normalize();
            rays.push((p - 2.0 * t, t));
        }
        f.exact(&format!("{name}: tangent to the side"), &check(&s, &rays), 0, 0, 0);
    }
}

#[test]
fn tangent_rays() {
    let mut f = Families::default();
    tangent_families(&mut f);
    f.finish();
}

/// The smallest case of `tangent_rays`: a unit sphere at the origin, a ray along +Y touching it
/// at (1, 0, 0). The discriminant is exactly 0; MuJoCo hits at distance 2, glint misses.
#[test]
fn tangent_ray_minimal() {
    let s = setup_xml("<mujoco><worldbody><geom type='sphere' size='1'/></worldbody></mujoco>");
    let rep = compare(&s, &[(DVec3::new(1.0, -2.0, 0.0), DVec3::Y)], &RayFilter::default(), -1);
    assert_exact("tangent sphere ray", &rep, 0, 0, 0);
}

/// Rays through a box's corner perpendicular to its diagonal are tangent to the box's
/// bounding sphere, which MuJoCo's `ray_box` tests first (as `ray_capsule` and `ray_cylinder`
/// do theirs): where rounding puts that discriminant below zero MuJoCo misses the box, and a
/// glint without that bounding-sphere test would hit the corner.
#[test]
fn box_corner_bounding_sphere() {
    let mut f = Families::default();
    for (name, g) in [("box", "type='box' size='0.25 0.5 0.75'"), ("very thin box", "type='box' size='0.5 0.25 1e-4'")]
    {
        let s = aligned(g);
        let size = s.scene().geom_size[0];
        let mut r = rng(52);
        let rays: Vec<_> = (0..1000)
            .map(|_| {
                let c = size * DVec3::new(sign(&mut r), sign(&mut r), sign(&mut r));
                let d = c.cross(unit(&mut r)).normalize();
                (c - 2.0 * d, d)
            })
            .collect();
        f.exact(&format!("{name}: through a corner, tangent to the bounding sphere"), &check(&s, &rays), 0, 0, 0);
    }
    f.finish();
}

/// The smallest case of `box_corner_bounding_sphere`.
#[test]
fn box_corner_minimal() {
    let s = aligned("type='box' size='0.25 0.5 0.75'");
    let ray = (
        DVec3::new(-0.21631530224950102, 0.5411453830467199, 2.932868689447647),
        DVec3::new(0.4831576511247505, -0.6455726915233599, -0.5914343447238235),
    );
    // MuJoCo: miss. glint: hit at 2.0 on the corner (0.25, 0.5, 0.75) of the box's frame.
    let rep = compare(&s, &[ray], &RayFilter::default(), -1);
    assert_exact("corner ray", &rep, 0, 0, 0);
}

// ---------------------------------------------------------------------------------------------
// 2. Randomized scenes mixing every type.
// ---------------------------------------------------------------------------------------------

/// A seeded scene of about 60 geoms of every type: an infinite ground plane, two finite
/// rotated planes, two non-square height fields, and primitives and meshes (non-convex star
/// with explicit faces, a convex hull of random points, a file mesh; all with non-uniform
/// scales) with random sizes and euler rotations, static in the world, in rotated static
/// bodies, or on free bodies that fall onto each other and the ground.
fn random_scene(seed: u64) -> String {
    let mut r = rng(seed);
    let mut f = |lo: f64, hi: f64| r.gen_range(lo..hi);
    let scale =
        |f: &mut dyn FnMut(f64, f64) -> f64| format!("{:.3} {:.3} {:.3}", f(0.3, 0.8), f(0.3, 0.8), f(0.3, 0.8));
    let (sv, sf) = star_prism();
    let hull: Vec<String> =
        (0..12).map(|_| format!("{:.3} {:.3} {:.3}", f(-1.0, 1.0), f(-1.0, 1.0), f(-1.0, 1.0))).collect();
    let hf = |name: &str, nrow: usize, ncol: usize, f: &mut dyn FnMut(f64, f64) -> f64| {
        let elev: Vec<String> = (0..nrow * ncol).map(|_| format!("{:.3}", f(0.0, 1.0))).collect();
        format!(
            "<hfield name='{name}' nrow='{nrow}' ncol='{ncol}' size='{:.2} {:.2} {:.2} 0.1' elevation='{}'/>",
            f(0.8, 1.6),
            f(0.8, 1.6),
            f(0.2, 0.6),
            elev.join(" ")
        )
    };
    let assets = format!(
        "<mesh name='star' vertex='{sv}' face='{sf}' scale='{}'/>
         <mesh name='hull' vertex='{}' scale='{}'/>
         <mesh name='rock' file='rock.obj' scale='{}'/>
         {}{}",
        scale(&mut f),
        hull.join("  "),
        scale(&mut f),
        scale(&mut f),
        hf("hf1", 6, 11, &mut f),
        hf("hf2", 9, 4, &mut f),
    );
    let mut body = String::from(
        "<geom name='ground' type='plane' size='0 0 1'/>
         <geom name='hf1' type='hfield' hfield='hf1' pos='-4 -4 0'/>
         <geom name='hf2' type='hfield' hfield='hf2' pos='4 4 0' euler='0 0 30'/>",
    );
    for k in 0..2 {
        body += &format!(
            "<geom name='panel{k}' type='plane' size='{:.2} {:.2} 0.1' pos='{:.2} {:.2} {:.2}' euler='{:.0} {:.0} {:.0}'/>",
            f(0.5, 1.5),
            f(0.5, 1.5),
            f(-5.0, 5.0),
            f(-5.0, 5.0),
            f(2.0, 3.5),
            f(-150.0, 150.0),
            f(-150.0, 150.0),
            f(-150.0, 150.0)
        );
    }
    let kinds = ["sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh star", "mesh hull", "mesh rock"];
    for i in 0..55 {
        let kind = kinds[i % kinds.len()];
        let size = format!("{:.3} {:.3} {:.3}", f(0.08, 0.6), f(0.08, 0.6), f(0.08, 0.6));
        let shape = match kind.split_once(' ') {
            Some((_, mesh)) => format!("type='mesh' mesh='{mesh}'"),
            None => format!("type='{kind}' size='{size}'"),
        };
        let euler = format!("{:.0} {:.0} {:.0}", f(-180.0, 180.0), f(-180.0, 180.0), f(-180.0, 180.0));
        let (x, y) = (f(-6.0, 6.0), f(-6.0, 6.0));
        body += &match i % 5 {
            0 | 1 => format!("<geom name='g{i}' {shape} pos='{x:.2} {y:.2} {:.2}' euler='{euler}'/>", f(0.2, 2.5)),
            2 => format!(
                "<body pos='{x:.2} {y:.2} {:.2}' euler='{euler}'><geom name='g{i}' {shape} pos='0.1 0 0' euler='10 20 30'/></body>",
                f(0.2, 2.5)
            ),
            _ => format!(
                "<body name='free{i}' pos='{x:.2} {y:.2} {:.2}' euler='{euler}'><freejoint/><geom name='g{i}' {shape}/></body>",
                f(1.0, 4.0)
            ),
        };
    }
    format!(
        "<mujoco><compiler angle='degree' meshdir='{}'/><option integrator='implicitfast'/><asset>{assets}</asset><worldbody>{body}</worldbody></mujoco>",
        examples_dir().join("assets").display()
    )
}

/// A random scene stepped `steps` times, with a caster built for the resulting poses.
fn stepped_scene(seed: u64, steps: usize, nworld: usize) -> Setup {
    let model = glint_mujoco::Model::from_xml_str(&random_scene(seed)).expect("random scene loads");
    let mut batch = glint_mujoco::WorldBatch::new(&model, nworld).unwrap();
    batch.step(steps);
    // MuJoCo resets a world whose simulation diverges; make sure none did.
    let expected = steps as f64 * model.timestep();
    assert!((batch.time(0) - expected).abs() < 1e-9, "scene {seed} diverged and was reset");
    let caster = glint_core::RayCaster::new(model.scene(), batch.poses());
    Setup { batch, caster }
}

/// Random rays in and around a random scene: from random origins in random directions, and
/// aimed at geoms (half of them at the free ones, which moved).
fn scene_rays(s: &Setup, seed: u64, n: usize) -> (Vec<DVec3>, Vec<DVec3>) {
    let mut r = rng(seed);
    let scene = s.scene();
    let (xpos, _) = s.batch.poses().geoms(0);
    let free: Vec<usize> =
        (0..scene.ngeom()).filter(|&g| scene.body_weldid[scene.geom_bodyid[g] as usize] != 0).collect();
    let (mut pnt, mut vec) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let o = point_in_box(&mut r, DVec3::new(-7.0, -7.0, 0.05), DVec3::new(7.0, 7.0, 4.0));
        let d = match i % 3 {
            0 => unit(&mut r),
            1 => (xpos[free[r.gen_range(0..free.len())]] + 0.3 * point_in(&mut r, 1.0) - o).normalize(),
            _ => (xpos[r.gen_range(0..scene.ngeom())] + 0.3 * point_in(&mut r, 1.0) - o).normalize(),
        };
        pnt.push(o);
        vec.push(maybe_scaled(&mut r, d));
    }
    (pnt, vec)
}

#[test]
fn random_scenes() {
    let mut f = Families::default();
    let mut total = Report::default();
    for seed in [1u64, 2, 3] {
        let s = stepped_scene(seed, 300, 1);
        let scene = s.scene();
        let types: std::collections::HashSet<_> = scene.geom_type.iter().map(|t| t.name()).collect();
        f.check(types.len() == 8, || format!("scene {seed} lacks some geom type: {types:?}"));
        // The free bodies moved: their geoms are far from where they started.
        let start = glint_mujoco::WorldBatch::new(s.batch.model(), 1).unwrap();
        let moved = (0..scene.ngeom())
            .filter(|&g| (start.poses().geoms(0).0[g] - s.batch.poses().geoms(0).0[g]).length() > 0.3)
            .count();
        f.check(moved >= 8, || format!("scene {seed}: only {moved} geoms moved"));

        // Independent rays (the single-ray path).
        let (pnt, vec) = scene_rays(&s, seed, 22_000);
        let (rep, _) = compare_batch(&s, 0, &pnt, &vec, &[], &RayFilter::default());
        f.parity(&format!("scene {seed}: random rays"), &rep);
        total.merge(rep);

        // Lidar-like fans from one origin (the packet path): consecutive rays a fraction of a
        // degree apart, from three origins, one of them with a body excluded.
        let mut r = rng(seed + 100);
        for k in 0..3 {
            let o = point_in_box(&mut r, DVec3::new(-4.0, -4.0, 0.3), DVec3::new(4.0, 4.0, 2.5));
            let rot = glam::DMat3::from_euler(glam::EulerRot::XYZ, r.gen_range(-0.3..0.3), r.gen_range(-0.3..0.3), 0.0);
            let dirs = fan(rot, 16, 256, -30.0, 30.0);
            let exclude = if k == 2 { scene.geom_bodyid[scene.ngeom() - 1] } else { -1 };
            let (rep, hits) = compare_batch(&s, 0, &[o], &dirs, &[exclude], &RayFilter::default());
            f.check(hits.iter().all(|h| h.geomid < 0 || scene.geom_bodyid[h.geomid as usize] != exclude), || {
                format!("scene {seed} fan {k}: a ray hit the excluded body {exclude}")
            });
            f.parity(&format!("scene {seed}: fan {k}"), &rep);
            total.merge(rep);
        }
    }
    total.print("all random scenes");
    f.check(total.rays >= 100_000, || format!("only {} rays", total.rays));
    f.check(total.hits > total.rays / 3, || format!("only {} of {} rays hit", total.hits, total.rays));
    f.finish();
}

// ---------------------------------------------------------------------------------------------
// 3. The example scenes, from their lidar site.
// ---------------------------------------------------------------------------------------------

#[test]
fn example_scenes() {
    let mut f = Families::default();
    for name in ["primitives", "crowded", "meshes"] {
        let model = glint_mujoco::Model::from_xml_file(examples_dir().join(format!("{name}.xml"))).unwrap();
        let s = setup(model);
        let site = s.scene().site_id("lidar").expect("lidar site");
        let (o, rot) = s.batch.poses().site(0, site);
        // 64 beams × 1024 azimuths, spinning: the packet path.
        let dirs = fan(rot, 64, 1024, -22.5, 22.5);
        let (rep, _) = compare_batch(&s, 0, &[o], &dirs, &[], &RayFilter::default());
        rep.print(&format!("{name}: 64x1024 fan"));
        f.check(rep.disagreements() == 0 && rep.bad_normal == 0, || {
            format!("{name} fan: {} disagreements", rep.disagreements())
        });
        f.check(rep.hits > rep.rays / 3, || format!("{name} fan: only {} hits", rep.hits));
        // Random directions from the same origin, in random order (mostly single rays).
        let mut r = rng(7);
        let dirs: Vec<DVec3> = (0..20_000).map(|_| unit(&mut r)).collect();
        let (rep, _) = compare_batch(&s, 0, &[o], &dirs, &[], &RayFilter::default());
        rep.print(&format!("{name}: random directions"));
        f.check(rep.disagreements() == 0 && rep.bad_normal == 0, || {
            format!("{name} random: {} disagreements", rep.disagreements())
        });
    }
    f.finish();
}

// ---------------------------------------------------------------------------------------------
// 4. Filters: geom groups, static geoms, excluded bodies, invisible geoms.
// ---------------------------------------------------------------------------------------------

/// A room (static floor and walls) with geoms in every group (including -1, 6 and 9, which
/// clamp to 0 and 5; outside MuJoCo's inertia group range, so their bodies get explicit mass), static bodies, a hinged body, a body with two geoms, and geoms that are
/// invisible through their own alpha or their material's (and one that is visible through
/// its material despite a zero geom alpha).
const FILTER_SCENE: &str = "<mujoco><compiler angle='degree'/>
  <asset><material name='clear' rgba='1 1 1 0'/><material name='solid' rgba='0.2 0.8 0.2 1'/></asset>
  <worldbody>
    <geom name='floor' type='plane' size='0 0 1'/>
    <geom name='wall_n' type='box' pos='0 6 2' size='6 0.2 2'/>
    <geom name='wall_s' type='box' pos='0 -6 2' size='6 0.2 2'/>
    <geom name='wall_e' type='box' pos='6 0 2' size='0.2 6 2' group='1'/>
    <geom name='wall_w' type='box' pos='-6 0 2' size='0.2 6 2' group='2'/>
    <body name='static_body' pos='-2 -2 1' euler='0 0 30'>
      <geom name='static_box' type='box' size='0.3 0.3 0.3'/>
      <body name='static_child' pos='0 0 0.8'><geom name='static_child_ball' type='sphere' size='0.25'/></body>
    </body>
    <body name='b_m1' pos='3 0 1'><freejoint/><inertial pos='0 0 0' mass='1' diaginertia='0.01 0.01 0.01'/><geom name='grp_m1' type='sphere' size='0.3' group='-1'/></body>
    <body name='b_0' pos='2.6 1.5 1'><freejoint/><geom name='grp_0' type='box' size='0.25 0.25 0.25' group='0'/></body>
    <body name='b_1' pos='1.5 2.6 1'><freejoint/><geom name='grp_1' type='capsule' size='0.2 0.3' group='1'/></body>
    <body name='b_2' pos='0 3 1'><freejoint/><geom name='grp_2' type='cylinder' size='0.3 0.3' group='2'/></body>
    <body name='b_3' pos='-1.5 2.6 1'><freejoint/><geom name='grp_3' type='ellipsoid' size='0.3 0.2 0.35' group='3'/></body>
    <body name='b_4' pos='-2.6 1.5 1'><freejoint/><geom name='grp_4' type='sphere' size='0.3' group='4'/></body>
    <body name='b_5' pos='-3 0 1'><freejoint/><geom name='grp_5' type='box' size='0.2 0.3 0.25' group='5'/></body>
    <body name='b_6' pos='-2.6 -1.5 1'><freejoint/><inertial pos='0 0 0' mass='1' diaginertia='0.01 0.01 0.01'/><geom name='grp_6' type='sphere' size='0.3' group='6'/></body>
    <body name='b_9' pos='-1.5 -2.6 1.5'><freejoint/><inertial pos='0 0 0' mass='1' diaginertia='0.01 0.01 0.01'/><geom name='grp_9' type='capsule' size='0.2 0.3' group='9'/></body>
    <body name='hinged' pos='1.5 -2.6 1'><joint type='hinge' axis='0 0 1'/><geom name='hinged_box' type='box' size='0.3 0.2 0.3'/></body>
    <body name='multi' pos='2.6 -1.5 1'><freejoint/>
      <geom name='multi_a' type='sphere' size='0.2' pos='0 0 -0.2'/><geom name='multi_b' type='box' size='0.2 0.2 0.1' pos='0 0 0.25'/>
    </body>
    <body name='inv_rgba' pos='0 -3 1'><freejoint/><geom name='inv_rgba' type='sphere' size='0.35' rgba='1 0 0 0'/></body>
    <body name='inv_mat' pos='0 -4 1'><freejoint/><geom name='inv_mat' type='box' size='0.3 0.3 0.3' material='clear'/></body>
    <body name='vis_mat' pos='0 0 2.5'><freejoint/><geom name='vis_mat' type='sphere' size='0.3' material='solid' rgba='1 1 1 0'/></body>
  </worldbody></mujoco>";

/// Rays from random points of the room, half aimed at a random geom's centre.
fn room_rays(s: &Setup, seed: u64, n: usize) -> (Vec<DVec3>, Vec<DVec3>) {
    let mut r = rng(seed);
    let (xpos, _) = s.batch.poses().geoms(0);
    let (mut pnt, mut vec) = (Vec::new(), Vec::new());
    for i in 0..n {
        let o = point_in_box(&mut r, DVec3::new(-1.0, -1.0, 0.3), DVec3::new(1.0, 1.0, 2.0));
        let d = if i % 2 == 0 {
            unit(&mut r)
        } else {
            (xpos[r.gen_range(1..xpos.len())] + 0.1 * point_in(&mut r, 1.0) - o).normalize()
        };
        pnt.push(o);
        vec.push(d);
    }
    (pnt, vec)
}

/// Hits per geom.
fn per_geom(ngeom: usize, hits: &[glint_core::RayHit]) -> Vec<usize> {
    let mut n = vec![0; ngeom];
    for h in hits.iter().filter(|h| h.geomid >= 0) {
        n[h.geomid as usize] += 1;
    }
    n
}

#[test]
fn filters() {
    let s = setup_xml(FILTER_SCENE);
    let scene = s.scene();
    let ng = scene.ngeom();
    let name = |g: usize| scene.geom_name[g].clone();
    let (pnt, vec) = room_rays(&s, 5, 12_000);
    let mut f = Families::default();

    // No filter: every visible geom is hit, the invisible ones never.
    let (rep, base_hits) = compare_batch(&s, 0, &pnt, &vec, &[], &RayFilter::default());
    f.exact("no filter", &rep, 0, 0, 0);
    let base = per_geom(ng, &base_hits);
    for (g, &n) in base.iter().enumerate() {
        let invisible = matches!(scene.geom_name[g].as_str(), "inv_rgba" | "inv_mat");
        f.check(invisible == (n == 0), || format!("unfiltered: geom {} hit {n} times", name(g)));
    }
    f.check(!scene.geom_visible(s.geom_id("inv_rgba")) && scene.geom_visible(s.geom_id("vis_mat")), || {
        "geom_visible disagrees with MuJoCo's alpha rules".into()
    });

    // One group at a time: only geoms whose group clamps to it are hit (-1 counts as 0, 6
    // and 9 as 5), and all of those are.
    for k in 0..6 {
        let filter = RayFilter::from_group_mask(1 << k, true);
        let (rep, hits) = compare_batch(&s, 0, &pnt, &vec, &[], &filter);
        f.exact(&format!("group {k} only"), &rep, 0, 0, 0);
        let n = per_geom(ng, &hits);
        for g in 0..ng {
            let in_group = scene.geom_group[g].clamp(0, 5) == k;
            f.check(n[g] == 0 || in_group, || {
                format!("group {k} only: {} (group {}) hit", name(g), scene.geom_group[g])
            });
            f.check(!in_group || base[g] == 0 || n[g] > 0, || {
                format!("group {k} only: {} (group {}) never hit", name(g), scene.geom_group[g])
            });
        }
    }
    for g in ["grp_m1", "grp_6", "grp_9"] {
        f.check(base[s.geom_id(g)] > 0, || format!("{g} is never hit, so clamping is untested"));
    }

    // Excluding group 2 (and then everything): those geoms disappear, the rest agree.
    let (rep, hits) = compare_batch(&s, 0, &pnt, &vec, &[], &RayFilter::from_group_mask(0b111011, true));
    f.exact("all groups but 2", &rep, 0, 0, 0);
    let n = per_geom(ng, &hits);
    for g in (0..ng).filter(|&g| scene.geom_group[g] == 2) {
        f.check(n[g] == 0 && base[g] > 0, || {
            format!("without group 2: {} hit {} times (unfiltered {})", name(g), n[g], base[g])
        });
    }
    let (rep, hits) = compare_batch(&s, 0, &pnt, &vec, &[], &RayFilter::from_group_mask(0, true));
    f.exact("no groups", &rep, 0, 0, 0);
    f.check(hits.iter().all(|h| h.geomid < 0), || "no groups: something was hit".into());

    // flg_static = false: geoms welded to the world (the world's own and the static bodies')
    // disappear; the hinged and free bodies stay.
    let (rep, hits) = compare_batch(
        &s,
        0,
        &pnt,
        &vec,
        &[],
        &RayFilter { geomgroup: None, flg_static: false, ..RayFilter::default() },
    );
    f.exact("no static geoms", &rep, 0, 0, 0);
    let n = per_geom(ng, &hits);
    for g in 0..ng {
        let is_static = scene.body_weldid[scene.geom_bodyid[g] as usize] == 0;
        f.check(!is_static || n[g] == 0, || format!("flg_static false: static {} hit", name(g)));
        f.check(is_static || base[g] == 0 || n[g] > 0, || format!("flg_static false: dynamic {} never hit", name(g)));
    }
    for g in ["floor", "static_box", "static_child_ball"] {
        f.check(base[s.geom_id(g)] > 0, || format!("{g} is never hit, so flg_static is untested"));
    }

    // A different excluded body for every ray in one batch: for half of them the body the
    // ray hits unfiltered, for the others none, the world, or each body in turn.
    let nbody = scene.nbody() as i32;
    let exclude: Vec<i32> = (0..pnt.len())
        .map(|i| match (i % 2, base_hits[i].geomid) {
            (0, g) if g >= 0 => scene.geom_bodyid[g as usize],
            _ => (i as i32 / 2 % (nbody + 1)) - 1,
        })
        .collect();
    let (rep, hits) = compare_batch(&s, 0, &pnt, &vec, &exclude, &RayFilter::default());
    f.exact("bodyexclude per ray", &rep, 0, 0, 0);
    let wrong =
        hits.iter().zip(&exclude).filter(|&(h, &ex)| h.geomid >= 0 && scene.geom_bodyid[h.geomid as usize] == ex);
    f.check(wrong.count() == 0, || "a ray hit its excluded body".into());
    let changed = (0..pnt.len())
        .filter(|&i| base_hits[i].geomid >= 0 && scene.geom_bodyid[base_hits[i].geomid as usize] == exclude[i])
        .count();
    f.check(changed > 4000, || format!("only {changed} rays would have hit their excluded body"));

    // Everything at once: groups, static, excluded bodies.
    let filter = RayFilter::from_group_mask(0b110101, false);
    let (rep, hits) = compare_batch(&s, 0, &pnt, &vec, &exclude, &filter);
    f.exact("groups 0, 2, 4, 5, no static, bodyexclude per ray", &rep, 0, 0, 0);
    f.check(hits.iter().filter(|h| h.geomid >= 0).count() > 1000, || "combined filter: too few hits".into());

    // Coherent fans (the packet path) with filters, excluding a body per block of 16 rays.
    let dirs = fan(glam::DMat3::IDENTITY, 16, 512, -40.0, 40.0);
    let block: Vec<i32> = (0..dirs.len()).map(|i| ((i / 16) as i32 % (nbody + 1)) - 1).collect();
    for (label, filter) in [
        ("fan, group 0 and 5", RayFilter::from_group_mask(0b100001, true)),
        ("fan, no static", RayFilter { geomgroup: None, flg_static: false, ..RayFilter::default() }),
    ] {
        let (rep, _) = compare_batch(&s, 0, &[DVec3::new(0.0, 0.0, 1.0)], &dirs, &block, &filter);
        f.exact(label, &rep, 0, 0, 0);
    }
    f.finish();
}

// ---------------------------------------------------------------------------------------------
// 5. Refitting after motion, and several worlds.
// ---------------------------------------------------------------------------------------------

/// Free bodies of every type dropped onto a tilted ramp, where they slide and tumble.
fn tumbling_scene() -> String {
    let (sv, sf) = star_prism();
    let mut r = rng(17);
    let mut bodies = String::new();
    let shapes = [
        "type='box' size='0.2 0.3 0.15'",
        "type='capsule' size='0.12 0.3'",
        "type='cylinder' size='0.2 0.15'",
        "type='ellipsoid' size='0.25 0.15 0.2'",
        "type='sphere' size='0.2'",
        "type='mesh' mesh='star'",
    ];
    for i in 0..18 {
        bodies += &format!(
            "<body name='b{i}' pos='{:.2} {:.2} {:.2}' euler='{:.0} {:.0} {:.0}'><freejoint/><geom name='g{i}' {}/></body>",
            r.gen_range(-1.5..1.5),
            r.gen_range(-1.5..1.5),
            r.gen_range(2.5..4.5),
            r.gen_range(-180.0..180.0),
            r.gen_range(-180.0..180.0),
            r.gen_range(-180.0..180.0),
            shapes[i % shapes.len()]
        );
    }
    format!(
        "<mujoco><compiler angle='degree'/><asset><mesh name='star' vertex='{sv}' face='{sf}' scale='0.3 0.25 0.4'/></asset>
         <worldbody><geom name='ground' type='plane' size='0 0 1'/>
         <geom name='ramp' type='box' size='2.5 2.5 0.1' pos='0 0 1' euler='0 30 0'/>{bodies}</worldbody></mujoco>"
    )
}

/// Rays at the current centres of every geom but the ground (so they need up-to-date boxes),
/// and random ones, from points around the scene.
fn aimed_rays(batch: &glint_mujoco::WorldBatch, w: usize, seed: u64, n: usize) -> (Vec<DVec3>, Vec<DVec3>) {
    let mut r = rng(seed);
    let (xpos, _) = batch.poses().geoms(w);
    let (mut pnt, mut vec) = (Vec::new(), Vec::new());
    for i in 0..n {
        let o = point_in_box(&mut r, DVec3::new(-5.0, -5.0, 0.1), DVec3::new(5.0, 5.0, 5.0));
        let d = if i % 4 == 0 { unit(&mut r) } else { (xpos[1 + i % (xpos.len() - 1)] - o).normalize() };
        pnt.push(o);
        vec.push(d);
    }
    (pnt, vec)
}

#[test]
fn refit_after_motion() {
    let model = glint_mujoco::Model::from_xml_str(&tumbling_scene()).unwrap();
    let batch = glint_mujoco::WorldBatch::new(&model, 1).unwrap();
    let caster = glint_core::RayCaster::new(model.scene(), batch.poses());
    let stale = caster.clone();
    let mut s = Setup { batch, caster };
    let start: Vec<DVec3> = s.batch.poses().geoms(0).0.to_vec();
    let mut f = Families::default();
    for round in 0..5 {
        if round > 0 {
            s.batch.step(120);
            s.caster.refit(s.batch.poses());
            let expected = 120.0 * round as f64 * model.timestep();
            f.check((s.batch.time(0) - expected).abs() < 1e-9, || format!("round {round}: the world was reset"));
        }
        let (pnt, vec) = aimed_rays(&s.batch, 0, 40 + round, 4000);
        let (rep, _) = compare_batch(&s, 0, &pnt, &vec, &[], &RayFilter::default());
        f.exact(&format!("refitted after {} steps", 120 * round), &rep, 0, 0, 0);
        f.check(rep.hits > 2500, || format!("round {round}: only {} hits", rep.hits));
        if round > 0 {
            // The caster built at the start but never refitted culls geoms by where they were.
            let (stale_rep, _) = compare_with(&s.batch, &stale, 0, &pnt, &vec, &[], &RayFilter::default());
            stale_rep.print(&format!("stale caster after {} steps", 120 * round));
            f.check(stale_rep.geom_mismatch > 100, || {
                format!("round {round}: a stale caster only disagrees on {} rays", stale_rep.geom_mismatch)
            });
        }
    }
    let moved = start.iter().zip(s.batch.poses().geoms(0).0).filter(|(a, b)| (**a - **b).length() > 1.0).count();
    f.check(moved >= 12, || format!("only {moved} geoms moved more than 1 m"));
    f.finish();
}

#[test]
fn several_worlds() {
    let model = glint_mujoco::Model::from_xml_str(&tumbling_scene()).unwrap();
    let nworld = 4;
    let mut batch = glint_mujoco::WorldBatch::new(&model, nworld).unwrap();
    // Different poses per world: every free body moved by a world-dependent offset and
    // turned.
    let mut r = rng(23);
    let q0 = batch.qpos(0).to_vec();
    for w in 1..nworld {
        let mut q = q0.clone();
        for body in q.chunks_exact_mut(7) {
            body[0] += 0.5 * w as f64 + r.gen_range(-0.3..0.3);
            body[1] -= 0.4 * w as f64;
            body[2] -= r.gen_range(0.0..1.5);
            let quat = glam::DQuat::from_axis_angle(unit(&mut r), r.gen_range(0.0..3.0));
            body[3..7].copy_from_slice(&[quat.w, quat.x, quat.y, quat.z]);
        }
        batch.set_qpos(w, &q).unwrap();
    }
    let caster = glint_core::RayCaster::new(model.scene(), batch.poses());
    let mut s = Setup { batch, caster };
    let mut f = Families::default();
    let check_worlds = |s: &Setup, f: &mut Families, label: &str, seed: u64| {
        // One set of rays shared by every world (aimed at world 0's geoms, so they mostly
        // hit there and differ elsewhere).
        let (pnt, vec) = aimed_rays(&s.batch, 0, seed, 3000);
        let mut answers = Vec::new();
        for w in 0..nworld {
            let (rep, hits) = compare_batch(s, w, &pnt, &vec, &[], &RayFilter::default());
            f.exact(&format!("{label}, world {w}"), &rep, 0, 0, 0);
            answers.push(hits);
        }
        let differ = (0..pnt.len()).filter(|&i| answers[0][i].geomid != answers[1][i].geomid).count();
        f.check(differ > 300, || format!("{label}: worlds 0 and 1 differ on only {differ} rays"));
        // Different rays per world (world-major arrays), each aimed at its own world.
        let rays: Vec<_> = (0..nworld).map(|w| aimed_rays(&s.batch, w, seed + 1 + w as u64, 1000)).collect();
        let pnt: Vec<DVec3> = rays.iter().flat_map(|r| r.0.clone()).collect();
        let vec: Vec<DVec3> = rays.iter().flat_map(|r| r.1.clone()).collect();
        let exclude: Vec<i32> = (0..pnt.len()).map(|i| (i % 7) as i32 - 1).collect();
        let batch = glint_core::RayBatch { nray: 1000, pnt: &pnt, vec: &vec, bodyexclude: &exclude };
        let hits = s.caster.rays(s.scene(), s.batch.poses(), &batch, &RayFilter::default()).unwrap();
        let mut rep = Report::default();
        for k in 0..pnt.len() {
            use glint_mujoco::MujocoRays;
            let m = s.batch.mj_ray(k / 1000, pnt[k], vec[k], &RayFilter::default(), exclude[k]);
            record(&mut rep, pnt[k], vec[k], hit_at(&hits, k), m);
        }
        f.exact(&format!("{label}, rays per world"), &rep, 0, 0, 0);
    };
    check_worlds(&s, &mut f, "after set_qpos", 50);
    s.batch.step(150);
    s.caster.refit(s.batch.poses());
    for w in 0..nworld {
        let expected = 150.0 * model.timestep();
        f.check((s.batch.time(w) - expected).abs() < 1e-9, || format!("world {w} diverged and was reset"));
    }
    check_worlds(&s, &mut f, "after 150 steps", 60);
    // Move world 2 only and refit only it.
    let mut q = s.batch.qpos(2).to_vec();
    for body in q.chunks_exact_mut(7) {
        body[2] += 1.0;
    }
    s.batch.set_qpos(2, &q).unwrap();
    s.caster.refit_world(s.batch.poses(), 2);
    check_worlds(&s, &mut f, "after refit_world(2)", 70);
    f.finish();
}

// ---------------------------------------------------------------------------------------------
// 6. Any-hit queries.
// ---------------------------------------------------------------------------------------------

#[test]
fn occlusion_matches_closest_hit() {
    use glint_mujoco::MujocoRays;
    let s = stepped_scene(4, 200, 2);
    let scene = s.scene();
    let mut f = Families::default();
    let (pnt, vec) = scene_rays(&s, 9, 20_000);
    let mut r = rng(10);
    let nbody = scene.nbody() as i32;
    let exclude: Vec<i32> = (0..pnt.len()).map(|_| r.gen_range(-1..nbody)).collect();
    for (label, filter, exclude) in [
        ("no filter", RayFilter::default(), &[][..]),
        ("groups, no static, bodyexclude", RayFilter::from_group_mask(0b000011, false), &exclude[..]),
    ] {
        let batch = glint_core::RayBatch { nray: pnt.len(), pnt: &pnt, vec: &vec, bodyexclude: exclude };
        let closest = s.caster.rays(scene, s.batch.poses(), &batch, &filter).unwrap();
        // Limits below, exactly at, just above and far beyond each ray's closest hit, zero,
        // and for misses huge ones.
        let max_dist: Vec<f64> = (0..2 * pnt.len())
            .map(|k| {
                let d = closest.dist[k];
                match (d >= 0.0, k % 6) {
                    (false, 0) => 1e30,
                    (false, _) => r.gen_range(0.0..100.0),
                    (true, 0) => 0.5 * d,
                    (true, 1) => d,
                    (true, 2) => d.next_up(),
                    (true, 3) => 2.0 * d + 1.0,
                    (true, 4) => 0.0,
                    (true, _) => r.gen_range(0.0..2.0 * d + 0.1),
                }
            })
            .collect();
        let mut occluded = vec![false; 2 * pnt.len()];
        s.caster.occluded_into(scene, s.batch.poses(), &batch, &filter, &max_dist, &mut occluded).unwrap();
        let (mut wrong, mut vs_mujoco, mut not_bitwise) = (0, 0, 0);
        for k in 0..occluded.len() {
            let d = closest.dist[k];
            if occluded[k] != (d >= 0.0 && d < max_dist[k]) {
                wrong += 1;
            }
            // Against MuJoCo too, except where the limit is within rounding of MuJoCo's
            // distance (glint's distances agree to 1e-5 relative, not always to the bit).
            let (w, i) = (k / pnt.len(), k % pnt.len());
            let m = s.batch.mj_ray(w, pnt[i], vec[i], &filter, pick(exclude, i, -1));
            not_bitwise += usize::from(m.geomid >= 0 && m.dist != d);
            if !(m.geomid >= 0 && close(m.dist, max_dist[k])) && occluded[k] != (m.geomid >= 0 && m.dist < max_dist[k])
            {
                vs_mujoco += 1;
            }
        }
        let n_occluded = occluded.iter().filter(|&&o| o).count();
        eprintln!(
            "occlusion, {label}: {n_occluded} of {} occluded; {not_bitwise} closest distances differ from MuJoCo's in the last bits",
            occluded.len()
        );
        f.check(wrong == 0, || format!("{label}: {wrong} any-hit answers disagree with the closest hit"));
        f.check(vs_mujoco == 0, || format!("{label}: {vs_mujoco} any-hit answers disagree with mj_ray"));
        f.check(n_occluded > occluded.len() / 20 && n_occluded < occluded.len() * 3 / 4, || {
            format!("{label}: {n_occluded} of {} occluded", occluded.len())
        });
        // One limit shared by every ray.
        let mut shared = vec![false; 2 * pnt.len()];
        s.caster.occluded_into(scene, s.batch.poses(), &batch, &filter, &[3.0], &mut shared).unwrap();
        let wrong =
            (0..shared.len()).filter(|&k| shared[k] != (closest.dist[k] >= 0.0 && closest.dist[k] < 3.0)).count();
        f.check(wrong == 0, || format!("{label}: {wrong} answers with a shared limit disagree"));
    }
    f.finish();
}

// ---------------------------------------------------------------------------------------------
// 7. Bad input gives errors, never panics.
// ---------------------------------------------------------------------------------------------

/// A fresh folder for this test's files (removed at the end of `bad_models_are_errors`).
fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-parity-{}", std::process::id())).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn bad_models_are_errors() {
    use glint_mujoco::{Model, MujocoError, WorldBatch};
    // A file that does not exist.
    let missing = temp_dir("missing").join("no_such_model.xml");
    let err = Model::from_xml_file(&missing).unwrap_err();
    assert!(matches!(err, MujocoError::Unreadable { .. }), "{err:?}");
    assert!(err.to_string().contains("no_such_model.xml"), "{err}");
    // A directory.
    let err = Model::from_xml_file(temp_dir("dir")).unwrap_err();
    assert!(err.to_string().contains("not a file"), "{err}");
    // Malformed XML, as a string and as a file.
    let err = Model::from_xml_str("<mujoco><worldbody><geom type='sphere'").unwrap_err();
    assert!(matches!(err, MujocoError::Load { .. }), "{err:?}");
    assert!(err.to_string().contains("MJCF string"), "{err}");
    let bad = temp_dir("malformed").join("malformed.xml");
    std::fs::write(&bad, "<mujoco><worldbody><geom type='sphere' size='1'></worldbody>").unwrap();
    let err = Model::from_xml_file(&bad).unwrap_err();
    assert!(matches!(err, MujocoError::Load { .. }), "{err:?}");
    assert!(err.to_string().contains("malformed.xml"), "{err}");
    // Valid XML that MuJoCo rejects: the message is MuJoCo's.
    let err =
        Model::from_xml_str("<mujoco><worldbody><geom type='capsule' size='0.3 0'/></worldbody></mujoco>").unwrap_err();
    assert!(err.to_string().contains("size 1 must be positive"), "{err}");
    // A mesh file that does not exist, and one that is not a mesh.
    let dir = temp_dir("meshes");
    let xml = |file: &str| {
        format!(
            "<mujoco><asset><mesh name='m' file='{}'/></asset><worldbody><geom type='mesh' mesh='m'/></worldbody></mujoco>",
            dir.join(file).display()
        )
    };
    let err = Model::from_xml_str(&xml("absent_mesh.stl")).unwrap_err();
    assert!(err.to_string().contains("absent_mesh.stl"), "{err}");
    std::fs::write(dir.join("garbage.stl"), b"this is not an STL file at all\x00\x01\x02").unwrap();
    let err = Model::from_xml_str(&xml("garbage.stl")).unwrap_err();
    assert!(err.to_string().contains("garbage.stl"), "{err}");
    // The same through a model file, so the mesh resolves relative to it.
    let model_file = dir.join("uses_garbage.xml");
    std::fs::write(
        &model_file,
        "<mujoco><asset><mesh name='m' file='garbage.stl'/></asset><worldbody><geom type='mesh' mesh='m'/></worldbody></mujoco>",
    )
    .unwrap();
    let err = Model::from_xml_file(&model_file).unwrap_err();
    assert!(err.to_string().contains("garbage.stl"), "{err}");
    // A batch of no worlds.
    let model = Model::from_xml_str("<mujoco><worldbody><geom type='sphere' size='1'/></worldbody></mujoco>").unwrap();
    let err = WorldBatch::new(&model, 0).unwrap_err();
    assert!(matches!(err, MujocoError::NoWorlds), "{err:?}");
    std::fs::remove_dir_all(dir.parent().unwrap()).ok();
}

#[test]
fn bad_queries_are_errors() {
    use glint_core::{CoreError, HitsMut, RayBatch};
    let model = glint_mujoco::Model::from_xml_str(&tumbling_scene()).unwrap();
    let mut batch = glint_mujoco::WorldBatch::new(&model, 2).unwrap();
    let caster = glint_core::RayCaster::new(model.scene(), batch.poses());
    let (scene, poses) = (model.scene(), batch.poses());
    let filter = RayFilter::default();
    let pnt = [DVec3::new(0.0, 0.0, 5.0); 5];
    let mut vec = [DVec3::NEG_Z; 5];

    // NaN, infinite and zero directions, named by ray index.
    for (bad, what) in [(DVec3::new(f64::NAN, 0.0, -1.0), "NaN"), (DVec3::ZERO, "zero"), (DVec3::splat(1e-16), "tiny")]
    {
        vec[3] = bad;
        let b = RayBatch { nray: 5, pnt: &pnt, vec: &vec, bodyexclude: &[] };
        let err = caster.rays(scene, poses, &b, &filter).unwrap_err();
        assert!(matches!(err, CoreError::BadDirection { index: 3, .. }), "{what}: {err:?}");
        assert!(err.to_string().contains("ray 3"), "{err}");
        let err = caster.ray(scene, poses, 0, pnt[0], bad, &filter, -1).unwrap_err();
        assert!(matches!(err, CoreError::BadDirection { .. }), "{what}: {err:?}");
        let mut out = vec![false; 10];
        assert!(caster.occluded_into(scene, poses, &b, &filter, &[1.0], &mut out).is_err());
    }
    vec[3] = DVec3::NEG_Z;
    // A NaN origin.
    let mut bad_pnt = pnt;
    bad_pnt[1].y = f64::NAN;
    let b = RayBatch { nray: 5, pnt: &bad_pnt, vec: &vec, bodyexclude: &[] };
    let err = caster.rays(scene, poses, &b, &filter).unwrap_err();
    assert!(matches!(err, CoreError::BadOrigin { index: 1, .. }) && err.to_string().contains("ray 1"), "{err}");
    // No rays.
    let b = RayBatch { nray: 0, pnt: &[], vec: &[], bodyexclude: &[] };
    assert!(matches!(caster.rays(scene, poses, &b, &filter).unwrap_err(), CoreError::NoRays));
    let b = RayBatch { nray: 5, pnt: &pnt, vec: &[], bodyexclude: &[] };
    assert!(matches!(caster.rays(scene, poses, &b, &filter).unwrap_err(), CoreError::NoRays));
    // Arrays of the wrong length name the array.
    for (b, field) in [
        (RayBatch { nray: 5, pnt: &pnt[..3], vec: &vec, bodyexclude: &[] }, "pnt"),
        (RayBatch { nray: 5, pnt: &pnt, vec: &vec[..2], bodyexclude: &[] }, "vec"),
        (RayBatch { nray: 5, pnt: &pnt, vec: &vec, bodyexclude: &[0, 1] }, "bodyexclude"),
    ] {
        let err = caster.rays(scene, poses, &b, &filter).unwrap_err();
        assert!(matches!(&err, CoreError::Shape { field: f, .. } if *f == field), "{field}: {err:?}");
        assert!(err.to_string().starts_with(field), "{err}");
    }
    let b = RayBatch { nray: 5, pnt: &pnt, vec: &vec, bodyexclude: &[] };
    let (mut dist, mut geomid, mut normal) = (vec![0.0; 10], vec![0; 10], vec![DVec3::ZERO; 10]);
    let out = HitsMut { dist: &mut dist[..9], geomid: &mut geomid, normal: &mut normal };
    let err = caster.rays_into(scene, poses, &b, &filter, out).unwrap_err();
    assert!(err.to_string().contains("output"), "{err}");
    let out = HitsMut { dist: &mut dist, geomid: &mut geomid[..9], normal: &mut normal };
    let err = caster.rays_into(scene, poses, &b, &filter, out).unwrap_err();
    assert!(err.to_string().contains("geomid"), "{err}");
    let out = HitsMut { dist: &mut dist, geomid: &mut geomid, normal: &mut normal[..3] };
    let err = caster.rays_into(scene, poses, &b, &filter, out).unwrap_err();
    assert!(err.to_string().contains("normal"), "{err}");
    let mut out = vec![false; 10];
    let err = caster.occluded_into(scene, poses, &b, &filter, &[1.0, 2.0], &mut out).unwrap_err();
    assert!(err.to_string().contains("max_dist"), "{err}");
    let err = caster.occluded_into(scene, poses, &b, &filter, &[1.0], &mut out[..4]).unwrap_err();
    assert!(err.to_string().contains("output"), "{err}");
    // Worlds out of range, and poses for another number of worlds than the caster's.
    let err = caster.ray(scene, poses, 2, pnt[0], vec[0], &filter, -1).unwrap_err();
    assert!(matches!(err, CoreError::NoSuchWorld { world: 2, nworld: 2 }), "{err:?}");
    assert!(err.to_string().contains("world 2"), "{err}");
    let other = glint_mujoco::WorldBatch::new(&model, 3).unwrap();
    let err = caster.rays(scene, other.poses(), &b, &filter).unwrap_err();
    assert!(err.to_string().contains("poses"), "{err}");
    let q = batch.qpos(0).to_vec();
    let err = batch.set_qpos(5, &q).unwrap_err();
    assert!(err.to_string().contains("world 5"), "{err}");
    let err = batch.set_qpos(0, &q[..3]).unwrap_err();
    assert!(err.to_string().contains("qpos"), "{err}");
}

/// `CoreError::BadDirection` promises to reject infinite directions (as glint did before
/// 0af3d10); the check is now `length_squared() >= mjMINVAL²`, which infinity passes, and the
/// ray silently misses.
#[test]
fn infinite_direction_is_an_error() {
    let s = setup_xml("<mujoco><worldbody><geom type='sphere' size='1'/></worldbody></mujoco>");
    let vec = [DVec3::NEG_Z, DVec3::new(0.0, f64::INFINITY, -1.0)];
    let b = glint_core::RayBatch { nray: 2, pnt: &[DVec3::new(0.0, 0.0, 5.0)], vec: &vec, bodyexclude: &[] };
    let err = s.caster.rays(s.scene(), s.batch.poses(), &b, &RayFilter::default()).unwrap_err();
    assert!(err.to_string().contains("ray 1"), "{err}");
}
