//! Per-world assets: variants of one MJCF compiled through MuJoCo's model editing (`mjSpec`),
//! as MuJoCo Warp's documentation does by hand. The base spec holds every asset; each variant
//! is a copy of it with its asset swaps applied, compiled once. A variant must keep the
//! model's structure (bodies, geoms, joints, actuators, assets): it swaps what geoms use.

use std::sync::Arc;

use glint_core::{AssetEdit, EditTarget, Scene, Shapes, Variant, nearest_name};
use mujoco_rs::prelude::MjModel;
use mujoco_rs::wrappers::mj_editing::{MjSpec, MjsGeom, SpecElement};
use mujoco_rs::wrappers::mj_model::{MjtGeomBase, MjtTextureRoleBase};

use crate::MujocoError;
use crate::model::{Model, extract_scene};

/// A compiled variant: its own `mjModel`, which the worlds given it step on, and what it
/// declares, extracted (over the base model's meshes and height fields, which a variant
/// shares: its scene's `mesh` and `hfield` are empty).
pub struct VariantModel {
    /// The variant's name.
    pub name: String,
    pub(crate) mj: Arc<MjModel>,
    /// Geoms, bodies, materials, lights and cameras as the variant compiled them.
    pub scene: Scene,
}

impl std::fmt::Debug for VariantModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VariantModel").field("name", &self.name).finish_non_exhaustive()
    }
}

impl VariantModel {
    /// The geometry rays meet in a world of this variant.
    pub fn shapes(&self) -> Shapes {
        Shapes::of(&self.scene)
    }

    /// The variant as a model of its own, meshes included: what compiling it alone gives (the
    /// reference for its worlds).
    pub fn alone(&self) -> Result<Model, MujocoError> {
        Model::from_mj((*self.mj).clone())
    }

    /// The variant's values of the model array `name` (see [`model_array`](crate::model_array):
    /// `geom_aabb`, `body_inertia`, ...), flattened, or `None` for another name.
    pub fn array(&self, name: &str) -> Option<Vec<f64>> {
        crate::physics::model_array(&self.mj, name)
    }
}

/// An MJCF scene held as MuJoCo's editable spec: the model and its variants compile from it.
pub struct SceneSpec {
    pub(crate) spec: MjSpec,
    pub(crate) source_name: String,
}

impl SceneSpec {
    /// The spec of the MJCF file at `path`.
    pub fn from_xml_file(path: impl AsRef<std::path::Path>) -> Result<SceneSpec, MujocoError> {
        crate::model::route_mujoco_messages();
        let path = path.as_ref();
        crate::model::check_readable(path)?;
        let spec = MjSpec::from_xml(path).map_err(|_| crate::model::load_error_from_file(path))?;
        Ok(SceneSpec { spec, source_name: format!("'{}'", path.display()) })
    }

    /// The spec of MJCF text (assets must then be absolute paths).
    pub fn from_xml_str(xml: &str) -> Result<SceneSpec, MujocoError> {
        crate::model::route_mujoco_messages();
        let spec = MjSpec::from_xml_string(xml)
            .map_err(|e| MujocoError::Load { source_name: "the MJCF string".into(), message: e.to_string() })?;
        Ok(SceneSpec { spec, source_name: "the MJCF string".into() })
    }

    /// Compiles the spec as it stands.
    pub fn compile(&mut self) -> Result<Model, MujocoError> {
        let mj = self.spec.compile().map_err(|e| self.load_error(e.to_string()))?;
        Model::from_mj(mj)
    }

    fn load_error(&self, message: String) -> MujocoError {
        MujocoError::Load { source_name: self.source_name.clone(), message }
    }

    /// Compiles `variant` (a copy of the spec with its edits applied) and checks that it keeps
    /// `base`'s structure.
    pub fn compile_variant(&self, base: &Model, variant: &Variant) -> Result<VariantModel, MujocoError> {
        let mut spec = self.spec.try_clone().map_err(|e| self.load_error(e.to_string()))?;
        for edit in &variant.edits {
            apply(&mut spec, edit).map_err(|message| variant_error(variant, message))?;
        }
        let mj = spec.compile().map_err(|e| variant_error(variant, format!("MuJoCo cannot compile it: {e}")))?;
        check_structure(base.mj(), &mj).map_err(|message| variant_error(variant, message))?;
        let scene = extract_scene(mj.ffi(), false)?;
        Ok(VariantModel { name: variant.name.clone(), mj: Arc::new(mj), scene })
    }
}

fn variant_error(variant: &Variant, message: String) -> MujocoError {
    MujocoError::Variant { name: variant.name.clone(), message }
}

/// "unknown geom `x`; did you mean `y`?"
fn unknown(kind: &str, name: &str, names: impl Iterator<Item = String>) -> String {
    let names: Vec<String> = names.filter(|n| !n.is_empty()).collect();
    let hint = nearest_name(name, names.iter().map(String::as_str))
        .map_or_else(|| format!("the model's {kind}s are: {}", names.join(", ")), |n| format!("did you mean `{n}`?"));
    format!("there is no {kind} `{name}` in the base model ({hint})")
}

/// `Ok` unless `name` is given and not `found`: then the error naming the nearest of
/// `names()` (listed only on failure).
fn known<'a, E: SpecElement + 'a>(
    kind: &str,
    name: Option<&str>,
    found: impl Fn(&str) -> bool,
    names: impl Iterator<Item = &'a E>,
) -> Result<(), String> {
    match name {
        Some(n) if !found(n) => Err(unknown(kind, n, names.map(|e| e.name().to_string()))),
        _ => Ok(()),
    }
}

/// Applies one edit to `spec`, or says why it cannot.
fn apply(spec: &mut MjSpec, edit: &AssetEdit) -> Result<(), String> {
    known("mesh", edit.mesh.as_deref(), |n| spec.mesh(n).is_some(), spec.mesh_iter())?;
    known("hfield", edit.hfield.as_deref(), |n| spec.hfield(n).is_some(), spec.hfield_iter())?;
    known("material", edit.material.as_deref(), |n| spec.material(n).is_some(), spec.material_iter())?;
    known("texture", edit.texture.as_deref(), |n| spec.texture(n).is_some(), spec.texture_iter())?;
    if edit.mesh.is_some() && edit.hfield.is_some() {
        return Err(format!(
            "the edit of {} `{}` gives both a mesh and a height field: give one",
            edit.target.kind(),
            edit.target.name()
        ));
    }
    match &edit.target {
        EditTarget::Geom(name) => {
            if edit.texture.is_some() {
                return Err(format!(
                    "a texture belongs to a material: edit a material (`material = \"...\"`), not geom `{name}`"
                ));
            }
            known("geom", Some(name), |n| spec.geom(n).is_some(), spec.geom_iter())?;
            if let Some(geom) = spec.geom_mut(name) {
                edit_geom(geom, edit);
            }
        }
        EditTarget::Body(name) => {
            if edit.texture.is_some() {
                return Err(format!("a texture belongs to a material: edit a material, not body `{name}`"));
            }
            known("body", Some(name), |n| spec.body(n).is_some(), spec.body_iter())?;
            let Some(body) = spec.body_mut(name) else { return Ok(()) };
            let count = body.geom_iter(false).count();
            if count == 0 {
                return Err(format!("body `{name}` has no geoms of its own to edit"));
            }
            if count > 1 && (edit.mesh.is_some() || edit.hfield.is_some()) {
                return Err(format!(
                    "body `{name}` has {count} geoms: name the geom whose mesh or height field to swap (`geom = \"...\"`)"
                ));
            }
            for geom in body.geom_iter_mut(false) {
                edit_geom(geom, edit);
            }
        }
        EditTarget::Material(name) => {
            if edit.mesh.is_some() || edit.hfield.is_some() || edit.material.is_some() || edit.enabled.is_some() {
                return Err(format!("material `{name}` can only take a texture (`texture = \"...\"`)"));
            }
            known("material", Some(name), |n| spec.material(n).is_some(), spec.material_iter())?;
            if let (Some(material), Some(texture)) = (spec.material_mut(name), &edit.texture) {
                material.set_texture(MjtTextureRoleBase::mjTEXROLE_RGB, texture);
            }
        }
    }
    Ok(())
}

fn edit_geom(geom: &mut MjsGeom, edit: &AssetEdit) {
    if let Some(mesh) = &edit.mesh {
        geom.set_type(MjtGeomBase::mjGEOM_MESH);
        geom.set_meshname(mesh);
    }
    if let Some(hfield) = &edit.hfield {
        geom.set_type(MjtGeomBase::mjGEOM_HFIELD);
        geom.set_hfieldname(hfield);
    }
    if let Some(material) = &edit.material {
        geom.set_material(material);
    }
    match edit.enabled {
        Some(true) => {
            geom.set_contype(1);
            geom.set_conaffinity(1);
        }
        Some(false) => {
            // MuJoCo Warp's null slot: no contacts, no mass, nothing rays or cameras see
            // (mj_ray skips a geom of alpha 0 without a material).
            geom.set_contype(0);
            geom.set_conaffinity(0);
            geom.set_mass(0.0);
            geom.set_material("");
            geom.rgba_mut()[3] = 0.0;
        }
        None => {}
    }
}

/// An error unless `variant` has `base`'s structure: the same counts of everything a world's
/// state, sensors and fields are laid out by, and the same assets.
fn check_structure(base: &MjModel, variant: &MjModel) -> Result<(), String> {
    let (b, v) = (base.ffi(), variant.ffi());
    let counts = [
        ("bodies", b.nbody, v.nbody),
        ("geoms", b.ngeom, v.ngeom),
        ("joints", b.njnt, v.njnt),
        ("position coordinates (nq)", b.nq, v.nq),
        ("degrees of freedom (nv)", b.nv, v.nv),
        ("actuators", b.nu, v.nu),
        ("activations", b.na, v.na),
        ("sites", b.nsite, v.nsite),
        ("cameras", b.ncam, v.ncam),
        ("lights", b.nlight, v.nlight),
        ("meshes", b.nmesh, v.nmesh),
        ("mesh vertices", b.nmeshvert, v.nmeshvert),
        ("height fields", b.nhfield, v.nhfield),
        ("materials", b.nmat, v.nmat),
        ("textures", b.ntex, v.ntex),
    ];
    match counts.iter().find(|(_, x, y)| x != y) {
        Some((what, x, y)) => Err(format!(
            "it changes the model's structure ({what}: base {x}, variant {y}); a variant may only swap assets on the base model's geoms, bodies and materials"
        )),
        None => Ok(()),
    }
}
