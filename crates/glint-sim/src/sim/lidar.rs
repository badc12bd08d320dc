//! Handles on one lidar sensor of a simulation: [`Lidar`] reads it, [`LidarMut`] changes it.
//! Together they are the seed's per-sensor calls (`GetLidarScan`, `GetLidarBeamAngles`,
//! `SetLidarConfig`, ...), with its rules for the caller's buffers.

use glam::{DMat3, DVec3};
use glint_core::RayFilter;
use glint_lidar::{
    LidarBinding, PhysicalModel, ReturnParams, ReturnPreset, Scan, ScanConfig, SecondaryCapture, SecondaryScope,
};

use super::Simulation;
use crate::sensors::Sensor;
use crate::{LidarStats, SimError, Warning};

impl Simulation {
    /// Sensor `index` (0-based, in binding order), to read.
    pub fn lidar(&self, index: usize) -> Result<Lidar<'_>, SimError> {
        self.check_sensor(index)?;
        Ok(Lidar { sim: self, index })
    }

    /// Sensor `index`, to change.
    pub fn lidar_mut(&mut self, index: usize) -> Result<LidarMut<'_>, SimError> {
        self.check_sensor(index)?;
        Ok(LidarMut { sim: self, index })
    }

    /// Fires every lidar on every step (`true`), or only for what reads them (`false`, the
    /// default): the seed's `SetLidarLive`.
    pub fn set_lidar_live(&mut self, live: bool) {
        self.sensors.lidars.lidars_mut().set_live(live);
    }

    /// Whether the lidars fire on every step.
    pub fn lidar_live(&self) -> bool {
        self.sensors.lidars.lidars().live()
    }

    /// Keep each beam's hit point and normal in the scans ([`glint_lidar::Scan::surfaces`];
    /// `true`, the default), or only while an output reads them (`false`: a tick then writes
    /// ranges and geoms alone, faster where nothing reads the surfaces).
    pub fn set_keep_surfaces(&mut self, keep: bool) {
        let read = self.outputs.reads_surfaces();
        self.sensors.lidars.set_keep_surfaces(keep, read);
    }

    /// Whether the scans keep hit points and normals outside recordings.
    pub fn keeps_surfaces(&self) -> bool {
        self.sensors.lidars.keeps_surfaces()
    }

    /// Number of lidar sensors.
    pub fn lidar_count(&self) -> usize {
        self.sensors.lidars.units()
    }

    /// Beams sensor `sensor` has cast and hit, over every world since the simulation was built.
    pub fn lidar_stats(&self, sensor: usize) -> Result<LidarStats, SimError> {
        let count = self.lidar_count();
        self.sensors.lidars.stats(sensor).ok_or(SimError::NoSuchSensor { index: sensor, count })
    }

    /// Applies a return-model preset: every one of the seventeen parameters takes its value.
    pub fn set_return_preset(&mut self, preset: ReturnPreset) {
        self.sensors.lidars.lidars_mut().set_return_preset(preset);
    }

    /// Writes the nine base return parameters (the seed's `SetLidarReturnParams`), keeping the
    /// eight optics parameters; nothing changes on an error.
    pub fn set_return_params(&mut self, base: [f64; 9]) -> Result<(), SimError> {
        Ok(self.sensors.lidars.lidars_mut().set_return_base(base)?)
    }

    /// Writes all seventeen return parameters (`SetLidarReturnParamsEx`); nothing changes on
    /// an error.
    pub fn set_return_params_ex(&mut self, params: ReturnParams) -> Result<(), SimError> {
        Ok(self.sensors.lidars.lidars_mut().set_return_params(params)?)
    }

    /// Runs the physical return model with `physics`' terms (`None`: the seed's model, the
    /// default); nothing changes on an error.
    pub fn set_physical_model(&mut self, physics: Option<PhysicalModel>) -> Result<(), SimError> {
        Ok(self.sensors.lidars.lidars_mut().set_physical_model(physics)?)
    }

    /// The physical model's terms, or `None` while the seed's model runs.
    pub fn physical_model(&self) -> Option<PhysicalModel> {
        self.sensors.lidars.lidars().physical_model()
    }

    /// The return model's calibration.
    pub fn return_params(&self) -> ReturnParams {
        self.sensors.lidars.lidars().return_params()
    }

    fn check_sensor(&self, index: usize) -> Result<(), SimError> {
        let count = self.lidar_count();
        if index < count { Ok(()) } else { Err(SimError::NoSuchSensor { index, count }) }
    }
}

/// One lidar sensor of a simulation, to read.
#[derive(Clone, Copy)]
pub struct Lidar<'a> {
    sim: &'a Simulation,
    index: usize,
}

impl std::fmt::Debug for Lidar<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lidar").field("index", &self.index).field("name", &self.binding().name).finish()
    }
}

/// Copies `src` into the front of `out` (as much as fits) and fills the rest of `out` with
/// `-1`; the count copied.
pub(crate) fn fill(out: &mut [f32], src: &[f32]) -> usize {
    let n = out.len().min(src.len());
    out[..n].copy_from_slice(&src[..n]);
    out[n..].fill(-1.0);
    n
}

impl<'a> Lidar<'a> {
    /// Its index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its binding as it runs (name filled in, configuration as last set).
    pub fn binding(&self) -> &'a LidarBinding {
        self.sim.sensors.lidars.lidars().binding(self.index).expect("the handle's index was checked")
    }

    /// Its scan configuration (the seed's `GetLidarConfig`).
    pub fn config(&self) -> ScanConfig {
        self.binding().scan
    }

    /// The secondary geometry its recordings capture, as last set (`GetLidarConfig`'s
    /// `secondary_capture` and `secondary_scope`): a choice made while recording is reported
    /// here at once and takes effect when that recording stops.
    pub fn secondary_capture(&self) -> (SecondaryCapture, SecondaryScope) {
        let binding = self.sim.sensors.lidars.scene_binding(self.index);
        (binding.secondary_capture, binding.secondary_scope)
    }

    /// Beams per cycle: `channels * azimuth_bins` (`GetLidarBeamCount`).
    pub fn beam_count(&self) -> usize {
        self.config().beam_count()
    }

    /// Its live scan in world `world`: the newest value of every beam.
    pub fn scan(&self, world: usize) -> Result<&'a Scan, SimError> {
        self.sim.world_ok(world)?;
        Ok(self.sim.sensors.lidars.lidars().scan(self.index, world)?)
    }

    /// Copies the live ranges of world `world` into `out` (`GetLidarScan`): metres per beam,
    /// `-1` for no return; with `material`, the return model's measured range (a bake must be
    /// loaded). As many beams as `out` holds are written, and the rest of `out` is set to
    /// `-1`; returns the count written.
    pub fn scan_into(&self, world: usize, out: &mut [f32], material: bool) -> Result<usize, SimError> {
        Ok(fill(out, self.ranges(world, material)?))
    }

    /// The live ranges [`Lidar::scan_into`] copies.
    pub(crate) fn ranges(&self, world: usize, material: bool) -> Result<&'a [f32], SimError> {
        let scan = self.scan(world)?;
        Ok(if material { &self.returns(scan, "a material scan")?.range } else { &scan.range })
    }

    /// [`Lidar::scan_into`] plus the per-beam intensity and calibrated reflectivity
    /// (`GetLidarScanChannels`), each where a buffer is given; without `material` there is no
    /// return strength, and both are `-1`. A channel buffer shorter than `ranges` makes the
    /// call write nothing and return 0, as the seed says.
    pub fn scan_channels_into(
        &self,
        world: usize,
        ranges: &mut [f32],
        intensity: Option<&mut [f32]>,
        reflectivity: Option<&mut [f32]>,
        material: bool,
    ) -> Result<usize, SimError> {
        let short = |b: &Option<&mut [f32]>| b.as_ref().is_some_and(|b| b.len() < ranges.len());
        if short(&intensity) || short(&reflectivity) {
            return Ok(0);
        }
        let scan = self.scan(world)?;
        let returns = if material { Some(self.returns(scan, "a material scan")?) } else { None };
        let n = fill(ranges, returns.map_or(&scan.range, |r| &r.range));
        for (out, channel) in
            [(intensity, returns.map(|r| &r.intensity)), (reflectivity, returns.map(|r| &r.reflectivity))]
        {
            match (out, channel) {
                (Some(out), Some(values)) => _ = fill(out, values),
                (Some(out), None) => out.fill(-1.0),
                (None, _) => {}
            }
        }
        Ok(n)
    }

    /// The return model's second echo per beam (`GetLidarScanSecondary`): a bake must be
    /// loaded, and every value is `-1` when `max_returns` is below 2. Written as
    /// [`Lidar::scan_into`] writes.
    pub fn scan_secondary_into(&self, world: usize, out: &mut [f32]) -> Result<usize, SimError> {
        let scan = self.scan(world)?;
        Ok(fill(out, &self.returns(scan, "a secondary scan")?.secondary_range))
    }

    fn returns(&self, scan: &'a Scan, what: &'static str) -> Result<&'a glint_lidar::Returns, SimError> {
        scan.returns.as_ref().ok_or(SimError::NoBake { what })
    }

    /// Azimuth (`atan2(y, x)`) and elevation (`asin(z)`) of every beam of the current cycle in
    /// world `world`, radians, sensor frame (`GetLidarBeamAngles`). Both buffers must be as
    /// long as each other; as many beams as they hold are written. Returns the count written.
    pub fn beam_angles_into(&self, world: usize, az: &mut [f32], el: &mut [f32]) -> Result<usize, SimError> {
        if az.len() != el.len() {
            return Err(SimError::BufferLength {
                what: "the elevation buffer",
                len: el.len(),
                expected: format!("it must be as long as the azimuth buffer ({})", az.len()),
            });
        }
        self.sim.world_ok(world)?;
        let beams = self.beam_count();
        let (mut all_az, mut all_el) = (vec![0.0; beams], vec![0.0; beams]);
        self.sim.sensors.lidars.lidars().beam_angles(self.index, world, &mut all_az, &mut all_el)?;
        let n = fill(az, &all_az);
        fill(el, &all_el);
        Ok(n)
    }

    /// The sensor's origin and orientation (columns: its axes) in world `world` now.
    pub fn frame(&self, world: usize) -> Result<(DVec3, DMat3), SimError> {
        self.sim.world_ok(world)?;
        Ok(self.sim.sensors.lidars.lidars().frame(self.index, world, self.sim.worlds.poses())?)
    }

    /// The beams the last tick cast in world `world`, in emission order, into `out`.
    pub fn last_tick_beams(&self, world: usize, out: &mut Vec<u32>) -> Result<(), SimError> {
        self.sim.world_ok(world)?;
        Ok(self.sim.sensors.lidars.lidars().last_tick_beams(self.index, world, out)?)
    }

    /// The ray filter and excluded body (`-1`: none) its beams are cast with.
    pub fn ray_filter(&self) -> (RayFilter, i32) {
        self.sim
            .sensors
            .lidars
            .lidars()
            .ray_filter(self.index, &self.sim.scene)
            .expect("the handle's index was checked")
    }
}

/// One lidar sensor of a simulation, to change.
pub struct LidarMut<'a> {
    sim: &'a mut Simulation,
    index: usize,
}

impl LidarMut<'_> {
    /// The sensor, to read.
    pub fn get(&self) -> Lidar<'_> {
        Lidar { sim: self.sim, index: self.index }
    }

    /// Replaces its scan configuration in the running simulation (`SetLidarConfig`): the
    /// beam count follows and every world's scan restarts. Validated first; nothing changes
    /// on an error. Refused while recording (the seed ignores it then: the files' columns are
    /// fixed), and undone when a recording is armed (it starts from the scene's bindings). A
    /// `rotation_hz` above the runner's ticks per second is accepted as the seed describes:
    /// the sensor scans one revolution per tick, and a [`Warning::RotationCapped`] says so.
    pub fn set_config(&mut self, config: ScanConfig) -> Result<(), SimError> {
        if self.sim.recording() {
            return Err(SimError::Recording { what: "SetLidarConfig" });
        }
        let warnings = self.sim.sensors.lidars.lidars_mut().set_config(self.index, config)?;
        let sensor = self.index;
        self.sim.warnings.extend(super::build::capped_rotation(sensor, &config, self.sim.runner()));
        self.sim.warnings.extend(warnings.into_iter().map(|warning| Warning::Lidar { sensor, warning }));
        Ok(())
    }

    /// Chooses the secondary geometry its recordings capture (`SetLidarSecondaryCapture`).
    /// Kept across recordings; while one is armed it takes effect when that one stops.
    pub fn set_secondary_capture(&mut self, capture: SecondaryCapture, scope: SecondaryScope) -> Result<(), SimError> {
        let binding = self.sim.sensors.lidars.scene_binding_mut(self.index);
        (binding.secondary_capture, binding.secondary_scope) = (capture, scope);
        if !self.sim.recording() {
            self.sim.sensors.lidars.lidars_mut().set_secondary_capture(self.index, capture, scope)?;
        }
        Ok(())
    }
}
