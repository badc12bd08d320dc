//! The ray caster: the top level of every world (a BVH over the geoms' world bounds, planes
//! kept apart), built, rebuilt and refitted to new poses.

use std::sync::Arc;

use glam::{DMat3, DVec3};
use rayon::prelude::*;

use crate::bvh::{Aabb, Bvh};
use crate::{CoreError, GeomType, Poses, Scene, Shapes};

/// The top-level acceleration structure of every world, and the casting entry points.
#[derive(Clone, Debug)]
pub struct RayCaster {
    /// The distinct geometries of the worlds; set 0 is the scene's own.
    pub(super) sets: Vec<ShapeSet>,
    /// Per world, the set it reads.
    pub(super) world_set: Vec<u32>,
    /// One top-level BVH per world.
    pub(super) tlas: Vec<Bvh>,
    /// World bounds of each world's top-level geoms, shape `(nworld, ntlas of its set)`.
    pub(super) tlas_boxes: Vec<Vec<Aabb>>,
}

/// The geometry that some worlds share, and how their top levels are made of it.
#[derive(Clone, Debug)]
pub(super) struct ShapeSet {
    pub(super) shapes: Arc<Shapes>,
    /// Geoms of type plane (tested against every ray).
    pub(super) planes: Vec<u32>,
    /// Geoms in the top level, in primitive order.
    pub(super) tlas_geoms: Vec<u32>,
    /// Their local-frame bounds.
    pub(super) local_bounds: Vec<Aabb>,
}

impl ShapeSet {
    fn new(scene: &Scene, shapes: Arc<Shapes>) -> ShapeSet {
        let (mut planes, mut tlas_geoms, mut local_bounds) = (Vec::new(), Vec::new(), Vec::new());
        for g in 0..shapes.ngeom() {
            if !shapes.solid(g) {
                continue;
            }
            match shapes.local_bounds(scene, g) {
                None => planes.push(g as u32),
                Some(b) => {
                    tlas_geoms.push(g as u32);
                    local_bounds.push(b);
                }
            }
        }
        ShapeSet { shapes, planes, tlas_geoms, local_bounds }
    }

    /// The geometry rays of this set meet.
    #[inline(always)]
    pub(super) fn geometry<'a>(&'a self, scene: &'a Scene) -> Geometry<'a> {
        Geometry { scene, shapes: &self.shapes }
    }

    fn bytes(&self) -> usize {
        let s = &self.shapes;
        s.ngeom() * (size_of::<GeomType>() + size_of::<DVec3>() + size_of::<i32>() + size_of::<bool>())
            + (self.planes.len() + self.tlas_geoms.len()) * size_of::<u32>()
            + self.local_bounds.len() * size_of::<Aabb>()
    }
}

/// The shapes of one world and the scene's meshes and height fields they refer to.
#[derive(Clone, Copy)]
pub(super) struct Geometry<'a> {
    pub(super) scene: &'a Scene,
    pub(super) shapes: &'a Shapes,
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
    /// Builds the top level of every world of `poses`, all with the scene's own geometry.
    pub fn new(scene: &Scene, poses: &Poses) -> RayCaster {
        let base = ShapeSet::new(scene, Arc::new(Shapes::of(scene)));
        let mut caster =
            RayCaster { sets: vec![base], world_set: vec![0; poses.nworld], tlas: Vec::new(), tlas_boxes: Vec::new() };
        caster.rebuild(poses);
        caster
    }

    /// Number of worlds the caster was built for.
    pub fn nworld(&self) -> usize {
        self.tlas.len()
    }

    #[inline(always)]
    pub(super) fn set(&self, w: usize) -> &ShapeSet {
        &self.sets[self.world_set[w] as usize]
    }

    /// The geometry world `w` casts against.
    pub fn shapes(&self, w: usize) -> &Arc<Shapes> {
        &self.set(w).shapes
    }

    /// Number of distinct geometries among the worlds.
    pub fn distinct_shapes(&self) -> usize {
        self.sets.len()
    }

    /// Gives every world its own geometry (`shapes[w]`, validated against `scene`): worlds
    /// whose shapes are equal share one set, and the top level of each world whose geometry
    /// changed is rebuilt at `poses`. Meshes and height fields stay the scene's.
    pub fn set_shapes(&mut self, scene: &Scene, poses: &Poses, shapes: &[Arc<Shapes>]) -> Result<(), CoreError> {
        self.check_poses(poses)?;
        if shapes.len() != self.nworld() {
            return Err(CoreError::Shape {
                field: "shapes",
                len: shapes.len(),
                expected: format!("one per world ({})", self.nworld()),
            });
        }
        // All or nothing: every world's shapes are checked before any is given.
        for s in shapes {
            s.validate(scene)?;
        }
        for (w, s) in shapes.iter().enumerate() {
            self.set_world_shapes(scene, poses, w, s.clone())?;
        }
        Ok(())
    }

    /// Gives world `w` the geometry `shapes` (validated against `scene` unless another world
    /// has it already) and rebuilds its top level at `poses` when it changed; the other
    /// worlds are untouched.
    pub fn set_world_shapes(
        &mut self,
        scene: &Scene,
        poses: &Poses,
        w: usize,
        shapes: Arc<Shapes>,
    ) -> Result<(), CoreError> {
        self.check_poses(poses)?;
        poses.check_world(w)?;
        if **self.shapes(w) == *shapes {
            return Ok(());
        }
        let k = match self.sets.iter().position(|set| *set.shapes == *shapes) {
            Some(k) => k,
            None => {
                shapes.validate(scene)?;
                self.sets.push(ShapeSet::new(scene, shapes));
                self.sets.len() - 1
            }
        };
        self.world_set[w] = k as u32;
        self.tlas_boxes[w] = self.boxes(poses, w);
        self.tlas[w] = Bvh::build(&self.tlas_boxes[w], 2);
        self.drop_unused_sets();
        Ok(())
    }

    /// Forgets the sets no world reads any more, once they are as many as the used ones.
    fn drop_unused_sets(&mut self) {
        let mut used = vec![false; self.sets.len()];
        for &k in &self.world_set {
            used[k as usize] = true;
        }
        let nused = used.iter().filter(|&&u| u).count();
        if self.sets.len() < 2 * nused.max(4) {
            return;
        }
        let mut renumber = vec![0u32; self.sets.len()];
        let mut kept = Vec::with_capacity(nused);
        for (k, set) in std::mem::take(&mut self.sets).into_iter().enumerate() {
            if used[k] {
                renumber[k] = kept.len() as u32;
                kept.push(set);
            }
        }
        self.sets = kept;
        for k in &mut self.world_set {
            *k = renumber[*k as usize];
        }
    }

    /// Bytes the caster holds for world `w` alone (its top level and boxes), and for the
    /// geometries the worlds share.
    pub fn bytes(&self) -> (Vec<usize>, usize) {
        let per_world = (0..self.nworld())
            .map(|w| self.tlas[w].bytes() + self.tlas_boxes[w].len() * size_of::<Aabb>() + size_of::<u32>())
            .collect();
        (per_world, self.sets.iter().map(ShapeSet::bytes).sum())
    }

    fn boxes(&self, poses: &Poses, w: usize) -> Vec<Aabb> {
        let set = self.set(w);
        let mut boxes = vec![Aabb::EMPTY; set.tlas_geoms.len()];
        world_boxes(set, poses.geoms(w), &mut boxes);
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
    /// number of worlds changes: added worlds take the scene's own geometry).
    pub fn rebuild(&mut self, poses: &Poses) {
        self.world_set.resize(poses.nworld, 0);
        self.tlas_boxes = (0..poses.nworld).into_par_iter().map(|w| self.boxes(poses, w)).collect();
        self.tlas = self.tlas_boxes.par_iter().map(|b| Bvh::build(b, 2)).collect();
    }

    /// Refits every world's top level to new poses (as MuJoCo Warp's `refit_bvh`), in parallel.
    pub fn refit(&mut self, poses: &Poses) {
        let Some(tops) = self.top_levels(poses.nworld) else { return self.rebuild(poses) };
        tops.into_par_iter().enumerate().for_each(|(w, mut top)| {
            let (xpos, xmat) = poses.geoms(w);
            top.refit(xpos, xmat);
        });
    }

    /// Refits world `w` only.
    pub fn refit_world(&mut self, poses: &Poses, w: usize) {
        let set = &self.sets[self.world_set[w] as usize];
        let (xpos, xmat) = poses.geoms(w);
        WorldTopLevel { set, boxes: &mut self.tlas_boxes[w], bvh: &mut self.tlas[w] }.refit(xpos, xmat);
    }

    /// Every world's top level, each to be refitted on its own ([`WorldTopLevel::refit`]) from
    /// that world's geom poses, in a caller's parallel loop over the worlds (the physics
    /// step's, so that a step makes one pass over the worlds rather than two). `None` when
    /// the caster was built for other than `nworld` worlds: [`RayCaster::refit`] rebuilds then.
    pub fn top_levels(&mut self, nworld: usize) -> Option<Vec<WorldTopLevel<'_>>> {
        if self.tlas.len() != nworld {
            return None;
        }
        let (sets, world_set) = (&self.sets, &self.world_set);
        let worlds = self.tlas.iter_mut().zip(&mut self.tlas_boxes).zip(world_set);
        Some(worlds.map(|((bvh, boxes), &s)| WorldTopLevel { set: &sets[s as usize], boxes, bvh }).collect())
    }
}

/// One world's top level, from [`RayCaster::top_levels`].
pub struct WorldTopLevel<'a> {
    set: &'a ShapeSet,
    boxes: &'a mut Vec<Aabb>,
    bvh: &'a mut Bvh,
}

impl WorldTopLevel<'_> {
    /// Refits this world's top level to its geoms' world positions and orientations (the
    /// world's rows of [`Poses::geom_xpos`] and [`Poses::geom_xmat`]), as
    /// [`RayCaster::refit`] does for every world.
    pub fn refit(&mut self, geom_xpos: &[DVec3], geom_xmat: &[DMat3]) {
        world_boxes(self.set, (geom_xpos, geom_xmat), self.boxes);
        self.bvh.refit(self.boxes);
    }
}

/// World bounds of the top-level geoms of `set` at the geom poses `(xpos, xmat)` of one world.
fn world_boxes(set: &ShapeSet, (xpos, xmat): (&[DVec3], &[DMat3]), boxes: &mut [Aabb]) {
    for ((b, &g), l) in boxes.iter_mut().zip(&set.tlas_geoms).zip(&set.local_bounds) {
        *b = world_bounds(l, xpos[g as usize], &xmat[g as usize]);
    }
}
