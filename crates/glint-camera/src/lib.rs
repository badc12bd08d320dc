//! glint-camera: batch cameras over every world — RGB shaded as MuJoCo's classic renderer
//! shades it, depth along the optical axis and geom segmentation — cast through the same
//! BVHs as the lidar, so depth and segmentation are exactly `mj_ray`'s answers along each
//! pixel's ray (`spec/lighting.md`, "The camera renderer").
//!
//! A [`Layout`] stacks the active cameras' images per world (MuJoCo Warp's layout with
//! per-camera offsets); [`Renderer::render`] fills the caller's buffers in parallel over
//! worlds, cameras and bands of rows.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod camera;
mod depth_model;
mod error;
mod light_path;
mod render;
mod shade;
mod skins;
mod texture;

pub use camera::{CameraModel, CameraOptions, Layout, MAX_SIDE, Projection, camera_name, native_resolution};
pub use depth_model::{
    DebugChannel, DepthPreset, DepthSensor, SensorModel, TargetOrder, frame_key, normal_draw, pixel_key, poisson_draw,
    uniform_draw,
};
pub use error::CameraError;
pub use render::{Frames, Headlight, Inputs, Renderer, SceneFields, WorldFields};
pub use shade::{Light, LightPlacement, MAX_LIGHTS, Surface};
