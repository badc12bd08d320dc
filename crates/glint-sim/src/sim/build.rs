//! Building a simulation: from a manifest (its scene lit by its rig, lidars, materials,
//! controller, recorder, cameras, observation and task), or from an MJCF scene with lidar
//! bindings; and the rate checks every route makes (an episode a whole number of ticks, a
//! lidar turning at most once per tick).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use glint_core::RayCaster;
use glint_lidar::{
    DEFAULT_RUNNER_HZ, LidarBinding, Lidars, ReturnParams, Runner, ScanConfig, effective_rotation_hz, episode_seed,
};
use glint_manifest::{BakeConfig, Controller, Manifest, Recorder, ResetConfig};
use glint_mujoco::{LitScene, Model, SceneSpec, WorldBatch};

use super::{Setup, Simulation, WorldState};
use crate::controller::Drive;
use crate::episodes::Episodes;
use crate::fields::Fields;
use crate::lidar_set::LidarSet;
use crate::observation::ObservationLayout;
use crate::outputs::Outputs;
use crate::randomize::FieldDraws;
use crate::rangefinders::RangefinderSet;
use crate::reset::Randomizer;
use crate::sensors::Sensors;
use crate::task::TaskState;
use crate::{SimError, SimOptions, VariantPlan, Warning};

impl Setup {
    /// The defaults of a scene without a manifest: zero control, the default recorder with its
    /// sessions under `project_dir`, no materials, no `[reset]`.
    fn bare(scene: Option<PathBuf>, project_dir: PathBuf) -> Setup {
        let recorder = Recorder::default();
        Setup {
            manifest: None,
            scene,
            recorder: Recorder { output_dir: project_dir.join(&recorder.output_dir), ..recorder },
            bake: BakeConfig::default(),
            table: glint_lidar::MaterialTable::default(),
            controller: Controller::Zero,
            reset: ResetConfig::default(),
            project_dir,
        }
    }
}

impl Simulation {
    /// The scene of the manifest at `path` (its MJCF, lidars, materials, bake settings, return
    /// model, controller and recorder), over `options.nworld` worlds.
    pub fn from_manifest(path: impl AsRef<Path>, options: SimOptions) -> Result<Simulation, SimError> {
        Simulation::from_loaded(Manifest::load(path)?, options)
    }

    /// [`Simulation::from_manifest`] of a manifest already loaded (and checked by the caller).
    pub fn from_loaded(manifest: Manifest, options: SimOptions) -> Result<Simulation, SimError> {
        let (model, light_warnings, spec) = lit_model(&manifest)?;
        let table = manifest.material_table(model.scene())?;
        let dir = manifest.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let setup = Setup {
            manifest: Some(manifest.path.clone()),
            scene: Some(manifest.scene.clone()),
            recorder: manifest.recorder.clone(),
            bake: manifest.bake.clone(),
            table,
            controller: manifest.controller.clone(),
            reset: manifest.reset.clone(),
            project_dir: options.project_dir.clone().unwrap_or_else(|| dir.to_path_buf()),
        };
        let calibration = (manifest.return_params, options.seed.unwrap_or(manifest.seed));
        // The task's time limit is the episode length, unless the caller gives one.
        let task_seconds = manifest.task.as_ref().and_then(|t| t.episode_seconds);
        let options = SimOptions { episode_seconds: options.episode_seconds.or(task_seconds), ..options };
        let mut sim = Simulation::build(model, manifest.lidar, setup, calibration, &options)?;
        sim.set_physical_model(manifest.physical_model)?;
        sim.warnings.extend(light_warnings);
        if let Some(spec) = spec {
            let plan = VariantPlan { variants: manifest.variants.clone(), assign: manifest.variant_assign.clone() };
            sim.apply_variants(&spec, &plan)?;
        }
        sim.world.draws = FieldDraws::new(&manifest.randomize, &sim.scene, &sim.world.fields)?;
        for w in 0..sim.nworld() {
            sim.draw_fields(w)?;
        }
        if !manifest.cameras.is_empty() {
            let options = manifest.cameras.iter().map(|c| sim.camera_options(c)).collect::<Result<Vec<_>, _>>()?;
            let rates: Vec<(usize, f64)> =
                options.iter().zip(&manifest.cameras).map(|(o, c)| (o.camera, c.rate_hz)).collect();
            sim.set_cameras(options)?;
            for (camera, rate) in rates {
                sim.set_camera_rate(camera, rate)?;
            }
        }
        sim.set_observation(&manifest.observation)?;
        if let Some(task) = &manifest.task {
            let mut state = TaskState::new(task, &sim.scene, sim.nworld())?;
            for w in 0..sim.nworld() {
                state.restart(&sim.scene, sim.worlds.poses(), w);
            }
            sim.task = Some(state);
        }
        Ok(sim)
    }

    /// The MJCF scene `xml` with the lidars `bindings`, Generic return model, zero control
    /// and the default recorder, over `options.nworld` worlds.
    pub fn from_xml(xml: &str, bindings: Vec<LidarBinding>, options: SimOptions) -> Result<Simulation, SimError> {
        let model = Model::from_xml_str(xml)?;
        let project_dir = options.project_dir.clone().unwrap_or_else(|| PathBuf::from("."));
        let calibration = (ReturnParams::default(), options.seed.unwrap_or(0));
        Simulation::build(model, bindings, Setup::bare(None, project_dir), calibration, &options)
    }

    /// [`Simulation::from_xml`] of the MJCF file at `path` (its includes, meshes and textures
    /// resolve from it; bakes and recordings go beside it unless `options` says otherwise).
    pub fn from_xml_file(
        path: impl AsRef<Path>,
        bindings: Vec<LidarBinding>,
        options: SimOptions,
    ) -> Result<Simulation, SimError> {
        let path = path.as_ref();
        let model = Model::from_xml_file(path)?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let project_dir = options.project_dir.clone().unwrap_or_else(|| dir.to_path_buf());
        let calibration = (ReturnParams::default(), options.seed.unwrap_or(0));
        let setup = Setup::bare(Some(path.to_path_buf()), project_dir);
        Simulation::build(model, bindings, setup, calibration, &options)
    }

    fn build(
        model: Model,
        bindings: Vec<LidarBinding>,
        setup: Setup,
        (params, seed): (ReturnParams, u64),
        options: &SimOptions,
    ) -> Result<Simulation, SimError> {
        let scene = model.scene().clone();
        let nworld = options.nworld;
        let mut setup = setup;
        let asked = options.runner_hz.or(setup.recorder.lidar_runner_hz);
        let (runner, runner_hz) = Runner::resolve(model.timestep(), asked)?;
        // A scene without lidars has no rate to keep: only a lidar is told its rate moved.
        let moved =
            (asked.is_none() && runner_hz != DEFAULT_RUNNER_HZ && !bindings.is_empty()).then(|| Warning::RunnerRate {
                default_hz: DEFAULT_RUNNER_HZ,
                hz: runner_hz,
                steps: runner.steps,
                timestep: model.timestep(),
            });
        setup.recorder.lidar_runner_hz = Some(runner_hz);
        let length = options.episode_seconds.map(|s| whole_ticks(s, runner)).transpose()?;
        if setup.manifest.is_some() {
            bindings.iter().enumerate().try_for_each(|(s, b)| check_rotation(s, &b.scan, runner))?;
        }
        let capped: Vec<Warning> =
            bindings.iter().enumerate().filter_map(|(s, b)| capped_rotation(s, &b.scan, runner)).collect();
        let randomizer = Randomizer::new(&setup.reset, &model)?;
        crate::memory::check_worlds(&model, &bindings, nworld)?;
        let episodes = Episodes::new(nworld, (seed, options.first_episode), length, runner.dt);
        let mut worlds = WorldBatch::new(&model, nworld)?;
        for w in 0..nworld {
            randomizer.apply(&mut worlds, w, episodes.seed(w))?;
        }
        let rays = RayCaster::new(&scene, worlds.poses());
        let blind = skins_unseen_by_lidars(&scene, &bindings);
        let (mut lidars, lidar_warnings) = Lidars::new(&scene, bindings, nworld)?;
        lidars.set_return_params(params)?;
        for w in 0..nworld {
            lidars.set_world_seed(w, episode_seed(seed, w as u64))?;
        }
        let lidars = LidarSet::new(lidars, &scene, &setup.table)?;
        let drive = Drive::new(&setup.controller, &model, nworld)?;
        let lidar_warnings = lidar_warnings.into_iter().map(|(sensor, warning)| Warning::Lidar { sensor, warning });
        let (rangefinders, rangefinder_warnings) = RangefinderSet::from_model(&model, nworld);
        let state = crate::state::RobotState::new(&model);
        let warnings =
            moved.into_iter().chain(capped).chain(lidar_warnings).chain(blind).chain(rangefinder_warnings).collect();
        let fields = Fields::new(&scene, &worlds.physics(0)?);
        let world = WorldState {
            fields,
            draws: FieldDraws::default(),
            drawn: vec![Default::default(); nworld],
            variants: Vec::new(),
            variant_of: vec![None; nworld],
        };
        Ok(Simulation {
            model,
            scene: Arc::clone(&scene),
            worlds,
            rays,
            runner,
            episodes,
            task: None,
            drive,
            randomizer,
            world,
            sensors: Sensors { lidars, cameras: None, rangefinders, state, added: Vec::new() },
            outputs: Outputs::default(),
            bake: None,
            observation: ObservationLayout::default(),
            setup,
            warnings,
        })
    }
}

/// The lidar ticks of an episode of `seconds`, refused unless it is a whole number of ticks
/// (an episode length is never rounded); the error names the nearest lengths that are.
fn whole_ticks(seconds: f64, runner: Runner) -> Result<u64, SimError> {
    let hz = 1.0 / runner.dt;
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(SimError::Rate(format!("the episode length is {seconds} s: give a positive number of seconds")));
    }
    let ticks = seconds / runner.dt;
    let whole = ticks.round();
    if whole >= 1.0 && (ticks - whole).abs() <= 1e-6 * whole.max(1.0) {
        return Ok(whole as u64);
    }
    let length = |n: f64| format!("{} s ({n} ticks)", trim(n * runner.dt));
    let (below, above) = (ticks.floor().max(1.0), ticks.floor().max(0.0) + 1.0);
    let choices = if below == above { length(above) } else { format!("{} or {}", length(below), length(above)) };
    Err(SimError::Rate(format!(
        "an episode of {seconds} s is {ticks:.3} lidar ticks of {} s (lidar_runner_hz = {}), not a whole number: \
         give a whole number of ticks, such as {choices}, or change [recorder] lidar_runner_hz",
        trim(runner.dt),
        trim(hz)
    )))
}

/// `v` with at most six decimals and no trailing zeros.
pub(crate) fn trim(v: f64) -> String {
    let text = format!("{v:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The warning of sensor `sensor`'s configuration when it turns faster than one revolution per
/// tick of `runner`: the seed's API accepts it, and the sensor scans one revolution per tick.
pub(crate) fn capped_rotation(sensor: usize, config: &ScanConfig, runner: Runner) -> Option<Warning> {
    let hz = 1.0 / runner.dt;
    (config.rotation_hz > hz * (1.0 + 1e-9)).then(|| Warning::RotationCapped {
        sensor,
        rotation_hz: config.rotation_hz,
        effective_hz: effective_rotation_hz(config.rotation_hz, hz),
    })
}

/// Refuses a manifest's configuration of sensor `sensor` that turns faster than one
/// revolution per tick of `runner` (the seed: keep Rotation Hz at or below the runner's rate;
/// the seed's API accepts it and scans one revolution per tick, [`capped_rotation`]).
fn check_rotation(sensor: usize, config: &ScanConfig, runner: Runner) -> Result<(), SimError> {
    let hz = 1.0 / runner.dt;
    if capped_rotation(sensor, config, runner).is_some() {
        return Err(SimError::Rate(format!(
            "lidar sensor {sensor}: rotation_hz = {} is above the lidar runner's {} ticks per second, and a sensor \
             cannot scan faster than one revolution per tick: give rotation_hz at most {}, or raise \
             [recorder] lidar_runner_hz",
            trim(config.rotation_hz),
            trim(hz),
            trim(hz)
        )));
    }
    Ok(())
}

/// The manifest's scene, lit by its rig when `use_scenario_lights` is on (the rig applied
/// through MuJoCo's model editing before compiling), with what the rig warns about; a rig
/// without the opt-in is ignored, as the seed says, with a warning.
///
/// With `[variants]`, also the spec the variants compile from (the lit one when lit).
fn lit_model(manifest: &Manifest) -> Result<(Model, Vec<Warning>, Option<SceneSpec>), SimError> {
    let rig = &manifest.lights;
    let variants = !manifest.variants.is_empty();
    if manifest.use_scenario_lights {
        let (model, translation, spec) = LitScene::from_xml_file(&manifest.scene, rig)?.into_parts();
        let warnings = translation.warnings.into_iter().map(Warning::Light).collect();
        return Ok((model, warnings, variants.then_some(spec)));
    }
    let model = Model::from_xml_file(&manifest.scene)?;
    let ignored = (!rig.lights.is_empty()).then_some(Warning::RigIgnored { lights: rig.lights.len() });
    let spec = if variants { Some(SceneSpec::from_xml_file(&manifest.scene)?) } else { None };
    Ok((model, ignored.into_iter().collect(), spec))
}

/// The warning that lidars of `bindings` do not see the scene's skins and drawn flexes, if it
/// has any and a lidar has not opted in.
fn skins_unseen_by_lidars(scene: &glint_core::Scene, bindings: &[LidarBinding]) -> Option<Warning> {
    let lidars: Vec<String> = bindings
        .iter()
        .enumerate()
        .filter(|(_, b)| !b.see_skins)
        .map(|(i, b)| if b.name.is_empty() { format!("#{i}") } else { format!("'{}'", b.name) })
        .collect();
    if lidars.is_empty() {
        return None;
    }
    let listed = |what: &str, names: Vec<&str>| {
        (!names.is_empty()).then(|| {
            let shown: Vec<&str> = names.iter().take(3).map(|n| if n.is_empty() { "unnamed" } else { n }).collect();
            let more = if names.len() > 3 { ", ..." } else { "" };
            format!("{} {what} ({}{more})", names.len(), shown.join(", "))
        })
    };
    let names = |flex: bool| scene.skin.iter().filter(|s| s.flex.is_some() == flex).map(|s| s.name.as_str()).collect();
    let what: Vec<String> =
        [listed("skins", names(false)), listed("flexes", names(true))].into_iter().flatten().collect();
    (!what.is_empty()).then_some(Warning::LidarBlindToSkins { lidars, what })
}
