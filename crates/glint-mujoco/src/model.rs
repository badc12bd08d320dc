//! Loading MJCF through MuJoCo and extracting glint's [`Scene`] from the compiled `mjModel`.

use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::path::Path;
use std::sync::{Arc, Once};

use glint_core::{ModelArrays, ModelCounts, Scene, Texture, TextureKind, Visual};
use mujoco_rs::logging::set_log_handler;
use mujoco_rs::mujoco_c::{mj_deleteModel, mj_loadXML, mjModel};
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

    /// Per camera, whether it is fixed in its body's frame (MuJoCo's `cam_mode` is `fixed`;
    /// a tracking camera moves in it).
    pub fn camera_fixed(&self) -> Vec<bool> {
        let m = self.mj.ffi();
        arr(m.cam_mode, m.ncam).iter().map(|&mode| mode == 0).collect()
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

/// Fills [`ModelArrays`] from `mjModel`'s pointers: one line per array, in
/// `glint_core::for_model_arrays!`'s list, so the types are checked against `mjModel`'s.
macro_rules! arrays_of_mj {
    (counts: $($count:ident),* ; arrays: $($field:ident : $ty:ty [$n:ident * $w:literal]),* $(,)?) => {
        fn model_arrays(m: &mjModel) -> ModelArrays<'_> {
            let counts = ModelCounts { $($count: m.$count.max(0) as usize,)* };
            let bytes = |ptr: *const c_char, n: i64| -> &[u8] {
                let chars = arr(ptr, n);
                // SAFETY: c_char and u8 have the same size and alignment; every bit pattern is a u8.
                unsafe { std::slice::from_raw_parts(chars.as_ptr().cast::<u8>(), chars.len()) }
            };
            ModelArrays {
                counts,
                visual: Visual {
                    offsamples: m.vis.quality.offsamples,
                    zfar: m.vis.map.zfar,
                    extent: m.stat.extent,
                    haze: m.vis.map.haze,
                    haze_rgba: m.vis.rgba.haze,
                },
                names: bytes(m.names, m.nnames).into(),
                paths: bytes(m.paths, m.npaths).into(),
                $($field: arr::<$ty>(m.$field, (counts.$n * $w) as i64).into(),)*
            }
        }
    };
}
glint_core::for_model_arrays!(arrays_of_mj);

/// The scene of `m`; with `assets` false its meshes and height fields are left empty (a
/// variant's, which shares the base model's). Fails first on a field the ray core or physics
/// reads that is not finite ([`check_compiled`]).
pub(crate) fn extract_scene(m: &mjModel, assets: bool) -> Result<Scene, MujocoError> {
    check_compiled(m)?;
    Ok(Scene::from_arrays(&model_arrays(m), assets)?)
}
