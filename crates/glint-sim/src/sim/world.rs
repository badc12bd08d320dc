//! Each world's state beyond MuJoCo's data: per-world assets (each variant compiled once
//! through MuJoCo's model editing, worlds put on their variant's model, and every per-world
//! field, the seed's dependent fields included, taken from what the variant compiled to), and
//! each episode's `[randomize]` draws.

use std::path::Path;

use glint_core::Variant;
use glint_lidar::LidarBinding;
use glint_mujoco::SceneSpec;

use super::Simulation;
use crate::fields::{Fields, GEOMETRY_FIELDS};
use crate::{SimError, SimOptions};

/// Which variant each world is on: world `w` takes `variants[assign[w % assign.len()]]`
/// (MuJoCo Warp's `w % len` rule over the assignment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VariantPlan {
    /// The variants, each the base model with its asset swaps.
    pub variants: Vec<Variant>,
    /// A variant index per world (repeated over the worlds).
    pub assign: Vec<usize>,
}

impl VariantPlan {
    /// An error unless the plan can be applied: at least one variant and one assignment,
    /// each assignment naming a variant, names unique.
    pub fn check(&self) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::Setting(m));
        if self.variants.is_empty() {
            return bad("per-world assets need at least one variant".into());
        }
        if self.assign.is_empty() {
            return bad(
                "per-world assets need an assignment: a variant index per world (world w takes assign[w % len])".into(),
            );
        }
        if let Some(&k) = self.assign.iter().find(|&&k| k >= self.variants.len()) {
            return bad(format!(
                "the assignment names variant {k}, and there are {} (0 to {})",
                self.variants.len(),
                self.variants.len() - 1
            ));
        }
        for (i, v) in self.variants.iter().enumerate() {
            if self.variants[..i].iter().any(|u| u.name == v.name) {
                return bad(format!("two variants are called `{}`: give each its own name", v.name));
            }
        }
        Ok(())
    }
}

impl Simulation {
    /// The MJCF file at `path` (holding every asset the variants use) over `options.nworld`
    /// worlds, each on its variant of `plan`: glint compiles each variant once through
    /// MuJoCo's model editing, steps each world on its variant's model, and gives the lidar,
    /// the cameras and the per-world fields (`geom_dataid`, `geom_size`, `geom_pos`, masses,
    /// inertias, ...) what compiling that variant alone gives. Meshes and their BVHs are
    /// held once for all worlds.
    pub fn from_variants(
        path: impl AsRef<Path>,
        plan: &VariantPlan,
        bindings: Vec<LidarBinding>,
        options: SimOptions,
    ) -> Result<Simulation, SimError> {
        plan.check()?;
        let path = path.as_ref();
        let mut sim = Simulation::from_xml_file(path, bindings, options)?;
        let spec = SceneSpec::from_xml_file(path)?;
        sim.apply_variants(&spec, plan)?;
        Ok(sim)
    }

    /// Compiles `plan`'s variants from `spec` (the spec the simulation's model compiled from)
    /// and puts every world on its variant.
    pub(crate) fn apply_variants(&mut self, spec: &SceneSpec, plan: &VariantPlan) -> Result<(), SimError> {
        plan.check()?;
        self.world.variants =
            plan.variants.iter().map(|v| spec.compile_variant(&self.model, v)).collect::<Result<Vec<_>, _>>()?;
        let nworld = self.nworld();
        let mut per_world = Vec::with_capacity(nworld);
        for w in 0..nworld {
            let k = plan.assign[w % plan.assign.len()];
            self.worlds.set_variant(w, &self.world.variants[k])?;
            self.rays.refit_world(self.worlds.poses(), w);
            self.world.variant_of[w] = Some(k);
            per_world.push(Fields::new(&self.world.variants[k].scene, &self.worlds.physics(w)?));
        }
        self.world.fields = Fields::stack(&per_world);
        for w in 0..nworld {
            self.sync_world_fields(w, &GEOMETRY_FIELDS)?;
        }
        Ok(())
    }

    /// Draws world `w`'s `[randomize]` values for its episode, from the episode's seed.
    pub(crate) fn draw_fields(&mut self, w: usize) -> Result<(), SimError> {
        if !self.world.draws.is_empty() {
            let (seed, nworld) = (self.episodes.seed(w), self.nworld());
            self.world.drawn[w] = self.world.draws.apply(&mut self.world.fields, (w, nworld), seed)?;
            let changed = self.world.draws.fields();
            self.sync_world_fields(w, &changed)?;
        }
        Ok(())
    }

    /// What world `w`'s episode drew from `[randomize]`, by `field/target`.
    pub fn drawn_fields(&self, w: usize) -> Result<&std::collections::BTreeMap<String, Vec<f64>>, SimError> {
        self.world_ok(w)?;
        Ok(&self.world.drawn[w])
    }

    /// The variant world `w` is on (`None`: the base model).
    pub fn world_variant(&self, w: usize) -> Result<Option<&str>, SimError> {
        self.world_ok(w)?;
        Ok(self.world.variant_name(w))
    }

    /// Bytes the simulation's geometry holds: per world (its top-level BVH, its boxes and
    /// its poses), and once for all worlds (the meshes and height fields with their BVHs,
    /// and the distinct per-world geometries).
    pub fn geometry_bytes(&self) -> (Vec<usize>, usize) {
        let (mut per_world, shared) = self.rays.bytes();
        let poses = self.worlds.poses();
        let frame = size_of::<glam::DVec3>() + size_of::<glam::DMat3>();
        let pose_bytes = (poses.geom_xpos.len() + poses.xpos.len()) * frame / poses.nworld.max(1);
        per_world.iter_mut().for_each(|b| *b += pose_bytes);
        let assets: usize = self.scene.mesh.iter().map(|m| m.bytes()).sum::<usize>()
            + self.scene.hfield.iter().map(|h| h.data.len() * 4).sum::<usize>();
        (per_world, shared + assets)
    }

    /// The scene world `w` was compiled as: its variant's (whose meshes and height fields
    /// are the shared scene's), or the shared scene.
    pub(crate) fn world_scene(&self, w: usize) -> &glint_core::Scene {
        match self.world.variant_of[w] {
            Some(k) => &self.world.variants[k].scene,
            None => &self.scene,
        }
    }

    /// Number of distinct geometries among the worlds (worlds that agree share one).
    pub fn distinct_geometries(&self) -> usize {
        self.rays.distinct_shapes()
    }

    /// The meshes every world's rays use, one copy each (shared by all worlds).
    pub fn meshes(&self) -> &[glint_core::Mesh] {
        &self.scene.mesh
    }
}
