//! Skins as the cameras see them: each posed in its world for the frame, with a BVH over its
//! triangles, met by the rays that `mj_ray` answers for the geoms.

use glam::DVec3;
use glint_core::{Mesh, NGROUP, Poses, Scene};

/// One skin posed in one world.
pub(crate) struct PosedSkin {
    /// Its id in the scene.
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

impl PosedSkin {
    /// Whether face `face` is lit by its own normal rather than its vertices'.
    pub fn flat_face(&self, face: usize) -> bool {
        self.flat || face >= self.sides_from
    }
}

/// Where a ray meets a skin.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SkinHit {
    /// The skin's id in the scene.
    pub skin: usize,
    /// The face met.
    pub face: usize,
    /// Distance along the ray, in units of its direction.
    pub t: f64,
    /// The unit normal there, interpolated between the face's vertex normals (the renderer
    /// lights a skin by its vertex normals), turned toward the ray's origin.
    pub normal: DVec3,
}

/// World `w`'s skins posed by its body frames (those of alpha 0 or without faces left out).
pub(crate) fn pose(scene: &Scene, poses: &Poses, w: usize) -> Vec<PosedSkin> {
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
            // undrawn rather than failing the frame.
            let mesh = Mesh::new(skin.name.clone(), posed.vert, skin.face.clone(), posed.normal).ok()?;
            let group = skin.group.clamp(0, NGROUP as i32 - 1) as usize;
            let sides_from = skin.face.len() - skin.sides.min(skin.face.len());
            Some(PosedSkin { skin: k, group, mesh, flat: skin.flat, sides_from })
        })
        .collect()
}

/// The nearest skin of an enabled group that the ray `(origin, dir)` meets with
/// `t <= tmax`.
pub(crate) fn nearest(
    skins: &[PosedSkin],
    groups: &[bool; NGROUP],
    origin: DVec3,
    dir: DVec3,
    tmax: f64,
) -> Option<SkinHit> {
    let mut best: Option<SkinHit> = None;
    for posed in skins.iter().filter(|p| groups[p.group]) {
        let reach = best.map_or(tmax, |b| b.t);
        if let Some((t, face_normal, face)) = posed.mesh.intersect_local(origin, dir, reach) {
            let point = origin + dir * t;
            let smooth = if posed.flat_face(face) { None } else { smooth_normal(&posed.mesh, face, point) };
            let mut normal = smooth.unwrap_or(face_normal);
            if normal.dot(dir) > 0.0 && face_normal.dot(dir) > 0.0 {
                // Met from inside: the side the ray sees.
                normal = -normal;
            }
            best = Some(SkinHit { skin: posed.skin, face, t, normal });
        }
    }
    best
}

/// Whether a skin of an enabled group lies on the ray `(origin, dir)` before `reach`.
pub(crate) fn blocks(skins: &[PosedSkin], groups: &[bool; NGROUP], origin: DVec3, dir: DVec3, reach: f64) -> bool {
    skins
        .iter()
        .filter(|p| groups[p.group])
        .any(|p| p.mesh.intersect_local(origin, dir, reach).is_some_and(|h| h.0 < reach))
}

/// Barycentric coordinates of `point` on face `face` of `mesh`.
pub(crate) fn barycentric(mesh: &Mesh, face: usize, point: DVec3) -> Option<[f64; 3]> {
    let tri = mesh.face.get(face)?.map(|i| DVec3::from(mesh.vert[i as usize].map(f64::from)));
    crate::render::barycentric(tri, point)
}

/// The vertex normals of face `face` interpolated at `point`.
fn smooth_normal(mesh: &Mesh, face: usize, point: DVec3) -> Option<DVec3> {
    let b = barycentric(mesh, face, point)?;
    let f = mesh.face[face];
    let n = (0..3).map(|k| DVec3::from(mesh.normal[f[k] as usize].map(f64::from)) * b[k]).sum::<DVec3>();
    (n.length_squared() > 0.0).then(|| n.normalize())
}

/// A skin's texture coordinates at `point` on face `face` (none when the skin has none).
pub(crate) fn uv(texcoord: &[[f32; 2]], mesh: &Mesh, face: usize, point: DVec3) -> Option<[f64; 2]> {
    if texcoord.is_empty() {
        return None;
    }
    let b = barycentric(mesh, face, point)?;
    let f = mesh.face[face];
    let t = f.map(|i| texcoord[i as usize].map(f64::from));
    Some([0, 1].map(|a| b[0] * t[0][a] + b[1] * t[1][a] + b[2] * t[2][a]))
}
