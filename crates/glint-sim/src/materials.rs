//! The material source of a simulation: building, saving and loading material bakes
//! (`MaterialBakes/<name>.lvxb` in the project folder) and their status against the scene's
//! materials. A stale bake is loaded, as the seed's `LoadLidarBake` does, with a
//! [`Warning::BakeStale`], and one made from another scene with a [`Warning::BakeMismatch`];
//! refusing one is the caller's choice (`glint export` refuses stale bakes, `glint scan
//! --material` ones that do not match the scene).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use glint_lidar::{BAKE_DIR, Bake, BakeSettings, BakeStatus, NirMaterial, bake_path};
use glint_record::{OutputFile, Overwrite, RecordError};

use crate::{SimError, Simulation, Warning};

/// The bake a simulation's material scans use.
pub(crate) struct LoadedBake {
    pub(crate) name: String,
    pub(crate) bake: Arc<Bake>,
    /// Its status against the scene's materials, worked out once when it is loaded: the
    /// scene and the material table never change after the simulation is built, so only a
    /// new bake changes it (a server asks for it after every request).
    status: BakeStatus,
}

/// A bake read from the project folder, not loaded.
#[derive(Clone, Debug)]
pub struct SavedBake {
    /// Its name.
    pub name: String,
    /// Its file.
    pub path: PathBuf,
    /// The bake.
    pub bake: Arc<Bake>,
    /// Its status against the scene's materials now.
    pub status: BakeStatus,
}

impl Simulation {
    /// The scene's bake settings (the manifest's `[bake]`): what a request's zeros stand for.
    pub fn bake_settings(&self) -> BakeSettings {
        self.setup.bake.settings
    }

    /// The scene's bake name (the manifest's `[bake] name`, `scene` by default).
    pub fn bake_name(&self) -> &str {
        &self.setup.bake.name
    }

    /// Bakes the scene's NIR materials as they stand in world 0 with `settings`
    /// (`BakeLidarMaterialEx`), and loads the bake: material scans use it from the next tick.
    /// Returns its status.
    pub fn bake(&mut self, settings: BakeSettings) -> Result<BakeStatus, SimError> {
        settings.validate()?;
        let bake = Bake::build(&self.scene, self.worlds.poses(), &self.setup.table, settings)?;
        let name = self.setup.bake.name.clone();
        let status = bake.status(&self.scene, &self.setup.table);
        self.set_bake(Some(LoadedBake { name, bake: Arc::new(bake), status }));
        Ok(status)
    }

    /// [`Simulation::bake`] with the seed's request rules (gRPC `BakeLidarMaterial`): each
    /// field of `request` at 0 falls back to the scene's setting, a splat radius of `-1` asks
    /// for an explicit 0; errors name the field.
    pub fn bake_request(&mut self, request: glint_lidar::BakeRequest) -> Result<BakeStatus, SimError> {
        let settings = request.resolve(&self.bake_settings())?;
        self.bake(settings)
    }

    /// Saves the loaded bake as `MaterialBakes/<name>.lvxb` in the project folder (`None`:
    /// the scene's bake name), replacing the bake of that name (never a device or a folder in
    /// its place, see [`glint_record::OutputFile`]), and returns the file.
    pub fn save_bake(&self, name: Option<&str>) -> Result<PathBuf, SimError> {
        let loaded = self.bake.as_ref().ok_or(SimError::NoBake { what: "saving a bake" })?;
        let path = self.bake_file(name)?;
        // A bake is saved under its name to be replaced when the scene is baked again, so an
        // existing one is replaced; anything that is not a regular file is not.
        let mut file = OutputFile::create(&path, Overwrite::Replace)?;
        file.write_all(&loaded.bake.to_bytes())
            .map_err(|e| RecordError::Output { path: path.clone(), reason: e.to_string() })?;
        file.finish()?;
        Ok(path)
    }

    /// Loads the saved bake `name` (`None`: the scene's bake name) for material scans
    /// (`LoadLidarBake`), stale or not; a stale one comes with a [`Warning::BakeStale`], one
    /// that does not match the scene with a [`Warning::BakeMismatch`]. Returns its status.
    pub fn load_bake(&mut self, name: Option<&str>) -> Result<BakeStatus, SimError> {
        let saved = self.open_bake(name)?;
        if !saved.status.matches_scene {
            self.warnings.push(Warning::BakeMismatch { name: saved.name.clone(), path: saved.path.clone() });
        } else if saved.status.stale {
            self.warnings.push(Warning::BakeStale { name: saved.name.clone(), path: saved.path.clone() });
        }
        self.set_bake(Some(LoadedBake { name: saved.name, bake: saved.bake, status: saved.status }));
        Ok(saved.status)
    }

    /// Unloads the bake: scans are clean only from the next tick.
    pub fn unload_bake(&mut self) {
        self.set_bake(None);
    }

    pub(crate) fn set_bake(&mut self, bake: Option<LoadedBake>) {
        let source = bake.as_ref().map(|b| b.bake.clone() as Arc<dyn glint_lidar::MaterialLookup>);
        self.sensors.lidars.lidars_mut().set_materials(source);
        self.bake = bake;
    }

    /// What is loaded (`GetLidarBakeStatus`): `valid = false` when nothing is. Kept from when
    /// the bake was loaded, so asking costs nothing (no fingerprint is hashed again).
    pub fn bake_status(&self) -> BakeStatus {
        self.bake.as_ref().map_or_else(BakeStatus::none, |b| b.status)
    }

    /// The NIR material the loaded bake gives geom `geom` at world point `point` (`None`: no
    /// bake is loaded, or it knows no material there).
    pub fn material_at(&self, geom: usize, point: glam::DVec3) -> Option<NirMaterial> {
        self.bake.as_ref()?.bake.material_at(geom, point).copied()
    }

    /// The loaded bake, if one is.
    pub fn loaded_bake_data(&self) -> Option<std::sync::Arc<glint_lidar::Bake>> {
        self.bake.as_ref().map(|b| b.bake.clone())
    }

    /// The name of the loaded bake, if one is.
    pub fn loaded_bake(&self) -> Option<&str> {
        self.bake.as_ref().map(|b| b.name.as_str())
    }

    /// The file of the saved bake `name` (`None`: the scene's bake name), whether it exists
    /// or not; an error for a name a file cannot have.
    pub fn bake_file(&self, name: Option<&str>) -> Result<PathBuf, SimError> {
        Ok(bake_path(&self.setup.project_dir, name.unwrap_or(&self.setup.bake.name))?)
    }

    /// Reads the saved bake `name` (`None`: the scene's bake name) without loading it, with
    /// its status against the scene's materials. An error names the bakes that are there when
    /// it is missing, or the file when it is damaged.
    pub fn open_bake(&self, name: Option<&str>) -> Result<SavedBake, SimError> {
        let name = name.unwrap_or(&self.setup.bake.name).to_string();
        let path = self.bake_file(Some(&name))?;
        if !path.exists() {
            let known = self.saved_bakes();
            return Err(SimError::NoSuchBake {
                known: if known.is_empty() {
                    "there are none in the project folder".into()
                } else {
                    format!("bakes there: {}", known.join(", "))
                },
                manifest: self.setup.manifest.clone().unwrap_or_else(|| "MANIFEST".into()),
                name,
                path,
            });
        }
        let bake = Bake::load(&path)?;
        let status = bake.status(&self.scene, &self.setup.table);
        Ok(SavedBake { name, path, bake: Arc::new(bake), status })
    }

    /// The names of the bakes saved in the project folder, sorted.
    pub fn saved_bakes(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.setup.project_dir.join(BAKE_DIR))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().to_str()?.strip_suffix(".lvxb").map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}
