//! glint-lidar: lidar sensors on glint's ray core. A [`LidarBinding`] attaches a sensor to a
//! body or site with a [`ScanConfig`] (the seed's fields and ranges, or one of the four
//! [`ScanPreset`]s); [`Lidars`] holds every bound sensor over a batch of worlds, advances each
//! sensor's pattern by `rotation_hz × dt` per tick and casts only that slice, and keeps the
//! newest value per beam in a [`Scan`].
//!
//! **The return model** turns those clean scans into what a 905 nm lidar reports. Author NIR
//! materials per MuJoCo material ([`NirMaterial`], [`MaterialPreset`], a [`MaterialTable`],
//! from glint-materials, which the cameras read too), build a [`Bake`] from them, and load it with [`Lidars::set_materials`]: every tick then
//! also fills [`Scan::returns`] (measured range, second echo, intensity, calibrated
//! reflectivity) under the scene's [`ReturnParams`]. The formulas are written out at the top
//! of `src/return_model/mod.rs`; with [`Lidars::set_secondary_capture`] a tick also records
//! the material-agnostic pass-through and reflected geometry a recorder stores.
//! [`Reprocessor`] runs the same model over a recording's clean rows (`glint export`).
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use glint_core::RayCaster;
//! use glint_lidar::{Bake, BakeSettings, LidarBinding, Lidars, MaterialPreset, MaterialTable, ReturnPreset};
//! use glint_mujoco::{Model, WorldBatch};
//!
//! let model = Model::from_xml_str(r#"
//!   <mujoco>
//!     <asset><material name="glass" rgba="1 1 1 0.3"/></asset>
//!     <worldbody>
//!       <site name="lidar" pos="0 0 1"/>
//!       <geom name="pane" type="box" pos="3 0 1" size="0.005 2 1" material="glass"/>
//!       <geom name="wall" type="box" pos="6 0 1" size="0.1 4 1" rgba="0.9 0.9 0.9 1"/>
//!     </worldbody>
//!   </mujoco>"#)?;
//! let batch = WorldBatch::new(&model, 1)?;
//! let (scene, poses) = (model.scene(), batch.poses());
//! let mut materials = MaterialTable::default();
//! materials.set("glass", MaterialPreset::ClearFloatGlass.material())?;
//! let bake = Bake::build(scene, poses, &materials, BakeSettings::default())?;
//! let binding = LidarBinding { attach_site: Some("lidar".into()), ..LidarBinding::default() };
//! let (mut lidars, _warnings) = Lidars::new(scene, vec![binding], 1)?;
//! lidars.set_materials(Some(Arc::new(bake)));
//! lidars.set_return_preset(ReturnPreset::OusterOs1);
//! let caster = RayCaster::new(scene, poses);
//! lidars.tick(scene, poses, &caster, 0.1, &[0.0], true)?;
//! let (clean, returns) = (lidars.scan(0, 0)?, lidars.returns(0, 0)?);
//! // Beam index is bin * channels + channel: channel 8 of 16 is 1° up.
//! let beam = |bin: usize| bin * 16 + 8;
//! // Head-on (bin 0), the pane's glint is the strongest echo and the wall behind it, 5.9 m
//! // away and dimmed by the pane, the second.
//! let k = beam(0);
//! assert_eq!(scene.geom_name[clean.geomid[k] as usize], "pane");
//! assert_eq!(scene.geom_name[returns.geomid[k] as usize], "pane");
//! assert!((returns.secondary_range[k] - 5.9).abs() < 0.1);
//! // Ten degrees off normal (bin 50 of 1800) there is no glint: only the wall.
//! let k = beam(50);
//! assert_eq!(scene.geom_name[clean.geomid[k] as usize], "pane");
//! assert_eq!(scene.geom_name[returns.geomid[k] as usize], "wall");
//! # Ok(()) }
//! ```
//!
//! **Figures on `examples/showroom`** (one OS1-64 revolution from the robot's lidar, seed 7,
//! noise on; measured by `crates/glint-manifest/tests/showroom.rs`, which loads the
//! showroom's manifest). Share of beams whose first surface is of each class that report an
//! echo:
//!
//! | first surface | beams | Generic | Ouster OS1 |
//! |---|---|---|---|
//! | opaque (walls, floor, car paint, sign, rims) | 34 933 | 96.9 % | 98.7 % |
//! | slab (the storefront) | 8 762 | 99.98 % | 100 % |
//! | porous (the hedge) | 1 005 | 98.0 % | 100 % |
//! | medium (the pool's water) | 2 421 | 48.0 % | 48.0 % |
//! | specular (the mirror, the steel shelving) | 4 767 | 61.5 % | 70.3 % |
//!
//! - Through the storefront, 81.5 % of the pane's beams report the back wall behind it as
//!   their (Generic, single-echo) return; a few near head-on report the pane's glint.
//! - Of the 4 402 beams on the mirror, 2 401 (55 %) report a phantom: a surface the beam
//!   folds onto, booked behind the mirror at the total path.
//! - In the pool, where the tiles lie less than 12 cm under the surface, 96 % of the beams
//!   (1 034 of 1 072) report the tiles; where they lie deeper than 25 cm, none of 378 do.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod config;
mod error;
mod params;
mod pattern;
mod physical;
mod reprocess;
mod return_model;
mod scan;
mod sensor;
mod view;

pub use config::{
    LidarBinding, NonRepetitive, ScanConfig, ScanFields, ScanPattern, ScanPreset, SecondaryCapture, SecondaryScope,
    SelfIgnore,
};
pub use error::{LidarError, LidarWarning};
pub use params::{RETURN_PARAMS, ReturnParam, ReturnParams, ReturnPreset};
pub use pattern::{DEFAULT_RUNNER_HZ, Runner, angles, beam_direction, effective_rotation_hz};
pub use physical::{
    MAX_FOOTPRINT_RAYS, PhysicalModel, ReturnModelKind, SlabOptics, footprint_offsets, fresnel, index_from_f0,
    slab_optics,
};
pub use reprocess::{RECORDED_CONTINUATIONS, RecordedHit, Reprocessed, Reprocessor};
pub use return_model::BeamReturn;
pub use scan::{Returns, Scan, SecondaryHits, Surfaces};
pub use sensor::Lidars;
pub use view::{ColourBy, NAN_GREY, Ramp};
// The materials every sensor reads, the spellings every enum uses: re-exported so that what
// the return model takes is named where it is used.
pub use glint_materials::{
    BAKE_DIR, BAKE_FORMAT_VERSION, Bake, BakeRequest, BakeSettings, BakeStatus, Continuation, MaterialError,
    MaterialLookup, MaterialPreset, MaterialTable, Metal, NirMaterial, Spelled, SpellingError, bake_path, episode_seed,
    material_fingerprint, scene_fingerprint,
};

#[cfg(test)]
mod tests {
    use crate::{
        ColourBy, Continuation, MaterialPreset, Metal, Ramp, ReturnPreset, ScanPattern, ScanPreset, SecondaryCapture,
        SecondaryScope, SelfIgnore, Spelled,
    };

    /// Every name reads back as its value, by name and by index, and through serde.
    fn round_trips<T: Spelled + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned>() {
        for (i, v) in T::all().enumerate() {
            assert_eq!(T::from_name(v.name()).unwrap(), v);
            assert_eq!(T::from_index(i as i64).unwrap(), v);
            assert_eq!(v.index(), i);
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.name()));
            assert_eq!(serde_json::from_str::<T>(&json).unwrap(), v);
        }
        let err = T::from_name("no-such-name").unwrap_err().to_string();
        assert!(err.contains(T::WHAT) && err.contains(&T::names()), "{err}");
        assert!(T::from_index(T::NAMES.len() as i64).is_err() && T::from_index(-1).is_err());
        assert!(serde_json::from_str::<T>("\"no-such-name\"").unwrap_err().to_string().contains(T::WHAT));
    }

    #[test]
    fn every_spelling_reads_back() {
        round_trips::<SelfIgnore>();
        round_trips::<SecondaryCapture>();
        round_trips::<SecondaryScope>();
        round_trips::<ScanPreset>();
        round_trips::<ReturnPreset>();
        round_trips::<Continuation>();
        round_trips::<MaterialPreset>();
        round_trips::<Metal>();
        round_trips::<ColourBy>();
        round_trips::<Ramp>();
        for p in ScanPattern::all() {
            assert_eq!(ScanPattern::from_name(p.name()).unwrap(), p);
        }
    }

    #[test]
    fn names_are_unique_and_in_the_seeds_order() {
        assert_eq!(SelfIgnore::names(), "none, mount-body, whole-robot");
        assert_eq!(SecondaryCapture::names(), "off, pass-through, reflected, both");
        assert_eq!(ReturnPreset::names(), "generic, unitree-l1, livox-mid360, ouster-os1");
        assert_eq!(ScanPattern::names(), "spinning, livox-mid360, unitree-l1, risley");
        assert_eq!(ColourBy::NAMES.len(), 12);
        for names in [ColourBy::names(), MaterialPreset::names(), Continuation::names()] {
            let list: Vec<&str> = names.split(", ").collect();
            let mut unique = list.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), list.len(), "{names}");
        }
    }
}
