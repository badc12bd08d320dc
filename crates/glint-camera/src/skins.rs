//! Skins as the cameras see them: posed and met as [`SkinSurface`] poses and meets them for
//! every sensor, lit by their vertex normals and textured by their coordinates.

use glam::DVec3;
use glint_core::{NGROUP, SkinSurface, nearest_skin, skin_blocks};

/// Where a ray meets a skin, as the renderer lights it.
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

/// The nearest skin of an enabled group that the ray `(origin, dir)` meets with
/// `t <= tmax`.
pub(crate) fn nearest(
    skins: &[SkinSurface],
    groups: &[bool; NGROUP],
    origin: DVec3,
    dir: DVec3,
    tmax: f64,
) -> Option<SkinHit> {
    let hit = nearest_skin(skins, |p| groups[p.group], origin, dir, tmax)?;
    let posed = skins.iter().find(|p| p.skin == hit.skin)?;
    let point = origin + dir * hit.t;
    let smooth = if posed.flat_face(hit.face) { None } else { posed.smooth_normal(hit.face, point) };
    let mut normal = smooth.unwrap_or(hit.face_normal);
    if normal.dot(dir) > 0.0 && hit.face_normal.dot(dir) > 0.0 {
        // Met from inside: the side the ray sees.
        normal = -normal;
    }
    Some(SkinHit { skin: hit.skin, face: hit.face, t: hit.t, normal })
}

/// Whether a skin of an enabled group lies on the ray `(origin, dir)` before `reach`.
pub(crate) fn blocks(skins: &[SkinSurface], groups: &[bool; NGROUP], origin: DVec3, dir: DVec3, reach: f64) -> bool {
    skin_blocks(skins, |p| groups[p.group], origin, dir, reach)
}

/// A skin's texture coordinates at `point` on face `face` (none when the skin has none).
pub(crate) fn uv(texcoord: &[[f32; 2]], posed: &SkinSurface, face: usize, point: DVec3) -> Option<[f64; 2]> {
    if texcoord.is_empty() {
        return None;
    }
    let b = posed.barycentric(face, point)?;
    let f = posed.mesh.face[face];
    let t = f.map(|i| texcoord[i as usize].map(f64::from));
    Some([0, 1].map(|a| b[0] * t[0][a] + b[1] * t[1][a] + b[2] * t[2][a]))
}
