//! glint-lights: light rigs written in UsdLux terms (distant, sphere, disk, cylinder and dome
//! lights, as Isaac Sim spawns them) translated into MJCF `<light>` elements that MuJoCo's
//! classic renderer lights with comparable exposure (the seed `000`, `spec/lighting.md`).
//!
//! ```
//! use glint_lights::{Rig, translate};
//!
//! let rig = Rig::from_toml_str(r#"
//!     [[lights]]
//!     type = "distant"
//!     name = "sun"
//!     intensity = 2000.0
//!     polar = 30.0
//! "#).unwrap();
//! let out = translate(&rig, &["sun"]).unwrap();
//! assert_eq!(out.lights[0].name, "sun_scenario"); // the scene already has a `sun`
//! assert!(out.lights[0].to_xml().contains(r#"type="directional""#));
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod error;
mod exposure;
mod rig;
mod translate;

pub use error::LightsError;
pub use exposure::{DARK_BELOW, Exposure, FOREGROUND, SEED_TABLE, SeedRow, exposure, luminance, ssim};
pub use rig::{LIGHT_TYPES, Light, LightKind, RawLight, Rig};
pub use translate::{
    AMBIENT_RATIO, DISTANT_STANDOFF, Headlight, LightWarning, MAX_RIG_LIGHTS, MjcfLight, MjcfLightType, Translation,
    translate,
};
