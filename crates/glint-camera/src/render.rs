//! The batch renderer: every active camera of every world, cast through the same BVHs the
//! lidar uses, into the caller's buffers.

use glam::{DMat3, DVec3, Vec3};
use glint_core::{
    Cast, CastOne, GeomType, HitsMut, Origins, Poses, PreparedRays, RayCaster, RayFilter, Scene, Shapes, Texture,
    TextureKind,
};
use glint_materials::{Continuation, MaterialTable};
use rayon::prelude::*;

use crate::CameraError;
use crate::camera::{CameraModel, CameraOptions, Layout, Projection};
use crate::shade::{Light, MAX_LIGHTS, NO_LIGHT_AMBIENT, Surface};
use crate::texture::Sampler;

/// Rows of one camera image cast together (one parallel job).
const BAND_ROWS: usize = 8;
/// Pixels per packet tile: 8 columns × 4 rows (the core's 32-ray packets).
const TILE: (usize, usize) = (8, 4);
/// How far a shadow ray starts off its surface, metres (against self-shadowing).
const SHADOW_OFFSET: f64 = 1e-4;
/// MuJoCo's default geom colour: a geom with a material and this colour takes the material's.
const DEFAULT_RGBA: [f32; 4] = [0.5, 0.5, 0.5, 1.0];

/// MuJoCo's headlight (`visual/headlight`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Headlight {
    /// Whether it is on.
    pub active: bool,
    /// Ambient colour.
    pub ambient: Vec3,
    /// Diffuse colour.
    pub diffuse: Vec3,
    /// Specular colour.
    pub specular: Vec3,
}

/// What a render reads of the simulation.
#[derive(Clone, Copy)]
pub struct Inputs<'a> {
    /// The scene.
    pub scene: &'a Scene,
    /// Every world's poses.
    pub poses: &'a Poses,
    /// The ray caster, refitted to `poses`.
    pub caster: &'a RayCaster,
    /// Per world, its active lights in the world frame.
    pub lights: &'a [Vec<Light>],
    /// MuJoCo's headlight.
    pub headlight: Headlight,
    /// Each world's geom and material colours, materials, textures and camera fields of view.
    pub fields: &'a dyn WorldFields,
}

/// Each world's geom, material and camera fields, as the renderer reads them.
pub trait WorldFields: Sync {
    /// Geom `g`'s colour in world `w`.
    fn geom_rgba(&self, w: usize, g: usize) -> [f32; 4];
    /// Geom `g`'s material in world `w` (−1: none).
    fn geom_matid(&self, w: usize, g: usize) -> i32;
    /// Material `m`'s colour in world `w`.
    fn mat_rgba(&self, w: usize, m: usize) -> [f32; 4];
    /// Material `m`'s texture in world `w` (−1: none).
    fn mat_texid(&self, w: usize, m: usize) -> i32;
    /// Material `m`'s texture repetition in world `w`.
    fn mat_texrepeat(&self, w: usize, m: usize) -> [f32; 2];
    /// Camera `c`'s vertical field of view in world `w` (degrees; metres for orthographic).
    fn cam_fovy(&self, w: usize, c: usize) -> f64;
}

/// The caller's output buffers, each `nworld × pixels_per_world` long (× 3 bytes for RGB),
/// laid out as [`Layout`] says; an output not asked for may be `None`.
pub struct Frames<'a> {
    /// 8-bit RGB.
    pub rgb: Option<&'a mut [u8]>,
    /// Depth along the optical axis, metres; 0 where nothing is hit.
    pub depth: Option<&'a mut [f32]>,
    /// Geom id, −1 for background.
    pub seg: Option<&'a mut [i32]>,
}

/// Textures and everything else a render reads that does not change between frames.
pub struct Renderer {
    samplers: Vec<Sampler>,
    skybox: Option<usize>,
    /// Per geom, whether depth sees through it (its NIR material passes light: glass, water).
    see_through: Vec<bool>,
}

/// How many see-through surfaces a depth ray passes before it reports what it meets.
const MAX_SEE_THROUGH: usize = 8;

/// One band of rows of one camera in one world, and where its pixels go.
struct Job<'a> {
    world: usize,
    slot: usize,
    rows: (usize, usize),
    rgb: Option<&'a mut [u8]>,
    depth: Option<&'a mut [f32]>,
    seg: Option<&'a mut [i32]>,
}

/// What one render shares between its jobs.
struct Shared<'a> {
    scene: &'a Scene,
    poses: &'a Poses,
    caster: &'a RayCaster,
    layout: &'a Layout,
    prepared: Vec<PreparedRays<'a>>,
    lights: &'a [Vec<Light>],
    headlight: Headlight,
    fields: &'a dyn WorldFields,
}

impl Renderer {
    /// A renderer for a scene with `textures` (the model's, in texture-id order).
    pub fn new(textures: &[Texture]) -> Renderer {
        let samplers: Vec<Sampler> = textures.iter().map(Sampler::new).collect();
        let skybox = samplers.iter().position(|s| s.kind() == TextureKind::Skybox);
        Renderer { samplers, skybox, see_through: Vec::new() }
    }

    /// Marks the geoms depth sees through (indexed by geom id; missing ids are opaque): the
    /// geoms whose NIR material passes the depth camera's light, as it does the lidar's.
    /// Colour and segmentation still show the surface itself.
    pub fn set_see_through(&mut self, see_through: Vec<bool>) {
        self.see_through = see_through;
    }

    /// [`Renderer::set_see_through`] from the scene's near-infrared materials: depth sees
    /// through the geoms whose material is authored as glass (`continuation = "slab"`) or
    /// water (`"medium"`), which pass a depth camera's light as they pass the lidar's
    /// (straight on, unrefracted).
    pub fn set_materials(&mut self, scene: &glint_core::Scene, table: &MaterialTable) {
        let classes = table.geom_classes(&scene.mat_name, &scene.geom_matid);
        self.see_through =
            classes.into_iter().map(|c| matches!(c, Some(Continuation::Slab | Continuation::Medium))).collect();
    }

    /// Whether geom `g` is see-through for depth.
    fn passes(&self, g: i32) -> bool {
        usize::try_from(g).ok().and_then(|g| self.see_through.get(g)).copied().unwrap_or(false)
    }

    /// The depth (in units of `dir`) of the first surface that is not see-through along the
    /// ray that first met see-through geom `g` at `t`; 0 when it leaves the scene.
    fn depth_through(
        &self,
        prepared: &PreparedRays,
        w: usize,
        origin: DVec3,
        dir: DVec3,
        mut t: f64,
        mut g: i32,
    ) -> f64 {
        for _ in 0..MAX_SEE_THROUGH {
            let ray = CastOne { world: w, origin: origin + dir * t, dir, exclude_body: -1, skip_geom: g };
            match prepared.cast_one(ray) {
                Some(hit) => {
                    t += hit.dist;
                    g = hit.geomid;
                    if !self.passes(g) {
                        return t;
                    }
                }
                None => return 0.0,
            }
        }
        t
    }

    /// Renders every active camera of `layout` in every world of `input.poses` into
    /// `frames`.
    pub fn render(&self, input: Inputs, layout: &Layout, frames: Frames) -> Result<(), CameraError> {
        self.render_where(input, layout, frames, &|_, _| true)
    }

    /// [`Renderer::render`] of the (world, camera slot) pairs `wanted` keeps: the buffers are
    /// laid out for every pair, and the pixels of the others are left as they are (a recording
    /// renders only the frames it takes on a tick).
    pub fn render_where(
        &self,
        input: Inputs,
        layout: &Layout,
        frames: Frames,
        wanted: &(dyn Fn(usize, usize) -> bool + Sync),
    ) -> Result<(), CameraError> {
        let Inputs { scene, poses, caster, lights, headlight, fields } = input;
        let nworld = poses.nworld;
        let pixels = nworld * layout.pixels_per_world;
        check(&frames.rgb, pixels * 3, "rgb")?;
        check(&frames.depth, pixels, "depth")?;
        check(&frames.seg, pixels, "seg")?;
        if lights.len() != nworld {
            return Err(CameraError::Buffer { what: "lights", len: lights.len(), expected: nworld });
        }
        let prepared = layout
            .cameras
            .iter()
            .map(|(_, o)| caster.prepare(scene, poses, &filter(o)))
            .collect::<Result<Vec<_>, _>>()?;
        let shared = Shared { scene, poses, caster, layout, prepared, lights, headlight, fields };
        let jobs = jobs(layout, nworld, frames, wanted);
        jobs.into_par_iter().try_for_each(|job| self.band(&shared, job))
    }

    /// Casts and shades one band of rows. A cast the ray core refuses is the render's error
    /// (the rays come from finite poses, so one would be a bug to see, not a frame to draw).
    fn band(&self, s: &Shared, job: Job) -> Result<(), CameraError> {
        let (model, options) = &s.layout.cameras[job.slot];
        let w = job.world;
        let world_model = model.with_fovy(s.fields.cam_fovy(w, model.camera));
        let model = &world_model;
        let cam_pos = s.poses.cam_xpos[w * s.scene.ncam() + model.camera];
        let cam_mat = s.poses.cam_xmat[w * s.scene.ncam() + model.camera];
        let (pixel, origins, dirs) = band_rays(model, cam_pos, &cam_mat, job.rows);
        let n = dirs.len();
        let (mut dist, mut geomid, mut normal) = (vec![0.0; n], vec![0; n], vec![DVec3::ZERO; n]);
        let cast = Cast {
            world: w,
            origins: match &origins {
                Some(o) => Origins::Each(o),
                None => Origins::Shared(cam_pos),
            },
            dirs: &dirs,
            exclude_body: -1,
            skip_geom: -1,
            trusted: true,
        };
        let prepared = &s.prepared[job.slot];
        let hits = HitsMut { dist: &mut dist, geomid: &mut geomid, normal: &mut normal };
        prepared.cast(cast, hits)?;
        let origin = |r: usize| origins.as_ref().map_or(cam_pos, |o| o[r]);
        let mut depth = job.depth;
        let mut seg = job.seg;
        for r in 0..n {
            let hit = geomid[r] >= 0;
            if let Some(d) = depth.as_deref_mut() {
                d[pixel[r]] = if !hit {
                    0.0
                } else if self.passes(geomid[r]) {
                    self.depth_through(prepared, w, origin(r), dirs[r], dist[r], geomid[r]) as f32
                } else {
                    dist[r] as f32
                };
            }
            if let Some(g) = seg.as_deref_mut() {
                g[pixel[r]] = geomid[r];
            }
        }
        let Some(rgb) = job.rgb else { return Ok(()) };
        let points: Vec<DVec3> = (0..n).map(|r| origin(r) + dirs[r] * dist[r]).collect();
        let forward = cam_mat * DVec3::NEG_Z;
        let lights = scene_lights(s, w, cam_pos, forward);
        let shadowed = self.shadows(s, job.slot, w, &lights, options, &points, &geomid, &normal)?;
        let (footprint, ortho) = model.pixel_footprint();
        for r in 0..n {
            let color = if geomid[r] < 0 {
                self.background(dirs[r])
            } else {
                let view = (origin(r) - points[r]).normalize_or_zero();
                let spread = if ortho { footprint } else { footprint * (dirs[r] * dist[r]).length() };
                let hit = Hit { geom: geomid[r] as usize, point: points[r], normal: normal[r], view, spread };
                self.shade(s, w, &hit, &lights, options, |l| shadowed[l].get(r).copied().unwrap_or(false))
            };
            let at = pixel[r] * 3;
            rgb[at..at + 3].copy_from_slice(&color.to_array().map(|c| (c.clamp(0.0, 1.0) * 255.0 + 0.5) as u8));
        }
        Ok(())
    }

    /// For each light, which rays' surfaces are in its shadow (empty for lights that cast
    /// none): a ray from each lit surface toward the light, blocked by any geom before it. A
    /// shadow ray the ray core refuses (a surface point or a direction that is not finite) is
    /// an error, never a band drawn without its shadows.
    #[allow(clippy::too_many_arguments)]
    fn shadows(
        &self,
        s: &Shared,
        slot: usize,
        w: usize,
        lights: &[Light],
        options: &CameraOptions,
        points: &[DVec3],
        geomid: &[i32],
        normal: &[DVec3],
    ) -> Result<Vec<Vec<bool>>, CameraError> {
        let n = points.len();
        lights
            .iter()
            .map(|light| {
                if !(options.use_shadows && light.castshadow && light.lights()) {
                    return Ok(Vec::new());
                }
                // Only surfaces that face the light can be in its shadow; the others (and
                // background pixels) cast nothing.
                let mut which = Vec::with_capacity(n);
                let mut origins = Vec::with_capacity(n);
                let mut dirs = Vec::with_capacity(n);
                let mut reach = Vec::with_capacity(n);
                for r in 0..n {
                    let (l, d) = light.toward(points[r]);
                    if geomid[r] >= 0 && normal[r].dot(l) > 0.0 {
                        which.push(r);
                        origins.push(points[r] + normal[r] * SHADOW_OFFSET);
                        dirs.push(l);
                        reach.push(d);
                    }
                }
                let m = which.len();
                let (mut dist, mut geom, mut norm) = (vec![0.0; m], vec![0; m], vec![DVec3::ZERO; m]);
                let cast = Cast {
                    world: w,
                    origins: Origins::Each(&origins),
                    dirs: &dirs,
                    exclude_body: -1,
                    skip_geom: -1,
                    trusted: false,
                };
                let hits = HitsMut { dist: &mut dist, geomid: &mut geom, normal: &mut norm };
                s.prepared[slot].cast(cast, hits)?;
                let mut shadowed = vec![false; n];
                for (k, &r) in which.iter().enumerate() {
                    shadowed[r] = geom[k] >= 0 && dist[k] < reach[k];
                }
                Ok(shadowed)
            })
            .collect()
    }

    /// The colour of a surface hit, as the classic renderer draws it: a first pass with the
    /// lights that cast no shadow (and emission), one added pass per shadow-casting light
    /// where its shadow is not, each clamped and modulated by the texture.
    fn shade(
        &self,
        s: &Shared,
        w: usize,
        hit: &Hit,
        lights: &[Light],
        options: &CameraOptions,
        in_shadow: impl Fn(usize) -> bool,
    ) -> Vec3 {
        let surface = surface(s, w, hit.geom);
        let texture = if options.use_textures { self.texture(s, w, hit) } else { Vec3::ONE };
        let global = if lights.is_empty() { Vec3::splat(NO_LIGHT_AMBIENT) * surface.color } else { Vec3::ZERO };
        let mut base = surface.color * surface.emission + global;
        let mut passes = Vec3::ZERO;
        for (l, light) in lights.iter().enumerate() {
            let c = light.contribution(hit.point, hit.normal, hit.view, &surface);
            if options.use_shadows && light.castshadow {
                if !in_shadow(l) {
                    passes += c.clamp(Vec3::ZERO, Vec3::ONE) * texture;
                }
            } else {
                base += c;
            }
        }
        base.clamp(Vec3::ZERO, Vec3::ONE) * texture + passes
    }

    /// The material texture's colour at a hit (white when there is none).
    fn texture(&self, s: &Shared, w: usize, hit: &Hit) -> Vec3 {
        let scene = s.scene;
        let g = hit.geom;
        let Some(m) = material(s, w, g) else {
            return Vec3::ONE;
        };
        let texid = s.fields.mat_texid(w, m);
        let Some(sampler) = usize::try_from(texid).ok().and_then(|t| self.samplers.get(t)) else {
            return Vec3::ONE;
        };
        let (xpos, xmat) = s.poses.geoms(w);
        let local = xmat[g].transpose() * (hit.point - xpos[g]);
        let size = object_size(s.caster.shapes(w), g);
        let object = DVec3::new(local.x / size.x, local.y / size.y, local.z / size.z);
        let uniform = scene.mat_texuniform[m];
        match sampler.kind() {
            TextureKind::TwoD => {
                let repeat = s.fields.mat_texrepeat(w, m).map(f64::from);
                let scl = [0, 1].map(|a| if uniform && size[a] > 0.0 { repeat[a] * size[a] } else { repeat[a] });
                let (st, tt) = (0.5 * scl[0] * object.x - 0.5, -0.5 * scl[1] * object.y - 0.5);
                // Texture units per metre along the surface, for the mip level.
                let per_metre = 0.5 * (scl[0] / size.x).abs().max((scl[1] / size.y).abs());
                let grazing = hit.normal.dot(hit.view).abs().max(0.02);
                sampler.sample_2d(st, tt, hit.spread / grazing * per_metre)
            }
            _ => {
                let r = if uniform { object * size } else { object };
                sampler.sample_cube(r)
            }
        }
    }

    /// What a ray that hits nothing sees: the skybox (MuJoCo maps it rotated 90° about X),
    /// else black.
    fn background(&self, dir: DVec3) -> Vec3 {
        match self.skybox {
            Some(t) => self.samplers[t].sample_cube(DVec3::new(dir.x, dir.z, -dir.y)),
            None => Vec3::ZERO,
        }
    }
}

/// A surface a camera ray met.
struct Hit {
    geom: usize,
    point: DVec3,
    normal: DVec3,
    /// Unit direction back toward the camera.
    view: DVec3,
    /// How far apart neighbouring pixels' rays land here, metres.
    spread: f64,
}

fn check<T>(buffer: &Option<&mut [T]>, expected: usize, what: &'static str) -> Result<(), CameraError> {
    match buffer {
        Some(b) if b.len() != expected => Err(CameraError::Buffer { what, len: b.len(), expected }),
        _ => Ok(()),
    }
}

/// The geoms a camera draws: its enabled groups (static geoms included, as the renderer
/// draws them).
fn filter(options: &CameraOptions) -> RayFilter {
    RayFilter { geomgroup: Some(options.enabled_geom_groups), flg_static: true, exclude_tree: -1 }
}

/// Every band of every camera of every world, each owning its slices of the buffers.
fn jobs<'a>(
    layout: &Layout,
    nworld: usize,
    frames: Frames<'a>,
    wanted: &(dyn Fn(usize, usize) -> bool + Sync),
) -> Vec<Job<'a>> {
    let mut jobs = Vec::new();
    let mut rgb = frames.rgb;
    let mut depth = frames.depth;
    let mut seg = frames.seg;
    for world in 0..nworld {
        for (slot, (model, options)) in layout.cameras.iter().enumerate() {
            for r0 in (0..model.height).step_by(BAND_ROWS) {
                let r1 = (r0 + BAND_ROWS).min(model.height);
                let len = (r1 - r0) * model.width;
                let rgb_part = take(&mut rgb, len * 3).filter(|_| options.render_rgb);
                let depth_part = take(&mut depth, len).filter(|_| options.render_depth);
                let seg_part = take(&mut seg, len).filter(|_| options.render_seg);
                if wanted(world, slot) {
                    jobs.push(Job { world, slot, rows: (r0, r1), rgb: rgb_part, depth: depth_part, seg: seg_part });
                }
            }
        }
    }
    jobs
}

/// The first `len` values of `buffer`, leaving the rest in it.
fn take<'a, T>(buffer: &mut Option<&'a mut [T]>, len: usize) -> Option<&'a mut [T]> {
    let b = buffer.take()?;
    let (head, tail) = b.split_at_mut(len);
    *buffer = Some(tail);
    Some(head)
}

/// The rays of rows `[r0, r1)` in 8 × 4 tiles: each ray's pixel within the band, origins
/// (orthographic cameras only) and world-frame directions.
fn band_rays(
    model: &CameraModel,
    cam_pos: DVec3,
    cam_mat: &DMat3,
    (r0, r1): (usize, usize),
) -> (Vec<usize>, Option<Vec<DVec3>>, Vec<DVec3>) {
    let n = (r1 - r0) * model.width;
    let ortho = matches!(model.projection, Projection::Orthographic { .. });
    let (mut pixel, mut dirs) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut origins = ortho.then(|| Vec::with_capacity(n));
    for tr in (r0..r1).step_by(TILE.1) {
        for tc in (0..model.width).step_by(TILE.0) {
            for row in tr..(tr + TILE.1).min(r1) {
                for col in tc..(tc + TILE.0).min(model.width) {
                    let (o, d) = model.pixel_ray(col, row);
                    pixel.push((row - r0) * model.width + col);
                    if let Some(origins) = &mut origins {
                        origins.push(cam_pos + *cam_mat * o);
                    }
                    dirs.push(*cam_mat * d);
                }
            }
        }
    }
    (pixel, origins, dirs)
}

/// World `w`'s lights as the classic renderer takes them: the headlight first, then the
/// scene's lights, at most eight.
fn scene_lights(s: &Shared, w: usize, cam_pos: DVec3, forward: DVec3) -> Vec<Light> {
    let h = s.headlight;
    let head = h.active.then(|| Light::headlight(cam_pos, forward, h.ambient, h.diffuse, h.specular));
    head.into_iter().chain(s.lights[w].iter().copied()).take(MAX_LIGHTS).collect()
}

/// Geom `g`'s material in world `w`, if it has one the model defines.
fn material(s: &Shared, w: usize, g: usize) -> Option<usize> {
    usize::try_from(s.fields.geom_matid(w, g)).ok().filter(|&m| m < s.scene.mat_rgba.len())
}

/// The colour and material of geom `g` in world `w`, as `mjv_updateScene` resolves them.
fn surface(s: &Shared, w: usize, g: usize) -> Surface {
    let rgba = s.fields.geom_rgba(w, g);
    match material(s, w, g) {
        Some(m) => {
            let color = if rgba == DEFAULT_RGBA { s.fields.mat_rgba(w, m) } else { rgba };
            let [emission, specular, shininess, _] = s.scene.mat_shading[m];
            Surface { color: Vec3::new(color[0], color[1], color[2]), specular, shininess: shininess * 128.0, emission }
        }
        // MuJoCo's default material: specular 0.5, shininess 0.5, no emission.
        None => Surface { color: Vec3::new(rgba[0], rgba[1], rgba[2]), specular: 0.5, shininess: 64.0, emission: 0.0 },
    }
}

/// The scale from a geom's local frame to the object coordinates of the unit shape MuJoCo
/// draws for it (texture coordinates are taken there).
fn object_size(shapes: &Shapes, g: usize) -> DVec3 {
    let size = shapes.geom_size[g];
    let positive = |v: f64| if v > 0.0 { v } else { 1.0 };
    match shapes.geom_type[g] {
        GeomType::Plane => DVec3::new(positive(size.x), positive(size.y), 1.0),
        GeomType::Sphere => DVec3::splat(positive(size.x)),
        GeomType::Capsule | GeomType::Cylinder => DVec3::new(positive(size.x), positive(size.x), positive(size.y)),
        GeomType::Box | GeomType::Ellipsoid => DVec3::new(positive(size.x), positive(size.y), positive(size.z)),
        _ => DVec3::ONE,
    }
}

#[cfg(test)]
mod tests {
    use glint_core::{CoreError, GeomType};

    use super::*;

    /// Every world reads the scene's own fields (none differ here).
    struct SceneFields;

    impl WorldFields for SceneFields {
        fn geom_rgba(&self, _: usize, _: usize) -> [f32; 4] {
            [1.0; 4]
        }
        fn geom_matid(&self, _: usize, _: usize) -> i32 {
            -1
        }
        fn mat_rgba(&self, _: usize, _: usize) -> [f32; 4] {
            [1.0; 4]
        }
        fn mat_texid(&self, _: usize, _: usize) -> i32 {
            -1
        }
        fn mat_texrepeat(&self, _: usize, _: usize) -> [f32; 2] {
            [1.0; 2]
        }
        fn cam_fovy(&self, _: usize, _: usize) -> f64 {
            45.0
        }
    }

    /// A ball of radius 1 at (0, 0, 5) under a spot light at (0, 0, 10) shining down:
    /// which of `points` (on surfaces facing up) are in its shadow.
    fn shadows_of(points: &[DVec3]) -> Result<Vec<Vec<bool>>, CameraError> {
        let scene = Scene {
            geom_type: vec![GeomType::Sphere],
            geom_size: vec![DVec3::new(1.0, 0.0, 0.0)],
            geom_group: vec![0],
            geom_bodyid: vec![0],
            geom_contype: vec![1],
            geom_conaffinity: vec![1],
            geom_dataid: vec![-1],
            geom_matid: vec![-1],
            geom_rgba: vec![[1.0; 4]],
            geom_name: vec!["ball".into()],
            body_parentid: vec![0],
            body_rootid: vec![0],
            body_weldid: vec![0],
            body_name: vec!["world".into()],
            ..Scene::default()
        };
        scene.validate().unwrap();
        let mut poses = Poses::new(&scene, 1);
        poses.geom_xpos[0] = DVec3::new(0.0, 0.0, 5.0);
        let caster = RayCaster::new(&scene, &poses);
        let prepared = vec![caster.prepare(&scene, &poses, &RayFilter::default()).unwrap()];
        let layout = Layout { cameras: Vec::new(), offsets: Vec::new(), pixels_per_world: 0 };
        let headlight = Headlight { active: false, ambient: Vec3::ZERO, diffuse: Vec3::ZERO, specular: Vec3::ZERO };
        let lights = [Vec::new()];
        let s = Shared {
            scene: &scene,
            poses: &poses,
            caster: &caster,
            layout: &layout,
            prepared,
            lights: &lights,
            headlight,
            fields: &SceneFields,
        };
        let spot = Light {
            light_type: 0,
            pos: DVec3::new(0.0, 0.0, 10.0),
            dir: DVec3::NEG_Z,
            ambient: Vec3::ZERO,
            diffuse: Vec3::ONE,
            specular: Vec3::ZERO,
            attenuation: [1.0, 0.0, 0.0],
            cutoff: 180.0,
            exponent: 0.0,
            castshadow: true,
        };
        let options = CameraOptions { use_shadows: true, ..CameraOptions::new(0) };
        let n = points.len();
        Renderer::new(&[]).shadows(&s, 0, 0, &[spot], &options, points, &vec![0; n], &vec![DVec3::Z; n])
    }

    #[test]
    fn a_shadow_ray_the_core_refuses_is_an_error_not_a_band_without_shadows() {
        // Beneath the ball, in its shadow; beside it, lit.
        let shadowed = shadows_of(&[DVec3::ZERO, DVec3::new(3.0, 0.0, 0.0)]).unwrap();
        assert_eq!(shadowed, vec![vec![true, false]]);
        // A surface point that is not finite: the pass once dropped the cast's error and drew
        // the whole band unshadowed, the point beneath the ball included.
        let err = shadows_of(&[DVec3::ZERO, DVec3::splat(f64::NAN)]).unwrap_err();
        assert!(matches!(err, CameraError::Rays(CoreError::BadOrigin { index: 1, .. })), "{err}");
    }
}
