//! The ray caster: the top level of every world (a BVH over the geoms' world bounds, planes
//! kept apart), built, rebuilt and refitted to new poses.

use glam::{DMat3, DVec3};
use rayon::prelude::*;

use crate::bvh::{Aabb, Bvh};
use crate::{CoreError, Poses, Scene};

/// The top-level acceleration structure of every world, and the casting entry points.
#[derive(Clone, Debug)]
pub struct RayCaster {
    /// Geoms of type plane (tested against every ray).
    pub(super) planes: Vec<u32>,
    /// Geoms in the top level, in primitive order.
    pub(super) tlas_geoms: Vec<u32>,
    /// Their local-frame bounds.
    pub(super) local_bounds: Vec<Aabb>,
    /// One top-level BVH per world.
    pub(super) tlas: Vec<Bvh>,
    /// World bounds of the top-level geoms, shape `(nworld, ntlas)`.
    pub(super) tlas_boxes: Vec<Vec<Aabb>>,
}

/// World-frame bounds of a local box under the frame `(pos, rot)`, grown by a hair (a
/// nanometre per metre of the box's size and place): packets test each ray against these
/// bounds exactly, and a ray through a box's edge or corner could round to just outside its
/// unpadded bounds, a hit single rays (and MuJoCo) find.
fn world_bounds(local: &Aabb, pos: DVec3, rot: &DMat3) -> Aabb {
    let (c, h) = (local.center(), 0.5 * (local.max - local.min));
    let half = rot.x_axis.abs() * h.x + rot.y_axis.abs() * h.y + rot.z_axis.abs() * h.z;
    let center = pos + *rot * c;
    let hair = 1e-9 * (1.0 + center.abs().max_element() + half.max_element());
    Aabb::from_center_half(center, half + DVec3::splat(hair))
}

impl RayCaster {
    /// Builds the top level of every world of `poses`.
    pub fn new(scene: &Scene, poses: &Poses) -> RayCaster {
        let (mut planes, mut tlas_geoms, mut local_bounds) = (Vec::new(), Vec::new(), Vec::new());
        for g in 0..scene.ngeom() {
            if !scene.geom_visible(g) {
                continue;
            }
            match scene.geom_local_bounds(g) {
                None => planes.push(g as u32),
                Some(b) => {
                    tlas_geoms.push(g as u32);
                    local_bounds.push(b);
                }
            }
        }
        let mut caster = RayCaster { planes, tlas_geoms, local_bounds, tlas: Vec::new(), tlas_boxes: Vec::new() };
        caster.rebuild(poses);
        caster
    }

    /// Number of worlds the caster was built for.
    pub fn nworld(&self) -> usize {
        self.tlas.len()
    }

    fn boxes(&self, poses: &Poses, w: usize) -> Vec<Aabb> {
        let mut boxes = vec![Aabb::EMPTY; self.tlas_geoms.len()];
        world_boxes(&self.tlas_geoms, &self.local_bounds, poses, w, &mut boxes);
        boxes
    }

    /// Fails unless `poses` holds as many worlds as the caster was built for.
    pub(super) fn check_poses(&self, poses: &Poses) -> Result<(), CoreError> {
        if poses.nworld == self.tlas.len() {
            return Ok(());
        }
        Err(CoreError::Shape {
            field: "poses",
            len: poses.nworld,
            expected: format!("the ray caster was built for {} worlds", self.tlas.len()),
        })
    }

    /// Rebuilds every world's top level from scratch (use after large motions, or when the
    /// number of worlds changes).
    pub fn rebuild(&mut self, poses: &Poses) {
        self.tlas_boxes = (0..poses.nworld).into_par_iter().map(|w| self.boxes(poses, w)).collect();
        self.tlas = self.tlas_boxes.par_iter().map(|b| Bvh::build(b, 2)).collect();
    }

    /// Refits every world's top level to new poses (as MuJoCo Warp's `refit_bvh`), in parallel.
    pub fn refit(&mut self, poses: &Poses) {
        if self.tlas.len() != poses.nworld {
            return self.rebuild(poses);
        }
        let (geoms, local) = (&self.tlas_geoms, &self.local_bounds);
        self.tlas.par_iter_mut().zip(self.tlas_boxes.par_iter_mut()).enumerate().for_each(|(w, (bvh, boxes))| {
            refit_world(geoms, local, poses, w, boxes, bvh);
        });
    }

    /// Refits world `w` only.
    pub fn refit_world(&mut self, poses: &Poses, w: usize) {
        refit_world(&self.tlas_geoms, &self.local_bounds, poses, w, &mut self.tlas_boxes[w], &mut self.tlas[w]);
    }
}

/// World bounds of the top-level geoms `geoms` (local bounds `local`) in world `w`.
fn world_boxes(geoms: &[u32], local: &[Aabb], poses: &Poses, w: usize, boxes: &mut [Aabb]) {
    let (xpos, xmat) = poses.geoms(w);
    for ((b, &g), l) in boxes.iter_mut().zip(geoms).zip(local) {
        *b = world_bounds(l, xpos[g as usize], &xmat[g as usize]);
    }
}

fn refit_world(geoms: &[u32], local: &[Aabb], poses: &Poses, w: usize, boxes: &mut [Aabb], bvh: &mut Bvh) {
    world_boxes(geoms, local, poses, w, boxes);
    bvh.refit(boxes);
}
