//! Skins as rays meet them: each posed in its world with a BVH over its triangles. The
//! cameras draw every skin this way; a lidar that opts in sees them through
//! [`PreparedRays::with_skins`](crate::PreparedRays::with_skins). `mj_ray` sees none.

use glam::DVec3;

use crate::{Mesh, NGROUP, Poses, Scene};

/// One skin (or drawn flex) posed in one world.
pub struct SkinSurface {
    /// Its id in the scene (`Scene::skin`).
    pub skin: usize,
    /// Its visibility group, clamped to `0..NGROUP`.
    pub group: usize,
    /// The posed surface in the world frame (the mesh's own frame is the world's).
    pub mesh: Mesh,
    /// Lit by its faces' normals (a flex's `flatskin`).
    pub flat: bool,
    /// The first of the faces that close a cloth's border, lit by their own normals.
    pub sides_from: usize,
}

/// Where a ray meets a skin.
#[derive(Clone, Copy, Debug)]
pub struct SkinHit {
    /// The skin's id in the scene.
    pub skin: usize,
    /// The face met.
    pub face: usize,
    /// Distance along the ray, in units of its direction.
    pub t: f64,
    /// The face's unit normal, as its winding gives it (as `mj_ray` reports a mesh's).
    pub face_normal: DVec3,
}

impl SkinSurface {
    /// World `w`'s skins posed by its body frames; those of alpha 0 or without faces are left
    /// out (the renderer draws neither).
    pub fn pose_world(scene: &Scene, poses: &Poses, w: usize) -> Vec<SkinSurface> {
        let nbody = scene.nbody();
        let (xpos, xmat) = (&poses.xpos[w * nbody..(w + 1) * nbody], &poses.xmat[w * nbody..(w + 1) * nbody]);
        scene
            .skin
            .iter()
            .enumerate()
            .filter(|(_, skin)| skin.rgba[3] != 0.0 && !skin.face.is_empty())
            .filter_map(|(k, skin)| {
                let posed = skin.pose(xpos, xmat);
                // Poses from finite physics give finite vertices; a skin that is not is left
                // out rather than failing the frame.
                let mesh = Mesh::new(skin.name.clone(), posed.vert, skin.face.clone(), posed.normal).ok()?;
                let group = skin.group.clamp(0, NGROUP as i32 - 1) as usize;
                let sides_from = skin.face.len() - skin.sides.min(skin.face.len());
                Some(SkinSurface { skin: k, group, mesh, flat: skin.flat, sides_from })
            })
            .collect()
    }

    /// Whether face `face` is lit by its own normal rather than its vertices'.
    pub fn flat_face(&self, face: usize) -> bool {
        self.flat || face >= self.sides_from
    }

    /// The vertex normals of face `face` interpolated at `point` (`None` on a degenerate face
    /// or where they cancel).
    pub fn smooth_normal(&self, face: usize, point: DVec3) -> Option<DVec3> {
        let b = self.barycentric(face, point)?;
        let f = self.mesh.face[face];
        let n = (0..3).map(|k| DVec3::from(self.mesh.normal[f[k] as usize].map(f64::from)) * b[k]).sum::<DVec3>();
        (n.length_squared() > 0.0).then(|| n.normalize())
    }

    /// Barycentric coordinates of `point` on face `face`.
    pub fn barycentric(&self, face: usize, point: DVec3) -> Option<[f64; 3]> {
        let tri = self.mesh.face.get(face)?.map(|i| DVec3::from(self.mesh.vert[i as usize].map(f64::from)));
        barycentric(tri, point)
    }
}

/// The nearest skin admitted by `admit` that the ray `(origin, dir)` meets with `t <= tmax`.
pub fn nearest_skin(
    skins: &[SkinSurface],
    admit: impl Fn(&SkinSurface) -> bool,
    origin: DVec3,
    dir: DVec3,
    tmax: f64,
) -> Option<SkinHit> {
    let mut best: Option<SkinHit> = None;
    for posed in skins.iter().filter(|p| admit(p)) {
        let reach = best.map_or(tmax, |b| b.t);
        if let Some((t, face_normal, face)) = posed.mesh.intersect_local(origin, dir, reach) {
            best = Some(SkinHit { skin: posed.skin, face, t, face_normal });
        }
    }
    best
}

/// Whether a skin admitted by `admit` lies on the ray `(origin, dir)` before `reach`.
pub fn skin_blocks(
    skins: &[SkinSurface],
    admit: impl Fn(&SkinSurface) -> bool,
    origin: DVec3,
    dir: DVec3,
    reach: f64,
) -> bool {
    skins.iter().filter(|p| admit(p)).any(|p| p.mesh.intersect_local(origin, dir, reach).is_some_and(|h| h.0 < reach))
}

/// Barycentric coordinates of `point` in triangle `tri` (`None` for a degenerate one).
pub fn barycentric(tri: [DVec3; 3], point: DVec3) -> Option<[f64; 3]> {
    let (e1, e2, p) = (tri[1] - tri[0], tri[2] - tri[0], point - tri[0]);
    let cross = e1.cross(e2);
    let area = cross.length_squared();
    if area <= 0.0 {
        return None;
    }
    let b1 = p.cross(e2).dot(cross) / area;
    let b2 = e1.cross(p).dot(cross) / area;
    Some([1.0 - b1 - b2, b1, b2])
}
