//! The simulation's lidars as one [`Sensor`]: glint-lidar's [`Lidars`] (every bound lidar,
//! every world, cast together), the bindings a recording starts from, and what each has
//! cast since the simulation was built.

use glint_core::Scene;
use glint_lidar::{LidarBinding, Lidars, MaterialTable};

use crate::sensors::{Demand, Frame, Sensor, SensorContext, SensorKind};
use crate::{LidarStats, SimError};

/// Every lidar of a simulation.
pub(crate) struct LidarSet {
    lidars: Lidars,
    /// The scene's bindings (names filled in, secondary capture as last set): what a new
    /// recording starts from.
    bindings: Vec<LidarBinding>,
    stats: Vec<LidarStats>,
    /// Whether the scans keep hit points and normals when no output reads them.
    keep_surfaces: bool,
    /// A tick's beams in emission order, reused.
    beams: Vec<u32>,
}

impl LidarSet {
    /// The lidars `lidars` bound with `bindings` (as [`Lidars::new`] filled them in), casting
    /// through `table`'s capture classes.
    pub(crate) fn new(mut lidars: Lidars, scene: &Scene, table: &MaterialTable) -> Result<LidarSet, SimError> {
        // The flagged capture scope reads the scene's NIR classes (a hedge's gaps, a window).
        lidars.set_capture_materials(scene, table);
        let bindings = (0..lidars.len()).map(|s| lidars.binding(s).cloned()).collect::<Result<_, _>>()?;
        Ok(LidarSet {
            stats: vec![LidarStats::default(); lidars.len()],
            lidars,
            bindings,
            keep_surfaces: true,
            beams: Vec::new(),
        })
    }

    /// The lidars.
    pub(crate) fn lidars(&self) -> &Lidars {
        &self.lidars
    }

    /// The lidars, to change.
    pub(crate) fn lidars_mut(&mut self) -> &mut Lidars {
        &mut self.lidars
    }

    /// Sensor `s`'s scene binding (what a recording starts from).
    pub(crate) fn scene_binding(&self, s: usize) -> &LidarBinding {
        &self.bindings[s]
    }

    /// Every scene binding.
    pub(crate) fn scene_bindings(&self) -> &[LidarBinding] {
        &self.bindings
    }

    /// Sensor `s`'s scene binding, to change.
    pub(crate) fn scene_binding_mut(&mut self, s: usize) -> &mut LidarBinding {
        &mut self.bindings[s]
    }

    /// What sensor `s` has cast.
    pub(crate) fn stats(&self, s: usize) -> Option<LidarStats> {
        self.stats.get(s).copied()
    }

    /// Keep hit points and normals whoever reads them (`true`), or only for an output that
    /// reads them.
    pub(crate) fn set_keep_surfaces(&mut self, keep: bool, read: bool) {
        self.keep_surfaces = keep;
        self.apply_surfaces(read);
    }

    /// Whether the scans keep surfaces when no output reads them.
    pub(crate) fn keeps_surfaces(&self) -> bool {
        self.keep_surfaces
    }

    /// Keeps surfaces while `read` (an output reads them) or as asked.
    pub(crate) fn apply_surfaces(&mut self, read: bool) {
        self.lidars.set_keep_surfaces(self.keep_surfaces || read);
    }

    /// Puts every sensor back on its scene configuration and secondary capture (a recording
    /// starts from the scene's bindings).
    pub(crate) fn restore_scene_bindings(&mut self) -> Result<(), SimError> {
        for (s, binding) in self.bindings.iter().enumerate() {
            if self.lidars.config(s)? != binding.scan {
                self.lidars.set_config(s, binding.scan)?;
            }
            self.lidars.set_secondary_capture(s, binding.secondary_capture, binding.secondary_scope)?;
        }
        Ok(())
    }

    /// Makes the secondary capture chosen while recording take effect.
    pub(crate) fn apply_scene_capture(&mut self) -> Result<(), SimError> {
        for (s, binding) in self.bindings.iter().enumerate() {
            self.lidars.set_secondary_capture(s, binding.secondary_capture, binding.secondary_scope)?;
        }
        Ok(())
    }
}

impl Sensor for LidarSet {
    fn kind(&self) -> SensorKind {
        SensorKind::Lidar
    }

    fn name(&self) -> &str {
        "lidar"
    }

    fn units(&self) -> usize {
        self.lidars.len()
    }

    fn unit_name(&self, unit: usize) -> String {
        self.bindings[unit].name.clone()
    }

    fn fires(&self, _unit: usize) -> bool {
        self.lidars.live()
    }

    /// Every lidar casts its tick's slice in every world when anything is asked of any (they
    /// cast together), and what each cast is counted.
    fn tick(&mut self, ctx: &SensorContext, demand: &Demand) -> Result<(), SimError> {
        if !demand.any() {
            return Ok(());
        }
        self.lidars.tick(ctx.scene, ctx.poses, ctx.caster, ctx.dt, ctx.times, true)?;
        for (s, stats) in self.stats.iter_mut().enumerate() {
            for w in 0..demand.nworld() {
                let (cast, hits) = self.lidars.last_tick_counts(s, w)?;
                stats.beams += cast;
                stats.hits += hits;
            }
        }
        Ok(())
    }

    fn emit(
        &mut self,
        ctx: &SensorContext,
        world: usize,
        demand: &Demand,
        out: &mut dyn FnMut(usize, Frame<'_>) -> Result<(), SimError>,
    ) -> Result<(), SimError> {
        let mut beams = std::mem::take(&mut self.beams);
        for s in (0..self.lidars.len()).filter(|&s| demand.wants(s, world)) {
            self.lidars.last_tick_beams(s, world, &mut beams)?;
            let scan = self.lidars.scan(s, world)?;
            let pose = self.lidars.frame(s, world, ctx.poses)?;
            out(s, Frame::Lidar { scan, beams: &beams, pose })?;
        }
        self.beams = beams;
        Ok(())
    }

    fn restart(&mut self, world: usize, episode_seed: u64) -> Result<(), SimError> {
        self.lidars.set_world_seed(world, episode_seed)?;
        Ok(self.lidars.reset_world(world)?)
    }
}
