//! Sensors fixed in a body's frame, hung from that body on `/tf_static` (as
//! `robot_state_publisher` publishes a URDF's fixed joints) rather than from `world` on `/tf`
//! at every tick: each lidar on its site's body, each camera MuJoCo keeps fixed in its body.

use glam::{DMat3, DQuat, DVec3};
use glint_record::SensorMount;

use crate::camera::{OPTICAL_FROM_MUJOCO, optical_frame};
use crate::export::ros_name;
use crate::msgs::Transform;

/// A sensor's ROS frame: a lidar's file name, a camera's optical frame.
pub(crate) fn mount_frame(mount: &SensorMount) -> String {
    match mount.kind.as_str() {
        "camera" => optical_frame(&mount.sensor),
        _ => ros_name(&mount.sensor),
    }
}

/// The sensor frame's pose in the world from the sensor's recorded pose (a camera's is
/// MuJoCo's camera frame, turned into the optical frame).
pub(crate) fn frame_pose(mount: &SensorMount, (origin, rotation): (DVec3, DQuat)) -> (DVec3, DQuat) {
    match mount.kind.as_str() {
        "camera" => (origin, rotation * OPTICAL_FROM_MUJOCO),
        _ => (origin, rotation),
    }
}

/// `child` (a sensor frame at `sensor` in the world) in the frame of the body `parent` at
/// `body` in the world, stamped `stamp_ns`.
pub(crate) fn mount_transform(
    stamp_ns: u64,
    (parent, body): (&str, (DVec3, DMat3)),
    (child, sensor): (&str, (DVec3, DQuat)),
) -> Transform {
    let body_inv = body.1.transpose();
    let rotation = (DQuat::from_mat3(&body_inv) * sensor.1).normalize();
    Transform::at(stamp_ns, parent, child, body_inv * (sensor.0 - body.0), rotation)
}
