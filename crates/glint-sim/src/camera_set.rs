//! The simulation's cameras as one [`Sensor`]: which MJCF cameras render and how
//! ([`CameraOptions`], from the manifest's `[[camera]]` or set by the caller), the renderer
//! with the model's textures, and each world's lights from its light fields. On a tick it
//! renders only the (world, camera) pairs asked for, into buffers it keeps.

use glam::Vec3;
use glint_camera::{Frames, Headlight, Inputs, Layout, Light, LightPlacement, Renderer};
use glint_core::{Poses, RayCaster, Scene};

use crate::SimError;
use crate::fields::Fields;
use crate::sensors::{Demand, Frame, Sensor, SensorContext, SensorKind};

/// Every active camera's images of every world, as [`Layout`] stacks them.
#[derive(Clone, Debug)]
pub struct CameraFrames {
    /// Where each camera's pixels are.
    pub layout: Layout,
    /// Worlds.
    pub nworld: usize,
    /// 8-bit RGB, `nworld × pixels_per_world × 3`.
    pub rgb: Vec<u8>,
    /// Depth along the optical axis (metres; 0: nothing hit), `nworld × pixels_per_world`.
    pub depth: Vec<f32>,
    /// Geom id (−1: background; `ngeom + k`: skin `k`), `nworld × pixels_per_world`.
    pub seg: Vec<i32>,
}

impl CameraFrames {
    /// Buffers for `layout` over `nworld` worlds (black, no depth, background).
    pub(crate) fn blank(layout: Layout, nworld: usize) -> CameraFrames {
        let n = nworld * layout.pixels_per_world;
        CameraFrames { layout, nworld, rgb: vec![0; n * 3], depth: vec![0.0; n], seg: vec![-1; n] }
    }

    /// Camera `slot`'s (position in the layout) image in world `world`: RGB, depth and
    /// segmentation slices with its width and height.
    pub fn image(&self, world: usize, slot: usize) -> (&[u8], &[f32], &[i32], usize, usize) {
        let (model, _) = &self.layout.cameras[slot];
        let (w, h) = (model.width, model.height);
        let start = world * self.layout.pixels_per_world + self.layout.offsets[slot];
        (
            &self.rgb[start * 3..(start + w * h) * 3],
            &self.depth[start..start + w * h],
            &self.seg[start..start + w * h],
            w,
            h,
        )
    }
}

/// The cameras a simulation renders, the renderer with the model's textures, and the frames
/// of the last tick's render.
pub(crate) struct CameraSet {
    renderer: Renderer,
    headlight: Headlight,
    /// Per camera of the layout, how many lidar ticks apart a recording takes its frames.
    record_every: Vec<u64>,
    /// The last tick's frames (only the pairs it was asked for are current).
    frames: CameraFrames,
}

/// What a render reads of the world besides the cameras.
pub(crate) struct RenderWorld<'a> {
    pub(crate) scene: &'a Scene,
    pub(crate) poses: &'a Poses,
    pub(crate) caster: &'a RayCaster,
    pub(crate) fields: &'a Fields,
    /// Per world, the key of its depth-sensor noise for this frame
    /// ([`depth_noise_keys`]).
    pub(crate) depth_noise: &'a [u64],
}

/// Per world, the depth-sensor noise key of the frame after `ticks` ticks of the episode of
/// seed `seeds[w]`: the same episode and tick measure the same depth.
pub(crate) fn depth_noise_keys(seeds: &[u64], ticks: &[u64]) -> Vec<u64> {
    seeds.iter().zip(ticks).map(|(&seed, &tick)| glint_camera::frame_key(seed, tick)).collect()
}

impl CameraSet {
    /// `layout`'s cameras over `nworld` worlds, rendered by `renderer` under `headlight`,
    /// each recorded every `every` ticks.
    pub(crate) fn new(
        layout: Layout,
        renderer: Renderer,
        headlight: Headlight,
        nworld: usize,
        every: u64,
    ) -> CameraSet {
        let record_every = vec![every; layout.cameras.len()];
        CameraSet { renderer, headlight, record_every, frames: CameraFrames::blank(layout, nworld) }
    }

    /// The cameras' layout.
    pub(crate) fn layout(&self) -> &Layout {
        &self.frames.layout
    }

    /// The renderer, to take over for a new layout.
    pub(crate) fn into_renderer(self) -> Renderer {
        self.renderer
    }

    /// Ticks between camera `slot`'s recorded frames.
    pub(crate) fn every(&self, slot: usize) -> u64 {
        self.record_every[slot]
    }

    /// Records camera `slot` every `every` ticks.
    pub(crate) fn set_every(&mut self, slot: usize, every: u64) {
        self.record_every[slot] = every;
    }

    /// Renders the pairs `wanted` keeps (world, camera slot) into `frames`, every camera of
    /// every world laid out as the layout says.
    pub(crate) fn render(
        &self,
        world: &RenderWorld,
        frames: Frames,
        wanted: &(dyn Fn(usize, usize) -> bool + Sync),
    ) -> Result<(), SimError> {
        render(&self.renderer, self.headlight, self.layout(), world, frames, wanted)
    }
}

/// Renders `layout`'s pairs that `wanted` keeps (world, camera slot) into `frames`.
fn render(
    renderer: &Renderer,
    headlight: Headlight,
    layout: &Layout,
    world: &RenderWorld,
    frames: Frames,
    wanted: &(dyn Fn(usize, usize) -> bool + Sync),
) -> Result<(), SimError> {
    let nworld = world.poses.nworld;
    let lights: Vec<Vec<Light>> = (0..nworld).map(|w| world_lights(world, w)).collect();
    let input = Inputs {
        scene: world.scene,
        poses: world.poses,
        caster: world.caster,
        lights: &lights,
        headlight,
        fields: world.fields,
        depth_noise: world.depth_noise,
    };
    Ok(renderer.render_where(input, layout, frames, wanted)?)
}

impl Sensor for CameraSet {
    fn kind(&self) -> SensorKind {
        SensorKind::Camera
    }

    fn name(&self) -> &str {
        "camera"
    }

    fn units(&self) -> usize {
        self.layout().cameras.len()
    }

    fn unit_name(&self, unit: usize) -> String {
        self.layout().cameras[unit].0.name.clone()
    }

    /// Renders the (world, camera) pairs asked for, and no other.
    fn tick(&mut self, ctx: &SensorContext, demand: &Demand) -> Result<(), SimError> {
        if !demand.any() {
            return Ok(());
        }
        let keys = depth_noise_keys(ctx.episode_seeds, ctx.episode_ticks);
        let world = RenderWorld {
            scene: ctx.scene,
            poses: ctx.poses,
            caster: ctx.caster,
            fields: ctx.fields,
            depth_noise: &keys,
        };
        let CameraFrames { layout, rgb, depth, seg, .. } = &mut self.frames;
        let buffers = Frames { rgb: Some(rgb), depth: Some(depth), seg: Some(seg) };
        render(&self.renderer, self.headlight, layout, &world, buffers, &|w, slot| demand.wants(slot, w))
    }

    fn emit(
        &mut self,
        ctx: &SensorContext,
        world: usize,
        demand: &Demand,
        out: &mut dyn FnMut(usize, Frame<'_>) -> Result<(), SimError>,
    ) -> Result<(), SimError> {
        let ncam = ctx.scene.ncam();
        for slot in (0..self.units()).filter(|&slot| demand.wants(slot, world)) {
            let (model, options) = &self.frames.layout.cameras[slot];
            let camera = model.camera;
            let (rgb, depth, _, width, height) = self.frames.image(world, slot);
            let i = world * ncam + camera;
            let frame = Frame::Camera {
                camera,
                rgb: if options.render_rgb { rgb } else { &[] },
                depth: if options.render_depth { depth } else { &[] },
                size: (width, height),
                pose: (ctx.poses.cam_xpos[i], ctx.poses.cam_xmat[i]),
            };
            out(slot, frame)?;
        }
        Ok(())
    }
}

/// World `w`'s active lights, with its light fields, as the renderer takes them.
fn world_lights(world: &RenderWorld, w: usize) -> Vec<Light> {
    let scene = world.scene;
    (0..scene.nlight())
        .map(|i| (i, world.fields.light(scene, world.poses, w, i)))
        .filter(|(_, state)| state.active)
        .map(|(i, state)| {
            let at = LightPlacement {
                light_type: state.light_type,
                pos: state.xpos,
                dir: state.xdir,
                diffuse: state.diffuse,
                castshadow: state.castshadow,
            };
            Light::of_scene(scene, i, at)
        })
        .collect()
}

/// The headlight of `model` as the renderer takes it.
pub(crate) fn headlight(model: &glint_mujoco::Model) -> Headlight {
    let h = model.headlight();
    Headlight {
        active: h.active,
        ambient: Vec3::from_array(h.ambient),
        diffuse: Vec3::from_array(h.diffuse),
        specular: Vec3::from_array(h.specular),
    }
}
