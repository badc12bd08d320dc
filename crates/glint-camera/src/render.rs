//! The batch renderer: every active camera of every world, cast through the same BVHs the
//! lidar uses, into the caller's buffers.

use glam::{DMat3, DVec3, Vec3};
use glint_core::{
    Cast, CastOne, GeomType, HitsMut, NGROUP, Origins, Poses, PreparedRays, RayCaster, RayFilter, RayHit, Scene,
    Shapes, SkinSurface, Texture, TextureKind, barycentric, intersect_primitive,
};
use glint_materials::{Continuation, MaterialTable, NirMaterial};
use rayon::prelude::*;
use std::sync::OnceLock;

use crate::CameraError;
use crate::camera::{CameraModel, CameraOptions, Layout, Projection};
use crate::shade::{Lamp, Light, MAX_LIGHTS, NO_LIGHT_AMBIENT, Surface};
use crate::skins;
use crate::texture::Sampler;

mod measure;

/// Rows of one camera image cast together (one parallel job).
const BAND_ROWS: usize = 8;
/// Pixels per packet tile: 8 columns × 4 rows (the core's 32-ray packets).
const TILE: (usize, usize) = (8, 4);
/// How far a shadow ray starts off its surface, metres (against self-shadowing).
const SHADOW_OFFSET: f64 = 1e-4;
/// MuJoCo's default geom colour: a geom with a material and this colour takes the material's.
const DEFAULT_RGBA: [f32; 4] = [0.5, 0.5, 0.5, 1.0];
/// Below this alpha MuJoCo's renderer draws a geom or site as transparent (`rgba[3] < 0.995`
/// in `mjr_render`): blended after the opaque ones, writing no depth.
const OPAQUE_ALPHA: f32 = 0.995;
/// Surfaces within this share of their distance of each other are coincident: MuJoCo's depth
/// test (`GL_GEQUAL` on reversed depth) lets the one drawn later win there.
const COINCIDENT: f64 = 1e-6;
/// How many surfaces (alpha 0, transparent, coincident) a pixel's ray passes at most before
/// it takes the one it is at as opaque.
const MAX_LAYERS: usize = 16;

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
    /// Per world, the key of this frame's depth-sensor noise (its episode seed and frame
    /// mixed): the same key gives the same measured depth. Read only for cameras with a
    /// depth-sensor model; may be empty otherwise.
    pub depth_noise: &'a [u64],
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

/// Every world reads the scene's own fields: a scene rendered as MuJoCo compiled it.
pub struct SceneFields<'a>(pub &'a Scene);

impl WorldFields for SceneFields<'_> {
    fn geom_rgba(&self, _w: usize, g: usize) -> [f32; 4] {
        self.0.geom_rgba[g]
    }
    fn geom_matid(&self, _w: usize, g: usize) -> i32 {
        self.0.geom_matid[g]
    }
    fn mat_rgba(&self, _w: usize, m: usize) -> [f32; 4] {
        self.0.mat_rgba[m]
    }
    fn mat_texid(&self, _w: usize, m: usize) -> i32 {
        self.0.mat_texid[m]
    }
    fn mat_texrepeat(&self, _w: usize, m: usize) -> [f32; 2] {
        self.0.mat_texrepeat[m]
    }
    fn cam_fovy(&self, _w: usize, c: usize) -> f64 {
        self.0.cam_fovy[c]
    }
}

/// The caller's output buffers, each `nworld × pixels_per_world` long (× 3 bytes for RGB),
/// laid out as [`Layout`] says; an output not asked for may be `None`.
pub struct Frames<'a> {
    /// 8-bit RGB.
    pub rgb: Option<&'a mut [u8]>,
    /// Depth along the optical axis, metres; 0 where nothing is hit.
    pub depth: Option<&'a mut [f32]>,
    /// Geom id, −1 for background, `ngeom + k` for skin `k`.
    pub seg: Option<&'a mut [i32]>,
}

/// Textures and everything else a render reads that does not change between frames.
pub struct Renderer {
    samplers: Vec<Sampler>,
    skybox: Option<usize>,
    /// Per geom, its NIR material (authored, else from its visible colour): what the
    /// depth-sensor models read, and what depth sees through (glass, water). Empty until
    /// [`Renderer::set_materials`]: every geom opaque to depth.
    nir: Vec<NirMaterial>,
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

/// OpenGL's 4× multisample positions within a pixel (x right, y down from its top left
/// corner; MuJoCo reads its image bottom-up, so the pattern is turned upside down).
const SAMPLES_4X: [(f64, f64); 4] = [(0.375, 0.875), (0.875, 0.625), (0.125, 0.375), (0.625, 0.125)];

/// One camera slot in one world, as a band draws it.
struct View<'a> {
    slot: usize,
    w: usize,
    /// The camera with this world's field of view.
    model: &'a CameraModel,
    options: &'a CameraOptions,
    /// The camera's position and orientation.
    pos: DVec3,
    mat: DMat3,
}

/// Rays of one view and what each shows.
struct Traced {
    /// Each ray's own origin (orthographic cameras), else none: the camera's position.
    origins: Option<Vec<DVec3>>,
    dirs: Vec<DVec3>,
    /// Distance to, geom and normal of the opaque surface shown (geom −1: none).
    dist: Vec<f64>,
    geomid: Vec<i32>,
    normal: Vec<DVec3>,
    /// The segmentation (the first surface drawn).
    seg_of: Vec<i32>,
    /// The skin and face shown, where a skin is nearer than the geoms.
    skin_of: Vec<Option<(usize, usize)>>,
    /// The site or tendon shown, where one is nearer than the geoms.
    decor_of: Vec<Option<Object>>,
    /// The transparent surfaces in front.
    layers: Vec<Layer>,
    /// Per ray, how far colour sees: the sky cylinder where a skybox is drawn (it hides what
    /// lies beyond), else the scene's far clipping distance.
    far: Vec<f64>,
}

impl Traced {
    fn len(&self) -> usize {
        self.dirs.len()
    }

    fn origin(&self, camera: DVec3, r: usize) -> DVec3 {
        self.origins.as_ref().map_or(camera, |o| o[r])
    }

    /// Whether ray `r` shows an object (else the background).
    fn drawn(&self, r: usize) -> bool {
        self.geomid[r] >= 0 || self.decor_of[r].is_some() || self.skin_of[r].is_some()
    }

    /// Whether ray `r`'s colour shows an object: drawn, and within the far clipping distance.
    fn shown(&self, r: usize) -> bool {
        self.drawn(r) && self.dist[r] <= self.far[r]
    }

    /// The object ray `r` shows (meaningful where [`Traced::drawn`]).
    fn object(&self, r: usize) -> Object {
        match (self.decor_of[r], self.skin_of[r]) {
            (Some(decor), _) => decor,
            (_, Some((k, face))) => Object::Skin(k, face),
            _ => Object::Geom(self.geomid[r].max(0) as usize),
        }
    }

    /// Rays `which` of these (distinct and increasing) with their transparent layers, as a
    /// trace of those rays alone would give them.
    fn select(&self, which: &[usize]) -> Traced {
        fn pick<T: Copy>(v: &[T], which: &[usize]) -> Vec<T> {
            which.iter().map(|&r| v[r]).collect()
        }
        let mut renumber = vec![None; self.len()];
        for (k, &r) in which.iter().enumerate() {
            renumber[r] = Some(k);
        }
        let layers = self.layers.iter().filter_map(|l| renumber[l.ray].map(|ray| Layer { ray, ..*l })).collect();
        Traced {
            origins: self.origins.as_deref().map(|o| pick(o, which)),
            dirs: pick(&self.dirs, which),
            dist: pick(&self.dist, which),
            geomid: pick(&self.geomid, which),
            normal: pick(&self.normal, which),
            seg_of: pick(&self.seg_of, which),
            skin_of: pick(&self.skin_of, which),
            decor_of: pick(&self.decor_of, which),
            layers,
            far: pick(&self.far, which),
        }
    }

    /// What multisampling compares between neighbouring pixels: the object shown (a skin as
    /// a whole, not its face), none for the background.
    fn key(&self, r: usize) -> Option<Object> {
        self.shown(r).then(|| match self.object(r) {
            Object::Skin(k, _) => Object::Skin(k, 0),
            other => other,
        })
    }
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
    /// Per world (empty for worlds not drawn), per geom: the geoms drawn after it on the same
    /// body that overlap it, so that their surfaces may coincide with its own.
    ties: Vec<Vec<Vec<Tie>>>,
    /// Per world (empty for worlds not drawn), per geom: [`Renderer::plain`], worked out
    /// once a render rather than through the world fields for every ray.
    plain: Vec<Vec<bool>>,
    /// Per world (empty for worlds not drawn), per camera slot: the geom the scene is
    /// mirrored in, if the slot draws one.
    mirrors: Vec<Vec<Option<usize>>>,
    /// Per world (empty for worlds not drawn), its skins posed for the frame.
    skins: Vec<Vec<SkinSurface>>,
    /// Per world, the key of the frame's depth-sensor noise.
    depth_noise: &'a [u64],
    /// Per world and camera slot, a dToF camera's zone depths, each computed by the first
    /// band that needs it (empty for other cameras).
    zone_depths: Vec<Vec<Vec<OnceLock<f32>>>>,
}

/// What a pixel's ray shows once surfaces MuJoCo's renderer does not draw opaque are resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Object {
    Geom(usize),
    Site(usize),
    /// A skin, and the face met.
    Skin(usize, usize),
    /// A piece of a spatial tendon (its index in the world's `tendon_segments`).
    Tendon(usize),
}

/// What the cameras draw in RGB alone, after the geoms: a site, or a piece of a spatial
/// tendon (its index in the world's `tendon_segments`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Decor {
    Site(usize),
    Tendon(usize),
}

impl From<Decor> for Object {
    fn from(decor: Decor) -> Object {
        match decor {
            Decor::Site(k) => Object::Site(k),
            Decor::Tendon(i) => Object::Tendon(i),
        }
    }
}

/// A transparent surface in front of a pixel's opaque one.
struct Layer {
    ray: usize,
    object: Object,
    dist: f64,
    normal: DVec3,
}

impl Renderer {
    /// A renderer for a scene with `textures` (the model's, in texture-id order).
    pub fn new(textures: &[Texture]) -> Renderer {
        let samplers: Vec<Sampler> = textures.iter().map(Sampler::new).collect();
        let skybox = samplers.iter().position(|s| s.kind() == TextureKind::Skybox);
        Renderer { samplers, skybox, nir: Vec::new() }
    }

    /// Takes each geom's near-infrared material from the scene's NIR authoring (its
    /// visible colour's where none is authored). Depth then sees through the geoms whose
    /// material is authored as glass (`continuation = "slab"`) or water (`"medium"`), which
    /// pass a depth camera's light as they pass the lidar's (straight on, unrefracted);
    /// colour and segmentation still show the surface itself.
    pub fn set_materials(&mut self, scene: &glint_core::Scene, table: &MaterialTable) {
        self.nir = (0..scene.ngeom()).map(|g| geom_nir(scene, table, g)).collect();
    }

    /// Whether geom `g` is see-through for depth.
    fn passes(&self, g: i32) -> bool {
        usize::try_from(g)
            .ok()
            .and_then(|g| self.nir.get(g))
            .is_some_and(|m| matches!(m.continuation, Continuation::Slab | Continuation::Medium))
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
        let Inputs { scene, poses, caster, lights, headlight, fields, depth_noise } = input;
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
        // Per world, whether any of its cameras is drawn (the others need nothing prepared).
        let drawn: Vec<bool> = (0..nworld).map(|w| (0..layout.cameras.len()).any(|slot| wanted(w, slot))).collect();
        let ties: Vec<Vec<Vec<Tie>>> = (0..nworld)
            .map(|w| if drawn[w] { coincident_candidates(scene, caster.shapes(w), poses, w) } else { Vec::new() })
            .collect();
        let plain = (0..nworld)
            .map(|w| {
                let plain = |g| plain_geom(scene, fields, &ties[w], w, g);
                if drawn[w] { (0..scene.ngeom()).map(plain).collect() } else { Vec::new() }
            })
            .collect();
        let mirrors = (0..nworld)
            .map(|w| {
                let first = |options: &CameraOptions| mirror(scene, fields, caster.shapes(w), w, options);
                if drawn[w] { layout.cameras.iter().map(|(_, o)| first(o)).collect() } else { Vec::new() }
            })
            .collect();
        let skins =
            (0..nworld)
                .into_par_iter()
                .map(|w| {
                    if drawn[w] && !scene.skin.is_empty() {
                        SkinSurface::pose_world(scene, poses, w)
                    } else {
                        Vec::new()
                    }
                })
                .collect();
        let zone_depths = (0..nworld)
            .map(|_| layout.cameras.iter().map(|(_, o)| measure::zone_cells(&o.depth_sensor)).collect())
            .collect();
        let shared = Shared {
            scene,
            poses,
            caster,
            layout,
            prepared,
            lights,
            headlight,
            fields,
            ties,
            plain,
            mirrors,
            skins,
            depth_noise,
            zone_depths,
        };
        let jobs = jobs(layout, nworld, frames, wanted);
        jobs.into_par_iter().try_for_each(|job| self.band(&shared, job))
    }

    /// Casts and shades one band of rows. A cast the ray core refuses is the render's error
    /// (the rays come from finite poses, so one would be a bug to see, not a frame to draw).
    fn band(&self, s: &Shared, job: Job) -> Result<(), CameraError> {
        let (model, options) = &s.layout.cameras[job.slot];
        let w = job.world;
        // A world's own field of view, unless the options fix one (a depth preset's).
        let model = match options.fovy {
            Some(_) => model.clone(),
            None => model.with_fovy(s.fields.cam_fovy(w, model.camera)),
        };
        let cam = w * s.scene.ncam() + model.camera;
        let view =
            View { slot: job.slot, w, model: &model, options, pos: s.poses.cam_xpos[cam], mat: s.poses.cam_xmat[cam] };
        if job.rgb.is_none() && job.seg.is_none() && options.depth_sensor.casts_its_own_rays() {
            // Time of flight's depth comes from its own rays: no centre rays to trace.
            if let Some(depth) = job.depth {
                let pixel = band_pixels(model.width, job.rows);
                let measured = self.time_of_flight_band(s, &view, (&pixel, job.rows.0))?;
                pixel.iter().zip(measured).for_each(|(&p, z)| depth[p] = z);
            }
            return Ok(());
        }
        let (pixel, origins, dirs) = band_rays(&model, view.pos, &view.mat, job.rows);
        let mut traced = self.trace(s, &view, origins, dirs, (-1, true), job.rgb.is_some())?;
        let prepared = &s.prepared[job.slot];
        let t = &traced;
        let mut depth = job.depth;
        let mut seg = job.seg;
        for r in 0..t.len() {
            let hit = t.geomid[r] >= 0 || t.skin_of[r].is_some();
            if let Some(d) = depth.as_deref_mut() {
                d[pixel[r]] = if !hit {
                    0.0
                } else if t.skin_of[r].is_none() && self.passes(t.geomid[r]) {
                    self.depth_through(prepared, w, t.origin(view.pos, r), t.dirs[r], t.dist[r], t.geomid[r]) as f32
                } else {
                    t.dist[r] as f32
                };
            }
            if let Some(g) = seg.as_deref_mut() {
                g[pixel[r]] = t.seg_of[r];
            }
        }
        if let Some(d) = depth
            && options.depth_sensor.is_active()
        {
            self.measure_band(s, &view, (&pixel, job.rows.0), t, d)?;
        }
        let Some(rgb) = job.rgb else { return Ok(()) };
        // Sites and tendons (RGB only): drawn after the geoms, so one wins where it meets a
        // geom's surface. One row of margin on each side: the multisampled edges look past
        // the band.
        let (r0, r1) = (job.rows.0.saturating_sub(1), (job.rows.1 + 1).min(model.height));
        let decor = band_decor(s, w, options, &model, view.pos, &view.mat, (r0, r1));
        self.add_decor(s, &view, &decor, &mut traced);
        let mut color = self.color(s, &view, &mut traced)?;
        if s.scene.offsamples > 0 {
            self.multisample(s, &view, &decor, (&pixel, &traced, &mut color), job.rows)?;
        }
        for (r, c) in color.iter().enumerate() {
            let at = pixel[r] * 3;
            rgb[at..at + 3].copy_from_slice(&c.to_array().map(|c| (c.clamp(0.0, 1.0) * 255.0 + 0.5) as u8));
        }
        Ok(())
    }

    /// What rays `(origins or the camera's position, dirs)` of `view` show, as MuJoCo's
    /// renderer draws it: geoms of alpha 0 are not drawn, a transparent one is blended over
    /// what is behind it (and is in the segmentation but not the depth), of coincident
    /// surfaces the one drawn later wins, and a skin nearer than the geoms shows (segmented
    /// as `ngeom + skin` unless a transparent geom is in front). Sites are added apart
    /// ([`Renderer::add_sites`]): depth and segmentation do not see them. The rays pass
    /// through geom `skip_geom` (−1: none); unless `trusted`, a ray that is not finite is an
    /// error. Without `colour` (depth and segmentation alone) the far clipping distances
    /// are not worked out.
    fn trace(
        &self,
        s: &Shared,
        view: &View,
        origins: Option<Vec<DVec3>>,
        dirs: Vec<DVec3>,
        (skip_geom, trusted): (i32, bool),
        colour: bool,
    ) -> Result<Traced, CameraError> {
        let (w, n) = (view.w, dirs.len());
        let (mut dist, mut geomid, mut normal) = (vec![0.0; n], vec![0; n], vec![DVec3::ZERO; n]);
        let cast = Cast {
            world: w,
            origins: match &origins {
                Some(o) => Origins::Each(o),
                None => Origins::Shared(view.pos),
            },
            dirs: &dirs,
            exclude_body: -1,
            skip_geom,
            trusted,
        };
        let prepared = &s.prepared[view.slot];
        prepared.cast(cast, HitsMut { dist: &mut dist, geomid: &mut geomid, normal: &mut normal })?;
        let origin = |r: usize| origins.as_ref().map_or(view.pos, |o| o[r]);
        let mut seg_of = geomid.clone();
        let mut layers = Vec::new();
        for r in 0..n {
            if geomid[r] >= 0 && !self.plain(s, w, geomid[r] as usize) {
                let (seg, opaque) =
                    self.resolve(s, prepared, w, (origin(r), dirs[r]), r, &mut layers, (dist[r], geomid[r], normal[r]));
                seg_of[r] = seg;
                (dist[r], geomid[r], normal[r]) = opaque;
            }
        }
        let mut skin_of: Vec<Option<(usize, usize)>> = vec![None; n];
        if !s.skins[w].is_empty() {
            let groups = &view.options.enabled_geom_groups;
            for r in 0..n {
                let reach = if geomid[r] >= 0 { dist[r] } else { f64::INFINITY };
                if let Some(h) = skins::nearest(&s.skins[w], groups, origin(r), dirs[r], reach) {
                    if !layers.iter().any(|l| l.ray == r && l.dist < h.t) {
                        seg_of[r] = (s.scene.ngeom() + h.skin) as i32;
                    }
                    skin_of[r] = Some((h.skin, h.face));
                    (dist[r], normal[r]) = (h.t, h.normal);
                }
            }
        }
        let decor_of = vec![None; n];
        // The far clipping distance matters to colour alone (depth is the exact distance).
        let far = if colour {
            (0..n).map(|r| self.far(s, view, origin(r), dirs[r])).collect()
        } else {
            vec![f64::INFINITY; n]
        };
        Ok(Traced { origins, dirs, dist, geomid, normal, seg_of, skin_of, decor_of, layers, far })
    }

    /// Adds `decor` (sites and tendons, drawn after the geoms: one wins where it meets a
    /// surface) to what `t`'s rays show.
    fn add_decor(&self, s: &Shared, view: &View, decor: &[Decor], t: &mut Traced) {
        let shapes: Vec<_> = decor.iter().map(|&d| (Object::from(d), decor_shape(s, view.w, d))).collect();
        for r in 0..t.len() {
            let (o, d) = (t.origin(view.pos, r), t.dirs[r]);
            for &(object, (kind, size, pos, rot)) in &shapes {
                let Some((dist, nrm)) = intersect_primitive(kind, size, pos, &rot, o, d) else {
                    continue;
                };
                let front = if t.drawn(r) { t.dist[r] } else { f64::INFINITY };
                if dist > front * (1.0 + COINCIDENT) {
                    continue;
                }
                if object_alpha(s, view.w, object) >= OPAQUE_ALPHA {
                    t.decor_of[r] = Some(object);
                    (t.dist[r], t.normal[r]) = (dist, nrm);
                } else {
                    t.layers.push(Layer { ray: r, object, dist, normal: nrm });
                }
            }
        }
    }

    /// The colour of each of `t`'s rays: shadows, shading, the reflection in the scene's
    /// mirror, then the transparent layers blended over; the background beyond the far
    /// clipping distance.
    fn color(&self, s: &Shared, view: &View, t: &mut Traced) -> Result<Vec<Vec3>, CameraError> {
        let (w, n) = (view.w, t.len());
        // OpenGL clips what lies beyond the far plane: the background shows there.
        let drawn: Vec<bool> = (0..n).map(|r| t.shown(r)).collect();
        let haze = Haze::of(s, self.skybox.is_some(), view);
        let hazed: Vec<Option<(f64, f32)>> =
            (0..n).map(|r| haze.as_ref().and_then(|h| h.hit(t.origin(view.pos, r), t.dirs[r]))).collect();
        // The haze writes depth: nothing transparent behind it is drawn.
        let (far, layers) = (&t.far, &mut t.layers);
        layers.retain(|l| l.dist <= far[l.ray] && hazed[l.ray].is_none_or(|(at, _)| l.dist <= at));
        let points: Vec<DVec3> = (0..n).map(|r| t.origin(view.pos, r) + t.dirs[r] * t.dist[r]).collect();
        let forward = view.mat * DVec3::NEG_Z;
        let lights = scene_lights(s, w, view.pos, forward);
        let lit: Vec<Lit> = (0..n).map(|r| if drawn[r] { Lit::of(s, w, t.object(r)) } else { Lit::No }).collect();
        let shadowed = self.shadows(s, view.slot, w, &lights, view.options, &points, &lit, &t.normal)?;
        let (footprint, ortho) = view.model.pixel_footprint();
        let dirs = &t.dirs;
        let spread = |r: usize, dist: f64| if ortho { footprint } else { footprint * (dirs[r] * dist).length() };
        let mut color: Vec<Vec3> = (0..n)
            .map(|r| {
                if !drawn[r] {
                    return self.background(dirs[r], if ortho { 0.0 } else { footprint });
                }
                let eye = t.origin(view.pos, r);
                let hit = Hit {
                    object: t.object(r),
                    point: points[r],
                    normal: t.normal[r],
                    view: (eye - points[r]).normalize_or_zero(),
                    spread: spread(r, t.dist[r]),
                    dir: dirs[r],
                    tint: 1.0,
                    eye,
                };
                let in_shadow = |l: usize| shadowed[l].get(r).copied().unwrap_or(false);
                self.shade(s, w, &hit, &lights, view.options, Some(&in_shadow))
            })
            .collect();
        if let Some(g) = s.mirrors[w][view.slot] {
            let on_mirror: Vec<usize> = (0..n).filter(|&r| t.object(r) == Object::Geom(g) && drawn[r]).collect();
            let seen = Seen { points: &points, dirs, normal: &t.normal, dist: &t.dist };
            let reflected = self.reflection(s, view, g, &on_mirror, seen, &spread)?;
            for (&r, c) in on_mirror.iter().zip(reflected) {
                color[r] += c;
            }
        }
        if let Some(haze) = &haze {
            for (r, c) in color.iter_mut().enumerate() {
                let behind = if drawn[r] { t.dist[r] } else { t.far[r] };
                if let Some((_, alpha)) = hazed[r].filter(|&(at, _)| at < behind) {
                    *c = c.clamp(Vec3::ZERO, Vec3::ONE) * (1.0 - alpha) + haze.rgb * alpha;
                }
            }
        }
        if !t.layers.is_empty() {
            let (origins, dist) = (&t.origins, &t.dist);
            let origin = |r: usize| origins.as_ref().map_or(view.pos, |o| o[r]);
            self.blend(s, w, &lights, view.options, (&mut color, &mut t.layers), view.pos, 1.0, |r| {
                (origin(r), dirs[r], if drawn[r] { dist[r] } else { f64::INFINITY }, spread(r, 1.0))
            });
        }
        Ok(color)
    }

    /// MuJoCo's offscreen buffer is multisampled (`visual/quality/offsamples`, 4 by default):
    /// a pixel where two objects meet averages four samples. Each pixel of the band whose
    /// object differs from a neighbour's (the rows beside the band traced for that) is traced
    /// again at the four sample positions of OpenGL's 4× pattern, each object met there
    /// shaded once, and the samples' colours averaged.
    fn multisample(
        &self,
        s: &Shared,
        view: &View,
        decor: &[Decor],
        (pixel, traced, color): (&[usize], &Traced, &mut [Vec3]),
        (r0, r1): (usize, usize),
    ) -> Result<(), CameraError> {
        let (width, height) = (view.model.width, view.model.height);
        // Object keys of rows r0 − 1 ..= r1, within the image.
        let (k0, k1) = (r0.saturating_sub(1), (r1 + 1).min(height));
        let mut keys = vec![None; (k1 - k0) * width];
        let at = |row: usize, col: usize| (row - k0) * width + col;
        for (r, &p) in pixel.iter().enumerate() {
            keys[at(r0 + p / width, p % width)] = Some(traced.key(r));
        }
        let beside: Vec<(usize, usize)> = [k0, k1.wrapping_sub(1)]
            .into_iter()
            .filter(|&row| row < r0 || row >= r1)
            .flat_map(|row| (0..width).map(move |col| (row, col)))
            .collect();
        if !beside.is_empty() {
            let mut rim =
                self.trace_at(s, view, beside.iter().map(|&(row, col)| (col as f64 + 0.5, row as f64 + 0.5)))?;
            self.add_decor(s, view, decor, &mut rim);
            for (i, &(row, col)) in beside.iter().enumerate() {
                keys[at(row, col)] = Some(rim.key(i));
            }
        }
        let differs = |row: usize, col: usize| {
            let own = keys[at(row, col)];
            let neighbours = [
                (col > 0).then(|| at(row, col - 1)),
                (col + 1 < width).then(|| at(row, col + 1)),
                (row > k0).then(|| at(row - 1, col)),
                (row + 1 < k1).then(|| at(row + 1, col)),
            ];
            neighbours.into_iter().flatten().any(|i| keys[i] != own)
        };
        let edges: Vec<usize> =
            (0..traced.len()).filter(|&r| differs(r0 + pixel[r] / width, pixel[r] % width)).collect();
        if edges.is_empty() {
            return Ok(());
        }
        let points: Vec<(f64, f64)> = edges
            .iter()
            .flat_map(|&r| {
                let (row, col) = ((r0 + pixel[r] / width) as f64, (pixel[r] % width) as f64);
                SAMPLES_4X.iter().map(move |&(x, y)| (col + x, row + y))
            })
            .collect();
        let mut t = self.trace_at(s, view, points.iter().copied())?;
        self.add_decor(s, view, decor, &mut t);
        // As OpenGL shades a pixel once per object that covers samples of it: a sample of the
        // pixel's own object takes its colour, and each other object is shaded at its first
        // sample, which its others share.
        let mut source: Vec<Option<usize>> = vec![None; points.len()];
        let mut shaded_at: Vec<usize> = Vec::new();
        for (e, &r) in edges.iter().enumerate() {
            let own = traced.key(r);
            for j in 0..4 {
                let i = 4 * e + j;
                if t.key(i) == own {
                    continue;
                }
                source[i] = match (0..j).find(|&p| t.key(4 * e + p) == t.key(i)) {
                    Some(p) => source[4 * e + p],
                    None => {
                        shaded_at.push(i);
                        Some(shaded_at.len() - 1)
                    }
                };
            }
        }
        let shaded = self.color(s, view, &mut t.select(&shaded_at))?;
        for (e, &r) in edges.iter().enumerate() {
            let own = color[r].clamp(Vec3::ZERO, Vec3::ONE);
            let sum: Vec3 =
                (0..4).map(|j| source[4 * e + j].map_or(own, |k| shaded[k].clamp(Vec3::ZERO, Vec3::ONE))).sum();
            color[r] = sum / 4.0;
        }
        Ok(())
    }

    /// [`Renderer::trace`] of the rays through image points `(u, v)` (pixels, from the top
    /// left corner).
    fn trace_at(
        &self,
        s: &Shared,
        view: &View,
        points: impl Iterator<Item = (f64, f64)>,
    ) -> Result<Traced, CameraError> {
        let ortho = matches!(view.model.projection, Projection::Orthographic { .. });
        let (origins, dirs) = view_rays(view, points);
        self.trace(s, view, ortho.then_some(origins), dirs, (-1, true), true)
    }

    /// Whether geom `g` in world `w` is drawn opaque and alone where rays meet it (the rays
    /// need no more than the core's first hit there).
    #[inline]
    fn plain(&self, s: &Shared, w: usize, g: usize) -> bool {
        match s.plain[w].get(g) {
            Some(&plain) => plain,
            None => plain_geom(s.scene, s.fields, &s.ties[w], w, g),
        }
    }

    /// Follows ray `r` from its first hit `(dist, geom, normal)` through the surfaces MuJoCo's
    /// renderer draws other than opaquely: geoms of alpha 0 are passed, transparent ones are
    /// pushed to `layers` and passed, and where a geom drawn later coincides with the surface
    /// it is taken instead. Returns the segmentation (the first surface drawn) and the opaque
    /// hit (geom −1 when the ray leaves the scene first).
    #[allow(clippy::too_many_arguments)]
    fn resolve(
        &self,
        s: &Shared,
        prepared: &PreparedRays,
        w: usize,
        (origin, dir): (DVec3, DVec3),
        r: usize,
        layers: &mut Vec<Layer>,
        first: (f64, i32, DVec3),
    ) -> (i32, (f64, i32, DVec3)) {
        let (mut t, mut g, mut n) = first;
        let mut seg = -1;
        let mut passed: Vec<i32> = Vec::new();
        let ray_from = |from: f64, skip: i32| CastOne {
            world: w,
            origin: origin + dir * from,
            dir,
            exclude_body: -1,
            skip_geom: skip,
        };
        let cast = |from: f64, skip: i32| prepared.cast_one(ray_from(from, skip));
        // The surface of a geom drawn later that coincides with geom `g`'s at `t` (within
        // 2·COINCIDENT·t of `t`'s near side): only the geoms that overlap it can have one,
        // the nearest first, the first drawn among equals.
        let coincident = |ties: &[Vec<Tie>], (t, n): (f64, DVec3), g: usize| {
            let (ray, window) = (ray_from(t - COINCIDENT * t, -1), 2.0 * COINCIDENT * t);
            ties.get(g)?
                .iter()
                .filter_map(|tie| {
                    let p = tie.geom as usize;
                    // A twin's surface is this one: met where this one is, without a cast.
                    if tie.twin {
                        let twin = RayHit { dist: COINCIDENT * t, geomid: p as i32, normal: n };
                        return prepared.admits(p).then_some(twin);
                    }
                    prepared.cast_geom(ray, p, 2.0 * window)
                })
                .filter(|h| h.dist <= window)
                .min_by(|a, b| a.dist.total_cmp(&b.dist).then(a.geomid.cmp(&b.geomid)))
        };
        for _ in 0..MAX_LAYERS {
            if g < 0 {
                return (seg, (0.0, -1, DVec3::ZERO));
            }
            let gu = g as usize;
            if passed.contains(&g) {
                // The far side of a geom already passed: culled, as MuJoCo culls back faces.
            } else if let Some(h) = coincident(&s.ties[w], (t, n), gu) {
                (t, g, n) = (t - COINCIDENT * t + h.dist, h.geomid, h.normal);
                continue;
            } else {
                let alpha = geom_alpha(s, w, gu);
                if alpha > 0.0 {
                    if seg < 0 {
                        seg = g;
                    }
                    if alpha >= OPAQUE_ALPHA {
                        return (seg, (t, g, n));
                    }
                    layers.push(Layer { ray: r, object: Object::Geom(gu), dist: t, normal: n });
                }
                passed.push(g);
            }
            // From just before the surface: a geom coincident with the one passed is met again.
            let from = t - COINCIDENT * t;
            match cast(from, g) {
                Some(h) => (t, g, n) = (from + h.dist, h.geomid, h.normal),
                None => g = -1,
            }
        }
        (seg, (t, g, n))
    }

    /// Blends each ray's transparent layers over its colour as `mjr_render` draws them: the
    /// transparent objects sorted by their distance to the camera (less their bounding radius),
    /// blended nearest first and then again farthest first, each lit by every light without
    /// shadows and its colour scaled by `tint`. `ray(r)` gives ray `r`'s origin, direction,
    /// opaque distance and pixel spread per unit distance.
    #[allow(clippy::too_many_arguments)]
    fn blend(
        &self,
        s: &Shared,
        w: usize,
        lights: &[Lamp],
        options: &CameraOptions,
        (color, layers): (&mut [Vec3], &mut Vec<Layer>),
        head: DVec3,
        tint: f32,
        ray: impl Fn(usize) -> (DVec3, DVec3, f64, f64),
    ) {
        layers.retain(|l| l.dist <= ray(l.ray).2 * (1.0 + COINCIDENT));
        let key = |l: &Layer| (l.ray, camdist(s, w, l.object, head), order(s, l.object));
        layers.sort_by(|a, b| {
            let (ka, kb) = (key(a), key(b));
            ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1)).then(ka.2.cmp(&kb.2))
        });
        for group in layers.chunk_by(|a, b| a.ray == b.ray) {
            let r = group[0].ray;
            let (origin, dir, _, spread) = ray(r);
            let shaded: Vec<(Vec3, f32)> = group
                .iter()
                .map(|l| {
                    let point = origin + dir * l.dist;
                    let view = (origin - point).normalize_or_zero();
                    let hit = Hit {
                        object: l.object,
                        point,
                        normal: l.normal,
                        view,
                        spread: spread * l.dist,
                        dir,
                        tint,
                        eye: origin,
                    };
                    let alpha = object_alpha(s, w, l.object);
                    (self.shade(s, w, &hit, lights, options, None), alpha)
                })
                .collect();
            // The framebuffer holds colours clamped to [0, 1].
            let mut c = color[r].clamp(Vec3::ZERO, Vec3::ONE);
            for &(f, a) in shaded.iter().chain(shaded.iter().rev()) {
                c = f.clamp(Vec3::ZERO, Vec3::ONE) * a + c * (1.0 - a);
            }
            color[r] = c;
        }
    }

    /// What the rays `on_mirror` (each ending on geom `g`, the scene's mirror) see in it, to
    /// be added to their colours, as `mjr_render` draws a reflection: the scene mirrored in
    /// the geom's plane (a box's +Z face), every other geom's colour scaled by the mirror's
    /// reflectance and lit by every light without shadows, black where nothing is, and nothing
    /// when the camera is behind the plane.
    fn reflection(
        &self,
        s: &Shared,
        view: &View,
        g: usize,
        on_mirror: &[usize],
        seen: Seen,
        spread: &dyn Fn(usize, f64) -> f64,
    ) -> Result<Vec<Vec3>, CameraError> {
        let (w, cam_pos) = (view.w, view.pos);
        let (xpos, xmat) = s.poses.geoms(w);
        let shapes = s.caster.shapes(w);
        let normal = xmat[g].z_axis;
        let is_box = shapes.geom_type[g] == GeomType::Box;
        let pos = if is_box { xpos[g] + normal * shapes.geom_size[g].z } else { xpos[g] };
        let mut out = vec![Vec3::ZERO; on_mirror.len()];
        if (cam_pos - pos).dot(normal) < 0.0 {
            return Ok(out);
        }
        let mirrored = |v: DVec3| v - 2.0 * v.dot(normal) * normal;
        let virtual_eye = pos + mirrored(cam_pos - pos);
        // A box mirrors on its +Z face alone.
        let which: Vec<usize> =
            (0..on_mirror.len()).filter(|&k| !is_box || seen.normal[on_mirror[k]].dot(normal) > 0.5).collect();
        let origins: Vec<DVec3> = which.iter().map(|&k| seen.points[on_mirror[k]]).collect();
        let dirs: Vec<DVec3> = which.iter().map(|&k| mirrored(seen.dirs[on_mirror[k]])).collect();
        let mut t = self.trace(s, view, Some(origins), dirs, (g as i32, false), true)?;
        // `mjr_render` sets every light, the headlight among them, under the mirror matrix:
        // the mirrored scene is lit as the scene itself is.
        let lights = scene_lights(s, w, cam_pos, view.mat * DVec3::NEG_Z);
        let tint = material(s, w, g).map_or(0.0, |mat| s.scene.mat_shading[mat][3]);
        // The path's length so far, for the texture's level of detail.
        let path = |k: usize, d: f64| spread(on_mirror[which[k]], seen.dist[on_mirror[which[k]]] + d);
        let mut color: Vec<Vec3> = (0..t.len())
            .map(|k| {
                if !t.drawn(k) {
                    return Vec3::ZERO;
                }
                let (origin, dir) = (t.origin(cam_pos, k), t.dirs[k]);
                let point = origin + dir * t.dist[k];
                let hit = Hit {
                    object: t.object(k),
                    point,
                    normal: t.normal[k],
                    view: -dir.normalize_or_zero(),
                    spread: path(k, t.dist[k]),
                    dir,
                    tint,
                    eye: virtual_eye,
                };
                self.shade(s, w, &hit, &lights, view.options, None)
            })
            .collect();
        let mut layers = std::mem::take(&mut t.layers);
        if !layers.is_empty() {
            self.blend(s, w, &lights, view.options, (&mut color, &mut layers), cam_pos, tint, |k| {
                let far = if t.drawn(k) { t.dist[k] } else { f64::INFINITY };
                (t.origin(cam_pos, k), t.dirs[k], far, path(k, 1.0) - path(k, 0.0))
            });
        }
        for (k, c) in which.into_iter().zip(color) {
            out[k] = c.clamp(Vec3::ZERO, Vec3::ONE);
        }
        Ok(out)
    }

    /// For each light, which rays' surfaces are in its shadow (empty for lights that cast
    /// none): a ray from each lit surface toward the light, blocked by any geom before it,
    /// where the light can reach the surface (it faces the light and, lit at its point, lies
    /// within a spot's cone). A shadow ray the ray core refuses (a surface point or a
    /// direction that is not finite) is an error, never a band drawn without its shadows.
    #[allow(clippy::too_many_arguments)]
    fn shadows(
        &self,
        s: &Shared,
        slot: usize,
        w: usize,
        lights: &[Lamp],
        options: &CameraOptions,
        points: &[DVec3],
        lit: &[Lit],
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
                    let reached = match lit[r] {
                        Lit::No => false,
                        Lit::AtPoint => !light.beyond_cone(l),
                        Lit::AtCorners => true,
                    };
                    if reached && normal[r].dot(l) > 0.0 {
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
                let groups = &options.enabled_geom_groups;
                for (k, &r) in which.iter().enumerate() {
                    shadowed[r] = geom[k] >= 0 && dist[k] < reach[k]
                        || skins::blocks(&s.skins[w], groups, origins[k], dirs[k], reach[k]);
                }
                Ok(shadowed)
            })
            .collect()
    }

    /// The colour of a surface hit, as the classic renderer draws it: a first pass with the
    /// lights that cast no shadow (and emission), one added pass per shadow-casting light
    /// where its shadow is not, each clamped and modulated by the texture. Without `in_shadow`
    /// (a transparent surface, drawn after the shadow passes) every light is in the first pass.
    fn shade(
        &self,
        s: &Shared,
        w: usize,
        hit: &Hit,
        lights: &[Lamp],
        options: &CameraOptions,
        in_shadow: Option<&dyn Fn(usize) -> bool>,
    ) -> Vec3 {
        let mut surface = match hit.object {
            Object::Geom(g) => surface(s, w, s.fields.geom_rgba(w, g), material(s, w, g)),
            Object::Site(k) => surface(s, w, s.scene.site_rgba[k], site_material(s, k)),
            Object::Skin(k, _) => surface(s, w, s.scene.skin[k].rgba, skin_material(s, k)),
            Object::Tendon(i) => {
                let piece = &s.poses.tendon_segments[w][i];
                surface(s, w, piece.rgba, tendon_material(s, piece.tendon))
            }
        };
        surface.color *= hit.tint;
        // The mesh face met, found once for the texture and the vertex lighting.
        let on_mesh = match hit.object {
            Object::Geom(g) => mesh_hit(s, w, g, hit),
            _ => None,
        };
        let texture = match hit.object {
            Object::Geom(g) if options.use_textures => self.texture(s, w, g, hit, on_mesh.as_ref()),
            Object::Skin(k, face) if options.use_textures => self.skin_texture(s, w, (k, face), hit),
            _ => Vec3::ONE,
        };
        let global = if lights.is_empty() { Vec3::splat(NO_LIGHT_AMBIENT) * surface.color } else { Vec3::ZERO };
        let mut base = surface.color * surface.emission + global;
        let mut passes = Vec3::ZERO;
        let corners = match hit.object {
            Object::Skin(k, face) => skin_corners(s, w, (k, face), hit.point),
            Object::Geom(_) => on_mesh.as_ref().and_then(|m| mesh_corners(s, w, m)),
            Object::Site(_) | Object::Tendon(_) => None,
        };
        // The corners' directions to the viewer, the same for every light.
        let corners = corners.map(|c| {
            let views = c.pos.map(|p| (hit.eye - p).normalize_or_zero());
            (c, views)
        });
        for (l, light) in lights.iter().enumerate() {
            let c = match &corners {
                Some((corners, views)) => corners.light(light, views, &surface),
                None => light.contribution(hit.point, hit.normal, hit.view, &surface),
            };
            if let Some(in_shadow) = in_shadow.filter(|_| options.use_shadows && light.castshadow) {
                if !in_shadow(l) {
                    passes += c.clamp(Vec3::ZERO, Vec3::ONE) * texture;
                }
            } else {
                base += c;
            }
        }
        base.clamp(Vec3::ZERO, Vec3::ONE) * texture + passes
    }

    /// The material texture's colour where a ray meets geom `g` (white when there is none).
    /// `on_mesh`: where the hit lies on the geom's mesh (none for other geoms).
    fn texture(&self, s: &Shared, w: usize, g: usize, hit: &Hit, on_mesh: Option<&MeshHit>) -> Vec3 {
        let scene = s.scene;
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
            // A mesh without texture coordinates takes MuJoCo's generated ones, as any other
            // shape does (below).
            TextureKind::TwoD if has_texcoords(s, w, g) => {
                let shapes = s.caster.shapes(w);
                let id = shapes.geom_dataid[g] as usize;
                let Some(mesh) = scene.mesh.get(id) else {
                    return self.generated_2d((s, w, g, m), hit, sampler, (size, object, uniform));
                };
                let repeat = s.fields.mat_texrepeat(w, m).map(|r| if r > 0.0 { f64::from(r) } else { 1.0 });
                let gsize = shapes.geom_size[g];
                let scl = [0, 1].map(|a| if uniform && gsize[a] > 0.0 { repeat[a] * gsize[a] } else { repeat[a] });
                let face = on_mesh.map(|h| h.face);
                match face.and_then(|f| mesh_uv(mesh, &scene.mesh_texcoord[id], &scene.mesh_facetexcoord[id], f, local))
                {
                    Some((uv, per_metre)) => {
                        let grazing = hit.normal.dot(hit.view).abs().max(0.02);
                        let per_metre = per_metre * scl[0].abs().max(scl[1].abs());
                        sampler.sample_2d(uv[0] * scl[0], uv[1] * scl[1], hit.spread / grazing * per_metre)
                    }
                    None => Vec3::ONE,
                }
            }
            TextureKind::TwoD => self.generated_2d((s, w, g, m), hit, sampler, (size, object, uniform)),
            // MuJoCo binds the texture of a mesh with texture coordinates to the 2-D target;
            // a cube map cannot be bound there, and the mesh is drawn untextured.
            _ if has_texcoords(s, w, g) => Vec3::ONE,
            _ => {
                let r = if uniform { object * size } else { object };
                // The directions a pixel spans, seen from the object's centre.
                sampler.sample_cube(r, hit.spread / r.length().max(1e-12))
            }
        }
    }

    /// The material texture's colour where a ray meets face `face` of skin `k` (white when
    /// the skin has no texture coordinates or its material no 2D texture).
    fn skin_texture(&self, s: &Shared, w: usize, (k, face): (usize, usize), hit: &Hit) -> Vec3 {
        let skin = &s.scene.skin[k];
        let Some(m) = skin_material(s, k) else { return Vec3::ONE };
        let sampler = usize::try_from(s.fields.mat_texid(w, m)).ok().and_then(|t| self.samplers.get(t));
        let Some(sampler) = sampler.filter(|t| t.kind() == TextureKind::TwoD) else { return Vec3::ONE };
        let Some(posed) = s.skins[w].iter().find(|p| p.skin == k) else { return Vec3::ONE };
        let Some(uv) = skins::uv(&skin.texcoord, posed, face, hit.point) else { return Vec3::ONE };
        let repeat = s.fields.mat_texrepeat(w, m).map(|r| if r > 0.0 { f64::from(r) } else { 1.0 });
        let grazing = hit.normal.dot(hit.view).abs().max(0.02);
        // About one texture repeat across the skin's extent, for the mip level.
        let bounds = posed.mesh.bounds();
        let per_metre = repeat[0].max(repeat[1]) / (bounds.max - bounds.min).max_element().max(1e-9);
        sampler.sample_2d(uv[0] * repeat[0], uv[1] * repeat[1], hit.spread / grazing * per_metre)
    }

    /// A 2D texture through the coordinates MuJoCo's renderer generates from the object's
    /// own (`glTexGen` planes scaled by `texrepeat`).
    fn generated_2d(
        &self,
        (s, w, g, m): (&Shared, usize, usize, usize),
        hit: &Hit,
        sampler: &Sampler,
        (size, object, uniform): (DVec3, DVec3, bool),
    ) -> Vec3 {
        let repeat = s.fields.mat_texrepeat(w, m).map(f64::from);
        let scl = [0, 1].map(|a| if uniform && size[a] > 0.0 { repeat[a] * size[a] } else { repeat[a] });
        // A plane's side of finite size runs 0 to `scl` across it (`makePlane`'s explicit
        // coordinates, t from the +y edge); an infinite side, and the other shapes, are centred
        // on −0.5.
        let shapes = s.caster.shapes(w);
        let finite = |a: usize| shapes.geom_type[g] == GeomType::Plane && shapes.geom_size[g][a] > 0.0;
        let offset = |a: usize| if finite(a) { 0.5 * scl[a] } else { -0.5 };
        let (st, tt) = (0.5 * scl[0] * object.x + offset(0), -0.5 * scl[1] * object.y + offset(1));
        // Texture units per metre along the surface, for the mip level.
        let per_metre = 0.5 * (scl[0] / size.x).abs().max((scl[1] / size.y).abs());
        let grazing = hit.normal.dot(hit.view).abs().max(0.02);
        sampler.sample_2d(st, tt, hit.spread / grazing * per_metre)
    }

    /// How far colour sees along the ray from `origin` in `dir`: where a skybox is drawn, to
    /// the sky cylinder `mjr_render` draws about the camera (radius and half-height 0.7 × the
    /// far clipping distance, depth-tested, so it hides what lies beyond); else to the far
    /// clipping distance.
    fn far(&self, s: &Shared, view: &View, origin: DVec3, dir: DVec3) -> f64 {
        let zfar = if s.scene.zfar > 0.0 { s.scene.zfar } else { f64::INFINITY };
        if self.skybox.is_none() || !zfar.is_finite() {
            return zfar;
        }
        let radius = SKY_SCALE * zfar;
        let (o, d) = (origin - view.pos, dir.normalize_or_zero());
        // Leaving the cylinder's side from inside: the larger root of |o + t d|_xy = radius.
        let (a, b, c) = (d.x * d.x + d.y * d.y, o.x * d.x + o.y * d.y, o.x * o.x + o.y * o.y - radius * radius);
        let side = if a > 0.0 { (-b + (b * b - a * c).max(0.0).sqrt()) / a } else { f64::INFINITY };
        let cap = if d.z != 0.0 { (radius.copysign(d.z) - o.z) / d.z } else { f64::INFINITY };
        (side.min(cap) / dir.length()).min(zfar)
    }

    /// What a ray that hits nothing sees, through a pixel spanning `angle` radians: the skybox
    /// (MuJoCo maps it rotated 90° about X), else black.
    fn background(&self, dir: DVec3, angle: f64) -> Vec3 {
        match self.skybox {
            Some(t) => self.samplers[t].sample_cube(DVec3::new(dir.x, dir.z, -dir.y), angle),
            None => Vec3::ZERO,
        }
    }
}

/// The sky cylinder's radius as a share of the far clipping distance (`mjr_render`: "just
/// below 1/sqrt(2)", so that its corners stay inside the frustum).
const SKY_SCALE: f64 = 0.7;

/// The haze `mjr_render` draws over the first infinite plane's horizon where a skybox is
/// drawn: a truncated cone about the camera, from the plane (radius `(1 − haze)` × the sky's)
/// up to the camera's height (the sky's radius), transparent at both ends and opaque in
/// between, blended over what lies behind it (`haze` in `render_context.c`).
struct Haze {
    /// The camera's position, and the plane's normal.
    eye: DVec3,
    up: DVec3,
    /// The camera's height above the plane, metres.
    height: f64,
    /// The cone's radius at the camera's height, and its growth per metre of height.
    radius: f64,
    slope: f64,
    /// The share of the height where the haze is opaque.
    opaque_at: f64,
    rgb: Vec3,
}

impl Haze {
    /// The haze of `view`, when it has one: a skybox, an infinite plane drawn, the camera above it.
    fn of(s: &Shared, skybox: bool, view: &View) -> Option<Haze> {
        let scene = s.scene;
        if !skybox || scene.zfar <= 0.0 || scene.haze <= 0.0 {
            return None;
        }
        let shapes = s.caster.shapes(view.w);
        let (xpos, xmat) = s.poses.geoms(view.w);
        let plane = (0..scene.ngeom()).find(|&g| {
            let group = scene.geom_group[g].clamp(0, NGROUP as i32 - 1) as usize;
            let size = shapes.geom_size[g];
            shapes.geom_type[g] == GeomType::Plane
                && size.x == 0.0
                && size.y == 0.0
                && view.options.enabled_geom_groups[group]
        })?;
        let up = xmat[plane].z_axis;
        // Below the plane MuJoCo draws no haze; on it, a cone of no height.
        let height = (view.pos - xpos[plane]).dot(up);
        if height <= 0.0 {
            return None;
        }
        let r = scene.haze;
        let alpha = 1f64.atan2(r);
        let beta = 0.75 * std::f64::consts::PI - alpha;
        let opaque_at = 0.5f64.sqrt() * r * alpha.sin() / beta.sin();
        let radius = SKY_SCALE * scene.zfar;
        let [red, green, blue, _] = scene.haze_rgba;
        Some(Haze {
            eye: view.pos,
            up,
            height,
            radius,
            slope: radius * r / height,
            opaque_at,
            rgb: Vec3::new(red, green, blue),
        })
    }

    /// Where the ray from `origin` in `dir` leaves through the cone, and the haze's alpha there.
    fn hit(&self, origin: DVec3, dir: DVec3) -> Option<(f64, f32)> {
        let o = origin - self.eye;
        let (oz, dz) = (o.dot(self.up), dir.dot(self.up));
        let (o_flat, d_flat) = (o - self.up * oz, dir - self.up * dz);
        // |o_flat + t d_flat| = radius + slope (oz + t dz), for heights from −height to 0.
        let reach = self.radius + self.slope * oz;
        let a = d_flat.length_squared() - self.slope * self.slope * dz * dz;
        let b = o_flat.dot(d_flat) - self.slope * dz * reach;
        let c = o_flat.length_squared() - reach * reach;
        let disc = b * b - a * c;
        if disc < 0.0 || a == 0.0 {
            return None;
        }
        let roots = [(-b - disc.sqrt()) / a, (-b + disc.sqrt()) / a];
        roots.into_iter().filter(|&t| t > 0.0).find_map(|t| {
            let z = oz + t * dz;
            let h = 1.0 + z / self.height;
            let on_cone = (0.0..=1.0).contains(&h) && reach + self.slope * t * dz >= 0.0;
            on_cone.then(|| {
                let alpha = if h < self.opaque_at { h / self.opaque_at } else { (1.0 - h) / (1.0 - self.opaque_at) };
                (t, alpha as f32)
            })
        })
    }
}

/// A surface a camera ray met.
struct Hit {
    object: Object,
    point: DVec3,
    normal: DVec3,
    /// Unit direction back toward the camera.
    view: DVec3,
    /// How far apart neighbouring pixels' rays land here, metres.
    spread: f64,
    /// The ray's direction.
    dir: DVec3,
    /// What the surface's colour is scaled by: the mirror's reflectance for a surface seen in
    /// it, else 1.
    tint: f32,
    /// Where the viewer is (the camera, or its image in a mirror).
    eye: DVec3,
}

/// What a band's rays met, for the rays that go on from there.
struct Seen<'a> {
    points: &'a [DVec3],
    dirs: &'a [DVec3],
    normal: &'a [DVec3],
    dist: &'a [f64],
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
    rows: (usize, usize),
) -> (Vec<usize>, Option<Vec<DVec3>>, Vec<DVec3>) {
    let n = (rows.1 - rows.0) * model.width;
    let ortho = matches!(model.projection, Projection::Orthographic { .. });
    let (mut pixel, mut dirs) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut origins = ortho.then(|| Vec::with_capacity(n));
    in_tiles(model.width, rows, |col, row| {
        let (o, d) = model.pixel_ray(col, row);
        pixel.push((row - rows.0) * model.width + col);
        if let Some(origins) = &mut origins {
            origins.push(cam_pos + *cam_mat * o);
        }
        dirs.push(*cam_mat * d);
    });
    (pixel, origins, dirs)
}

/// The pixels of [`band_rays`] alone, in the same order.
fn band_pixels(width: usize, rows: (usize, usize)) -> Vec<usize> {
    let mut pixel = Vec::with_capacity((rows.1 - rows.0) * width);
    in_tiles(width, rows, |col, row| pixel.push((row - rows.0) * width + col));
    pixel
}

/// Visits rows `[r0, r1)` of an image `width` wide as `(col, row)` in 8 × 4 tiles, the
/// order rays are cast in: neighbouring rays walk the BVH together.
fn in_tiles(width: usize, (r0, r1): (usize, usize), mut visit: impl FnMut(usize, usize)) {
    for tr in (r0..r1).step_by(TILE.1) {
        for tc in (0..width).step_by(TILE.0) {
            for row in tr..(tr + TILE.1).min(r1) {
                for col in tc..(tc + TILE.0).min(width) {
                    visit(col, row);
                }
            }
        }
    }
}

/// The world-frame origins and directions of `view`'s rays through image points `points`
/// (pixels from the top left corner), in units of optical-axis depth.
fn view_rays(view: &View, points: impl Iterator<Item = (f64, f64)>) -> (Vec<DVec3>, Vec<DVec3>) {
    let (mut origins, mut dirs) = (Vec::with_capacity(points.size_hint().0), Vec::with_capacity(points.size_hint().0));
    for (u, v) in points {
        let (o, d) = view.model.ray_at(u, v);
        origins.push(view.pos + view.mat * o);
        dirs.push(view.mat * d);
    }
    (origins, dirs)
}

/// World `w`'s lights as the classic renderer takes them: the headlight first, then the
/// scene's lights, at most eight.
fn scene_lights(s: &Shared, w: usize, cam_pos: DVec3, forward: DVec3) -> Vec<Lamp> {
    let h = s.headlight;
    let head = h.active.then(|| Light::headlight(cam_pos, forward, h.ambient, h.diffuse, h.specular));
    head.into_iter().chain(s.lights[w].iter().copied()).take(MAX_LIGHTS).map(Lamp::new).collect()
}

/// Geom `g`'s material in world `w`, if it has one the model defines.
fn material(s: &Shared, w: usize, g: usize) -> Option<usize> {
    geom_material(s.scene, s.fields, w, g)
}

/// [`material`] from the scene and the world fields.
fn geom_material(scene: &Scene, fields: &dyn WorldFields, w: usize, g: usize) -> Option<usize> {
    usize::try_from(fields.geom_matid(w, g)).ok().filter(|&m| m < scene.mat_rgba.len())
}

/// The colour and material of a geom or site with colour `rgba` and material `material` in
/// world `w`, as `mjv_updateScene` resolves them.
fn surface(s: &Shared, w: usize, rgba: [f32; 4], material: Option<usize>) -> Surface {
    match material {
        Some(m) => {
            let color = if rgba == DEFAULT_RGBA { s.fields.mat_rgba(w, m) } else { rgba };
            let [emission, specular, shininess, _] = s.scene.mat_shading[m];
            Surface { color: Vec3::new(color[0], color[1], color[2]), specular, shininess: shininess * 128.0, emission }
        }
        // MuJoCo's default material: specular 0.5, shininess 0.5, no emission.
        None => Surface { color: Vec3::new(rgba[0], rgba[1], rgba[2]), specular: 0.5, shininess: 64.0, emission: 0.0 },
    }
}

/// The alpha MuJoCo's renderer draws with: the material's when the colour is the default,
/// else the colour's own (`setMaterial` in `engine_vis_visualize.c`).
fn alpha_of(fields: &dyn WorldFields, w: usize, rgba: [f32; 4], material: Option<usize>) -> f32 {
    match material {
        Some(m) if rgba == DEFAULT_RGBA => fields.mat_rgba(w, m)[3],
        _ => rgba[3],
    }
}

/// Geom `g`'s alpha in world `w` as MuJoCo's renderer draws it.
#[inline]
fn geom_alpha(s: &Shared, w: usize, g: usize) -> f32 {
    geom_alpha_in(s.scene, s.fields, w, g)
}

/// [`geom_alpha`] from the scene and the world fields.
fn geom_alpha_in(scene: &Scene, fields: &dyn WorldFields, w: usize, g: usize) -> f32 {
    alpha_of(fields, w, fields.geom_rgba(w, g), geom_material(scene, fields, w, g))
}

/// [`Renderer::plain`] of geom `g` in world `w`, whose coincidence candidates are `ties`.
fn plain_geom(scene: &Scene, fields: &dyn WorldFields, ties: &[Vec<Tie>], w: usize, g: usize) -> bool {
    geom_alpha_in(scene, fields, w, g) >= OPAQUE_ALPHA && ties.get(g).is_none_or(|later| later.is_empty())
}

/// Site `k`'s material, if it has one the model defines.
fn site_material(s: &Shared, k: usize) -> Option<usize> {
    usize::try_from(s.scene.site_matid[k]).ok().filter(|&m| m < s.scene.mat_rgba.len())
}

/// The triangle a pixel's ray met, as OpenGL's fixed pipeline lights it: at its three
/// corners (world positions and the normals the renderer gives them), the results
/// interpolated across it (Gouraud shading), as MuJoCo draws meshes and skins.
struct Corners {
    pos: [DVec3; 3],
    normal: [DVec3; 3],
    /// The hit's barycentric coordinates.
    bary: [f64; 3],
}

impl Corners {
    /// `light`'s contribution, `views` the unit directions from the corners to the viewer.
    fn light(&self, light: &Lamp, views: &[DVec3; 3], surface: &Surface) -> Vec3 {
        (0..3).map(|k| light.contribution(self.pos[k], self.normal[k], views[k], surface) * self.bary[k] as f32).sum()
    }
}

/// The corners of face `face` of skin `k` in world `w`, with their vertex normals.
/// A flat face's corners all take the face's normal.
fn skin_corners(s: &Shared, w: usize, (k, face): (usize, usize), point: DVec3) -> Option<Corners> {
    let posed = s.skins[w].iter().find(|p| p.skin == k)?;
    let mesh = &posed.mesh;
    let bary = posed.barycentric(face, point)?;
    let f = mesh.face[face].map(|i| i as usize);
    let pos = f.map(|i| DVec3::from(mesh.vert[i].map(f64::from)));
    let normal = match posed.flat_face(face) {
        true => [(pos[1] - pos[0]).cross(pos[2] - pos[0]).normalize_or_zero(); 3],
        false => f.map(|i| DVec3::from(mesh.normal[i].map(f64::from))),
    };
    Some(Corners { pos, normal, bary })
}

/// Where a surface takes its light: nowhere (no surface), at the point a ray meets
/// (primitives, planes, height fields), or at the corners of the face met (meshes and
/// skins: the classic renderer lights vertices), so that a spot's cone decides at the point
/// only in the first case.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Lit {
    No,
    AtPoint,
    AtCorners,
}

impl Lit {
    /// How `object` of world `w` is lit.
    fn of(s: &Shared, w: usize, object: Object) -> Lit {
        match object {
            Object::Skin(..) => Lit::AtCorners,
            Object::Geom(g) if s.caster.shapes(w).geom_type[g] == GeomType::Mesh => Lit::AtCorners,
            _ => Lit::AtPoint,
        }
    }
}

/// Where a pixel's ray met a mesh geom: the mesh, the face and the point in the mesh's
/// (the geom's) frame.
struct MeshHit {
    g: usize,
    id: usize,
    face: usize,
    local: DVec3,
}

/// Where `hit` meets mesh geom `g` (none for other geoms, or where no face is found).
fn mesh_hit(s: &Shared, w: usize, g: usize, hit: &Hit) -> Option<MeshHit> {
    let shapes = s.caster.shapes(w);
    if shapes.geom_type[g] != GeomType::Mesh {
        return None;
    }
    let id = usize::try_from(shapes.geom_dataid[g]).ok()?;
    let mesh = s.scene.mesh.get(id)?;
    let (xpos, xmat) = s.poses.geoms(w);
    let rot = xmat[g].transpose();
    let local = rot * (hit.point - xpos[g]);
    let face = face_at(mesh, local, rot * hit.dir)?;
    Some(MeshHit { g, id, face, local })
}

/// The corners of the mesh face `at` names, in world `w`, with the normals `makeMesh` gives
/// them: the mesh's own, but the face's where a corner's differs from it by more than about
/// 37° (a dot product below 0.8) and the mesh has no texture coordinates. None for meshes
/// without normals.
fn mesh_corners(s: &Shared, w: usize, at: &MeshHit) -> Option<Corners> {
    let MeshHit { g, id, face, local } = *at;
    let (mesh, facenormal) = (s.scene.mesh.get(id)?, s.scene.mesh_facenormal.get(id)?);
    if facenormal.is_empty() {
        return None;
    }
    let (xpos, xmat) = s.poses.geoms(w);
    let (rot, pos) = (xmat[g], xpos[g]);
    let vert = mesh.face[face].map(|i| DVec3::from(mesh.vert[i as usize].map(f64::from)));
    let unit = (vert[1] - vert[0]).cross(vert[2] - vert[0]).normalize_or_zero();
    let textured = !s.scene.mesh_texcoord.get(id).is_none_or(Vec::is_empty);
    let normal = facenormal[face].map(|i| {
        let n = DVec3::from(mesh.normal.get(i as usize).copied().unwrap_or_default().map(f64::from));
        if textured || n.dot(unit) >= 0.8 { n } else { unit }
    });
    let bary = barycentric(vert, local)?;
    Some(Corners { pos: vert.map(|v| pos + rot * v), normal: normal.map(|n| (rot * n).normalize_or_zero()), bary })
}

/// The face of `mesh` a local ray `(point, dir)` meets at `point`: found by backing a little
/// along the ray.
fn face_at(mesh: &glint_core::Mesh, point: DVec3, dir: DVec3) -> Option<usize> {
    let len = dir.length();
    if len <= 0.0 {
        return None;
    }
    let d = dir / len;
    let back = 1e-6 * (1.0 + point.length());
    mesh.intersect_local(point - d * back, d, 4.0 * back).map(|(_, _, face)| face)
}

/// Geom `g`'s NIR material: its MuJoCo material's authored one, else one from the colour
/// MuJoCo draws it with.
fn geom_nir(scene: &Scene, table: &MaterialTable, g: usize) -> NirMaterial {
    let matid = usize::try_from(scene.geom_matid[g]).ok().filter(|&m| m < scene.mat_rgba.len());
    if let Some(authored) = matid.and_then(|m| table.get(&scene.mat_name[m])) {
        return *authored;
    }
    let rgba = match matid {
        Some(m) if scene.geom_rgba[g] == DEFAULT_RGBA => scene.mat_rgba[m],
        _ => scene.geom_rgba[g],
    };
    NirMaterial::from_albedo(rgba)
}

/// Skin `k`'s material, if it has one the model defines.
fn skin_material(s: &Shared, k: usize) -> Option<usize> {
    usize::try_from(s.scene.skin[k].matid).ok().filter(|&m| m < s.scene.mat_rgba.len())
}

/// Site `k`'s alpha in world `w` as MuJoCo's renderer draws it.
fn site_alpha(s: &Shared, w: usize, k: usize) -> f32 {
    alpha_of(s.fields, w, s.scene.site_rgba[k], site_material(s, k))
}

/// Whether geom `g` of world `w` is a mesh with texture coordinates.
fn has_texcoords(s: &Shared, w: usize, g: usize) -> bool {
    let shapes = s.caster.shapes(w);
    shapes.geom_type[g] == GeomType::Mesh
        && usize::try_from(shapes.geom_dataid[g])
            .ok()
            .and_then(|d| s.scene.mesh_texcoord.get(d))
            .is_some_and(|t| !t.is_empty())
}

/// Tendon `i`'s material, if it has one the model defines.
fn tendon_material(s: &Shared, i: usize) -> Option<usize> {
    usize::try_from(s.scene.tendon_matid[i]).ok().filter(|&m| m < s.scene.mat_rgba.len())
}

/// The alpha MuJoCo's renderer draws `object` of world `w` with.
fn object_alpha(s: &Shared, w: usize, object: Object) -> f32 {
    match object {
        Object::Geom(g) => geom_alpha(s, w, g),
        Object::Site(k) => site_alpha(s, w, k),
        Object::Skin(k, _) => s.scene.skin[k].rgba[3],
        Object::Tendon(i) => {
            let piece = &s.poses.tendon_segments[w][i];
            alpha_of(s.fields, w, piece.rgba, tendon_material(s, piece.tendon))
        }
    }
}

/// The shape, size, position and orientation of a site or tendon piece of world `w`.
fn decor_shape(s: &Shared, w: usize, decor: Decor) -> (GeomType, DVec3, DVec3, DMat3) {
    match decor {
        Decor::Tendon(i) => {
            let (pos, rot, size) = s.poses.tendon_segments[w][i].capsule();
            (GeomType::Capsule, size, pos, rot)
        }
        Decor::Site(k) => {
            let at = w * s.scene.nsite() + k;
            (s.scene.site_type[k], s.scene.site_size[k], s.poses.site_xpos[at], s.poses.site_xmat[at])
        }
    }
}

/// MuJoCo's bounding radius of a shape of `kind` and `size` about its centre (`mjv_rbound`;
/// a mesh's is its farthest vertex).
fn rbound(scene: &Scene, kind: GeomType, size: DVec3, dataid: i32) -> f64 {
    match kind {
        GeomType::Sphere => size.x,
        GeomType::Capsule => size.x + size.y,
        GeomType::Cylinder => size.x.hypot(size.y),
        GeomType::Box | GeomType::Ellipsoid => size.length(),
        GeomType::Mesh => usize::try_from(dataid)
            .ok()
            .and_then(|d| scene.mesh.get(d))
            .map_or(0.0, |m| m.vert.iter().map(|v| DVec3::from(v.map(f64::from)).length()).fold(0.0, f64::max)),
        _ => 0.0,
    }
}

/// How `mjr_render` orders a transparent object: its distance from the camera less its
/// bounding radius (planes last).
fn camdist(s: &Shared, w: usize, object: Object, head: DVec3) -> f64 {
    match object {
        Object::Geom(g) => {
            let shapes = s.caster.shapes(w);
            if shapes.geom_type[g] == GeomType::Plane {
                return 1e10;
            }
            let pos = s.poses.geom_xpos[w * s.scene.ngeom() + g];
            (pos - head).length() - rbound(s.scene, shapes.geom_type[g], shapes.geom_size[g], shapes.geom_dataid[g])
        }
        Object::Site(k) => {
            let pos = s.poses.site_xpos[w * s.scene.nsite() + k];
            (pos - head).length() - rbound(s.scene, s.scene.site_type[k], s.scene.site_size[k], -1)
        }
        Object::Tendon(i) => {
            let (kind, size, pos, _) = decor_shape(s, w, Decor::Tendon(i));
            (pos - head).length() - rbound(s.scene, kind, size, -1)
        }
        // Skins are drawn opaque, never sorted.
        Object::Skin(..) => 0.0,
    }
}

/// The order `mjv_updateScene` adds objects in (geoms, sites, tendons), which breaks ties.
fn order(s: &Shared, object: Object) -> usize {
    match object {
        Object::Geom(g) => g,
        Object::Site(k) => s.scene.ngeom() + k,
        Object::Tendon(i) => s.scene.ngeom() + s.scene.nsite() + i,
        Object::Skin(k, _) => usize::MAX / 2 + k,
    }
}

/// A geom drawn after another on the same body whose surface may coincide with the other's.
#[derive(Clone, Copy, Debug)]
struct Tie {
    geom: u32,
    /// The same shape at the same pose (a collision geom and its visual copy): the surfaces
    /// are one, so a ray meets the later one wherever it meets the other.
    twin: bool,
}

/// Per geom of world `w` (shaped as `shapes`): the geoms of the same body, drawn after it
/// (higher ids), whose world bounds overlap its own, so that their surfaces may coincide
/// (robosuite's collision and visual geoms of one part). Planes pair only with planes.
fn coincident_candidates(scene: &Scene, shapes: &Shapes, poses: &Poses, w: usize) -> Vec<Vec<Tie>> {
    let n = scene.ngeom();
    let (xpos, xmat) = poses.geoms(w);
    let bounds: Vec<Option<(DVec3, DVec3)>> = (0..n)
        .map(|g| {
            let b = scene.geom_local_bounds(g)?;
            let (c, h) = ((b.min + b.max) * 0.5, (b.max - b.min) * 0.5);
            let m = xmat[g];
            let abs = DMat3::from_cols(m.x_axis.abs(), m.y_axis.abs(), m.z_axis.abs());
            Some((xpos[g] + m * c, abs * h))
        })
        .collect();
    let mut by_body: std::collections::HashMap<i32, Vec<usize>> = std::collections::HashMap::new();
    for g in 0..n {
        if scene.geom_visible(g) {
            by_body.entry(scene.geom_bodyid[g]).or_default().push(g);
        }
    }
    let mut later = vec![Vec::new(); n];
    for geoms in by_body.values().filter(|v| v.len() > 1) {
        for (i, &a) in geoms.iter().enumerate() {
            let overlaps = |b: usize| match (bounds[a], bounds[b]) {
                (Some((ca, ha)), Some((cb, hb))) => {
                    let d = (ca - cb).abs();
                    let reach = ha + hb + DVec3::splat(1e-9);
                    d.x <= reach.x && d.y <= reach.y && d.z <= reach.z
                }
                (None, None) => true,
                _ => false,
            };
            let twin = |b: usize| {
                shapes.geom_type[a] == shapes.geom_type[b]
                    && shapes.geom_size[a] == shapes.geom_size[b]
                    && shapes.geom_dataid[a] == shapes.geom_dataid[b]
                    && xpos[a] == xpos[b]
                    && xmat[a] == xmat[b]
            };
            later[a] = geoms[i + 1..]
                .iter()
                .filter(|&&b| overlaps(b))
                .map(|&b| Tie { geom: b as u32, twin: twin(b) })
                .collect();
        }
    }
    later
}

/// The geom `mjr_render` mirrors the scene in for a camera that draws with `options` in world
/// `w`: the first it draws that is a plane or a box, opaque, and of a material with a positive
/// reflectance (the renderer allows one).
fn mirror(
    scene: &Scene,
    fields: &dyn WorldFields,
    shapes: &Shapes,
    w: usize,
    options: &CameraOptions,
) -> Option<usize> {
    (0..scene.ngeom()).find(|&g| {
        let group = scene.geom_group[g].clamp(0, NGROUP as i32 - 1) as usize;
        let material = geom_material(scene, fields, w, g);
        matches!(shapes.geom_type[g], GeomType::Plane | GeomType::Box)
            && options.enabled_geom_groups[group]
            && alpha_of(fields, w, fields.geom_rgba(w, g), material) >= OPAQUE_ALPHA
            && material.is_some_and(|m| scene.mat_shading[m][3] > 0.0)
    })
}

/// The sites camera slot `options` draws in band `rows`: in its enabled groups, not of alpha
/// 0, and (perspective cameras) with their bounding sphere inside the band's frustum.
fn band_decor(
    s: &Shared,
    w: usize,
    options: &CameraOptions,
    model: &CameraModel,
    cam_pos: DVec3,
    cam_mat: &DMat3,
    (r0, r1): (usize, usize),
) -> Vec<Decor> {
    let scene = s.scene;
    let sites = (0..scene.nsite()).map(Decor::Site);
    let tendons = (0..s.poses.tendon_segments[w].len()).map(Decor::Tendon);
    let group = |decor: Decor| match decor {
        Decor::Tendon(i) => scene.tendon_group[s.poses.tendon_segments[w][i].tendon],
        Decor::Site(k) => scene.site_group[k],
    };
    let perspective = !matches!(model.projection, Projection::Orthographic { .. });
    // The band's four side planes, through the camera and its corner pixels' rays, inward.
    let corners = [(0, r0), (model.width - 1, r0), (model.width - 1, r1 - 1), (0, r1 - 1)]
        .map(|(c, r)| *cam_mat * model.pixel_ray(c, r).1);
    let planes: Vec<DVec3> = (0..4).map(|i| corners[i].cross(corners[(i + 1) % 4]).normalize_or_zero()).collect();
    let (footprint, _) = model.pixel_footprint();
    sites
        .chain(tendons)
        .filter(|&decor| {
            let group = group(decor).clamp(0, NGROUP as i32 - 1) as usize;
            if !options.enabled_geom_groups[group] || object_alpha(s, w, decor.into()) == 0.0 {
                return false;
            }
            if !perspective {
                return true;
            }
            let (kind, size, pos, _) = decor_shape(s, w, decor);
            let c = pos - cam_pos;
            // A pixel's worth of margin: the corner rays pass through pixel centres.
            let r = rbound(scene, kind, size, -1) + 2.0 * footprint * c.length();
            let inward = planes.iter().all(|p| p.dot(c) >= -r);
            let ahead = (*cam_mat * DVec3::NEG_Z).dot(c) >= -r;
            inward && ahead
        })
        .collect()
}

/// Texture coordinates (u, v) at local `point` on face `face` of `mesh`, interpolated over
/// the face, and the face's texture units per metre.
fn mesh_uv(
    mesh: &glint_core::Mesh,
    texcoord: &[[f32; 2]],
    facetexcoord: &[[u32; 3]],
    face: usize,
    point: DVec3,
) -> Option<([f64; 2], f64)> {
    let tri = mesh.face.get(face)?.map(|i| DVec3::from(mesh.vert[i as usize].map(f64::from)));
    let uvs = facetexcoord.get(face)?.map(|i| texcoord.get(i as usize).map(|t| [f64::from(t[0]), f64::from(t[1])]));
    let [Some(t0), Some(t1), Some(t2)] = uvs else { return None };
    let [b0, b1, b2] = barycentric(tri, point)?;
    let uv = [0, 1].map(|a| b0 * t0[a] + b1 * t1[a] + b2 * t2[a]);
    let (f1, f2) = ([t1[0] - t0[0], t1[1] - t0[1]], [t2[0] - t0[0], t2[1] - t0[1]]);
    let uv_area = (f1[0] * f2[1] - f1[1] * f2[0]).abs();
    let area = (tri[1] - tri[0]).cross(tri[2] - tri[0]).length_squared();
    Some((uv, (uv_area / area.sqrt()).sqrt()))
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
        shadows_under_spot(points, 180.0, Lit::AtPoint)
    }

    /// [`shadows_of`] with the spot's cutoff (degrees) and the surfaces lit as `lit` says.
    fn shadows_under_spot(points: &[DVec3], cutoff: f32, lit: Lit) -> Result<Vec<Vec<bool>>, CameraError> {
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
            ties: vec![Vec::new()],
            plain: vec![Vec::new()],
            mirrors: vec![Vec::new()],
            skins: vec![Vec::new()],
            depth_noise: &[],
            zone_depths: Vec::new(),
        };
        let spot = Light {
            light_type: 0,
            pos: DVec3::new(0.0, 0.0, 10.0),
            dir: DVec3::NEG_Z,
            ambient: Vec3::ZERO,
            diffuse: Vec3::ONE,
            specular: Vec3::ZERO,
            attenuation: [1.0, 0.0, 0.0],
            cutoff,
            exponent: 0.0,
            castshadow: true,
        };
        let options = CameraOptions { use_shadows: true, ..CameraOptions::new(0) };
        let n = points.len();
        Renderer::new(&[]).shadows(&s, 0, 0, &[Lamp::new(spot)], &options, points, &vec![lit; n], &vec![DVec3::Z; n])
    }

    #[test]
    fn a_spot_casts_shadow_rays_where_it_can_light_the_surface() {
        // 6.8° off the spot's axis, outside its 5° cone, and behind the ball from it.
        let beside = [DVec3::new(1.2, 0.0, 0.0)];
        // Lit at the point itself, the spot gives it no light: no shadow ray is cast.
        assert_eq!(shadows_under_spot(&beside, 5.0, Lit::AtPoint).unwrap(), vec![vec![false]]);
        // Lit at its face's corners (a mesh), a corner may lie within the cone: the shadow is
        // found.
        assert_eq!(shadows_under_spot(&beside, 5.0, Lit::AtCorners).unwrap(), vec![vec![true]]);
        // Within a wider cone the point is lit, and shadowed.
        assert_eq!(shadows_under_spot(&beside, 10.0, Lit::AtPoint).unwrap(), vec![vec![true]]);
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
