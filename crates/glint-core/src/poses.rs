//! Per-world poses (the output of MuJoCo's kinematics) as structure-of-arrays, world-major.

use glam::{DMat3, DVec3};

use crate::{CoreError, Scene};

/// Frames of every geom, body, camera, light and site in each of `nworld` worlds. Rotation
/// matrices have the object's local axes as columns (MuJoCo's row-major `xmat`, transposed
/// into glam's column-major storage).
#[derive(Clone, Debug)]
pub struct Poses {
    /// Number of worlds.
    pub nworld: usize,
    /// Geom positions, shape `(nworld, ngeom)`.
    pub geom_xpos: Vec<DVec3>,
    /// Geom orientations, shape `(nworld, ngeom)`.
    pub geom_xmat: Vec<DMat3>,
    /// Body frame positions, shape `(nworld, nbody)`.
    pub xpos: Vec<DVec3>,
    /// Body frame orientations, shape `(nworld, nbody)`.
    pub xmat: Vec<DMat3>,
    /// Camera positions, shape `(nworld, ncam)`.
    pub cam_xpos: Vec<DVec3>,
    /// Camera orientations, shape `(nworld, ncam)`.
    pub cam_xmat: Vec<DMat3>,
    /// Light positions, shape `(nworld, nlight)`.
    pub light_xpos: Vec<DVec3>,
    /// Light directions, shape `(nworld, nlight)`.
    pub light_xdir: Vec<DVec3>,
    /// Site positions, shape `(nworld, nsite)`.
    pub site_xpos: Vec<DVec3>,
    /// Site orientations, shape `(nworld, nsite)`.
    pub site_xmat: Vec<DMat3>,
    /// Per world, the straight pieces of the spatial tendons' paths as MuJoCo's renderer
    /// draws them (their number varies with the wrapping), shape `(nworld,)`.
    pub tendon_segments: Vec<Vec<TendonSegment>>,
}

/// One piece of a spatial tendon's drawn path: a capsule from `from` to `to` of radius
/// `width` (MuJoCo's `mjv_connector`), coloured `rgba` (the tendon's, mixed toward the
/// constraint colour as its limit engages, as `mjv_addGeoms` does).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TendonSegment {
    /// The tendon's id.
    pub tendon: usize,
    /// Where the piece starts, world frame.
    pub from: DVec3,
    /// Where it ends, world frame.
    pub to: DVec3,
    /// Its radius, metres.
    pub width: f64,
    /// Its colour.
    pub rgba: [f32; 4],
}

impl TendonSegment {
    /// The capsule's centre, orientation (local z along the piece) and size in MuJoCo's geom
    /// convention (radius, half-length).
    pub fn capsule(&self) -> (DVec3, DMat3, DVec3) {
        let along = self.to - self.from;
        let z = along.normalize_or(DVec3::Z);
        let x = z.any_orthonormal_vector();
        let rot = DMat3::from_cols(x, z.cross(x), z);
        ((self.from + self.to) / 2.0, rot, DVec3::new(self.width, along.length() / 2.0, 0.0))
    }
}

/// Converts MuJoCo's row-major 3×3 `xmat` into a matrix whose columns are the local axes.
pub fn mat_from_mujoco(xmat: &[f64]) -> DMat3 {
    DMat3::from_cols_array(&[xmat[0], xmat[3], xmat[6], xmat[1], xmat[4], xmat[7], xmat[2], xmat[5], xmat[8]])
}

impl Poses {
    /// Poses for `nworld` worlds of `scene`, every frame at the origin with identity rotation.
    pub fn new(scene: &Scene, nworld: usize) -> Poses {
        let v = |n: usize| vec![DVec3::ZERO; n * nworld];
        let m = |n: usize| vec![DMat3::IDENTITY; n * nworld];
        Poses {
            nworld,
            geom_xpos: v(scene.ngeom()),
            geom_xmat: m(scene.ngeom()),
            xpos: v(scene.nbody()),
            xmat: m(scene.nbody()),
            cam_xpos: v(scene.ncam()),
            cam_xmat: m(scene.ncam()),
            light_xpos: v(scene.nlight()),
            light_xdir: v(scene.nlight()),
            site_xpos: v(scene.nsite()),
            site_xmat: m(scene.nsite()),
            tendon_segments: vec![Vec::new(); nworld],
        }
    }

    /// Number of geoms per world.
    pub fn ngeom(&self) -> usize {
        self.geom_xpos.len() / self.nworld.max(1)
    }

    /// Geom positions and orientations of world `w`.
    pub fn geoms(&self, w: usize) -> (&[DVec3], &[DMat3]) {
        let n = self.ngeom();
        (&self.geom_xpos[w * n..(w + 1) * n], &self.geom_xmat[w * n..(w + 1) * n])
    }

    /// Checks that world `w` exists.
    pub fn check_world(&self, w: usize) -> Result<(), CoreError> {
        if w < self.nworld { Ok(()) } else { Err(CoreError::NoSuchWorld { world: w, nworld: self.nworld }) }
    }

    /// Position and orientation of site `s` in world `w`.
    pub fn site(&self, w: usize, s: usize) -> (DVec3, DMat3) {
        let n = self.site_xpos.len() / self.nworld.max(1);
        (self.site_xpos[w * n + s], self.site_xmat[w * n + s])
    }
}
