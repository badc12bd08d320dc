//! Triangle meshes and their bottom-level BVH (built once, shared by every world and every
//! geom that instances the mesh).

use glam::DVec3;

use crate::CoreError;
use crate::bvh::{Aabb, Bvh, inverse_direction};
use crate::primitives::MINVAL;

mod packet;

pub(crate) use packet::LocalRays;

/// How a [`TriangleSet`] stores its triangles' vertices; all arithmetic runs in double
/// precision on the stored values.
pub(crate) trait Vertices: Copy {
    /// Stores three vertices.
    fn store(v: [DVec3; 3]) -> Self;
    /// Reads vertex `i`.
    fn vertex(&self, i: usize) -> DVec3;
}

/// Single precision, as MuJoCo stores mesh vertices (so nothing is lost). Edges of
/// single-precision vertices are exact in double precision, so the tests match MuJoCo's
/// arithmetic; 36 bytes per triangle keep large meshes cache-friendly.
#[derive(Clone, Copy, Debug)]
pub(crate) struct F32Vertices([[f32; 3]; 3]);

impl Vertices for F32Vertices {
    fn store(v: [DVec3; 3]) -> Self {
        F32Vertices(v.map(|p| p.as_vec3().to_array()))
    }
    #[inline(always)]
    fn vertex(&self, i: usize) -> DVec3 {
        DVec3::new(self.0[i][0] as f64, self.0[i][1] as f64, self.0[i][2] as f64)
    }
}

/// Double precision, for height fields, whose vertices MuJoCo computes in double precision.
#[derive(Clone, Copy, Debug)]
pub(crate) struct F64Vertices([DVec3; 3]);

impl Vertices for F64Vertices {
    fn store(v: [DVec3; 3]) -> Self {
        F64Vertices(v)
    }
    #[inline(always)]
    fn vertex(&self, i: usize) -> DVec3 {
        self.0[i]
    }
}

/// One triangle with its vertices stored as `V`.
#[derive(Clone, Copy, Debug)]
struct Triangle<V> {
    v: V,
}

impl<V: Vertices> Triangle<V> {
    fn new(v: [DVec3; 3]) -> Self {
        Triangle { v: V::store(v) }
    }

    #[inline(always)]
    fn vertex(&self, i: usize) -> DVec3 {
        self.v.vertex(i)
    }

    /// Unnormalized normal `e1 × e2` (its direction follows the winding).
    fn normal(&self) -> DVec3 {
        let v0 = self.vertex(0);
        (self.vertex(1) - v0).cross(self.vertex(2) - v0)
    }

    /// Two-sided ray test (Möller–Trumbore) with inclusive edges, as MuJoCo's `ray_triangle`.
    #[inline(always)]
    fn intersect(&self, o: DVec3, d: DVec3) -> Option<f64> {
        let v0 = self.vertex(0);
        let (e1, e2) = (self.vertex(1) - v0, self.vertex(2) - v0);
        let p = d.cross(e2);
        // det = e1 · (d × e2) = −d · n: a ray parallel to the plane (MuJoCo's test) has det ≈ 0.
        let det = e1.dot(p);
        if det.abs() < MINVAL {
            return None;
        }
        let inv = 1.0 / det;
        let s = o - v0;
        let u = s.dot(p) * inv;
        if !(0.0..=1.0).contains(&u) {
            return None;
        }
        let q = s.cross(e1);
        let v = d.dot(q) * inv;
        if v < 0.0 || u + v > 1.0 {
            return None;
        }
        let t = e2.dot(q) * inv;
        (t >= 0.0).then_some(t)
    }
}

/// Triangles with a BVH over them, in BVH leaf order for locality.
#[derive(Clone, Debug)]
pub(crate) struct TriangleSet<V> {
    bvh: Bvh,
    tris: Vec<Triangle<V>>,
    /// For each stored triangle, its index in the order given to [`TriangleSet::new`].
    source: Vec<u32>,
    bounds: Aabb,
}

impl<V: Vertices> TriangleSet<V> {
    /// Bytes held on the heap.
    pub(crate) fn bytes(&self) -> usize {
        self.bvh.bytes() + self.tris.capacity() * size_of::<Triangle<V>>() + self.source.capacity() * size_of::<u32>()
    }

    pub(crate) fn new(tris: Vec<[DVec3; 3]>) -> Self {
        // Bounds come from the stored (single-precision) vertices, so they contain them.
        let tris: Vec<Triangle<V>> = tris.into_iter().map(Triangle::new).collect();
        let tris: Vec<[DVec3; 3]> = tris.iter().map(|t| [t.vertex(0), t.vertex(1), t.vertex(2)]).collect();
        let boxes: Vec<Aabb> = tris.iter().map(|t| Aabb::EMPTY.grow(t[0]).grow(t[1]).grow(t[2])).collect();
        let bounds = boxes.iter().fold(Aabb::EMPTY, |a, b| a.union(b));
        let mut bvh = Bvh::build(&boxes, 4);
        let source = bvh.take_order();
        let tris = source.iter().map(|&i| Triangle::new(tris[i as usize])).collect();
        TriangleSet { bvh, tris, source, bounds }
    }

    /// Local-frame bounds of all triangles.
    pub(crate) fn bounds(&self) -> Aabb {
        self.bounds
    }

    /// Nearest hit with `t <= tmax`: distance, unnormalized winding normal and the triangle's
    /// index in creation order. Always inlined, so that the walk is compiled for the
    /// instruction set its caller runs on (`raycast/dispatch.rs`).
    #[inline(always)]
    pub(crate) fn closest(&self, o: DVec3, d: DVec3, tmax: f64) -> Option<(f64, DVec3, u32)> {
        let (t, i) = self.closest_index(
            o,
            d,
            tmax,
            #[inline(always)]
            |tri| tri.intersect(o, d),
        )?;
        Some((t, self.tris[i].normal(), self.source[i]))
    }

    /// [`TriangleSet::closest`] with another ray–triangle test, `hit` (the triangle's three
    /// vertices to a distance): distance, the three vertices and the triangle's index in
    /// creation order.
    #[inline(always)]
    pub(crate) fn closest_by(
        &self,
        o: DVec3,
        d: DVec3,
        tmax: f64,
        hit: impl Fn(&[DVec3; 3]) -> Option<f64>,
    ) -> Option<(f64, [DVec3; 3], u32)> {
        #[inline(always)]
        fn vertices<V: Vertices>(tri: &Triangle<V>) -> [DVec3; 3] {
            [tri.vertex(0), tri.vertex(1), tri.vertex(2)]
        }
        let (t, i) = self.closest_index(
            o,
            d,
            tmax,
            #[inline(always)]
            |tri| hit(&vertices(tri)),
        )?;
        Some((t, vertices(&self.tris[i]), self.source[i]))
    }

    /// The walk of [`TriangleSet::closest`]: the nearest hit of `hit` with `t <= tmax` and its
    /// stored index.
    #[inline(always)]
    fn closest_index(
        &self,
        o: DVec3,
        d: DVec3,
        tmax: f64,
        hit: impl Fn(&Triangle<V>) -> Option<f64>,
    ) -> Option<(f64, usize)> {
        let mut best: Option<(f64, u32)> = None;
        // The closures are inlined too: out of line they would be compiled for the baseline
        // instruction set, outside the caller's AVX2 or AVX-512 entry (docs/performance.md).
        self.bvh.closest(
            o,
            inverse_direction(d),
            tmax,
            #[inline(always)]
            |i, tmax| {
                let t = hit(&self.tris[i as usize])?;
                // Equal distances go to the lower source index, as a linear scan would.
                let better = t < tmax
                    || best.is_none_or(|(bt, bi)| t == bt && self.source[i as usize] < self.source[bi as usize]);
                if !better || t > tmax {
                    return None;
                }
                best = Some((t, i));
                Some(t)
            },
        );
        best.map(|(t, i)| (t, i as usize))
    }

    /// Whether any triangle is hit with `t <= tmax` (inlined as [`TriangleSet::closest`] is).
    #[inline(always)]
    pub(crate) fn any(&self, o: DVec3, d: DVec3, tmax: f64) -> bool {
        self.bvh.any(
            o,
            inverse_direction(d),
            tmax,
            #[inline(always)]
            |i| self.tris[i as usize].intersect(o, d).is_some_and(|t| t <= tmax),
        )
    }

    /// Number of triangles.
    pub(crate) fn len(&self) -> usize {
        self.tris.len()
    }
}

/// A triangle mesh as MuJoCo compiled it (vertices in the geom frame of every geom that uses
/// it), with its BVH.
#[derive(Clone, Debug)]
pub struct Mesh {
    /// Name in the model (may be empty).
    pub name: String,
    /// Vertex positions, shape `(nvert, 3)`.
    pub vert: Vec<[f32; 3]>,
    /// Vertex indices of each triangle, shape `(nface, 3)`, counter-clockwise seen from outside.
    pub face: Vec<[u32; 3]>,
    /// Vertex normals as MuJoCo stores them (for shading), shape `(nnormal, 3)`.
    pub normal: Vec<[f32; 3]>,
    tris: TriangleSet<F32Vertices>,
}

impl Mesh {
    /// Bytes the mesh holds on the heap: vertices, faces, normals, stored triangles and BVH.
    pub fn bytes(&self) -> usize {
        (self.vert.capacity() + self.normal.capacity()) * size_of::<[f32; 3]>()
            + self.face.capacity() * size_of::<[u32; 3]>()
            + self.tris.bytes()
    }

    /// Builds the mesh and its BVH; fails when it has no faces or a face names a vertex that
    /// does not exist.
    pub fn new(
        name: String,
        vert: Vec<[f32; 3]>,
        face: Vec<[u32; 3]>,
        normal: Vec<[f32; 3]>,
    ) -> Result<Mesh, CoreError> {
        let bad = |reason: String| CoreError::BadShape { kind: "mesh", name: name.clone(), reason };
        if face.is_empty() {
            return Err(bad("it has no faces".into()));
        }
        if let Some((i, f)) = face.iter().enumerate().find(|(_, f)| f.iter().any(|&v| v as usize >= vert.len())) {
            return Err(bad(format!("face {i} uses vertex {:?} but the mesh has {} vertices", f, vert.len())));
        }
        if vert.iter().flatten().any(|x| !x.is_finite()) {
            return Err(bad("a vertex is not finite".into()));
        }
        let v = |i: u32| DVec3::from(vert[i as usize].map(f64::from));
        let tris = TriangleSet::new(face.iter().map(|f| [v(f[0]), v(f[1]), v(f[2])]).collect());
        Ok(Mesh { name, vert, face, normal, tris })
    }

    /// Bounds of the mesh in its own (the geom's) frame.
    pub fn bounds(&self) -> Aabb {
        self.tris.bounds()
    }

    /// Nearest hit of a local-frame ray with `t <= tmax`: distance, unit normal (following
    /// the face winding) and face index.
    pub fn intersect_local(&self, o: DVec3, d: DVec3, tmax: f64) -> Option<(f64, DVec3, usize)> {
        self.tris.closest(o, d, tmax).map(|(t, n, f)| (t, n.normalize(), f as usize))
    }

    pub(crate) fn triangles(&self) -> &TriangleSet<F32Vertices> {
        &self.tris
    }

    /// Number of triangles.
    pub fn nface(&self) -> usize {
        self.tris.len()
    }
}
