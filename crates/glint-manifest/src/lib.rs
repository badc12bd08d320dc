//! glint-manifest: the scene manifest, a TOML file that names the MJCF scene and binds its
//! sensors. Every editor action of the seed is a field here (see `docs/manifest.md`).
//!
//! ```toml
//! scene = "crowded.xml"          # MJCF, relative to this file
//!
//! [[lidar]]
//! name = "roof"
//! attach_site = "lidar"          # wins over attach_body when both are set
//! preset = "ouster-os1-64"       # applied first; the fields below adjust it
//! max_range = 60.0
//! self_ignore = "whole-robot"
//!
//! [materials.window]             # NIR authoring of the MJCF material "window"
//! preset = "clear-float-glass"
//!
//! [bake]                         # material bake settings (`glint bake`)
//! cell_size = 0.05
//!
//! [return_model]                 # the return model's calibration
//! preset = "ouster-os1"
//! seed = 7
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use glam::DVec3;
use glint_core::{Scene, Variant, nearest_name};
use glint_lidar::{
    BakeSettings, ColourBy, Continuation, LidarBinding, LidarError, MaterialPreset, MaterialTable, Metal, NirMaterial,
    PhysicalModel, RETURN_PARAMS, ReturnModelKind, ReturnParams, ReturnPreset, ScanConfig, ScanFields, ScanPreset,
    SecondaryCapture, SecondaryScope, Spelled, bake_path,
};
use glint_lights::{LightsError, RawLight, Rig};
use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};

mod camera;
mod controller;
mod located;
mod observation;
mod randomize;
mod reset;
mod task;
mod values;
mod variants;

use camera::RawCamera;
pub use camera::{CAMERA_OUTPUTS, CameraBinding, DEFAULT_RATE_HZ};
pub use controller::Controller;
use controller::RawController;
use observation::RawObservation;
pub use observation::{MAX_OBSERVATION_BEAMS, OBSERVATION_COMPONENTS, ObservationComponent};
pub use randomize::{Distribution, Randomization};
use randomize::{RawRandomize, randomizations};
use reset::RawReset;
pub use reset::{BodyReset, MAX_RESET_OFFSET, MAX_RESET_YAW_DEG, ResetConfig};
use task::RawTask;
pub use task::Task;
use thiserror::Error;
use values::{Exact, Written};
use variants::RawVariants;

/// Why a manifest was rejected.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// The file cannot be read.
    #[error("cannot read manifest '{path}': {reason}")]
    Read {
        /// The manifest path.
        path: PathBuf,
        /// What the operating system said.
        reason: String,
    },
    /// Not valid TOML, or a table serde refuses for a reason other than a value's type (a
    /// missing key): the message gives the line and the table where it can.
    #[error("manifest '{path}' is not valid: {message}")]
    Parse {
        /// The manifest path.
        path: PathBuf,
        /// The parser's message, located ("line 3, [task]: missing field `body`").
        message: String,
    },
    /// A value of the wrong type or shape for its key: where it is, what it is, and what the
    /// key takes.
    #[error("manifest '{path}' is not valid: {mismatch}")]
    Type {
        /// The manifest path (or what gave the table).
        path: PathBuf,
        /// The table, the key, the value, its type, the type expected and the line.
        mismatch: Box<TypeMismatch>,
    },
    /// A key the manifest does not know.
    #[error("manifest '{path}': unknown key `{key}` in {table}{hint}")]
    UnknownKey {
        /// The manifest path.
        path: PathBuf,
        /// Which table, e.g. "[[lidar]] 0".
        table: String,
        /// The key.
        key: String,
        /// "; did you mean `x`?" or the list of valid keys.
        hint: String,
    },
    /// A value the manifest knows the key of but not the value.
    #[error("manifest '{path}': {table} has {key} = \"{value}\"; use one of {valid}")]
    BadValue {
        /// The manifest path.
        path: PathBuf,
        /// Which table.
        table: String,
        /// The key.
        key: &'static str,
        /// The value given.
        value: String,
        /// The valid values.
        valid: String,
    },
    /// A value outside its range.
    #[error("manifest '{path}': {message}")]
    Value {
        /// The manifest path.
        path: PathBuf,
        /// Field, value and range.
        message: String,
    },
    /// A lidar binding failed the seed's ranges.
    #[error("manifest '{path}': [[lidar]] {index}: {error}")]
    Lidar {
        /// The manifest path.
        path: PathBuf,
        /// The binding's index.
        index: usize,
        /// What is wrong with it (in the message, not repeated as a source).
        error: LidarError,
    },
    /// A `[materials.*]`, `[bake]` or `[return_model]` value failed its check.
    #[error("manifest '{path}': {table}: {error}")]
    Section {
        /// The manifest path.
        path: PathBuf,
        /// Which table, e.g. "[materials.glass]".
        table: String,
        /// What is wrong with it (in the message, not repeated as a source).
        error: Box<LidarError>,
    },
    /// The light rig (`[[lights]]` or `lights_file`) is not valid.
    #[error("manifest '{path}': {error}")]
    Lights {
        /// The manifest path.
        path: PathBuf,
        /// What is wrong with the rig.
        error: LightsError,
    },
    /// A `[materials.NAME]` table names a material the MJCF scene does not define.
    #[error("manifest '{path}': [materials.{name}] names a material that '{scene}' does not define{hint}")]
    UnknownMaterial {
        /// The manifest path.
        path: PathBuf,
        /// The material name given.
        name: String,
        /// The MJCF scene.
        scene: PathBuf,
        /// "; did you mean `x`?", or the materials it does define.
        hint: String,
    },
}

/// A value of the wrong type or shape, located. Written "line 5, [[lidar]] 0 has `channels`
/// = "64", a string; expected an integer" (without the line for a table a program gave).
#[derive(Clone, Debug, PartialEq)]
pub struct TypeMismatch {
    /// The value's line in the manifest (1-based), if it was read from a file.
    pub line: Option<usize>,
    /// Which table, e.g. "[[lidar]] 0".
    pub table: String,
    /// The key, with element indices where the value is inside an array ("points[2]").
    pub key: String,
    /// The value as written.
    pub value: String,
    /// What the value is ("a string", "an array of 3 elements", "out of range").
    pub found: String,
    /// What the key takes ("an integer", "a number", "an array of exactly 2 values").
    pub expected: String,
}

impl std::fmt::Display for TypeMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(line) = self.line {
            write!(f, "line {line}, ")?;
        }
        let TypeMismatch { table, key, value, found, expected, .. } = self;
        write!(f, "{table} has `{key}` = {value}, {found}; expected {expected}")
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    scene: String,
    #[serde(default)]
    lidar: Vec<RawLidar>,
    #[serde(default)]
    recorder: RawRecorder,
    #[serde(default)]
    materials: BTreeMap<String, RawMaterial>,
    #[serde(default)]
    bake: RawBake,
    #[serde(default)]
    return_model: RawReturnModel,
    #[serde(default)]
    controller: RawController,
    #[serde(default)]
    reset: RawReset,
    #[serde(default)]
    observation: Vec<RawObservation>,
    task: Option<RawTask>,
    use_scenario_lights: Option<bool>,
    #[serde(default)]
    lights: Vec<RawLight>,
    lights_file: Option<String>,
    #[serde(default)]
    camera: Vec<RawCamera>,
    #[serde(default)]
    randomize: RawRandomize,
    #[serde(default)]
    variants: RawVariants,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawMaterial {
    preset: Option<String>,
    reflectivity: Option<f64>,
    retroreflective: Option<f64>,
    f0: Option<f64>,
    transmission: Option<f64>,
    absorption: Option<f64>,
    continuation: Option<String>,
    roughness: Option<f64>,
    metalness: Option<f64>,
    metal: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawBake {
    name: Option<String>,
    cell_size: Option<f64>,
    max_dim: Option<i64>,
    splat_radius: Option<i64>,
    include_hidden: Option<bool>,
}

/// The `[bake]` table: which bake `glint bake` writes and how (the seed's bake settings,
/// "saved with the scene").
#[derive(Clone, Debug, PartialEq)]
pub struct BakeConfig {
    /// The bake's name: it is saved to `MaterialBakes/<name>.lvxb` beside the manifest.
    /// Default "scene".
    pub name: String,
    /// The scene's bake settings (what a request's zeros fall back to).
    pub settings: BakeSettings,
}

impl Default for BakeConfig {
    fn default() -> Self {
        BakeConfig { name: "scene".into(), settings: BakeSettings::default() }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRecorder {
    lidar_runner_hz: Option<f64>,
    output_dir: Option<String>,
    record_video_proxy: Option<bool>,
    video_colour_by: Option<String>,
}

/// Recorder settings (the seed's Recorder page).
#[derive(Clone, Debug, PartialEq)]
pub struct Recorder {
    /// Rate of the lidar runner, ticks per second: each tick groups the physics steps of
    /// `1 / lidar_runner_hz` seconds and advances every lidar by that long. Given, it is kept
    /// exactly or the scene is refused; left out (`None`), the runner ticks at 100 Hz (10 ms)
    /// where the scene's timestep realises that, and at the nearest rate it realises otherwise
    /// (a warning names both when the scene has lidars).
    pub lidar_runner_hz: Option<f64>,
    /// Where sessions go (`session_<date>_<time>/` inside it), resolved against the
    /// manifest's folder. Default `DataSessions`.
    pub output_dir: PathBuf,
    /// Write an H.264 `.mp4` proxy beside each Parquet file (needs `ffmpeg`). Default false.
    pub record_video_proxy: bool,
    /// Colour-by mode of the video proxy (a `glint scan --colour-by` name). Default `range`.
    pub video_colour_by: ColourBy,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            lidar_runner_hz: None,
            output_dir: PathBuf::from("DataSessions"),
            record_video_proxy: false,
            video_colour_by: ColourBy::Range,
        }
    }
}

/// Declares [`RawLidar`], a `[[lidar]]` table: the binding's own keys, each read by
/// [`RawLidar::take`], and the scan configuration's ([`ScanFields`]), read in one pass (see
/// its `Deserialize`); and [`LIDAR_KEYS`], every key of the table. The binding's keys are
/// written once, here.
macro_rules! raw_lidar {
    ($($key:ident: $ty:ty,)+) => {
        #[derive(Default)]
        struct RawLidar {
            $($key: Option<$ty>,)+
            scan: ScanFields,
        }

        /// Every key of a `[[lidar]]` table: the binding's, then the scan configuration's.
        static LIDAR_KEYS: LazyLock<Vec<&'static str>> =
            LazyLock::new(|| [$(stringify!($key)),+].into_iter().chain(ScanFields::keys().iter().copied()).collect());

        impl RawLidar {
            /// Reads the value of `key` from `map` when it is one of the binding's keys; `false`
            /// when it is not.
            fn take<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
                match key {
                    $(stringify!($key) => self.$key = Some(map.next_value()?),)+
                    _ => return Ok(false),
                }
                Ok(true)
            }
        }
    };
}

raw_lidar! {
    name: String,
    attach_body: String,
    attach_site: String,
    mount_offset: Exact<3>,
    preset: String,
    video_proxy: bool,
    secondary_capture: String,
    secondary_scope: String,
    see_skins: bool,
}

/// Reads the binding's keys here and hands every other key to [`ScanFields`]'s own reader,
/// value by value. `#[serde(flatten)]` would do the same but buffers the table first, and a
/// wrong type inside it then loses its key and line (the error points at `[[lidar]]`).
impl<'de> Deserialize<'de> for RawLidar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(LidarVisitor)
    }
}

struct LidarVisitor;

impl<'de> Visitor<'de> for LidarVisitor {
    type Value = RawLidar;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a [[lidar]] table")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawLidar, A::Error> {
        let mut raw = RawLidar::default();
        let scan = ScanFields::deserialize(MapAccessDeserializer::new(BindingKeysAside { map, raw: &mut raw }))?;
        raw.scan = scan;
        Ok(raw)
    }
}

/// A `[[lidar]]` table's entries less the binding's keys, whose values it reads into `raw`
/// on the way; a key of neither is refused with every key of the table.
struct BindingKeysAside<'a, A> {
    map: A,
    raw: &'a mut RawLidar,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for BindingKeysAside<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        while let Some(key) = self.map.next_key::<String>()? {
            if !self.raw.take(&key, &mut self.map)? {
                if !ScanFields::keys().contains(&key.as_str()) {
                    return Err(serde::de::Error::unknown_field(&key, &LIDAR_KEYS));
                }
                return seed.deserialize(key.into_deserializer()).map(Some);
            }
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A loaded manifest.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// Where the manifest was read from.
    pub path: PathBuf,
    /// The MJCF scene, resolved against the manifest's folder.
    pub scene: PathBuf,
    /// Lidar bindings in order (sensor indices are positions here), presets applied and
    /// every field validated.
    pub lidar: Vec<LidarBinding>,
    /// Recorder settings.
    pub recorder: Recorder,
    /// NIR authoring per MuJoCo material name (`[materials.NAME]`), in name order, presets
    /// and metals applied and every channel checked. Whether each name exists in the MJCF is
    /// checked by [`Manifest::material_table`], which needs the scene.
    pub materials: Vec<(String, NirMaterial)>,
    /// Material bake settings (`[bake]`).
    pub bake: BakeConfig,
    /// The return model's calibration (`[return_model]`): the preset, then any of the
    /// seventeen parameters, validated. Default: the Generic preset.
    pub return_params: ReturnParams,
    /// The return model's noise seed (`[return_model] seed`, default 0).
    pub seed: u64,
    /// `[return_model] model = "physical"`: the physical model's terms (each on unless
    /// `[return_model.physical]` switches it off); `None` for the seed's model (the default).
    pub physical_model: Option<PhysicalModel>,
    /// What moves the robot in `glint run` (`[controller]`; default: zero control).
    pub controller: Controller,
    /// How each episode's initial state is randomized (`[reset]`; default: not at all).
    pub reset: ResetConfig,
    /// The task contract's observation vector (`[[observation]]`), in order; empty when the
    /// manifest declares none. Sensor indices are checked when the simulation is built.
    pub observation: Vec<ObservationComponent>,
    /// The built-in task of the RL environments (`[task]`), if any.
    pub task: Option<Task>,
    /// Whether the light rig replaces the scene's lights (`use_scenario_lights`, default
    /// false: the scene keeps its headlight and its own lights and the rig is ignored).
    pub use_scenario_lights: bool,
    /// The light rig: `[[lights]]` tables, or the file `lights_file` names (empty if neither).
    pub lights: Rig,
    /// Cameras bound for rendering (`[[camera]]`), in order.
    pub cameras: Vec<CameraBinding>,
    /// Per-world draws of model fields at each episode reset (`[randomize]`), in field then
    /// target name order.
    pub randomize: Vec<Randomization>,
    /// Per-world assets (`[variants]`): the variants of the scene (empty: none).
    pub variants: Vec<Variant>,
    /// The variant index of each world in turn: world `w` takes `variant_assign[w % len]`.
    pub variant_assign: Vec<usize>,
}

/// "; did you mean `x`?" for the nearest valid key, or the whole list when none is close.
pub(crate) fn hint(key: &str, valid: &[&str]) -> String {
    match nearest_name(key, valid.iter().copied()) {
        Some(v) => format!("; did you mean `{v}`?"),
        None => format!("; valid keys are {}", valid.join(", ")),
    }
}

impl Manifest {
    /// Reads and checks a manifest file.
    pub fn load(path: impl AsRef<Path>) -> Result<Manifest, ManifestError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ManifestError::Read { path: path.to_path_buf(), reason: e.to_string() })?;
        Manifest::parse(&text, path)
    }

    /// Checks manifest text as if read from `path` (relative paths resolve against its folder).
    pub fn parse(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
        let raw: RawManifest = located::from_text(text, path)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let lidar =
            raw.lidar.iter().enumerate().map(|(index, l)| l.binding(path, index)).collect::<Result<Vec<_>, _>>()?;
        let mut recorder = Recorder::default();
        if let Some(hz) = raw.recorder.lidar_runner_hz {
            if !(hz.is_finite() && hz > 0.0 && hz <= 10_000.0) {
                return Err(ManifestError::Value {
                    path: path.to_path_buf(),
                    message: format!(
                        "[recorder] lidar_runner_hz is {hz}, outside its range (0, 10000] ticks per second"
                    ),
                });
            }
            recorder.lidar_runner_hz = Some(hz);
        }
        recorder.output_dir = dir.join(raw.recorder.output_dir.as_deref().unwrap_or("DataSessions"));
        recorder.record_video_proxy = raw.recorder.record_video_proxy.unwrap_or(false);
        if let Some(mode) = &raw.recorder.video_colour_by {
            recorder.video_colour_by = spelled(path, "[recorder]", "video_colour_by", mode)?;
        }
        let controller = raw.controller.controller(path)?;
        let reset = raw.reset.config(path)?;
        let observation =
            raw.observation.iter().enumerate().map(|(i, o)| o.component(path, i)).collect::<Result<Vec<_>, _>>()?;
        let task = raw.task.as_ref().map(|t| t.task(path)).transpose()?;
        let materials = raw
            .materials
            .iter()
            .map(|(name, m)| Ok((name.clone(), m.material(path, name)?)))
            .collect::<Result<Vec<_>, ManifestError>>()?;
        let bake = raw.bake.config(path)?;
        let (return_params, seed) = return_model(&raw.return_model, path)?;
        let physical_model = physical_model(&raw.return_model, path)?;
        let lights = light_rig(&raw, dir, path)?;
        let randomize = randomizations(&raw.randomize, path)?;
        let (variants, variant_assign) = variants::variants(&raw.variants, path)?;
        let cameras = raw.camera.iter().enumerate().map(|(i, c)| c.binding(path, i)).collect::<Result<Vec<_>, _>>()?;
        Ok(Manifest {
            path: path.to_path_buf(),
            scene: dir.join(&raw.scene),
            lidar,
            recorder,
            materials,
            bake,
            return_params,
            physical_model,
            seed,
            controller,
            reset,
            observation,
            task,
            use_scenario_lights: raw.use_scenario_lights.unwrap_or(false),
            lights,
            cameras,
            randomize,
            variants,
            variant_assign,
        })
    }

    /// The NIR authoring of `scene` (the scene this manifest names, loaded): every
    /// `[materials.NAME]` must name a material the MJCF defines, or the error names it and the
    /// nearest material the MJCF does define.
    pub fn material_table(&self, scene: &Scene) -> Result<MaterialTable, ManifestError> {
        authored_table(&self.materials, scene, &self.path, &self.scene)
    }
}

/// The NIR authoring of `table` (the keys of a manifest's `[materials]`: one table per MJCF
/// material name) for `scene`, checked as a manifest's is: errors name `source`, and
/// `scene_name` for a material the scene does not define.
pub fn material_table(
    table: &toml::Table,
    scene: &Scene,
    source: &Path,
    scene_name: &Path,
) -> Result<MaterialTable, ManifestError> {
    let raw: BTreeMap<String, RawMaterial> = located::from_table(table, ("materials", None), source)?;
    let materials =
        raw.iter().map(|(name, m)| Ok((name.clone(), m.material(source, name)?))).collect::<Result<Vec<_>, _>>()?;
    authored_table(&materials, scene, source, scene_name)
}

/// `materials` as the table of `scene`: each must name a material the MJCF defines, or the
/// error names it and the nearest material the MJCF does define.
fn authored_table(
    materials: &[(String, NirMaterial)],
    scene: &Scene,
    path: &Path,
    scene_path: &Path,
) -> Result<MaterialTable, ManifestError> {
    let mut table = MaterialTable::default();
    for (name, material) in materials {
        if !scene.mat_name.iter().any(|n| n == name) {
            let hint = match nearest_name(name, scene.mat_name.iter().map(String::as_str)) {
                Some(n) => format!("; did you mean `{n}`?"),
                None if scene.mat_name.is_empty() => "; it defines no materials".into(),
                None => format!("; it defines {}", scene.mat_name.join(", ")),
            };
            return Err(ManifestError::UnknownMaterial {
                path: path.to_path_buf(),
                name: name.clone(),
                scene: scene_path.to_path_buf(),
                hint,
            });
        }
        table.set(name, *material).map_err(|source| ManifestError::Section {
            path: path.to_path_buf(),
            table: format!("[materials.{name}]"),
            error: Box::new(source.into()),
        })?;
    }
    Ok(table)
}

/// The rig of `[[lights]]` or of the file `lights_file` names (relative to the manifest).
fn light_rig(raw: &RawManifest, dir: &Path, path: &Path) -> Result<Rig, ManifestError> {
    let lights_error = |error: LightsError| ManifestError::Lights { path: path.to_path_buf(), error };
    match &raw.lights_file {
        Some(_) if !raw.lights.is_empty() => Err(ManifestError::Value {
            path: path.to_path_buf(),
            message: "both [[lights]] tables and lights_file give a light rig: keep one".into(),
        }),
        Some(file) => Rig::load(dir.join(file)).map_err(lights_error),
        None => Rig::from_raw(&raw.lights).map_err(lights_error),
    }
}

/// The lidar bindings of `tables`, each with the keys of a `[[lidar]]` table, checked as a
/// manifest's are (errors name `source` and the table's index): how a program that builds a
/// simulation from an MJCF scene binds its lidars.
pub fn lidar_bindings(tables: &[toml::Table], source: &Path) -> Result<Vec<LidarBinding>, ManifestError> {
    bindings(tables, source, "lidar", |raw: RawLidar, index| raw.binding(source, index))
}

/// The variants and per-world assignment of `table`, which has the keys of a `[variants]`
/// table (`assign`, and `variant` as a list of `{name, edits}`), checked as a manifest's are
/// (errors name `source`).
pub fn variant_plan(table: toml::Table, source: &Path) -> Result<(Vec<Variant>, Vec<usize>), ManifestError> {
    let raw: RawVariants = located::from_table(&table, ("variants", None), source)?;
    variants::variants(&raw, source)
}

/// The camera bindings of `tables`, each with the keys of a `[[camera]]` table, checked as a
/// manifest's are (errors name `source` and the table's index).
pub fn camera_bindings(tables: &[toml::Table], source: &Path) -> Result<Vec<CameraBinding>, ManifestError> {
    bindings(tables, source, "camera", |raw: RawCamera, index| raw.binding(source, index))
}

/// Each of `tables` (a manifest's `[[name]]` tables) read as `R` (an unknown key is an error
/// naming it) and made a binding by `make`.
fn bindings<R: serde::de::DeserializeOwned, B>(
    tables: &[toml::Table],
    source: &Path,
    name: &str,
    make: impl Fn(R, usize) -> Result<B, ManifestError>,
) -> Result<Vec<B>, ManifestError> {
    tables
        .iter()
        .enumerate()
        .map(|(index, table)| make(located::from_table(table, (name, Some(index)), source)?, index))
        .collect()
}

impl RawMaterial {
    /// The preset, then the metal, then each channel given; checked.
    fn material(&self, path: &Path, name: &str) -> Result<NirMaterial, ManifestError> {
        let err = |source: LidarError| ManifestError::Section {
            path: path.to_path_buf(),
            table: format!("[materials.{name}]"),
            error: Box::new(source),
        };
        let mut m = match &self.preset {
            Some(p) => MaterialPreset::from_name(p).map_err(|e| err(e.into()))?.material(),
            None => NirMaterial::default(),
        };
        if let Some(metal) = &self.metal {
            m.set_metal(Metal::from_name(metal).map_err(|e| err(e.into()))?);
        }
        if let Some(c) = &self.continuation {
            m.continuation = Continuation::from_name(c).map_err(|e| err(e.into()))?;
        }
        for (field, value, slot) in [
            ("reflectivity", self.reflectivity, &mut m.reflectivity),
            ("retroreflective", self.retroreflective, &mut m.retroreflective),
            ("f0", self.f0, &mut m.f0),
            ("transmission", self.transmission, &mut m.transmission),
            ("absorption", self.absorption, &mut m.absorption),
            ("roughness", self.roughness, &mut m.roughness),
            ("metalness", self.metalness, &mut m.metalness),
        ] {
            if let Some(v) = value {
                if !v.is_finite() {
                    return Err(err(LidarError::OutOfRange { field, value: v, range: "a finite number" }));
                }
                *slot = v as f32;
            }
        }
        m.validate().map_err(|e| err(e.into()))?;
        Ok(m)
    }
}

impl RawBake {
    fn config(&self, path: &Path) -> Result<BakeConfig, ManifestError> {
        let err = |source: LidarError| ManifestError::Section {
            path: path.to_path_buf(),
            table: "[bake]".into(),
            error: Box::new(source),
        };
        let mut config = BakeConfig::default();
        if let Some(name) = &self.name {
            bake_path(Path::new(""), name).map_err(|e| err(e.into()))?;
            config.name = name.clone();
        }
        let s = &mut config.settings;
        if let Some(v) = self.cell_size {
            s.cell_size = v;
        }
        if let Some(v) = self.max_dim {
            s.max_dim = u32::try_from(v)
                .map_err(|_| err(LidarError::OutOfRange { field: "max_dim", value: v as f64, range: "1 to 1024" }))?;
        }
        if let Some(v) = self.splat_radius {
            s.splat_radius = i32::try_from(v).map_err(|_| {
                err(LidarError::OutOfRange { field: "splat_radius", value: v as f64, range: "0 to 16 cells" })
            })?;
        }
        if let Some(v) = self.include_hidden {
            s.include_hidden = v;
        }
        s.validate().map_err(|e| err(e.into()))?;
        Ok(config)
    }
}

/// The `[return_model]` table as written: each parameter a number kept as written, so an
/// error echoes it exactly.
#[derive(Default)]
struct RawReturnModel {
    preset: Option<String>,
    seed: Option<u64>,
    model: Option<String>,
    physical: Option<PhysicalModel>,
    params: BTreeMap<String, Written>,
}

/// Read key by key: `preset` a string, `seed` an integer from 0, a return parameter's key
/// ([`RETURN_PARAMS`]) a number; any other key is refused with the list of them.
impl<'de> Deserialize<'de> for RawReturnModel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ReturnModelVisitor)
    }
}

struct ReturnModelVisitor;

/// Every key of `[return_model]`: the visitor's own four, then the parameters'.
static RETURN_MODEL_KEYS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    ["preset", "seed", "model", "physical"].into_iter().chain(RETURN_PARAMS.iter().map(|p| p.key)).collect()
});

impl<'de> Visitor<'de> for ReturnModelVisitor {
    type Value = RawReturnModel;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a [return_model] table")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawReturnModel, A::Error> {
        let mut raw = RawReturnModel::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "preset" => raw.preset = Some(map.next_value()?),
                "seed" => raw.seed = Some(map.next_value()?),
                "model" => raw.model = Some(map.next_value()?),
                "physical" => raw.physical = Some(map.next_value()?),
                _ if RETURN_PARAMS.iter().any(|p| p.key == key) => {
                    raw.params.insert(key, map.next_value()?);
                }
                _ => return Err(serde::de::Error::unknown_field(&key, &RETURN_MODEL_KEYS)),
            }
        }
        Ok(raw)
    }
}

/// The `[return_model]` table: the preset's seventeen parameters with the ones given
/// replaced, checked; and the seed.
fn return_model(raw: &RawReturnModel, path: &Path) -> Result<(ReturnParams, u64), ManifestError> {
    let section = |source: LidarError| ManifestError::Section {
        path: path.to_path_buf(),
        table: "[return_model]".into(),
        error: Box::new(source),
    };
    let preset = match &raw.preset {
        None => ReturnPreset::Generic,
        Some(p) => ReturnPreset::from_name(p).map_err(|e| section(e.into()))?,
    };
    let mut values = preset.params().to_array();
    for (slot, param) in values.iter_mut().zip(&RETURN_PARAMS) {
        if let Some(v) = raw.params.get(param.key) {
            *slot = v.to_f64();
        }
    }
    let params = ReturnParams::from_array(values).map_err(|e| match e {
        // Name the parameter as the manifest spells it, and give its value as written.
        LidarError::OutOfRange { field, value, range } => {
            let key = RETURN_PARAMS.iter().find(|p| p.name == field).map_or(field, |p| p.key);
            let written = raw.params.get(key).map_or_else(|| value.to_string(), Written::to_string);
            ManifestError::Value {
                path: path.to_path_buf(),
                message: format!("[return_model] {key} is {written}, outside its range {range}"),
            }
        }
        source => section(source),
    })?;
    Ok((params, raw.seed.unwrap_or(0)))
}

/// `[return_model] model` and its `[return_model.physical]` terms: `None` for the seed's
/// model; a `[return_model.physical]` table without `model = "physical"` is refused, since it
/// would change nothing.
fn physical_model(raw: &RawReturnModel, path: &Path) -> Result<Option<PhysicalModel>, ManifestError> {
    let kind = match &raw.model {
        None => ReturnModelKind::Seed,
        Some(name) => spelled(path, "[return_model]", "model", name)?,
    };
    match (kind, raw.physical) {
        (ReturnModelKind::Physical, physical) => {
            let physical = physical.unwrap_or_default();
            physical.validate().map_err(|e| ManifestError::Section {
                path: path.to_path_buf(),
                table: "[return_model.physical]".into(),
                error: Box::new(e),
            })?;
            Ok(Some(physical))
        }
        (_, Some(_)) => Err(ManifestError::Value {
            path: path.to_path_buf(),
            message: "[return_model.physical] sets the physical model's terms, and [return_model] model is \"seed\": \
                      add model = \"physical\", or remove the table"
                .into(),
        }),
        _ => Ok(None),
    }
}

/// The value of enumerated setting `key` of `table` called `name`, or the error listing the
/// valid names.
fn spelled<T: Spelled>(path: &Path, table: &str, key: &'static str, name: &str) -> Result<T, ManifestError> {
    T::from_name(name).map_err(|_| ManifestError::BadValue {
        path: path.to_path_buf(),
        table: table.into(),
        key,
        value: name.into(),
        valid: T::names(),
    })
}

impl RawLidar {
    /// The binding: the preset, then the scan fields given, then the rest; checked.
    fn binding(&self, path: &Path, index: usize) -> Result<LidarBinding, ManifestError> {
        let table = format!("[[lidar]] {index}");
        let lidar_err = |source: LidarError| match source {
            LidarError::BadValue { key, value, valid, .. } => {
                ManifestError::BadValue { path: path.to_path_buf(), table: table.clone(), key, value, valid }
            }
            error => ManifestError::Lidar { path: path.to_path_buf(), index, error },
        };
        let mut scan = ScanConfig::default();
        if let Some(p) = &self.preset {
            ScanPreset::from_name(p).map_err(|e| lidar_err(e.into()))?.apply(&mut scan);
        }
        self.scan.apply(&mut scan).map_err(&lidar_err)?;
        let secondary_capture = match &self.secondary_capture {
            Some(name) => spelled(path, &table, "secondary_capture", name)?,
            None => SecondaryCapture::Off,
        };
        let secondary_scope = match &self.secondary_scope {
            Some(name) => spelled(path, &table, "secondary_scope", name)?,
            None => SecondaryScope::FlaggedMaterials,
        };
        scan.validate().map_err(&lidar_err)?;
        if self.attach_body.is_none() && self.attach_site.is_none() {
            return Err(lidar_err(LidarError::NoAttachTarget { name: self.name.clone().unwrap_or_default() }));
        }
        let binding = LidarBinding {
            name: self.name.clone().unwrap_or_default(),
            attach_body: self.attach_body.clone(),
            attach_site: self.attach_site.clone(),
            mount_offset: DVec3::from(self.mount_offset.map_or([0.0; 3], |o| o.0)),
            scan,
            video_proxy: self.video_proxy.unwrap_or(false),
            secondary_capture,
            secondary_scope,
            see_skins: self.see_skins.unwrap_or(false),
        };
        binding.check_mount_offset().map_err(&lidar_err)?;
        Ok(binding)
    }
}
