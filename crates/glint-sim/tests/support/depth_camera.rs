//! Shared by the depth-sensor tests: one camera's depth frame.

use glint_camera::{CameraOptions, DepthSensor};
use glint_sim::Simulation;

/// Camera 0's depth at `(w, h)` measured by `sensor`, the camera bound alone.
pub fn depth(sim: &mut Simulation, sensor: DepthSensor, (w, h): (usize, usize)) -> Vec<f32> {
    let options = CameraOptions {
        resolution: Some((w, h)),
        render_rgb: false,
        render_seg: false,
        depth_sensor: sensor,
        ..CameraOptions::new(0)
    };
    sim.set_cameras(vec![options]).unwrap();
    sim.render().unwrap().depth
}
