//! Loading MJCF through MuJoCo and extracting glint's [`Scene`] from the compiled `mjModel`.

use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::path::Path;
use std::sync::{Arc, Once};

use glam::DVec3;
use glint_core::{GeomType, Hfield, Mesh, Scene, Skin, SkinBone, Texture, TextureKind};
use mujoco_rs::logging::set_log_handler;
use mujoco_rs::mujoco_c::{mj_deleteModel, mj_loadXML, mjModel, mjtColorSpace, mjtSensor};
use mujoco_rs::prelude::MjModel;
use mujoco_rs::wrappers::mj_auxiliary::MjVfs;
use mujoco_rs::wrappers::mj_logging::{MjLogMessage, MjtLogLevel};

use crate::MujocoError;

/// A compiled MuJoCo model and the glint [`Scene`] extracted from it, both immutable and
/// shared by every world.
#[derive(Clone)]
pub struct Model {
    mj: Arc<MjModel>,
    scene: Arc<Scene>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("ngeom", &self.scene.ngeom()).field("nbody", &self.scene.nbody()).finish()
    }
}

/// MuJoCo's headlight: the light at the camera, whose ambient is the scene's global ambient.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Headlight {
    /// Whether it is on.
    pub active: bool,
    /// Ambient colour (lights every surface evenly).
    pub ambient: [f32; 3],
    /// Diffuse colour.
    pub diffuse: [f32; 3],
    /// Specular colour.
    pub specular: [f32; 3],
}

/// Routes MuJoCo's messages to standard error, once per process, before the first model
/// loads. MuJoCo's default handler prints to standard output (where `glint ... --json` writes
/// its answer) and appends to `MUJOCO_LOG.TXT` in the working directory.
pub(crate) fn route_mujoco_messages() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: runs once, before glint has loaded any model or started any world, so no
        // other thread is using MuJoCo through glint.
        unsafe { set_log_handler(forward_message) };
    });
}

fn forward_message(message: &MjLogMessage) {
    let kind = match message.level() {
        MjtLogLevel::mjLOG_ERROR => "error",
        MjtLogLevel::mjLOG_WARNING => "warning",
        // Informational messages (compile times and the like) are not for glint's users.
        _ => return,
    };
    eprintln!("MuJoCo {kind}: {}", message.subject());
}

impl Model {
    /// Loads an MJCF file; includes, meshes, textures and height fields resolve relative to it.
    pub fn from_xml_file(path: impl AsRef<Path>) -> Result<Model, MujocoError> {
        route_mujoco_messages();
        let path = path.as_ref();
        check_readable(path)?;
        let source_name = format!("'{}'", path.display());
        let mj = MjModel::from_xml(path).map_err(|e| MujocoError::Load {
            source_name: source_name.clone(),
            message: path.to_str().and_then(|p| full_load_error(p, None)).unwrap_or_else(|| load_message(e)),
        })?;
        Self::from_mj(mj).map_err(|e| e.in_source(source_name))
    }

    /// Loads MJCF from a string (assets must then be absolute paths or built-in).
    pub fn from_xml_str(xml: &str) -> Result<Model, MujocoError> {
        route_mujoco_messages();
        let mj = MjModel::from_xml_string(xml).map_err(|e| {
            let mut vfs = MjVfs::new();
            let full = vfs
                .add_from_buffer(STRING_NAME, xml.as_bytes())
                .ok()
                .and_then(|_| full_load_error(STRING_NAME, Some(&vfs)));
            MujocoError::Load {
                source_name: "the MJCF string".into(),
                message: full.unwrap_or_else(|| load_message(e)),
            }
        })?;
        Self::from_mj(mj).map_err(|e| e.in_source("the MJCF string".into()))
    }

    pub(crate) fn from_mj(mj: MjModel) -> Result<Model, MujocoError> {
        let scene = extract_scene(mj.ffi(), true)?;
        scene.validate()?;
        Ok(Model { mj: Arc::new(mj), scene: Arc::new(scene) })
    }

    /// The extracted scene.
    pub fn scene(&self) -> &Arc<Scene> {
        &self.scene
    }

    /// Every texture's pixels, decoded (textures the model refers to by file are read now).
    /// Fails naming the texture that cannot be decoded.
    pub fn textures(&self) -> Result<Vec<Texture>, MujocoError> {
        let mj = &*self.mj;
        let m = mj.ffi();
        let ntex = m.ntex as usize;
        let (kinds, widths, heights, channels) =
            (arr(m.tex_type, m.ntex), arr(m.tex_width, m.ntex), arr(m.tex_height, m.ntex), arr(m.tex_nchannel, m.ntex));
        (0..ntex)
            .map(|t| {
                let name = &self.scene.tex_name[t];
                let bad = |reason: String| MujocoError::Texture { texture: t, name: name.clone(), reason };
                let data = mj.load_texture(t).map_err(|e| bad(e.to_string()))?;
                let kind = TextureKind::from_mujoco(kinds[t])
                    .ok_or_else(|| bad(format!("its type {} is not 2d, cube or skybox", kinds[t])))?;
                let (width, height, nchannel) = (widths[t] as usize, heights[t] as usize, channels[t] as usize);
                if data.len() != width * height * nchannel || !(1..=4).contains(&nchannel) {
                    return Err(bad(format!(
                        "it decoded to {} bytes, not {width} x {height} x {nchannel}",
                        data.len()
                    )));
                }
                let srgb = self.scene.tex_srgb.get(t).copied().unwrap_or(false);
                Ok(Texture { kind, width, height, nchannel, data: data.into_owned(), srgb })
            })
            .collect()
    }

    /// MuJoCo's headlight as compiled (`visual/headlight`).
    pub fn headlight(&self) -> Headlight {
        let h = &self.mj.vis().headlight;
        Headlight { active: h.active != 0, ambient: h.ambient, diffuse: h.diffuse, specular: h.specular }
    }

    /// The physics timestep in seconds.
    pub fn timestep(&self) -> f64 {
        self.mj.ffi().opt.timestep
    }

    pub(crate) fn mj(&self) -> &Arc<MjModel> {
        &self.mj
    }

    /// Number of actuators (MuJoCo's `nu`).
    pub fn nu(&self) -> usize {
        self.mj.ffi().nu as usize
    }

    /// Actuator names, in actuator order (empty strings for unnamed ones).
    pub fn actuator_names(&self) -> Vec<String> {
        let m = self.mj.ffi();
        names(m, m.name_actuatoradr, m.nu)
    }

    /// Each actuator's control range `[lo, hi]`, or `None` when its control is not limited.
    pub fn actuator_ctrlrange(&self) -> Vec<Option<[f64; 2]>> {
        let m = self.mj.ffi();
        let limited = arr(m.actuator_ctrllimited, m.nu);
        let range = arr(m.actuator_ctrlrange, 2 * m.nu);
        (0..m.nu.max(0) as usize).map(|i| limited[i].then(|| [range[2 * i], range[2 * i + 1]])).collect()
    }

    /// Every joint, in joint order (MuJoCo's `jnt_*` arrays).
    pub fn joints(&self) -> Vec<Joint> {
        let m = self.mj.ffi();
        let (kind, qposadr, body) = (arr(m.jnt_type, m.njnt), arr(m.jnt_qposadr, m.njnt), arr(m.jnt_bodyid, m.njnt));
        let (limited, range, qpos0) = (arr(m.jnt_limited, m.njnt), arr(m.jnt_range, 2 * m.njnt), arr(m.qpos0, m.nq));
        (0..m.njnt.max(0) as usize)
            .map(|j| Joint {
                name: name(m, m.name_jntadr, j),
                kind: match kind[j] {
                    0 => JointKind::Free,
                    1 => JointKind::Ball,
                    2 => JointKind::Slide,
                    _ => JointKind::Hinge,
                },
                qposadr: qposadr[j] as usize,
                body: body[j] as usize,
                range: limited[j].then(|| [range[2 * j], range[2 * j + 1]]),
                qpos0: qpos0[qposadr[j] as usize],
            })
            .collect()
    }

    /// MuJoCo's version string, e.g. "3.17.0".
    pub fn mujoco_version() -> String {
        // SAFETY: mj_versionString returns a static NUL-terminated string.
        unsafe { CStr::from_ptr(mujoco_rs::mujoco_c::mj_versionString()) }.to_string_lossy().into_owned()
    }
}

/// A joint's kind (MuJoCo's `mjtJoint`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JointKind {
    /// Six degrees of freedom: position (3) then unit quaternion (4) in `qpos`.
    Free,
    /// A unit quaternion (4) in `qpos`.
    Ball,
    /// A translation along its axis (1).
    Slide,
    /// A rotation about its axis (1).
    Hinge,
}

/// One joint of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Joint {
    /// Its name (empty when unnamed).
    pub name: String,
    /// Its kind.
    pub kind: JointKind,
    /// Where its coordinates start in `qpos`.
    pub qposadr: usize,
    /// The body it moves.
    pub body: usize,
    /// Its range `[lo, hi]` when it is limited (MuJoCo's `jnt_range`: metres for a slide,
    /// radians for a hinge).
    pub range: Option<[f64; 2]>,
    /// Its first coordinate in the initial state (`qpos0`): a hinge's or slide's position.
    pub qpos0: f64,
}

/// The name an MJCF string is given inside MuJoCo's virtual file system.
const STRING_NAME: &str = "model.xml";

/// MuJoCo's whole error text for a model that failed to load (`mujoco-rs` keeps only its
/// first 100 characters): loads it again with a larger buffer.
/// An error unless `path` is a readable file.
pub(crate) fn check_readable(path: &Path) -> Result<(), MujocoError> {
    let unreadable = |reason: String| MujocoError::Unreadable { path: path.to_path_buf(), reason };
    let meta = std::fs::metadata(path).map_err(|e| unreadable(e.to_string()))?;
    if meta.is_file() { Ok(()) } else { Err(unreadable("it is not a file".into())) }
}

/// MuJoCo's full message for the MJCF file at `path`, which failed to load.
pub(crate) fn load_error_from_file(path: &Path) -> MujocoError {
    MujocoError::Load {
        source_name: format!("'{}'", path.display()),
        message: path
            .to_str()
            .and_then(|p| full_load_error(p, None))
            .unwrap_or_else(|| "MuJoCo's parser rejected it".into()),
    }
}

fn full_load_error(filename: &str, vfs: Option<&MjVfs>) -> Option<String> {
    let name = CString::new(filename).ok()?;
    let mut buf = vec![0 as c_char; 4096];
    // SAFETY: `name` is NUL-terminated, `vfs` is null or a live VFS, and MuJoCo writes at most
    // `buf.len()` bytes (NUL-terminated) into `buf`.
    let model = unsafe {
        mj_loadXML(name.as_ptr(), vfs.map_or(std::ptr::null(), |v| v.ffi()), buf.as_mut_ptr(), buf.len() as i32)
    };
    if !model.is_null() {
        // SAFETY: MuJoCo allocated this model and nothing else refers to it.
        unsafe { mj_deleteModel(model) };
        return None;
    }
    // SAFETY: MuJoCo NUL-terminates the message inside `buf`.
    let text = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().trim().to_string();
    (!text.is_empty()).then_some(text)
}

fn load_message(e: mujoco_rs::error::MjModelError) -> String {
    let text = e.to_string();
    text.strip_prefix("model load failed: ").unwrap_or(&text).trim().to_string()
}

/// Views `n` elements at `ptr` (an `mjModel` array) as a slice; empty when `n` is 0.
fn arr<T>(ptr: *const T, n: i64) -> &'static [T] {
    if n <= 0 || ptr.is_null() {
        return &[];
    }
    // SAFETY: MuJoCo allocates every mjModel array with the documented length (`n` times the
    // per-object width) for the model's lifetime; callers only keep the slices while the
    // model is borrowed (the 'static is local to `extract_scene`, which copies everything).
    unsafe { std::slice::from_raw_parts(ptr, n as usize) }
}

fn name(m: &mjModel, adr: *const i32, i: usize) -> String {
    let adr = arr(adr, i as i64 + 1)[i];
    let names = arr(m.names as *const c_char, m.nnames);
    if adr < 0 || adr as usize >= names.len() {
        return String::new();
    }
    // SAFETY: MuJoCo stores names NUL-terminated inside `names`.
    unsafe { CStr::from_ptr(names.as_ptr().add(adr as usize)) }.to_string_lossy().into_owned()
}

fn names(m: &mjModel, adr: *const i32, n: i64) -> Vec<String> {
    (0..n.max(0) as usize).map(|i| name(m, adr, i)).collect()
}

fn vec3(v: &[f64], i: usize) -> DVec3 {
    DVec3::new(v[3 * i], v[3 * i + 1], v[3 * i + 2])
}

fn fixed<const N: usize, T: Copy + Default>(v: &[T], i: usize) -> [T; N] {
    std::array::from_fn(|k| v[N * i + k])
}

/// The largest magnitude of a compiled length (a position or a size, metres) or joint
/// coordinate: MuJoCo's `mjMAXVAL`, past which MuJoCo itself calls a simulation unstable.
const MAX_MODEL_VALUE: f64 = mujoco_rs::mujoco_c::mjMAXVAL;

/// Where a checked field's element gets its name.
#[derive(Clone, Copy)]
enum Namer {
    /// The element's own name (`name_*adr`).
    Adr(*const i32),
    /// A `qpos0` entry: the joint whose coordinates hold it.
    Qpos,
}

/// A compiled `mjModel` array that the ray core or physics reads, checked at load.
struct Field {
    /// The MJCF element kind ("body", "geom", ...).
    element: &'static str,
    /// MuJoCo's array name.
    field: &'static str,
    /// The MJCF attribute(s) it is compiled from.
    attribute: &'static str,
    /// The array.
    values: &'static [f64],
    /// Numbers per element.
    width: usize,
    /// Where an element's name comes from.
    namer: Namer,
    /// Whether it is a length or coordinate, held within ±[`MAX_MODEL_VALUE`] (else only
    /// finite).
    bounded: bool,
}

/// The fields of `m` that the ray core and physics read (poses, sizes, orientations, masses).
fn checked_fields(m: &mjModel) -> Vec<Field> {
    let f = |element, field, attribute, values, width, namer, bounded| Field {
        element,
        field,
        attribute,
        values,
        width,
        namer,
        bounded,
    };
    let (nb, nj, ng, ns, nc, nl) = (m.nbody, m.njnt, m.ngeom, m.nsite, m.ncam, m.nlight);
    let (body, jnt, geom) = (Namer::Adr(m.name_bodyadr), Namer::Adr(m.name_jntadr), Namer::Adr(m.name_geomadr));
    let (site, cam, light) = (Namer::Adr(m.name_siteadr), Namer::Adr(m.name_camadr), Namer::Adr(m.name_lightadr));
    let orientation = "quat (or euler, axisangle, xyaxes, zaxis)";
    // What the MJCF writes first, then what MuJoCo derives from it (a body's inertia from its
    // geoms, a geom's bounds from its size), so the error names the cause.
    vec![
        f("body", "body_pos", "pos", arr(m.body_pos, 3 * nb), 3, body, true),
        f("body", "body_quat", orientation, arr(m.body_quat, 4 * nb), 4, body, false),
        f("joint", "jnt_pos", "pos", arr(m.jnt_pos, 3 * nj), 3, jnt, true),
        f("joint", "jnt_axis", "axis", arr(m.jnt_axis, 3 * nj), 3, jnt, false),
        f("geom", "geom_pos", "pos (or fromto, its mesh)", arr(m.geom_pos, 3 * ng), 3, geom, true),
        f("geom", "geom_quat", orientation, arr(m.geom_quat, 4 * ng), 4, geom, false),
        f("geom", "geom_size", "size (or fromto, its mesh)", arr(m.geom_size, 3 * ng), 3, geom, true),
        f("site", "site_pos", "pos", arr(m.site_pos, 3 * ns), 3, site, true),
        f("site", "site_quat", orientation, arr(m.site_quat, 4 * ns), 4, site, false),
        f("site", "site_size", "size", arr(m.site_size, 3 * ns), 3, site, true),
        f("camera", "cam_pos", "pos", arr(m.cam_pos, 3 * nc), 3, cam, true),
        f("camera", "cam_quat", orientation, arr(m.cam_quat, 4 * nc), 4, cam, false),
        f("light", "light_pos", "pos", arr(m.light_pos, 3 * nl), 3, light, true),
        f("light", "light_dir", "dir", arr(m.light_dir, 3 * nl), 3, light, false),
        f("hfield", "hfield_size", "size", arr(m.hfield_size, 4 * m.nhfield), 4, Namer::Adr(m.name_hfieldadr), true),
        f("joint", "qpos0", "ref (or its body's pos, quat)", arr(m.qpos0, m.nq), 1, Namer::Qpos, true),
        f("body", "body_ipos", "inertial pos (or its geoms)", arr(m.body_ipos, 3 * nb), 3, body, true),
        f("body", "body_iquat", "inertial quat (or its geoms)", arr(m.body_iquat, 4 * nb), 4, body, false),
        f("body", "body_mass", "mass (or its geoms' mass, density)", arr(m.body_mass, nb), 1, body, false),
        f("body", "body_inertia", "inertia (or its geoms' sizes)", arr(m.body_inertia, 3 * nb), 3, body, false),
        f("geom", "geom_rbound", "size (or its mesh)", arr(m.geom_rbound, ng), 1, geom, true),
        f("geom", "geom_aabb", "size (or its mesh)", arr(m.geom_aabb, 6 * ng), 6, geom, true),
    ]
}

/// Checks that every field the ray core and physics read is a finite number, lengths within
/// ±[`MAX_MODEL_VALUE`]: MuJoCo compiles `pos="inf 0 0"` or `quat="nan 0 0 1"` (with at most a
/// warning), and such a model casts rays and steps to nonsense. The error names the element,
/// the field, the value and the MJCF attribute to fix.
fn check_compiled(m: &mjModel) -> Result<(), MujocoError> {
    for field in checked_fields(m) {
        let bad = |v: &f64| !(v.is_finite() && (!field.bounded || v.abs() <= MAX_MODEL_VALUE));
        let Some(k) = field.values.iter().position(bad) else { continue };
        let (index, component, name) = locate(m, &field, k);
        return Err(not_finite(
            (field.element, index, &name),
            (field.field, component, field.values[k]),
            field.bounded,
            field.attribute,
        ));
    }
    check_mesh_vertices(m)
}

/// The error for `(element, id, name)`'s `(field, component, value)`, which is not finite (or,
/// for a `bounded` length, past ±[`MAX_MODEL_VALUE`]), naming the MJCF `attribute` to fix.
fn not_finite(
    (element, index, name): (&str, usize, &str),
    (field, component, value): (&str, usize, f64),
    bounded: bool,
    attribute: &str,
) -> MujocoError {
    let (shown, problem) = if bounded && value.is_finite() {
        (format!("{value:e}"), "beyond MuJoCo's limit of ±1e10 (mjMAXVAL)")
    } else {
        (value.to_string(), "which is not a finite number")
    };
    MujocoError::NotFinite {
        source_name: "the model".into(),
        what: format!(
            "{element} {index} ('{name}') has {field}[{component}] = {shown}, {problem}; fix the MJCF {element}'s \
             `{attribute}`"
        ),
    }
}

/// The element that entry `k` of `field` belongs to, the entry's component within it, and
/// the element's name.
fn locate(m: &mjModel, field: &Field, k: usize) -> (usize, usize, String) {
    match field.namer {
        Namer::Adr(adr) => (k / field.width, k % field.width, name(m, adr, k / field.width)),
        Namer::Qpos => {
            let joint = qpos_joint(m, k).unwrap_or(0);
            let start = arr(m.jnt_qposadr, m.njnt).get(joint).map_or(0, |&a| a as usize);
            (joint, k - start.min(k), name(m, m.name_jntadr, joint))
        }
    }
}

/// The joint whose `qpos` coordinates hold entry `k`.
fn qpos_joint(m: &mjModel, k: usize) -> Option<usize> {
    let adr = arr(m.jnt_qposadr, m.njnt);
    adr.iter().rposition(|&a| a >= 0 && a as usize <= k)
}

/// Every mesh vertex is finite (MuJoCo scales vertices by the mesh's `scale`).
fn check_mesh_vertices(m: &mjModel) -> Result<(), MujocoError> {
    let (vertadr, vertnum) = (arr(m.mesh_vertadr, m.nmesh), arr(m.mesh_vertnum, m.nmesh));
    let vert = arr(m.mesh_vert, 3 * m.nmeshvert);
    for mesh in 0..m.nmesh.max(0) as usize {
        let start = 3 * vertadr[mesh] as usize;
        let own = vert.get(start..start + 3 * vertnum[mesh] as usize).unwrap_or_default();
        if let Some(k) = own.iter().position(|v| !v.is_finite()) {
            let name = name(m, m.name_meshadr, mesh);
            let value = own[k].into();
            return Err(not_finite(("mesh", mesh, &name), ("mesh_vert", k, value), false, "vertex (or file, scale)"));
        }
    }
    Ok(())
}

/// The scene of `m`; with `assets` false its meshes and height fields are left empty (a
/// variant's, which shares the base model's). Fails first on a field the ray core or physics
/// reads that is not finite ([`check_compiled`]).
pub(crate) fn extract_scene(m: &mjModel, assets: bool) -> Result<Scene, MujocoError> {
    check_compiled(m)?;
    let (ngeom, nbody) = (m.ngeom, m.nbody);
    let geom_name = names(m, m.name_geomadr, ngeom);
    let raw_type = arr(m.geom_type, ngeom);
    let mut geom_type = Vec::with_capacity(ngeom as usize);
    for (g, &t) in raw_type.iter().enumerate() {
        let kind = GeomType::from_mujoco(t).ok_or_else(|| MujocoError::UnsupportedGeom {
            geom: g,
            name: geom_name[g].clone(),
            kind: t,
        })?;
        geom_type.push(kind);
    }
    let size = arr(m.geom_size, 3 * ngeom);
    let rgba = arr(m.geom_rgba, 4 * ngeom);
    let nmat = m.nmat;
    let mat_rgba = arr(m.mat_rgba, 4 * nmat);
    let (emission, specular, shininess, reflectance) = (
        arr(m.mat_emission, nmat),
        arr(m.mat_specular, nmat),
        arr(m.mat_shininess, nmat),
        arr(m.mat_reflectance, nmat),
    );
    // mat_texid is (nmat, mjNTEXROLE); role 1 is the RGB (base colour) texture.
    let ntexrole = 10;
    let mat_texid_all = arr(m.mat_texid, ntexrole * nmat);
    let ntex = m.ntex;
    let (tex_w, tex_h) = (arr(m.tex_width, ntex), arr(m.tex_height, ntex));
    let nlight = m.nlight;
    let ncam = m.ncam;
    let nsite = m.nsite;
    let mut site_type = Vec::with_capacity(nsite as usize);
    for (s, &t) in arr(m.site_type, nsite).iter().enumerate() {
        // MuJoCo compiles sites only as spheres, capsules, ellipsoids, cylinders and boxes.
        let kind = GeomType::from_mujoco(t).ok_or_else(|| MujocoError::UnsupportedGeom {
            geom: s,
            name: format!("site {}", name(m, m.name_siteadr, s)),
            kind: t,
        })?;
        site_type.push(kind);
    }
    let (texcoord, facetexcoord) = if assets { extract_texcoords(m) } else { (Vec::new(), Vec::new()) };
    let cutoff = arr(m.light_cutoff, nlight);
    let exponent = arr(m.light_exponent, nlight);

    let scene = Scene {
        geom_type,
        geom_size: (0..ngeom as usize).map(|g| vec3(size, g)).collect(),
        geom_group: arr(m.geom_group, ngeom).to_vec(),
        geom_bodyid: arr(m.geom_bodyid, ngeom).to_vec(),
        geom_contype: arr(m.geom_contype, ngeom).to_vec(),
        geom_conaffinity: arr(m.geom_conaffinity, ngeom).to_vec(),
        geom_dataid: arr(m.geom_dataid, ngeom).to_vec(),
        geom_matid: arr(m.geom_matid, ngeom).to_vec(),
        geom_rgba: (0..ngeom as usize).map(|g| fixed::<4, f32>(rgba, g)).collect(),
        geom_name,
        body_parentid: arr(m.body_parentid, nbody).to_vec(),
        body_rootid: arr(m.body_rootid, nbody).to_vec(),
        body_weldid: arr(m.body_weldid, nbody).to_vec(),
        body_name: names(m, m.name_bodyadr, nbody),
        mesh: if assets { extract_meshes(m)? } else { Vec::new() },
        hfield: if assets { extract_hfields(m)? } else { Vec::new() },
        mesh_texcoord: texcoord,
        mesh_facetexcoord: facetexcoord,
        mesh_facenormal: extract_facenormals(m),
        mat_rgba: (0..nmat as usize).map(|i| fixed::<4, f32>(mat_rgba, i)).collect(),
        mat_texid: (0..nmat as usize).map(|i| mat_texid_all[ntexrole as usize * i + 1]).collect(),
        mat_texrepeat: (0..nmat as usize).map(|i| fixed::<2, f32>(arr(m.mat_texrepeat, 2 * nmat), i)).collect(),
        mat_texuniform: arr(m.mat_texuniform, nmat).to_vec(),
        mat_shading: (0..nmat as usize).map(|i| [emission[i], specular[i], shininess[i], reflectance[i]]).collect(),
        mat_name: names(m, m.name_matadr, nmat),
        tex_type: arr(m.tex_type, ntex).to_vec(),
        tex_size: (0..ntex as usize).map(|i| [tex_w[i], tex_h[i]]).collect(),
        tex_file: (0..ntex as usize).map(|i| path_at(m, arr(m.tex_pathadr, ntex)[i])).collect(),
        tex_name: names(m, m.name_texadr, ntex),
        tex_srgb: arr(m.tex_colorspace, ntex).iter().map(|&c| c == mjtColorSpace::mjCOLORSPACE_SRGB as i32).collect(),
        light_bodyid: arr(m.light_bodyid, nlight).to_vec(),
        light_type: arr(m.light_type, nlight).to_vec(),
        light_castshadow: arr(m.light_castshadow, nlight).to_vec(),
        light_active: arr(m.light_active, nlight).to_vec(),
        light_diffuse: (0..nlight as usize).map(|i| fixed::<3, f32>(arr(m.light_diffuse, 3 * nlight), i)).collect(),
        light_ambient: (0..nlight as usize).map(|i| fixed::<3, f32>(arr(m.light_ambient, 3 * nlight), i)).collect(),
        light_specular: (0..nlight as usize).map(|i| fixed::<3, f32>(arr(m.light_specular, 3 * nlight), i)).collect(),
        light_attenuation: (0..nlight as usize)
            .map(|i| fixed::<3, f32>(arr(m.light_attenuation, 3 * nlight), i))
            .collect(),
        light_spot: (0..nlight as usize).map(|i| [cutoff[i], exponent[i]]).collect(),
        light_name: names(m, m.name_lightadr, nlight),
        light_pos: (0..nlight as usize).map(|i| vec3(arr(m.light_pos, 3 * nlight), i)).collect(),
        light_dir: (0..nlight as usize).map(|i| vec3(arr(m.light_dir, 3 * nlight), i)).collect(),
        cam_bodyid: arr(m.cam_bodyid, ncam).to_vec(),
        cam_fovy: arr(m.cam_fovy, ncam).to_vec(),
        cam_resolution: (0..ncam as usize).map(|i| fixed::<2, i32>(arr(m.cam_resolution, 2 * ncam), i)).collect(),
        cam_projection: arr(m.cam_projection, ncam).to_vec(),
        cam_output: arr(m.cam_output, ncam).to_vec(),
        cam_sensorsize: (0..ncam as usize).map(|i| fixed::<2, f32>(arr(m.cam_sensorsize, 2 * ncam), i)).collect(),
        cam_intrinsic: (0..ncam as usize).map(|i| fixed::<4, f32>(arr(m.cam_intrinsic, 4 * ncam), i)).collect(),
        cam_name: names(m, m.name_camadr, ncam),
        site_bodyid: arr(m.site_bodyid, m.nsite).to_vec(),
        site_name: names(m, m.name_siteadr, m.nsite),
        site_type,
        site_size: (0..nsite as usize).map(|i| vec3(arr(m.site_size, 3 * nsite), i)).collect(),
        site_group: arr(m.site_group, nsite).to_vec(),
        site_rgba: (0..nsite as usize).map(|i| fixed::<4, f32>(arr(m.site_rgba, 4 * nsite), i)).collect(),
        site_matid: arr(m.site_matid, nsite).to_vec(),
        tendon_group: arr(m.tendon_group, m.ntendon).to_vec(),
        tendon_matid: arr(m.tendon_matid, m.ntendon).to_vec(),
        offsamples: m.vis.quality.offsamples,
        zfar: f64::from(m.vis.map.zfar) * m.stat.extent,
        haze: f64::from(m.vis.map.haze),
        haze_rgba: m.vis.rgba.haze,
        skin: [extract_skins(m), extract_flexes(m)].concat(),
        undrawn: undrawn(m),
    };
    Ok(scene)
}

fn path_at(m: &mjModel, adr: i32) -> String {
    let paths = arr(m.paths as *const c_char, m.npaths);
    if adr < 0 || adr as usize >= paths.len() {
        return String::new();
    }
    // SAFETY: MuJoCo stores paths NUL-terminated inside `paths`.
    unsafe { CStr::from_ptr(paths.as_ptr().add(adr as usize)) }.to_string_lossy().into_owned()
}

fn extract_meshes(m: &mjModel) -> Result<Vec<Mesh>, MujocoError> {
    let nmesh = m.nmesh;
    let (vertadr, vertnum) = (arr(m.mesh_vertadr, nmesh), arr(m.mesh_vertnum, nmesh));
    let (faceadr, facenum) = (arr(m.mesh_faceadr, nmesh), arr(m.mesh_facenum, nmesh));
    let (normaladr, normalnum) = (arr(m.mesh_normaladr, nmesh), arr(m.mesh_normalnum, nmesh));
    let vert = arr(m.mesh_vert, 3 * m.nmeshvert);
    let face = arr(m.mesh_face, 3 * m.nmeshface);
    let normal = arr(m.mesh_normal, 3 * m.nmeshnormal);
    let mesh_names = names(m, m.name_meshadr, nmesh);
    (0..nmesh as usize)
        .map(|i| {
            let v = (0..vertnum[i] as usize).map(|k| fixed::<3, f32>(vert, vertadr[i] as usize + k)).collect();
            let f = (0..facenum[i] as usize)
                .map(|k| fixed::<3, i32>(face, faceadr[i] as usize + k).map(|x| x as u32))
                .collect();
            let n = (0..normalnum[i] as usize).map(|k| fixed::<3, f32>(normal, normaladr[i] as usize + k)).collect();
            Ok(Mesh::new(mesh_names[i].clone(), v, f, n)?)
        })
        .collect()
}

/// Per mesh, each face's indices into its own normals (empty where one is out of range).
fn extract_facenormals(m: &mjModel) -> Vec<Vec<[u32; 3]>> {
    let nmesh = m.nmesh;
    let (faceadr, facenum) = (arr(m.mesh_faceadr, nmesh), arr(m.mesh_facenum, nmesh));
    let num = arr(m.mesh_normalnum, nmesh);
    let facenormal = arr(m.mesh_facenormal, 3 * m.nmeshface);
    (0..nmesh as usize)
        .map(|i| {
            let faces: Vec<[u32; 3]> = (0..facenum[i].max(0) as usize)
                .map(|k| fixed::<3, i32>(facenormal, faceadr[i] as usize + k).map(|x| x.max(0) as u32))
                .collect();
            if faces.iter().flatten().any(|&x| x as i32 >= num[i]) { Vec::new() } else { faces }
        })
        .collect()
}

/// Per mesh, its texture coordinates and each face's indices into them (both empty for a
/// mesh without texture coordinates).
#[allow(clippy::type_complexity)]
fn extract_texcoords(m: &mjModel) -> (Vec<Vec<[f32; 2]>>, Vec<Vec<[u32; 3]>>) {
    let nmesh = m.nmesh;
    let (adr, num) = (arr(m.mesh_texcoordadr, nmesh), arr(m.mesh_texcoordnum, nmesh));
    let (faceadr, facenum) = (arr(m.mesh_faceadr, nmesh), arr(m.mesh_facenum, nmesh));
    let uv = arr(m.mesh_texcoord, 2 * m.nmeshtexcoord);
    let facetex = arr(m.mesh_facetexcoord, 3 * m.nmeshface);
    (0..nmesh as usize)
        .map(|i| {
            if adr[i] < 0 || num[i] <= 0 {
                return (Vec::new(), Vec::new());
            }
            let coords = (0..num[i] as usize).map(|k| fixed::<2, f32>(uv, adr[i] as usize + k)).collect();
            // Indices past the mesh's own coordinates are dropped with the whole mapping (the
            // renderer then maps the mesh as it maps one without).
            let faces: Vec<[u32; 3]> = (0..facenum[i] as usize)
                .map(|k| fixed::<3, i32>(facetex, faceadr[i] as usize + k).map(|x| x.max(0) as u32))
                .collect();
            if faces.iter().flatten().any(|&x| x as i32 >= num[i]) {
                return (Vec::new(), Vec::new());
            }
            (coords, faces)
        })
        .unzip()
}

/// Every skin: its bind-pose surface and the bones that move it.
fn extract_skins(m: &mjModel) -> Vec<Skin> {
    let n = m.nskin;
    let (vertadr, vertnum, texadr) = (arr(m.skin_vertadr, n), arr(m.skin_vertnum, n), arr(m.skin_texcoordadr, n));
    let (faceadr, facenum) = (arr(m.skin_faceadr, n), arr(m.skin_facenum, n));
    let (boneadr, bonenum) = (arr(m.skin_boneadr, n), arr(m.skin_bonenum, n));
    let (vert, texcoord) = (arr(m.skin_vert, 3 * m.nskinvert), arr(m.skin_texcoord, 2 * m.nskintexvert));
    let face = arr(m.skin_face, 3 * m.nskinface);
    let (bvadr, bvnum) = (arr(m.skin_bonevertadr, m.nskinbone), arr(m.skin_bonevertnum, m.nskinbone));
    let (bindpos, bindquat) = (arr(m.skin_bonebindpos, 3 * m.nskinbone), arr(m.skin_bonebindquat, 4 * m.nskinbone));
    let bodyid = arr(m.skin_bonebodyid, m.nskinbone);
    let (bvid, bvweight) = (arr(m.skin_bonevertid, m.nskinbonevert), arr(m.skin_bonevertweight, m.nskinbonevert));
    let (rgba, matid, group, inflate) =
        (arr(m.skin_rgba, 4 * n), arr(m.skin_matid, n), arr(m.skin_group, n), arr(m.skin_inflate, n));
    let names = names(m, m.name_skinadr, n);
    (0..n as usize)
        .map(|i| {
            let (v0, nv) = (vertadr[i] as usize, vertnum[i].max(0) as usize);
            let bones = (boneadr[i] as usize..(boneadr[i] + bonenum[i].max(0)) as usize)
                .map(|b| {
                    let verts = bvadr[b] as usize..(bvadr[b] + bvnum[b].max(0)) as usize;
                    SkinBone {
                        body: bodyid[b].max(0) as usize,
                        bindpos: fixed::<3, f32>(bindpos, b),
                        bindquat: fixed::<4, f32>(bindquat, b),
                        vert: bvid[verts.clone()].iter().map(|&v| v.max(0) as u32).collect(),
                        weight: bvweight[verts].to_vec(),
                    }
                })
                .collect();
            Skin {
                name: names[i].clone(),
                rgba: fixed::<4, f32>(rgba, i),
                matid: matid[i],
                group: group[i],
                inflate: inflate[i],
                vert: (v0..v0 + nv).map(|k| fixed::<3, f32>(vert, k)).collect(),
                texcoord: match usize::try_from(texadr[i]) {
                    Ok(t) => (t..t + nv).map(|k| fixed::<2, f32>(texcoord, k)).collect(),
                    Err(_) => Vec::new(),
                },
                face: (faceadr[i] as usize..(faceadr[i] + facenum[i].max(0)) as usize)
                    .map(|f| fixed::<3, i32>(face, f).map(|x| x.max(0) as u32))
                    .collect(),
                bones,
                flex: None,
                sides: 0,
                flat: false,
            }
        })
        .collect()
}

/// The flexes MuJoCo's renderer draws as surfaces with its default options (`mjVIS_FLEXSKIN`
/// on), each as a [`Skin`] whose vertices ride their bodies rigidly, as `mj_flex` places
/// them: a 2-D flex (cloth) as two layers `radius` either side of its elements, each facing
/// out; a 3-D flex as its shell, `radius` out. Built as `mjv_updateActiveFlex` builds them,
/// less the thin side strips that close a cloth's border. Interpolated flexes and 1-D flexes
/// (cables, drawn as edge cylinders) are not drawn: see [`undrawn`].
fn extract_flexes(m: &mjModel) -> Vec<Skin> {
    let n = m.nflex;
    let (dim, interp, vertadr, vertnum) =
        (arr(m.flex_dim, n), arr(m.flex_interp, n), arr(m.flex_vertadr, n), arr(m.flex_vertnum, n));
    let (elemnum, elemdataadr) = (arr(m.flex_elemnum, n), arr(m.flex_elemdataadr, n));
    let (shellnum, shelldataadr) = (arr(m.flex_shellnum, n), arr(m.flex_shelldataadr, n));
    let (elem, elemtex, shell) = (
        arr(m.flex_elem, m.nflexelemdata),
        arr(m.flex_elemtexcoord, m.nflexelemdata),
        arr(m.flex_shell, m.nflexshelldata),
    );
    let (vert, vertbody, centered) =
        (arr(m.flex_vert, 3 * m.nflexvert), arr(m.flex_vertbodyid, m.nflexvert), arr(m.flex_centered, n));
    let (texadr, texcoord) = (arr(m.flex_texcoordadr, n), arr(m.flex_texcoord, 2 * m.nflextexcoord));
    let (radius, rgba, matid, group) =
        (arr(m.flex_radius, n), arr(m.flex_rgba, 4 * n), arr(m.flex_matid, n), arr(m.flex_group, n));
    let flatskin = arr(m.flex_flatskin, n);
    let names = names(m, m.name_flexadr, n);
    (0..n.max(0) as usize)
        .filter(|&f| drawn_flex(dim[f], interp[f]))
        .map(|f| {
            let (v0, nv) = (vertadr[f] as usize, vertnum[f].max(0) as usize);
            let d = dim[f] as usize;
            let corners = |data: &[i32], adr: i32, k: usize, width: usize| -> Vec<u32> {
                (0..width).map(|c| data[adr as usize + k * width + c].max(0) as u32).collect()
            };
            let elements: Vec<Vec<u32>> =
                (0..elemnum[f].max(0) as usize).map(|e| corners(elem, elemdataadr[f], e, d + 1)).collect();
            // Two layers for a cloth (the second a copy of the vertices, its faces turned over),
            // the shell for a solid.
            let mut sides = 0;
            let (layers, face): (usize, Vec<[u32; 3]>) = if d == 2 {
                let top = elements.iter().map(|e| [e[0], e[1], e[2]]);
                let bottom = elements.iter().map(|e| [e[0], e[2], e[1]].map(|v| v + nv as u32));
                // The border's strips (`makeSide`): per border edge (a, b), the triangles
                // (a top, b bottom, b top) and (b bottom, a top, a bottom).
                let below = |v: u32| v + nv as u32;
                let border = (0..shellnum[f].max(0) as usize).map(|s| corners(shell, shelldataadr[f], s, d));
                let strips: Vec<[u32; 3]> =
                    border.flat_map(|e| [[e[0], below(e[1]), e[1]], [below(e[1]), e[0], below(e[0])]]).collect();
                sides = strips.len();
                (2, top.chain(bottom).chain(strips).collect())
            } else {
                let shells = (0..shellnum[f].max(0) as usize).map(|s| corners(shell, shelldataadr[f], s, d));
                (1, shells.map(|s| [s[0], s[1], s[2]]).collect())
            };
            let local: Vec<[f32; 3]> = (v0..v0 + nv)
                .map(|i| if centered[f] { [0.0; 3] } else { fixed::<3, f64>(vert, i).map(|x| x as f32) })
                .collect();
            let mut by_body: std::collections::BTreeMap<usize, Vec<u32>> = Default::default();
            for layer in 0..layers {
                for k in 0..nv {
                    by_body.entry(vertbody[v0 + k].max(0) as usize).or_default().push((layer * nv + k) as u32);
                }
            }
            let bones = by_body
                .into_iter()
                .map(|(body, vert)| SkinBone {
                    body,
                    bindpos: [0.0; 3],
                    bindquat: [1.0, 0.0, 0.0, 0.0],
                    weight: vec![1.0; vert.len()],
                    vert,
                })
                .collect();
            // Per vertex, the texture coordinates its elements give it (a 3-D flex's shell
            // reads them by vertex, as `copyTex` does).
            let texcoord = match usize::try_from(texadr[f]) {
                Ok(t) => {
                    let mut uv = vec![[0.0f32; 2]; nv];
                    if d == 2 {
                        for (e, corners) in elements.iter().enumerate() {
                            let tex = corners_of(elemtex, elemdataadr[f], e, d + 1);
                            for (&v, &tc) in corners.iter().zip(&tex) {
                                uv[v as usize] = fixed::<2, f32>(texcoord, t + tc);
                            }
                        }
                    } else {
                        (0..nv).for_each(|k| uv[k] = fixed::<2, f32>(texcoord, t + k));
                    }
                    (0..layers).flat_map(|_| uv.iter().copied()).collect()
                }
                Err(_) => Vec::new(),
            };
            Skin {
                name: names[f].clone(),
                rgba: fixed::<4, f32>(rgba, f),
                matid: matid[f],
                group: group[f],
                inflate: radius[f] as f32,
                vert: (0..layers).flat_map(|_| local.iter().copied()).collect(),
                texcoord,
                face,
                bones,
                flex: Some(f),
                sides,
                flat: flatskin[f],
            }
        })
        .collect()
}

/// The `k`-th entry of `width` indices at `adr` in `data`, as indices.
fn corners_of(data: &[i32], adr: i32, k: usize, width: usize) -> Vec<usize> {
    (0..width).map(|c| data[adr as usize + k * width + c].max(0) as usize).collect()
}

/// Whether glint draws a flex of dimension `dim` and interpolation `interp` (see
/// [`extract_flexes`]).
fn drawn_flex(dim: i32, interp: i32) -> bool {
    matches!(dim, 2 | 3) && interp == 0
}

/// What MuJoCo's renderer draws with its default options and glint's cameras do not, one
/// entry per kind with the first few names.
fn undrawn(m: &mjModel) -> Vec<String> {
    let listed = |what: &str, ids: Vec<usize>, adr: *const i32| -> Option<String> {
        if ids.is_empty() {
            return None;
        }
        let mut shown: Vec<String> = ids.iter().take(3).map(|&i| name(m, adr, i)).collect();
        shown.iter_mut().zip(&ids).for_each(|(n, i)| {
            if n.is_empty() {
                *n = format!("#{i}");
            }
        });
        let more = if ids.len() > 3 { ", ..." } else { "" };
        Some(format!("{} {what} ({}{more})", ids.len(), shown.join(", ")))
    };
    let (dim, interp) = (arr(m.flex_dim, m.nflex), arr(m.flex_interp, m.nflex));
    let flexes = (0..m.nflex.max(0) as usize).filter(|&f| !drawn_flex(dim[f], interp[f])).collect();
    let rangefinders = arr(m.sensor_type, m.nsensor)
        .iter()
        .enumerate()
        .filter(|(_, t)| **t == mjtSensor::mjSENS_RANGEFINDER as i32)
        .map(|(i, _)| i)
        .collect();
    [
        listed("flexes (1-D or interpolated)", flexes, m.name_flexadr),
        listed("rangefinder rays", rangefinders, m.name_sensoradr),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn extract_hfields(m: &mjModel) -> Result<Vec<Hfield>, MujocoError> {
    let n = m.nhfield;
    let (nrow, ncol, adr) = (arr(m.hfield_nrow, n), arr(m.hfield_ncol, n), arr(m.hfield_adr, n));
    let size = arr(m.hfield_size, 4 * n);
    let data = arr(m.hfield_data, m.nhfielddata);
    let hf_names = names(m, m.name_hfieldadr, n);
    (0..n as usize)
        .map(|i| {
            let (r, c) = (nrow[i] as usize, ncol[i] as usize);
            let start = adr[i] as usize;
            let d = data[start..start + r * c].to_vec();
            Ok(Hfield::new(hf_names[i].clone(), r, c, fixed::<4, f64>(size, i), d)?)
        })
        .collect()
}
