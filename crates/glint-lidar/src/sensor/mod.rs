//! Bound sensors, their tick timing, and their live scans in every world of a batch. Each
//! tick's beams go to the ray core in groups; with a material source loaded, a group's
//! continuations are cast ahead (`continuations`) and the return model runs over the whole
//! group (`return_pass`).

use glam::{DMat3, DVec3};
use glint_core::{
    Cast, CoreError, HitsMut, NGROUP, Origins, Poses, PreparedRays, RayCaster, RayFilter, Scene, SkinSurface,
    nearest_name,
};
use rayon::prelude::*;

use std::sync::Arc;

use crate::pattern::{PatternClock, angles, beam_direction};
use crate::physical::footprint_offsets;
use glint_materials::MaterialLookup;

use crate::return_model::{BeamRng, LegKind, Optics, ReturnModel, Surface};

pub(crate) mod continuations;
mod footprint;
mod return_pass;

use crate::scan::{Scan, ScanLayout, ScanPart};
use crate::{
    Continuation, LidarBinding, LidarError, LidarWarning, MaterialTable, NirMaterial, PhysicalModel, ReturnParams,
    ReturnPreset, Returns, ScanConfig, ScanPattern, SecondaryCapture, SecondaryScope, SelfIgnore,
};
use continuations::{Ahead, LiveTracer, first_leg};
use return_pass::{Chunk, OneBeam, Plan};

/// One bound sensor.
#[derive(Clone, Debug)]
struct Sensor {
    binding: LidarBinding,
    /// Attach site, if one was given (it wins).
    site: Option<usize>,
    /// Body whose frame (or whose site's frame) carries the sensor.
    body: usize,
    /// Beam directions in the sensor frame for a spinning pattern (fixed).
    spinning: Vec<DVec3>,
    /// A spinning pattern's whole groups, cached: the beam offsets of a group in cast order,
    /// the ray cast for each beam (its inverse), and every whole group's sensor-frame
    /// directions in that order, group after group.
    tile_order: Vec<usize>,
    tile_ray_of: Vec<usize>,
    tile_dirs: Vec<DVec3>,
    clocks: Vec<PatternClock>,
    scans: Vec<Scan>,
    /// Per world, the hits among the beams its last tick cast (counted by the tick's groups).
    tick_hits: Vec<u64>,
}

/// Pattern units a tick casts as one group: a group's beams are contiguous in the scan and
/// go to the ray core together. Eight bins make whole 4 × 4 tiles of a spinning pattern, and
/// gather enough beams onto one pane, mirror or pool for their continuations to fill packets
/// (fewer or more bins per group are slower with the return model: docs/performance.md).
const GROUP_BINS: u64 = 8;
const GROUP_POINTS: u64 = 256;

/// Working arrays of one thread's groups.
#[derive(Default)]
struct GroupScratch {
    /// Beam offsets within the group, in cast order.
    order: Vec<usize>,
    dirs: Vec<DVec3>,
    dist: Vec<f64>,
    geomid: Vec<i32>,
    normal: Vec<DVec3>,
    extra: ExtraScratch,
}

/// Working arrays of the return model and the secondary capture.
#[derive(Default)]
struct ExtraScratch {
    /// Palette index of the material of each ray's first surface, where the return model
    /// runs and the bake knows it (`NO_MATERIAL` otherwise).
    material: Vec<u32>,
    /// The rays that continue straight through their first geom (for the return model or
    /// the pass-through capture), in scan order.
    through: Vec<usize>,
    /// The straight continuation of each ray that wanted one, cast from the sensor origin
    /// past its first geom: the surface behind it, distance from the origin.
    straight: Ahead,
    /// The fold of each ray the return model folds off a mirror first: the surface the
    /// folded ray meets, distance from its start just off the mirror.
    folded: Ahead,
    /// The refraction of each ray the return model bends into a medium first: the surface
    /// the bent ray meets, distance from its start just under the medium's surface.
    refracted: Ahead,
    /// The rays the model bends into a medium first.
    bent: Vec<usize>,
    /// The rays the model folds off a mirror first.
    folds: Vec<usize>,
    /// Where each ray of one batch of folds or refractions starts.
    origins: Vec<DVec3>,
    /// The return model's lanes, kept from group to group (they are large to set up).
    chunk: Option<Box<Chunk>>,
    /// The ray cast for each beam of a group whose inverse order is not cached.
    ray_of: Vec<usize>,
    /// The rays reported one beam at a time, and how.
    by_one: Vec<(usize, OneBeam)>,
    /// One batch of continuations: ray indices and directions.
    rays: Vec<usize>,
    dirs: Vec<DVec3>,
    /// The physical model's footprint sub-rays.
    footprints: footprint::Footprints,
}

const NO_MATERIAL: u32 = u32::MAX;

/// Every bound lidar of a scene, over `nworld` worlds. Sensors are addressed by 0-based index
/// in binding order.
#[derive(Clone, Debug)]
pub struct Lidars {
    sensors: Vec<Sensor>,
    nworld: usize,
    live: bool,
    /// Whether the scans keep each beam's hit point and normal.
    keep_surfaces: bool,
    /// The return model calibration, one set for every sensor.
    params: ReturnParams,
    /// The physical model's terms, or `None` for the seed's model.
    physics: Option<PhysicalModel>,
    /// Per world, the seed of the return model's randomness in its episode.
    seeds: Vec<u64>,
    /// Where hits find their NIR material; the return model runs while one is set.
    materials: Option<MaterialSource>,
    /// Per geom, what its MuJoCo material flags for secondary capture ([`FLAG_PASS`],
    /// [`FLAG_REFLECT`]).
    geom_flags: Vec<Vec<u8>>,
    /// Per geom, the continuation class its authored NIR material gives it (for the flagged
    /// secondary-capture scope when no material source is loaded).
    geom_class: Vec<Vec<Option<Continuation>>>,
    /// Tests: report every beam through [`ReturnModel::beam_return`], the reference the
    /// batched passes must equal.
    #[cfg(test)]
    one_by_one: bool,
}

/// A shared material lookup (usually a loaded bake).
#[derive(Clone)]
struct MaterialSource(Arc<dyn MaterialLookup>);

impl std::fmt::Debug for MaterialSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MaterialSource")
    }
}

/// The geom's MuJoCo material is translucent: a pass-through ray is worth casting.
const FLAG_PASS: u8 = 1;
/// The geom's MuJoCo material has a non-zero reflectance: a reflected ray is worth casting.
const FLAG_REFLECT: u8 = 2;

/// What each geom's MuJoCo material says about secondary capture in the flagged scope, for
/// a world whose geoms have materials `geom_matid` and alphas `geom_alpha` (the material's
/// where there is one), followed by the scene's skins (geom ids `ngeom + skin`).
fn geom_flags(scene: &Scene, geom_matid: &[i32], geom_alpha: &[f32]) -> Vec<u8> {
    let (matid, alpha) = (with_skin_matids(scene, geom_matid), with_skin_alphas(scene, geom_alpha));
    matid
        .iter()
        .zip(alpha)
        .map(|(&m, alpha)| {
            let reflectance = usize::try_from(m).ok().and_then(|m| scene.mat_shading.get(m)).map_or(0.0, |s| s[3]);
            let mut flags = 0;
            if alpha < 1.0 {
                flags |= FLAG_PASS;
            }
            if reflectance > 0.0 {
                flags |= FLAG_REFLECT;
            }
            flags
        })
        .collect()
}

/// Each geom's alpha as `mj_ray` reads it: its material's, or its own.
fn scene_alpha(scene: &Scene) -> Vec<f32> {
    (0..scene.ngeom()).map(|g| material_alpha(scene, scene.geom_matid[g], scene.geom_rgba[g])).collect()
}

/// The alpha of a surface with material `matid` and colour `rgba`: its material's, or its own.
fn material_alpha(scene: &Scene, matid: i32, rgba: [f32; 4]) -> f32 {
    usize::try_from(matid).ok().and_then(|m| scene.mat_rgba.get(m)).map_or(rgba[3], |c| c[3])
}

/// `geom_matid` with the skins' materials after it: the material of every surface a beam
/// can report, by its geom id.
fn with_skin_matids(scene: &Scene, geom_matid: &[i32]) -> Vec<i32> {
    geom_matid.iter().copied().chain(scene.skin.iter().map(|s| s.matid)).collect()
}

/// `geom_alpha` with the skins' alphas after it.
fn with_skin_alphas(scene: &Scene, geom_alpha: &[f32]) -> Vec<f32> {
    geom_alpha.iter().copied().chain(scene.skin.iter().map(|s| material_alpha(scene, s.matid, s.rgba))).collect()
}

fn resolve(scene: &Scene, b: &LidarBinding) -> Result<(Option<usize>, usize), LidarError> {
    let unknown = |kind, target: &str, names: &[String]| LidarError::UnknownTarget {
        name: b.name.clone(),
        kind,
        target: target.into(),
        hint: nearest_name(target, names.iter().map(String::as_str))
            .map_or(String::new(), |n| format!("; did you mean '{n}'?")),
    };
    // Both names must exist even though the site wins: a misspelt one beside a good one is a
    // mistake to report, not to ignore.
    let site = match &b.attach_site {
        Some(site) => Some(scene.site_id(site).ok_or_else(|| unknown("site", site, &scene.site_name))?),
        None => None,
    };
    let body = match &b.attach_body {
        Some(body) => Some(scene.body_id(body).ok_or_else(|| unknown("body", body, &scene.body_name))?),
        None => None,
    };
    match (site, body) {
        (Some(s), _) => Ok((Some(s), scene.site_bodyid[s] as usize)),
        (None, Some(id)) => Ok((None, id)),
        (None, None) => Err(LidarError::NoAttachTarget { name: b.name.clone() }),
    }
}

impl Sensor {
    fn new(scene: &Scene, mut binding: LidarBinding, nworld: usize) -> Result<(Sensor, Vec<LidarWarning>), LidarError> {
        let warnings = binding.scan.validate()?;
        binding.check_mount_offset()?;
        let (site, body) = resolve(scene, &binding)?;
        if binding.name.is_empty() {
            binding.name = match site {
                Some(s) => scene.site_name[s].clone(),
                None => scene.body_name[body].clone(),
            };
        }
        let mut sensor = Sensor {
            binding,
            site,
            body,
            spinning: Vec::new(),
            tile_order: Vec::new(),
            tile_ray_of: Vec::new(),
            tile_dirs: Vec::new(),
            clocks: Vec::new(),
            tick_hits: Vec::new(),
            scans: Vec::new(),
        };
        sensor.configure(nworld);
        Ok((sensor, warnings))
    }

    /// Rebuilds the pattern and restarts every world's scan after a configuration change.
    fn configure(&mut self, nworld: usize) {
        let c = &self.binding.scan;
        self.spinning = match c.pattern {
            ScanPattern::Spinning => (0..c.beam_count()).map(|k| beam_direction(c, 0, k)).collect(),
            _ => Vec::new(),
        };
        self.clocks = vec![PatternClock::default(); nworld];
        self.tick_hits = vec![0; nworld];
        self.scans = vec![Scan::new(c.beam_count(), ScanLayout::default()); nworld];
        (self.tile_order, self.tile_ray_of, self.tile_dirs) = (Vec::new(), Vec::new(), Vec::new());
        if matches!(c.pattern, ScanPattern::Spinning) {
            let (mut order, mut dirs) = (Vec::new(), Vec::new());
            let whole = self.units() / GROUP_BINS * GROUP_BINS;
            for u0 in (0..whole).step_by(GROUP_BINS as usize) {
                self.group_rays((u0, u0 + GROUP_BINS), &mut order, &mut dirs);
                self.tile_dirs.extend_from_slice(&dirs);
            }
            invert(&order, &mut self.tile_ray_of);
            self.tile_order = order;
        }
    }

    /// Gives every world's scan the parts the return model (`returns`), the secondary capture
    /// and kept surfaces (`surfaces`) need.
    fn set_layout(&mut self, (surfaces, returns): (bool, bool)) {
        let capture = self.binding.secondary_capture;
        let layout =
            ScanLayout { surfaces, returns, pass_through: capture.pass_through(), reflected: capture.reflected() };
        for scan in &mut self.scans {
            scan.set_layout(layout);
        }
    }

    /// Sensor origin and orientation (columns: sensor axes) in world `w`.
    fn frame(&self, poses: &Poses, w: usize) -> (DVec3, DMat3) {
        let (pos, rot) = match self.site {
            Some(s) => poses.site(w, s),
            None => {
                let nbody = poses.xpos.len() / poses.nworld;
                (poses.xpos[w * nbody + self.body], poses.xmat[w * nbody + self.body])
            }
        };
        (pos + rot * self.binding.mount_offset, rot)
    }

    fn filter(&self, scene: &Scene) -> (RayFilter, i32) {
        let c = &self.binding.scan;
        let mut filter = RayFilter::from_group_mask(c.effective_group_mask(), true);
        let body = self.body as i32;
        let exclude = match c.self_ignore {
            // A sensor on the world body has no robot to ignore: it sees the whole world.
            _ if self.body == 0 => -1,
            SelfIgnore::None => -1,
            SelfIgnore::MountBody => body,
            SelfIgnore::WholeRobot => {
                let root = scene.body_rootid[self.body];
                // Attached to the world body: its "robot" is the world body alone.
                if root > 0 {
                    filter.exclude_tree = root;
                }
                body
            }
        };
        (filter, exclude)
    }

    /// Per skin of the scene, whether this sensor's beams meet it: it opted in, the skin's
    /// group is in its mask, and no bone binds the skin to a body its self-ignore mode
    /// ignores (the robot's own skin is its robot).
    fn admitted_skins(&self, scene: &Scene) -> Vec<bool> {
        let (filter, exclude) = self.filter(scene);
        let mask = self.binding.scan.effective_group_mask();
        let ignored = |body: usize| {
            body as i32 == exclude || (filter.exclude_tree > 0 && scene.body_rootid[body] == filter.exclude_tree)
        };
        scene
            .skin
            .iter()
            .map(|skin| {
                let group = skin.group.clamp(0, NGROUP as i32 - 1);
                self.binding.see_skins
                    && mask & (1 << group) != 0
                    && !skin.bones.iter().any(|bone| bone.body != 0 && ignored(bone.body))
            })
            .collect()
    }

    /// Pattern units per revolution: azimuth bins (spinning), or points per cycle (which
    /// non-repetitive patterns keep in `azimuth_bins`).
    fn units(&self) -> u64 {
        self.binding.scan.azimuth_bins as u64
    }

    /// Advances world `w`'s clock by `dt` and returns the units to cast: `[from, to)` in
    /// units since the episode start (at most one revolution).
    fn advance(&mut self, w: usize, dt: f64) -> (u64, u64) {
        let (hz, units) = (self.binding.scan.rotation_hz, self.units());
        self.clocks[w].advance(hz, units, dt)
    }

    /// Splits units `[from, to)` into groups of at most `GROUP_BINS` bins (or `GROUP_POINTS`
    /// points), aligned to multiples of that size within the revolution and never crossing
    /// its end, so each covers contiguous beams and whole groups match the cached tiles.
    fn groups(&self, from: u64, to: u64) -> Vec<(u64, u64)> {
        let units = self.units();
        let size = match self.binding.scan.pattern {
            ScanPattern::Spinning => GROUP_BINS,
            _ => GROUP_POINTS,
        };
        let mut groups = Vec::new();
        let mut u0 = from;
        while u0 < to {
            let rev = u0 / units * units;
            let u1 = (rev + ((u0 - rev) / size + 1) * size).min(to).min(rev + units);
            groups.push((u0, u1));
            u0 = u1;
        }
        groups
    }

    /// The runs of beam indices the last tick in `world` cast, in emission order: one per
    /// stretch of consecutive units, split where the pattern wraps.
    fn last_tick_runs(&self, world: usize) -> impl Iterator<Item = std::ops::Range<usize>> + use<> {
        let (mut u, to) = self.clocks[world].last;
        let units = self.units();
        let per_unit = self.binding.scan.beam_count() / units as usize;
        std::iter::from_fn(move || {
            if u >= to {
                return None;
            }
            let first = u % units;
            let n = (units - first).min(to - u);
            u += n;
            Some(first as usize * per_unit..(first + n) as usize * per_unit)
        })
    }

    /// The cached sensor-frame directions of a whole, aligned spinning group, if it is one.
    fn whole_group(&self, (u0, u1): (u64, u64)) -> Option<&[DVec3]> {
        let first = (u0 % self.units()) as usize;
        let len = self.tile_order.len();
        let at = first / GROUP_BINS as usize * len;
        let aligned = first.is_multiple_of(GROUP_BINS as usize) && u1 - u0 == GROUP_BINS;
        if aligned && at + len <= self.tile_dirs.len() { Some(&self.tile_dirs[at..at + len]) } else { None }
    }

    /// Beam offsets (from the group's first beam) and sensor-frame directions of the group
    /// of units `[u0, u1)`, in cast order: 4 × 4 tiles of bins × channels for a spinning
    /// pattern (tighter packets than one bin's column), emission order otherwise.
    fn group_rays(&self, (u0, u1): (u64, u64), order: &mut Vec<usize>, dirs: &mut Vec<DVec3>) {
        order.clear();
        dirs.clear();
        let c = &self.binding.scan;
        let units = self.units();
        let first = (u0 % units) as usize;
        match c.pattern {
            ScanPattern::Spinning => {
                let channels = c.channels as usize;
                let bins = (u1 - u0) as usize;
                for c0 in (0..channels).step_by(4) {
                    for b in 0..bins {
                        for ch in c0..(c0 + 4).min(channels) {
                            let offset = b * channels + ch;
                            order.push(offset);
                            dirs.push(self.spinning[first * channels + offset]);
                        }
                    }
                }
            }
            _ => {
                for u in u0..u1 {
                    order.push((u - u0) as usize);
                    dirs.push(beam_direction(c, u / units, (u % units) as usize));
                }
            }
        }
    }
}

impl Lidars {
    /// Whether ticks report every beam through the one-beam model (tests only).
    fn one_by_one(&self) -> bool {
        #[cfg(test)]
        return self.one_by_one;
        #[cfg(not(test))]
        false
    }

    /// Binds `bindings` (in order) to `scene` for `nworld` worlds. Returns the sensors and
    /// any warnings, each with its sensor's index (a group mask's high bits, once).
    #[allow(clippy::type_complexity)]
    pub fn new(
        scene: &Scene,
        bindings: Vec<LidarBinding>,
        nworld: usize,
    ) -> Result<(Lidars, Vec<(usize, LidarWarning)>), LidarError> {
        let mut lidars = Lidars {
            sensors: Vec::new(),
            nworld: nworld.max(1),
            live: false,
            keep_surfaces: true,
            params: ReturnParams::default(),
            physics: None,
            seeds: vec![0; nworld.max(1)],
            materials: None,
            geom_flags: vec![geom_flags(scene, &scene.geom_matid, &scene_alpha(scene))],
            geom_class: vec![vec![None; scene.ngeom() + scene.skin.len()]],
            #[cfg(test)]
            one_by_one: false,
        };
        let mut warnings = Vec::new();
        for b in bindings {
            let index = lidars.len();
            warnings.extend(lidars.add(scene, b)?.into_iter().map(|w| (index, w)));
        }
        Ok((lidars, warnings))
    }

    /// Adds one sensor (its index is the number bound before it); returns its warnings.
    /// Nothing changes on an error.
    fn add(&mut self, scene: &Scene, binding: LidarBinding) -> Result<Vec<LidarWarning>, LidarError> {
        let (mut sensor, warnings) = Sensor::new(scene, binding, self.nworld)?;
        sensor.set_layout(self.layout());
        self.sensors.push(sensor);
        Ok(warnings)
    }

    /// Number of sensors.
    pub fn len(&self) -> usize {
        self.sensors.len()
    }

    /// Whether no sensor is bound.
    pub fn is_empty(&self) -> bool {
        self.sensors.is_empty()
    }

    fn sensor(&self, index: usize) -> Result<&Sensor, LidarError> {
        self.sensors.get(index).ok_or(LidarError::NoSuchSensor { index, count: self.sensors.len() })
    }

    fn sensor_mut(&mut self, index: usize) -> Result<&mut Sensor, LidarError> {
        let count = self.sensors.len();
        self.sensors.get_mut(index).ok_or(LidarError::NoSuchSensor { index, count })
    }

    fn check_world(&self, world: usize) -> Result<(), LidarError> {
        if world < self.nworld { Ok(()) } else { Err(LidarError::NoSuchWorld { world, nworld: self.nworld }) }
    }

    /// Fire the sensors on every tick (`true`), or only when a recorder asks (`false`, the
    /// default).
    pub fn set_live(&mut self, live: bool) {
        self.live = live;
    }

    /// Whether the sensors fire on every tick.
    pub fn live(&self) -> bool {
        self.live
    }

    /// Beam count of sensor `index`: `channels * azimuth_bins`.
    pub fn beam_count(&self, index: usize) -> Result<usize, LidarError> {
        Ok(self.sensor(index)?.binding.scan.beam_count())
    }

    /// The binding of sensor `index` (with its output name filled in).
    pub fn binding(&self, index: usize) -> Result<&LidarBinding, LidarError> {
        Ok(&self.sensor(index)?.binding)
    }

    /// The scan configuration of sensor `index`.
    pub fn config(&self, index: usize) -> Result<ScanConfig, LidarError> {
        Ok(self.sensor(index)?.binding.scan)
    }

    /// Replaces the scan configuration of sensor `index` in the running simulation: the beam
    /// count follows and every world's scan restarts. Validated first; nothing changes on an
    /// error. Returns the warnings.
    pub fn set_config(&mut self, index: usize, config: ScanConfig) -> Result<Vec<LidarWarning>, LidarError> {
        let warnings = config.validate()?;
        let (nworld, layout) = (self.nworld, self.layout());
        let sensor = self.sensor_mut(index)?;
        sensor.binding.scan = config;
        sensor.configure(nworld);
        sensor.set_layout(layout);
        Ok(warnings)
    }

    /// Chooses the secondary geometry the recorder captures for sensor `index`.
    pub fn set_secondary_capture(
        &mut self,
        index: usize,
        capture: SecondaryCapture,
        scope: SecondaryScope,
    ) -> Result<(), LidarError> {
        let layout = self.layout();
        let sensor = self.sensor_mut(index)?;
        sensor.binding.secondary_capture = capture;
        sensor.binding.secondary_scope = scope;
        sensor.set_layout(layout);
        Ok(())
    }

    /// The return model calibration (one set for every sensor; Generic until set).
    pub fn return_params(&self) -> ReturnParams {
        self.params
    }

    /// Replaces all seventeen return model parameters; validated first, nothing changes on
    /// an error.
    pub fn set_return_params(&mut self, params: ReturnParams) -> Result<(), LidarError> {
        params.validate()?;
        self.params = params;
        Ok(())
    }

    /// The physical model's terms, or `None` while the seed's model runs (the default).
    pub fn physical_model(&self) -> Option<PhysicalModel> {
        self.physics
    }

    /// Runs the physical return model with `physics`' terms (`None`: the seed's model);
    /// validated first, nothing changes on an error.
    pub fn set_physical_model(&mut self, physics: Option<PhysicalModel>) -> Result<(), LidarError> {
        if let Some(p) = &physics {
            p.validate()?;
        }
        self.physics = physics;
        Ok(())
    }

    /// Writes the nine base parameters and keeps the eight optics parameters.
    pub fn set_return_base(&mut self, base: [f64; 9]) -> Result<(), LidarError> {
        self.params.set_base(base)
    }

    /// Applies a return preset: every parameter, optics included, takes the preset's value.
    pub fn set_return_preset(&mut self, preset: ReturnPreset) {
        self.params = preset.params();
    }

    /// Seeds the return model's randomness (noise, grazing dropout, porous gaps) in every
    /// world.
    pub fn set_seed(&mut self, seed: u64) {
        self.seeds.fill(seed);
    }

    /// Seeds the return model's randomness in world `world` (its episode's seed,
    /// [`crate::episode_seed`]).
    pub fn set_world_seed(&mut self, world: usize, seed: u64) -> Result<(), LidarError> {
        let nworld = self.nworld;
        *self.seeds.get_mut(world).ok_or(LidarError::NoSuchWorld { world, nworld })? = seed;
        Ok(())
    }

    /// Loads where hits find their NIR material (usually a bake): from the next tick on, every
    /// sensor also runs the return model and fills [`Scan::returns`]. `None` turns it off.
    pub fn set_materials(&mut self, materials: Option<Arc<dyn MaterialLookup>>) {
        self.materials = materials.map(MaterialSource);
        self.relayout();
    }

    /// Keep each beam's hit point and normal in the scans ([`Scan::surfaces`]; `true`, the
    /// default), or not: a tick then writes only ranges and geoms (and the return model's
    /// channels), which is faster where nothing reads the surfaces. Turning them on keeps the
    /// ranges; the beams cast before then hold zero points and normals until cast again.
    pub fn set_keep_surfaces(&mut self, keep: bool) {
        self.keep_surfaces = keep;
        self.relayout();
    }

    /// Whether the scans keep each beam's hit point and normal.
    pub fn keeps_surfaces(&self) -> bool {
        self.keep_surfaces
    }

    /// The optional scan parts every sensor's scans hold: (surfaces, the return model's).
    fn layout(&self) -> (bool, bool) {
        (self.keep_surfaces, self.materials.is_some())
    }

    fn relayout(&mut self) {
        let layout = self.layout();
        for sensor in &mut self.sensors {
            sensor.set_layout(layout);
        }
    }

    /// Tells the flagged secondary-capture scope each geom's continuation class from the
    /// scene's NIR authoring (by its MuJoCo material's name), so a recording captures the
    /// geometry behind a hedge or a window whose MuJoCo material looks opaque. A loaded material
    /// source (bake) answers instead, per hit.
    pub fn set_capture_materials(&mut self, scene: &Scene, table: &MaterialTable) {
        self.geom_class = vec![table.geom_classes(&scene.mat_name, &with_skin_matids(scene, &scene.geom_matid))];
        self.geom_flags = vec![geom_flags(scene, &scene.geom_matid, &scene_alpha(scene))];
    }

    /// [`Lidars::set_capture_materials`] for world `w` alone, whose geoms have the MuJoCo
    /// materials `geom_matid` and alphas `geom_alpha` (per-world fields): its secondary
    /// capture follows its own materials.
    pub fn set_world_materials(
        &mut self,
        w: usize,
        (scene, table): (&Scene, &MaterialTable),
        geom_matid: &[i32],
        geom_alpha: &[f32],
    ) -> Result<(), LidarError> {
        if w >= self.nworld {
            return Err(LidarError::NoSuchWorld { world: w, nworld: self.nworld });
        }
        let n = scene.ngeom();
        if geom_matid.len() != n || geom_alpha.len() != n {
            return Err(LidarError::Conflict(format!(
                "world materials need one material id and one alpha per geom ({n})"
            )));
        }
        for rows in [self.geom_class.len(), self.geom_flags.len()] {
            debug_assert!(rows == 1 || rows == self.nworld);
        }
        if self.geom_class.len() != self.nworld {
            self.geom_class = (0..self.nworld).map(|v| self.geom_class[v % self.geom_class.len()].clone()).collect();
            self.geom_flags = (0..self.nworld).map(|v| self.geom_flags[v % self.geom_flags.len()].clone()).collect();
        }
        self.geom_class[w] = table.geom_classes(&scene.mat_name, &with_skin_matids(scene, geom_matid));
        self.geom_flags[w] = geom_flags(scene, geom_matid, geom_alpha);
        Ok(())
    }

    /// The return model's live measurement of sensor `index` in world `world`. An error when
    /// no material source (bake) is loaded: the model has no reflectivity to work from.
    pub fn returns(&self, index: usize, world: usize) -> Result<&Returns, LidarError> {
        self.scan(index, world)?.returns.as_ref().ok_or(LidarError::NoMaterials)
    }

    /// The live scan of sensor `index` in world `world`.
    pub fn scan(&self, index: usize, world: usize) -> Result<&Scan, LidarError> {
        self.check_world(world)?;
        Ok(&self.sensor(index)?.scans[world])
    }

    /// Azimuth (`atan2(y, x)`) and elevation (`asin(z)`) of every beam of sensor `index` for
    /// the current cycle of world `world`, radians, sensor frame. Both buffers must hold the
    /// beam count.
    pub fn beam_angles(&self, index: usize, world: usize, az: &mut [f32], el: &mut [f32]) -> Result<usize, LidarError> {
        let dirs = self.beam_directions(index, world)?;
        let beams = dirs.len();
        for (what, len) in [("the azimuth buffer", az.len()), ("the elevation buffer", el.len())] {
            if len != beams {
                return Err(LidarError::BufferLength { what, len, sensor: index, beams });
            }
        }
        for (k, d) in dirs.into_iter().enumerate() {
            let (a, e) = angles(d);
            (az[k], el[k]) = (a as f32, e as f32);
        }
        Ok(beams)
    }

    /// The unit direction of every beam of sensor `index` for the current cycle of world
    /// `world`, sensor frame, in beam order: the directions its casts use.
    pub fn beam_directions(&self, index: usize, world: usize) -> Result<Vec<DVec3>, LidarError> {
        self.check_world(world)?;
        let sensor = self.sensor(index)?;
        let c = &sensor.binding.scan;
        let units = sensor.units().max(1);
        let cycle = match c.pattern {
            ScanPattern::Spinning => 0,
            _ if c.rotation_hz <= 0.0 => 0,
            _ => sensor.clocks[world].emitted.saturating_sub(1) / units,
        };
        Ok((0..c.beam_count())
            .map(|k| match c.pattern {
                ScanPattern::Spinning => sensor.spinning[k],
                _ => beam_direction(c, cycle, k),
            })
            .collect())
    }

    /// Worlds the sensors are bound for.
    pub fn nworld(&self) -> usize {
        self.nworld
    }

    /// Origin and orientation (columns: the sensor's axes) of sensor `index` in world
    /// `world` for `poses`.
    pub fn frame(&self, index: usize, world: usize, poses: &Poses) -> Result<(DVec3, DMat3), LidarError> {
        self.check_world(world)?;
        Ok(self.sensor(index)?.frame(poses, world))
    }

    /// The body sensor `index` is mounted on (its site's body, or the body it is attached to):
    /// its frame is fixed in that body's.
    pub fn mount_body(&self, index: usize) -> Result<usize, LidarError> {
        Ok(self.sensor(index)?.body)
    }

    /// The ray filter and the excluded body (`-1`: none) that sensor `index`'s beams use: its
    /// group mask and self-ignore mode in the ray core's terms.
    pub fn ray_filter(&self, index: usize, scene: &Scene) -> Result<(RayFilter, i32), LidarError> {
        Ok(self.sensor(index)?.filter(scene))
    }

    /// The beams sensor `index` cast in world `world` on its last tick, in emission order
    /// (bin by bin, channels upward; points in firing order for non-repetitive patterns), into
    /// `out` (cleared first). Empty before the first tick of an episode.
    pub fn last_tick_beams(&self, index: usize, world: usize, out: &mut Vec<u32>) -> Result<(), LidarError> {
        self.check_world(world)?;
        out.clear();
        for run in self.sensor(index)?.last_tick_runs(world) {
            out.extend(run.map(|k| k as u32));
        }
        Ok(())
    }

    /// How many beams sensor `index` cast in world `world` on its last tick, and how many of
    /// them hit something: [`Lidars::last_tick_beams`]'s length and its hits, without the list.
    pub fn last_tick_counts(&self, index: usize, world: usize) -> Result<(u64, u64), LidarError> {
        self.check_world(world)?;
        let sensor = self.sensor(index)?;
        let beams = sensor.last_tick_runs(world).map(|run| run.len() as u64).sum();
        Ok((beams, sensor.tick_hits[world]))
    }

    /// Ticks sensor `index` has run in world `world` since the episode started.
    pub fn ticks(&self, index: usize, world: usize) -> Result<u64, LidarError> {
        self.check_world(world)?;
        Ok(self.sensor(index)?.clocks[world].ticks)
    }

    /// Restarts the pattern of every sensor in world `world` (an episode start) and clears
    /// its live scans: a beam reads `-1` (no return) until the new episode casts it, so
    /// nothing of the previous episode is seen in this one.
    pub fn reset_world(&mut self, world: usize) -> Result<(), LidarError> {
        self.check_world(world)?;
        for s in &mut self.sensors {
            s.clocks[world] = PatternClock::default();
            s.tick_hits[world] = 0;
            s.scans[world].clear();
        }
        Ok(())
    }

    /// One tick of the lidar runner, `dt` seconds long, after the worlds stepped: every
    /// sensor casts the next slice of its pattern in every world (when live, or when
    /// `force` is set, as a recorder does), stamping each ray with its world's time in
    /// `times` (one per world). All worlds of a sensor go in one parallel call when their
    /// slices line up.
    pub fn tick(
        &mut self,
        scene: &Scene,
        poses: &Poses,
        caster: &RayCaster,
        dt: f64,
        times: &[f64],
        force: bool,
    ) -> Result<(), LidarError> {
        if !(self.live || force) {
            return Ok(());
        }
        if !(dt.is_finite() && dt >= 0.0) {
            return Err(LidarError::OutOfRange { field: "dt", value: dt, range: "finite, 0 or more seconds" });
        }
        if times.len() != self.nworld || poses.nworld != self.nworld {
            return Err(LidarError::Conflict(format!(
                "the lidars were bound for {} worlds but got poses for {} and {} times",
                self.nworld,
                poses.nworld,
                times.len()
            )));
        }
        let palette = self.materials.as_ref().map_or(&[][..], |m| m.0.palette());
        // One entry past the palette's stands for no material.
        let optics: Vec<Optics> =
            palette.iter().map(|material| Optics::new(&self.params, material)).chain([Optics::NONE]).collect();
        let plans: Vec<Plan> =
            palette.iter().map(Some).chain([None]).map(|m| Plan::of_first(m, self.physics)).collect();
        let first_legs: Vec<Option<LegKind>> = palette.iter().map(|m| first_leg(&self.params, m)).collect();
        let footprint: Vec<(f64, f64)> = self.physics.map_or(vec![(0.0, 0.0)], |p| {
            footprint_offsets(p.footprint_rays, p.beam_divergence_deg).iter().map(|(a, b)| (a.tan(), b.tan())).collect()
        });
        let model = self.materials.as_ref().map(|m| ReturnInputs {
            model: ReturnModel::with_physics(self.params, self.physics),
            seeds: &self.seeds,
            materials: &*m.0,
            palette,
            optics: &optics,
            plans: &plans,
            first_legs: &first_legs,
            footprint: &footprint,
        });
        let one_by_one = self.one_by_one();
        let seeing = self.sensors.iter().any(|s| s.binding.see_skins) && !scene.skin.is_empty();
        let skins: Option<Vec<Vec<SkinSurface>>> = seeing
            .then(|| (0..self.nworld).into_par_iter().map(|w| SkinSurface::pose_world(scene, poses, w)).collect());
        for (index, sensor) in self.sensors.iter_mut().enumerate() {
            let ctx = TickContext {
                sensor: index,
                model,
                skins: skins.as_deref(),
                geom_flags: &self.geom_flags,
                geom_class: &self.geom_class,
                one_by_one,
            };
            tick_sensor(sensor, scene, poses, caster, dt, times, &ctx)?;
        }
        Ok(())
    }
}

/// What a tick needs besides the sensor and the scene.
struct TickContext<'a> {
    sensor: usize,
    model: Option<ReturnInputs<'a>>,
    /// Per world, its posed skins, when a sensor sees them.
    skins: Option<&'a [Vec<SkinSurface>]>,
    /// Per world (row `w % rows`), each geom's capture flags and authored class.
    geom_flags: &'a [Vec<u8>],
    geom_class: &'a [Vec<Option<Continuation>>],
    /// Report every beam through [`ReturnModel::beam_return`] (tests).
    one_by_one: bool,
}

/// The return model's inputs, shared by every sensor.
#[derive(Clone, Copy)]
struct ReturnInputs<'a> {
    model: ReturnModel,
    /// Per world, its episode's seed.
    seeds: &'a [u64],
    materials: &'a dyn MaterialLookup,
    palette: &'a [NirMaterial],
    /// The optics of each palette entry under the model's calibration, and one more for no
    /// material.
    optics: &'a [Optics],
    /// How the return model goes about a beam by its first surface's palette entry, and one
    /// more for no material.
    plans: &'a [Plan],
    /// The continuation the model casts first off each palette entry's surfaces.
    first_legs: &'a [Option<LegKind>],
    /// The tangents of the angular offsets of a beam's footprint sub-rays, its axis first
    /// (the axis alone: no footprint).
    footprint: &'a [(f64, f64)],
}

/// Sets `ray_of` to the inverse of `order`: `ray_of[order[r]] = r`.
fn invert(order: &[usize], ray_of: &mut Vec<usize>) {
    ray_of.resize(order.len(), 0);
    for (r, &j) in order.iter().enumerate() {
        ray_of[j] = r;
    }
}

/// One group of a tick: its units, its part of a world's scan, that world and its tick.
struct GroupJob<'a> {
    units: (u64, u64),
    part: ScanPart<'a>,
    world: usize,
    time: f64,
    tick: u64,
}

/// Groups a tick hands to the thread pool as one job, when they follow one another in the
/// scan: a job per group made the pool's hand-outs and the serial cutting of every world's
/// scan cost about 5 % of a 16-world step (4, 8 and 16 measured alike).
const JOB_GROUPS: usize = 8;

/// Up to [`JOB_GROUPS`] consecutive groups of one world's tick and their part of its scan.
struct TickJob<'a> {
    groups: [(u64, u64); JOB_GROUPS],
    ngroups: usize,
    part: ScanPart<'a>,
    world: usize,
    time: f64,
    tick: u64,
}

/// One sensor's tick in every world: each world's slice is cut into groups, and all groups of
/// all worlds are cast in one parallel loop, each writing straight into its part of the scan.
fn tick_sensor(
    sensor: &mut Sensor,
    scene: &Scene,
    poses: &Poses,
    caster: &RayCaster,
    dt: f64,
    times: &[f64],
    ctx: &TickContext,
) -> Result<(), LidarError> {
    let nworld = times.len();
    let slices: Vec<(u64, u64)> = (0..nworld).map(|w| sensor.advance(w, dt)).collect();
    let (filter, exclude) = sensor.filter(scene);
    let frames: Vec<(DVec3, DMat3)> = (0..nworld).map(|w| sensor.frame(poses, w)).collect();
    let mut prepared = caster.prepare(scene, poses, &filter)?;
    if let (true, Some(skins)) = (sensor.binding.see_skins, ctx.skins) {
        prepared = prepared.with_skins(skins, sensor.admitted_skins(scene));
    }
    let mut scans = std::mem::take(&mut sensor.scans);
    let mut jobs = Vec::new();
    for (w, scan) in scans.iter_mut().enumerate() {
        let (from, to) = slices[w];
        let tick = sensor.clocks[w].ticks;
        split_into_jobs(sensor, scan, sensor.groups(from, to), (w, times[w], tick), &mut jobs);
    }
    let sensor_ref = &*sensor;
    let group = GroupContext { sensor: sensor_ref, prepared: &prepared, frames: &frames, exclude, tick: ctx };
    let per_unit = sensor_ref.binding.scan.beam_count() / sensor_ref.units() as usize;
    let hits: Result<Vec<(usize, u64)>, CoreError> = jobs
        .into_par_iter()
        .map_init(GroupScratch::default, |scratch, job| {
            let world = job.world;
            group.cast_job(job, per_unit, scratch).map(|hits| (world, hits))
        })
        .collect();
    sensor.scans = scans;
    sensor.tick_hits.fill(0);
    for (world, n) in hits? {
        sensor.tick_hits[world] += n;
    }
    Ok(())
}

/// Cuts `scan` into the disjoint parts that `groups` write and queues them as jobs of up to
/// [`JOB_GROUPS`] consecutive groups.
fn split_into_jobs<'a>(
    sensor: &Sensor,
    scan: &'a mut Scan,
    mut groups: Vec<(u64, u64)>,
    (world, time, tick): (usize, f64, u64),
    jobs: &mut Vec<TickJob<'a>>,
) {
    let units = sensor.units();
    let per_unit = sensor.binding.scan.beam_count() / units as usize;
    groups.sort_by_key(|&(u0, _)| u0 % units);
    let mut rest = scan.part();
    let mut cursor = 0;
    let mut at = 0;
    while at < groups.len() {
        // The run of groups from `at` that follow one another, up to JOB_GROUPS of them.
        let first = (groups[at].0 % units) as usize * per_unit;
        let (mut n, mut end) = (0, first);
        while n < JOB_GROUPS && at + n < groups.len() && (groups[at + n].0 % units) as usize * per_unit == end {
            end += (groups[at + n].1 - groups[at + n].0) as usize * per_unit;
            n += 1;
        }
        let (_, start) = rest.split_at(first - cursor);
        let (part, tail) = start.split_at(end - first);
        let mut run = [(0, 0); JOB_GROUPS];
        run[..n].copy_from_slice(&groups[at..at + n]);
        jobs.push(TickJob { groups: run, ngroups: n, part, world, time, tick });
        (rest, cursor, at) = (tail, end, at + n);
    }
}

/// What every group of one sensor's tick shares.
struct GroupContext<'a> {
    sensor: &'a Sensor,
    prepared: &'a PreparedRays<'a>,
    frames: &'a [(DVec3, DMat3)],
    exclude: i32,
    tick: &'a TickContext<'a>,
}

/// The rays of one group and their first surfaces.
struct Rays<'a> {
    origin: DVec3,
    dirs: &'a [DVec3],
    dist: &'a [f64],
    geomid: &'a [i32],
    normal: &'a [DVec3],
}

impl Rays<'_> {
    /// Ray `r`'s first surface.
    #[inline]
    fn surface(&self, r: usize) -> Surface {
        Surface { distance: self.dist[r], geomid: self.geomid[r], normal: self.normal[r] }
    }
}

impl GroupContext<'_> {
    /// Casts the groups of `job` one after the other; returns how many of their beams hit
    /// something.
    fn cast_job(&self, job: TickJob, per_unit: usize, scratch: &mut GroupScratch) -> Result<u64, CoreError> {
        let TickJob { groups, ngroups, part: mut rest, world, time, tick } = job;
        let mut hits = 0;
        for &units in &groups[..ngroups] {
            let (part, tail) = rest.split_at((units.1 - units.0) as usize * per_unit);
            rest = tail;
            hits += self.cast(GroupJob { units, part, world, time, tick }, scratch)?;
        }
        Ok(hits)
    }

    /// Casts one group in its world and writes the results into its part of the scan; returns
    /// how many of its beams hit something.
    fn cast(&self, job: GroupJob, scratch: &mut GroupScratch) -> Result<u64, CoreError> {
        let sensor = self.sensor;
        let GroupScratch { order, dirs, dist, geomid, normal, extra: ext } = scratch;
        let (origin, rot) = self.frames[job.world];
        let (order, ray_of): (&[usize], Option<&[usize]>) = match sensor.whole_group(job.units) {
            Some(local) => {
                dirs.clear();
                dirs.extend(local.iter().map(|&d| rot * d));
                (&sensor.tile_order, Some(&sensor.tile_ray_of))
            }
            None => {
                sensor.group_rays(job.units, order, dirs);
                for d in dirs.iter_mut() {
                    *d = rot * *d;
                }
                (order, None)
            }
        };
        let n = dirs.len();
        dist.resize(n, 0.0);
        geomid.resize(n, 0);
        normal.resize(n, DVec3::ZERO);
        let cast = Cast {
            world: job.world,
            origins: Origins::Shared(origin),
            dirs,
            exclude_body: self.exclude,
            skip_geom: -1,
            // The pattern's directions are unit vectors made from validated angles, so a finite
            // frame makes every ray good and the per-ray check can be skipped.
            trusted: origin.is_finite() && rot.is_finite(),
        };
        self.prepared.cast(cast, HitsMut { dist, geomid, normal })?;
        let c = &sensor.binding.scan;
        let mut part = job.part;
        part.time.fill(job.time);
        let extra = part.returns.is_some() || part.pass_through.is_some() || part.reflected.is_some();
        // The model's pass writes the clean returns beside its own, in beam order, from the
        // values it loads anyway.
        let model_writes_clean = self.tick.model.is_some() && part.returns.is_some() && !self.tick.one_by_one;
        if !model_writes_clean {
            let (mut clean, _) = part.clean_and_returns();
            clean.set_rays(order, origin, (dirs, dist, geomid, normal), |d, g| c.is_hit(d, g));
        }
        if !extra {
            return Ok(part.hits());
        }
        let rays = Rays { origin, dirs, dist, geomid, normal };
        self.prefetch(part.pass_through.is_some(), &rays, job.world, ext)?;
        let mut live = LiveTracer { prepared: self.prepared, world: job.world, exclude: self.exclude };
        if let (Some(m), (clean, Some(returns))) = (&self.tick.model, part.clean_and_returns()) {
            let key = BeamRng::tick_key(m.seeds[job.world], self.tick.sensor as u64, job.tick);
            let first_beam = (job.units.0 % sensor.units()) as usize * (c.beam_count() / sensor.units() as usize);
            if m.footprint.len() > 1 {
                self.model_footprints(m, returns, order, &rays, ext, &mut live, (key, first_beam))?;
            } else if self.tick.one_by_one {
                self.model_one_by_one(m, returns, order, &rays, ext, &mut live, (key, first_beam));
            } else {
                self.model_group(m, (clean, returns), (order, ray_of), &rays, ext, &mut live, (key, first_beam));
            }
        }
        if part.pass_through.is_some() || part.reflected.is_some() {
            self.capture(&mut part, order, &rays, ext, &mut live);
        }
        Ok(part.hits())
    }
}
