//! Skins: triangle surfaces whose vertices follow the bodies they are bound to (MuJoCo's
//! `<skin>`, dm_control's dog and rodent). MuJoCo's physics and `mj_ray` never see them; its
//! renderer draws them, posed each frame by `mjv_updateActiveSkin`, which [`Skin::pose`]
//! follows.

use glam::{DMat3, DQuat, DVec3};

use crate::CoreError;

/// One skin as MuJoCo compiled it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Skin {
    /// Name in the model (may be empty).
    pub name: String,
    /// Colour (`skin_rgba`).
    pub rgba: [f32; 4],
    /// Material id or −1 (`skin_matid`).
    pub matid: i32,
    /// Visibility group (`skin_group`).
    pub group: i32,
    /// How far each posed vertex moves out along its normal, metres (`skin_inflate`).
    pub inflate: f32,
    /// Vertex positions in the bind pose, shape `(nvert, 3)`.
    pub vert: Vec<[f32; 3]>,
    /// Texture coordinates per vertex, shape `(nvert, 2)`; empty when the skin has none.
    pub texcoord: Vec<[f32; 2]>,
    /// Vertex indices of each triangle, shape `(nface, 3)`.
    pub face: Vec<[u32; 3]>,
    /// The bodies that move its vertices.
    pub bones: Vec<SkinBone>,
    /// The MuJoCo flex this surface draws, when it is one rather than a `<skin>` (see
    /// `glint_mujoco`'s flex extraction): its vertex normals then sum unit face normals, as
    /// `mjv_updateActiveFlex` smooths them, where a skin's sum area-weighted ones.
    pub flex: Option<usize>,
    /// How many of the last faces close a cloth's border (strips between its two layers):
    /// they take no part in the vertex normals.
    pub sides: usize,
    /// Whether it is lit by its faces' normals rather than its smoothed vertex normals (a
    /// flex's `flatskin`).
    pub flat: bool,
}

/// A body a skin is bound to, and the vertices it moves.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SkinBone {
    /// The body.
    pub body: usize,
    /// The body's position in the bind pose.
    pub bindpos: [f32; 3],
    /// The body's orientation in the bind pose (w, x, y, z).
    pub bindquat: [f32; 4],
    /// Vertices it moves, shape `(n,)`.
    pub vert: Vec<u32>,
    /// Their weights, shape `(n,)`.
    pub weight: Vec<f32>,
}

/// A skin posed in the world frame.
#[derive(Clone, Debug, PartialEq)]
pub struct PosedSkin {
    /// Vertex positions, shape `(nvert, 3)`.
    pub vert: Vec<[f32; 3]>,
    /// Unit vertex normals (area-weighted face normals), shape `(nvert, 3)`.
    pub normal: Vec<[f32; 3]>,
}

impl Skin {
    /// The skin posed by body frames `xpos`, `xmat` (one world's, indexed by body id), as
    /// `mjv_updateActiveSkin` poses it: each bone moves its vertices by the body's motion
    /// from the bind pose, weighted; normals are the sums of the adjacent faces' (area
    /// weighted) normals; `inflate` then moves each vertex along its normal. Single
    /// precision, as MuJoCo accumulates it.
    pub fn pose(&self, xpos: &[DVec3], xmat: &[DMat3]) -> PosedSkin {
        let mut vert = vec![[0.0f32; 3]; self.vert.len()];
        for bone in &self.bones {
            let [w, x, y, z] = bone.bindquat.map(f64::from);
            let bind = DMat3::from_quat(DQuat::from_xyzw(x, y, z, w).normalize());
            let rotate = xmat[bone.body] * bind.transpose();
            let translate = xpos[bone.body] - rotate * DVec3::from(bone.bindpos.map(f64::from));
            for (&v, &weight) in bone.vert.iter().zip(&bone.weight) {
                let p = rotate * DVec3::from(self.vert[v as usize].map(f64::from)) + translate;
                let acc = &mut vert[v as usize];
                for k in 0..3 {
                    acc[k] += weight * p[k] as f32;
                }
            }
        }
        let mut normal = vec![[0.0f32; 3]; vert.len()];
        for f in &self.face[..self.face.len() - self.sides.min(self.face.len())] {
            let p = f.map(|i| DVec3::from(vert[i as usize].map(f64::from)));
            let mut n = (p[1] - p[0]).cross(p[2] - p[0]);
            if self.flex.is_some() {
                n = n.normalize_or_zero();
            }
            for &i in f {
                for k in 0..3 {
                    normal[i as usize][k] += n[k] as f32;
                }
            }
        }
        for (n, v) in normal.iter_mut().zip(vert.iter_mut()) {
            let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
            let scale = 1.0 / len.max(1e-15);
            for k in 0..3 {
                n[k] *= scale;
                v[k] += self.inflate * n[k];
            }
        }
        PosedSkin { vert, normal }
    }

    /// Checks that its faces, bones, material and texture coordinates refer to what exists
    /// (`nbody` bodies, `nmat` materials).
    pub fn validate(&self, nbody: usize, nmat: usize) -> Result<(), CoreError> {
        let bad = |reason: String| CoreError::BadShape { kind: "skin", name: self.name.clone(), reason };
        let nvert = self.vert.len();
        if self.matid >= nmat as i32 {
            return Err(bad(format!("its material {} is outside 0..{nmat}", self.matid)));
        }
        if let Some((i, f)) = self.face.iter().enumerate().find(|(_, f)| f.iter().any(|&v| v as usize >= nvert)) {
            return Err(bad(format!("face {i} uses vertex {f:?} but the skin has {nvert} vertices")));
        }
        if !self.texcoord.is_empty() && self.texcoord.len() != nvert {
            return Err(bad(format!("it has {} texture coordinates for {nvert} vertices", self.texcoord.len())));
        }
        for (b, bone) in self.bones.iter().enumerate() {
            if bone.body >= nbody {
                return Err(bad(format!("bone {b} is bound to body {} of {nbody}", bone.body)));
            }
            if bone.vert.len() != bone.weight.len() || bone.vert.iter().any(|&v| v as usize >= nvert) {
                return Err(bad(format!("bone {b} moves a vertex outside 0..{nvert} or lacks a weight")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A unit triangle bound wholly to body 1.
    fn triangle() -> Skin {
        Skin {
            name: "tri".into(),
            vert: vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
            face: vec![[0, 1, 2]],
            bones: vec![SkinBone {
                body: 1,
                bindpos: [0.0, 0.0, 0.0],
                bindquat: [1.0, 0.0, 0.0, 0.0],
                vert: vec![0, 1, 2],
                weight: vec![1.0; 3],
            }],
            matid: -1,
            ..Skin::default()
        }
    }

    #[test]
    fn vertices_follow_their_body_from_the_bind_pose() {
        let skin = triangle();
        // Body 1 moved up by 2 and turned 90° about z.
        let xpos = [DVec3::ZERO, DVec3::new(0.0, 0.0, 2.0)];
        let xmat = [DMat3::IDENTITY, DMat3::from_rotation_z(std::f64::consts::FRAC_PI_2)];
        let posed = skin.pose(&xpos, &xmat);
        let close = |a: [f32; 3], b: [f32; 3]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6);
        assert!(close(posed.vert[1], [0.0, 1.0, 2.0]), "{:?}", posed.vert[1]);
        assert!(close(posed.vert[2], [-1.0, 0.0, 2.0]), "{:?}", posed.vert[2]);
        assert!(posed.normal.iter().all(|&n| close(n, [0.0, 0.0, 1.0])));
        // Inflated, each vertex moves out along its normal.
        let fat = Skin { inflate: 0.5, ..skin }.pose(&xpos, &xmat);
        assert!(close(fat.vert[0], [0.0, 0.0, 2.5]), "{:?}", fat.vert[0]);
    }

    #[test]
    fn a_bone_on_a_missing_body_is_refused() {
        let mut skin = triangle();
        assert!(skin.validate(2, 0).is_ok());
        skin.bones[0].body = 5;
        let err = skin.validate(2, 0).unwrap_err().to_string();
        assert!(err.contains("tri") && err.contains("body 5"), "{err}");
    }
}
