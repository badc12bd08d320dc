//! The immutable scene: every geom, body, mesh, height field, material, texture, light,
//! camera and site of a compiled MuJoCo model, as structure-of-arrays named after MuJoCo's
//! `mjModel` fields. Built once (by `glint-mujoco`), shared by all worlds behind an `Arc`.

use glam::DVec3;

use crate::bvh::Aabb;
use crate::{CoreError, GeomType, Hfield, Mesh, Skin};

/// Everything about a model that does not change while it is simulated. Arrays are indexed
/// by MuJoCo's ids; `-1` means "none".
#[derive(Clone, Debug, Default)]
pub struct Scene {
    /// Geom type, shape `(ngeom,)`.
    pub geom_type: Vec<GeomType>,
    /// Geom size parameters (MuJoCo's meaning per type), shape `(ngeom,)`.
    pub geom_size: Vec<DVec3>,
    /// Visibility group, shape `(ngeom,)`.
    pub geom_group: Vec<i32>,
    /// Body the geom belongs to, shape `(ngeom,)`.
    pub geom_bodyid: Vec<i32>,
    /// Contact type bits, shape `(ngeom,)`.
    pub geom_contype: Vec<i32>,
    /// Contact affinity bits, shape `(ngeom,)`.
    pub geom_conaffinity: Vec<i32>,
    /// Mesh or height field id (`-1` for other types), shape `(ngeom,)`.
    pub geom_dataid: Vec<i32>,
    /// Material id or `-1`, shape `(ngeom,)`.
    pub geom_matid: Vec<i32>,
    /// Colour, shape `(ngeom, 4)`.
    pub geom_rgba: Vec<[f32; 4]>,
    /// Name (may be empty), shape `(ngeom,)`.
    pub geom_name: Vec<String>,

    /// Parent body id (the world body is its own parent), shape `(nbody,)`.
    pub body_parentid: Vec<i32>,
    /// Root body of the kinematic tree below the world, shape `(nbody,)`.
    pub body_rootid: Vec<i32>,
    /// Body this body is welded to (`0` means static, welded to the world), shape `(nbody,)`.
    pub body_weldid: Vec<i32>,
    /// Name, shape `(nbody,)`.
    pub body_name: Vec<String>,

    /// Meshes, shape `(nmesh,)`.
    pub mesh: Vec<Mesh>,
    /// Height fields, shape `(nhfield,)`.
    pub hfield: Vec<Hfield>,
    /// Per mesh, its texture coordinates (u, v) as MuJoCo stores them (empty for a mesh
    /// without), shape `(nmesh, ntexcoord_i, 2)`.
    pub mesh_texcoord: Vec<Vec<[f32; 2]>>,
    /// Per mesh, each face's three texture-coordinate indices into its `mesh_texcoord` (empty
    /// for a mesh without), shape `(nmesh, nface_i, 3)`.
    pub mesh_facetexcoord: Vec<Vec<[u32; 3]>>,
    /// Per mesh, each face's three normal indices into its `Mesh::normal` (empty when MuJoCo
    /// gave none), shape `(nmesh, nface_i, 3)`.
    pub mesh_facenormal: Vec<Vec<[u32; 3]>>,

    /// Material colour, shape `(nmat, 4)`.
    pub mat_rgba: Vec<[f32; 4]>,
    /// Texture id per material (MuJoCo's RGB role) or `-1`, shape `(nmat,)`.
    pub mat_texid: Vec<i32>,
    /// Texture repetition, shape `(nmat, 2)`.
    pub mat_texrepeat: Vec<[f32; 2]>,
    /// Emission, specular, shininess, reflectance, shape `(nmat, 4)`.
    pub mat_shading: Vec<[f32; 4]>,
    /// Whether the texture repeats per metre rather than per object, shape `(nmat,)`.
    pub mat_texuniform: Vec<bool>,
    /// Name, shape `(nmat,)`.
    pub mat_name: Vec<String>,

    /// Texture type (MuJoCo's `mjtTexture`: 0 2D, 1 cube, 2 skybox), shape `(ntex,)`.
    pub tex_type: Vec<i32>,
    /// Width and height in pixels, shape `(ntex, 2)`.
    pub tex_size: Vec<[i32; 2]>,
    /// Source file relative to the model (empty for built-in textures), shape `(ntex,)`.
    pub tex_file: Vec<String>,
    /// Name, shape `(ntex,)`.
    pub tex_name: Vec<String>,
    /// Whether the texture is declared sRGB (`colorspace="sRGB"`; MuJoCo's renderer then
    /// linearises it as it samples), shape `(ntex,)`.
    pub tex_srgb: Vec<bool>,

    /// Body the light is attached to, shape `(nlight,)`.
    pub light_bodyid: Vec<i32>,
    /// Light type (MuJoCo's `mjtLightType`: 0 spot, 1 directional, 2 point, 3 image),
    /// shape `(nlight,)`.
    pub light_type: Vec<i32>,
    /// Whether the light casts shadows, shape `(nlight,)`.
    pub light_castshadow: Vec<bool>,
    /// Whether the light is on, shape `(nlight,)`.
    pub light_active: Vec<bool>,
    /// Diffuse colour, shape `(nlight, 3)`.
    pub light_diffuse: Vec<[f32; 3]>,
    /// Ambient colour, shape `(nlight, 3)`.
    pub light_ambient: Vec<[f32; 3]>,
    /// Specular colour, shape `(nlight, 3)`.
    pub light_specular: Vec<[f32; 3]>,
    /// Attenuation (constant, linear, quadratic), shape `(nlight, 3)`.
    pub light_attenuation: Vec<[f32; 3]>,
    /// Spot cutoff (degrees) and exponent, shape `(nlight, 2)`.
    pub light_spot: Vec<[f32; 2]>,
    /// Name, shape `(nlight,)`.
    pub light_name: Vec<String>,
    /// Position in its body's frame, shape `(nlight,)`.
    pub light_pos: Vec<DVec3>,
    /// Direction in its body's frame, shape `(nlight,)`.
    pub light_dir: Vec<DVec3>,

    /// Body the camera is attached to, shape `(ncam,)`.
    pub cam_bodyid: Vec<i32>,
    /// Vertical field of view in degrees, shape `(ncam,)`.
    pub cam_fovy: Vec<f64>,
    /// Resolution in pixels (width, height), shape `(ncam, 2)`.
    pub cam_resolution: Vec<[i32; 2]>,
    /// Projection: 0 perspective, 1 orthographic (`fovy` is then a height in metres), shape
    /// `(ncam,)`.
    pub cam_projection: Vec<i32>,
    /// Sensor size in metres (width, height); zero when the camera is given by `fovy`, shape
    /// `(ncam, 2)`.
    pub cam_sensorsize: Vec<[f32; 2]>,
    /// Focal length (x, y) and principal point (x, y) in metres, used with a sensor size,
    /// shape `(ncam, 4)`.
    pub cam_intrinsic: Vec<[f32; 4]>,
    /// The MJCF `output` attribute as MuJoCo's `mjtCamOutBit` flags (1 rgb, 2 depth,
    /// 4 distance, 8 normal, 16 segmentation; MuJoCo's default is rgb), shape `(ncam,)`.
    pub cam_output: Vec<i32>,
    /// Name, shape `(ncam,)`.
    pub cam_name: Vec<String>,

    /// Body the site is attached to, shape `(nsite,)`.
    pub site_bodyid: Vec<i32>,
    /// Name, shape `(nsite,)`.
    pub site_name: Vec<String>,
    /// Shape (sphere, capsule, ellipsoid, cylinder or box), shape `(nsite,)`.
    pub site_type: Vec<GeomType>,
    /// Size parameters (the geom type's meaning), shape `(nsite,)`.
    pub site_size: Vec<DVec3>,
    /// Visibility group, shape `(nsite,)`.
    pub site_group: Vec<i32>,
    /// Colour, shape `(nsite, 4)`.
    pub site_rgba: Vec<[f32; 4]>,
    /// Material id or `-1`, shape `(nsite,)`.
    pub site_matid: Vec<i32>,

    /// Visibility group, shape `(ntendon,)` (the drawn pieces are per world, in
    /// [`crate::Poses::tendon_segments`]).
    pub tendon_group: Vec<i32>,
    /// Material id or `-1`, shape `(ntendon,)`.
    pub tendon_matid: Vec<i32>,

    /// Samples per pixel of MuJoCo's offscreen buffer (`visual/quality/offsamples`; 0: none):
    /// the cameras multisample edges where it is positive.
    pub offsamples: i32,
    /// How far MuJoCo's cameras see, metres (`visual/map/zfar` × the model's extent): colour
    /// shows nothing farther, as OpenGL clips it; 0 for no limit.
    pub zfar: f64,
    /// The haze at the horizon of the first infinite plane, where a skybox is drawn: its
    /// share of the sky cylinder's radius (`visual/map/haze`) and its colour
    /// (`visual/rgba/haze`).
    pub haze: f64,
    /// See [`Scene::haze`].
    pub haze_rgba: [f32; 4],

    /// Skins, then the flexes drawn as surfaces (drawn by the cameras; `mj_ray` and the lidar
    /// do not see them), shape `(nskin + drawn flexes,)`.
    pub skin: Vec<Skin>,

    /// What MuJoCo's renderer draws by default and glint's cameras do not (1-D and
    /// interpolated flexes, rangefinder rays), one entry per kind, e.g.
    /// `"2 rangefinder rays (left, right)"`; empty when the cameras draw everything.
    pub undrawn: Vec<String>,
}

impl Scene {
    /// Number of geoms.
    pub fn ngeom(&self) -> usize {
        self.geom_type.len()
    }
    /// Number of bodies (including the world body 0).
    pub fn nbody(&self) -> usize {
        self.body_parentid.len()
    }
    /// Number of cameras.
    pub fn ncam(&self) -> usize {
        self.cam_bodyid.len()
    }
    /// Number of lights.
    pub fn nlight(&self) -> usize {
        self.light_bodyid.len()
    }
    /// Number of sites.
    pub fn nsite(&self) -> usize {
        self.site_bodyid.len()
    }

    /// Id of the site called `name`.
    pub fn site_id(&self, name: &str) -> Option<usize> {
        self.site_name.iter().position(|n| n == name)
    }

    /// Id of the body called `name`.
    pub fn body_id(&self, name: &str) -> Option<usize> {
        self.body_name.iter().position(|n| n == name)
    }

    /// Whether `mj_ray` can see the geom at all: MuJoCo skips geoms whose own alpha is 0
    /// (without material) or whose material's alpha is 0.
    pub fn geom_visible(&self, g: usize) -> bool {
        match usize::try_from(self.geom_matid[g]) {
            Ok(m) => self.mat_rgba[m][3] != 0.0,
            Err(_) => self.geom_rgba[g][3] != 0.0,
        }
    }

    /// Bounds of geom `g` in its own frame, or `None` for planes (infinite).
    pub fn geom_local_bounds(&self, g: usize) -> Option<Aabb> {
        crate::shapes::local_bounds(self, self.geom_type[g], self.geom_size[g], self.geom_dataid[g])
    }

    /// Checks that every array has the length of its kind and every id refers to something
    /// that exists. `glint-mujoco` calls this once after filling the scene.
    pub fn validate(&self) -> Result<(), CoreError> {
        let n = self.ngeom();
        let lens = [
            ("geom_size", self.geom_size.len()),
            ("geom_group", self.geom_group.len()),
            ("geom_bodyid", self.geom_bodyid.len()),
            ("geom_contype", self.geom_contype.len()),
            ("geom_conaffinity", self.geom_conaffinity.len()),
            ("geom_dataid", self.geom_dataid.len()),
            ("geom_matid", self.geom_matid.len()),
            ("geom_rgba", self.geom_rgba.len()),
            ("geom_name", self.geom_name.len()),
        ];
        for (field, len) in lens {
            if len != n {
                return Err(CoreError::Shape { field, len, expected: format!("the scene has {n} geoms") });
            }
        }
        for g in 0..n {
            let (kind, id) = (self.geom_type[g], self.geom_dataid[g]);
            let count = match kind {
                GeomType::Mesh => self.mesh.len(),
                GeomType::Hfield => self.hfield.len(),
                _ => continue,
            };
            if id < 0 || id as usize >= count {
                return Err(CoreError::Shape {
                    field: "geom_dataid",
                    len: n,
                    expected: format!("geom {g} ({}) refers to {} {id} of {count}", kind.name(), kind.name()),
                });
            }
        }
        let nbody = self.nbody();
        if let Some(g) = self.geom_bodyid.iter().position(|&b| b < 0 || b as usize >= nbody) {
            return Err(CoreError::Shape {
                field: "geom_bodyid",
                len: n,
                expected: format!("geom {g} refers to a body outside 0..{nbody}"),
            });
        }
        if let Some(g) = self.geom_matid.iter().position(|&m| m >= self.mat_rgba.len() as i32) {
            return Err(CoreError::Shape {
                field: "geom_matid",
                len: n,
                expected: format!("geom {g} refers to a material outside 0..{}", self.mat_rgba.len()),
            });
        }
        self.skin.iter().try_for_each(|skin| skin.validate(nbody, self.mat_rgba.len()))
    }
}
