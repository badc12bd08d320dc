//! Applying a light rig to an MJCF scene through MuJoCo's model editing (`mjSpec`), before it
//! compiles: the rig's lights are added to the world body, every light the scene or robot
//! MJCF declared is switched off, and the headlight keeps only its ambient term, which becomes
//! exactly the rig's fill (the seed switches the headlight off: MuJoCo's default ambient of 0.1
//! does not stay beneath the fill). MuJoCo's renderer, glint's renderer and the lidar then see
//! one model.

use std::path::Path;

use glint_lights::{Rig, Translation, translate};
use mujoco_rs::wrappers::mj_editing::{SpecElement, SpecItem};
use mujoco_rs::wrappers::mj_model::MjtLightType;

use crate::model::Model;
use crate::{MujocoError, SceneSpec};

/// A scene with a rig applied: the compiled model, the patched MJCF and what the rig became.
pub struct LitScene {
    /// The compiled model.
    pub model: Model,
    /// The translation (lights, headlight fill and warnings).
    pub translation: Translation,
    spec: SceneSpec,
}

impl LitScene {
    /// Loads the MJCF file at `path` and applies `rig` before compiling.
    pub fn from_xml_file(path: impl AsRef<Path>, rig: &Rig) -> Result<LitScene, MujocoError> {
        LitScene::apply(SceneSpec::from_xml_file(path)?, rig)
    }

    /// [`LitScene::from_xml_file`] of MJCF text (assets must then be absolute paths).
    pub fn from_xml_str(xml: &str, rig: &Rig) -> Result<LitScene, MujocoError> {
        LitScene::apply(SceneSpec::from_xml_str(xml)?, rig)
    }

    /// The lit spec, from which variants of the lit scene compile.
    pub fn spec(&self) -> &SceneSpec {
        &self.spec
    }

    /// The model, the translation and the lit spec.
    pub fn into_parts(self) -> (Model, Translation, SceneSpec) {
        (self.model, self.translation, self.spec)
    }

    fn apply(mut scene_spec: SceneSpec, rig: &Rig) -> Result<LitScene, MujocoError> {
        let source_name = scene_spec.source_name.clone();
        let spec = &mut scene_spec.spec;
        let existing: Vec<String> = spec.light_iter().map(|l| l.name().to_string()).filter(|n| !n.is_empty()).collect();
        let names: Vec<&str> = existing.iter().map(String::as_str).collect();
        let translation = translate(rig, &names)?;
        for light in spec.light_iter_mut() {
            light.set_active(false);
        }
        let headlight = &mut spec.visual_mut().headlight;
        for c in 0..3 {
            headlight.ambient[c] = translation.headlight.ambient_fill[c] as f32;
            headlight.diffuse[c] = 0.0;
            headlight.specular[c] = 0.0;
        }
        let world = spec.world_body_mut();
        for l in &translation.lights {
            let light = world.add_light();
            light.set_name(&l.name).map_err(|e| MujocoError::Load {
                source_name: source_name.clone(),
                message: format!("cannot add light `{}`: {e}", l.name),
            })?;
            light.set_type(match l.light_type {
                glint_lights::MjcfLightType::Directional => MjtLightType::mjLIGHT_DIRECTIONAL,
                glint_lights::MjcfLightType::Spot => MjtLightType::mjLIGHT_SPOT,
            });
            *light.pos_mut() = l.pos;
            *light.dir_mut() = l.dir;
            *light.diffuse_mut() = l.diffuse.map(|v| v as f32);
            *light.specular_mut() = l.specular.map(|v| v as f32);
            *light.ambient_mut() = l.ambient.map(|v| v as f32);
            *light.attenuation_mut() = l.attenuation.map(|v| v as f32);
            light.set_castshadow(l.castshadow);
            light.set_active(true);
            if let Some(cutoff) = l.cutoff {
                light.set_cutoff(cutoff as f32);
            }
            if let Some(exponent) = l.exponent {
                light.set_exponent(exponent as f32);
            }
        }
        let model = scene_spec.compile()?;
        Ok(LitScene { model, translation, spec: scene_spec })
    }

    /// The patched scene as MJCF (MuJoCo's own writer: includes are inlined).
    pub fn to_xml(&self) -> Result<String, MujocoError> {
        let mut size = 1 << 20;
        loop {
            match self.spec.spec.save_xml_string(size) {
                Ok(xml) => return Ok(xml),
                Err(mujoco_rs::error::MjEditError::XmlBufferTooSmall { required_size }) if required_size > size => {
                    size = required_size + 1;
                }
                Err(e) => {
                    return Err(MujocoError::Load { source_name: "the patched scene".into(), message: e.to_string() });
                }
            }
        }
    }
}
