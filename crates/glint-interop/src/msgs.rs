//! The ROS 2 messages glint writes, with their definitions as MCAP's `ros2msg` schema
//! encoding carries them (the type's own fields, then each type it uses after a line of 80
//! `=` and `MSG: <package>/<Type>`, as rosbag2 writes them). Field names and order are those
//! of ROS 2 Jazzy's `sensor_msgs`, `std_msgs`, `geometry_msgs`, `tf2_msgs` and
//! `builtin_interfaces`.

use glam::{DQuat, DVec3};

use crate::cdr::Cdr;

/// `builtin_interfaces/Time` of a simulated time in nanoseconds.
fn time(c: &mut Cdr, ns: u64) {
    c.i32((ns / 1_000_000_000) as i32);
    c.u32((ns % 1_000_000_000) as u32);
}

/// `std_msgs/Header`.
fn header(c: &mut Cdr, stamp_ns: u64, frame_id: &str) {
    time(c, stamp_ns);
    c.string(frame_id);
}

/// Simulated seconds as nanoseconds (rounded; negative times are 0).
pub fn nanoseconds(seconds: f64) -> u64 {
    (seconds * 1e9).round().max(0.0) as u64
}

/// A `sensor_msgs/PointField` datatype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Datatype {
    /// `UINT8`.
    U8 = 2,
    /// `UINT16`.
    U16 = 4,
    /// `INT32`.
    I32 = 5,
    /// `UINT32`.
    U32 = 6,
    /// `FLOAT32`.
    F32 = 7,
    /// `FLOAT64`.
    F64 = 8,
}

/// One `sensor_msgs/PointField`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PointField {
    /// Its name.
    pub name: &'static str,
    /// Byte offset in a point.
    pub offset: u32,
    /// Its type.
    pub datatype: Datatype,
}

/// A `sensor_msgs/PointCloud2` being written: one row of points (unorganised),
/// little-endian, every point finite; the points are appended in place
/// ([`PointCloud2::data`]) and the counts filled in by [`PointCloud2::finish`].
pub struct PointCloud2 {
    cdr: Cdr,
    width_at: usize,
    row_step_at: usize,
    len_at: usize,
    data_start: usize,
    point_step: u32,
}

impl PointCloud2 {
    /// Starts a cloud in `buf` (reused) stamped `stamp_ns` in `frame_id`, its points of
    /// `point_step` bytes with `fields`.
    pub fn begin(buf: Vec<u8>, stamp_ns: u64, frame_id: &str, fields: &[PointField], point_step: u32) -> PointCloud2 {
        let mut c = Cdr::reusing(buf);
        header(&mut c, stamp_ns, frame_id);
        c.u32(1);
        let width_at = c.u32_slot();
        c.u32(fields.len() as u32);
        for f in fields {
            c.string(f.name);
            c.u32(f.offset);
            c.u8(f.datatype as u8);
            c.u32(1);
        }
        c.bool(false);
        c.u32(point_step);
        let row_step_at = c.u32_slot();
        let len_at = c.u32_slot();
        let data_start = c.raw().len();
        PointCloud2 { cdr: c, width_at, row_step_at, len_at, data_start, point_step }
    }

    /// The message's bytes, to append whole points to.
    pub fn data(&mut self) -> &mut Vec<u8> {
        self.cdr.raw()
    }

    /// The finished message.
    pub fn finish(mut self) -> Vec<u8> {
        let len = self.cdr.raw().len() - self.data_start;
        let width = (len / self.point_step.max(1) as usize) as u32;
        self.cdr.patch_u32(self.width_at, width);
        self.cdr.patch_u32(self.row_step_at, width * self.point_step);
        self.cdr.patch_u32(self.len_at, len as u32);
        self.cdr.bool(true);
        self.cdr.into_bytes()
    }
}

/// One `geometry_msgs/TransformStamped`: `child` in `parent` at `stamp_ns`, its origin and
/// orientation (w, x, y, z) in the parent's frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Transform {
    /// Stamp, simulated nanoseconds.
    pub stamp_ns: u64,
    /// The parent frame.
    pub parent: String,
    /// The child frame.
    pub child: String,
    /// The child's origin in the parent, metres.
    pub translation: [f64; 3],
    /// The child's orientation in the parent, unit quaternion (w, x, y, z).
    pub rotation: [f64; 4],
}

impl Transform {
    /// `child` in `parent` at `stamp_ns`: its origin and orientation there.
    pub fn at(stamp_ns: u64, parent: &str, child: &str, translation: DVec3, rotation: DQuat) -> Transform {
        Transform {
            stamp_ns,
            parent: parent.to_string(),
            child: child.to_string(),
            translation: translation.to_array(),
            rotation: [rotation.w, rotation.x, rotation.y, rotation.z],
        }
    }

    /// `child` in `world` at `time` (simulated seconds).
    pub fn in_world(child: &str, time: f64, origin: DVec3, rotation: DQuat) -> Transform {
        Transform::at(nanoseconds(time), "world", child, origin, rotation)
    }
}

/// `tf2_msgs/TFMessage`.
pub fn tf_message(transforms: &[Transform]) -> Vec<u8> {
    let mut c = Cdr::with_capacity(transforms.len() * 120);
    c.u32(transforms.len() as u32);
    for t in transforms {
        header(&mut c, t.stamp_ns, &t.parent);
        c.string(&t.child);
        c.f64_array(&t.translation);
        let [w, x, y, z] = t.rotation;
        c.f64_array(&[x, y, z, w]);
    }
    c.into_bytes()
}

/// `sensor_msgs/Image`: `height` rows of `step` bytes in `encoding`, little-endian.
pub fn image(
    stamp_ns: u64,
    frame_id: &str,
    (width, height): (u32, u32),
    encoding: &str,
    step: u32,
    data: &[u8],
) -> Vec<u8> {
    let mut c = Cdr::with_capacity(data.len() + 64);
    header(&mut c, stamp_ns, frame_id);
    c.u32(height);
    c.u32(width);
    c.string(encoding);
    c.u8(0);
    c.u32(step);
    c.bytes(data);
    c.into_bytes()
}

/// `sensor_msgs/CompressedImage` in `format` (`png`, `jpeg`).
pub fn compressed_image(stamp_ns: u64, frame_id: &str, format: &str, data: &[u8]) -> Vec<u8> {
    let mut c = Cdr::with_capacity(data.len() + 64);
    header(&mut c, stamp_ns, frame_id);
    c.string(format);
    c.bytes(data);
    c.into_bytes()
}

/// `sensor_msgs/CameraInfo` of an ideal pinhole (no distortion: `plumb_bob` with zero
/// coefficients) with focal lengths and principal point `fx, fy, cx, cy` in pixels.
pub fn camera_info(stamp_ns: u64, frame_id: &str, (width, height): (u32, u32), [fx, fy, cx, cy]: [f64; 4]) -> Vec<u8> {
    let mut c = Cdr::with_capacity(512);
    header(&mut c, stamp_ns, frame_id);
    c.u32(height);
    c.u32(width);
    c.string("plumb_bob");
    c.f64_seq(&[0.0; 5]);
    c.f64_array(&[fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0]);
    c.f64_array(&[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    c.f64_array(&[fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0]);
    c.u32(0);
    c.u32(0);
    // The region of interest: none (the whole image).
    for _ in 0..4 {
        c.u32(0);
    }
    c.bool(false);
    c.into_bytes()
}

/// A message type glint writes: its name and its `ros2msg` definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MessageType {
    /// `sensor_msgs/msg/PointCloud2`.
    PointCloud2,
    /// `tf2_msgs/msg/TFMessage`.
    TfMessage,
    /// `sensor_msgs/msg/Image`.
    Image,
    /// `sensor_msgs/msg/CompressedImage`.
    CompressedImage,
    /// `sensor_msgs/msg/CameraInfo`.
    CameraInfo,
}

const TIME: &str = "builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n";
const HEADER: &str = "std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\n";
const POINT_FIELD: &str = "sensor_msgs/PointField\nuint8 INT8=1\nuint8 UINT8=2\nuint8 INT16=3\nuint8 UINT16=4\n\
uint8 INT32=5\nuint8 UINT32=6\nuint8 FLOAT32=7\nuint8 FLOAT64=8\nstring name\nuint32 offset\nuint8 datatype\nuint32 count\n";
const TRANSFORM_STAMPED: &str = "geometry_msgs/TransformStamped\nstd_msgs/Header header\nstring child_frame_id\ngeometry_msgs/Transform transform\n";
const TRANSFORM: &str =
    "geometry_msgs/Transform\ngeometry_msgs/Vector3 translation\ngeometry_msgs/Quaternion rotation\n";
const VECTOR3: &str = "geometry_msgs/Vector3\nfloat64 x\nfloat64 y\nfloat64 z\n";
const QUATERNION: &str = "geometry_msgs/Quaternion\nfloat64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n";
const ROI: &str =
    "sensor_msgs/RegionOfInterest\nuint32 x_offset\nuint32 y_offset\nuint32 height\nuint32 width\nbool do_rectify\n";

impl MessageType {
    /// Every type glint writes.
    pub const ALL: [MessageType; 5] = [
        MessageType::PointCloud2,
        MessageType::TfMessage,
        MessageType::Image,
        MessageType::CompressedImage,
        MessageType::CameraInfo,
    ];

    /// The type's name, as MCAP's schema record and rosbag2 spell it.
    pub fn name(self) -> &'static str {
        match self {
            MessageType::PointCloud2 => "sensor_msgs/msg/PointCloud2",
            MessageType::TfMessage => "tf2_msgs/msg/TFMessage",
            MessageType::Image => "sensor_msgs/msg/Image",
            MessageType::CompressedImage => "sensor_msgs/msg/CompressedImage",
            MessageType::CameraInfo => "sensor_msgs/msg/CameraInfo",
        }
    }

    /// Its `ros2msg` definition, the types it uses appended.
    pub fn definition(self) -> String {
        let (own, used): (&str, &[&str]) = match self {
            MessageType::PointCloud2 => (
                "std_msgs/Header header\nuint32 height\nuint32 width\nsensor_msgs/PointField[] fields\nbool is_bigendian\n\
                 uint32 point_step\nuint32 row_step\nuint8[] data\nbool is_dense\n",
                &[HEADER, TIME, POINT_FIELD],
            ),
            MessageType::TfMessage => (
                "geometry_msgs/TransformStamped[] transforms\n",
                &[TRANSFORM_STAMPED, HEADER, TIME, TRANSFORM, VECTOR3, QUATERNION],
            ),
            MessageType::Image => (
                "std_msgs/Header header\nuint32 height\nuint32 width\nstring encoding\nuint8 is_bigendian\nuint32 step\n\
                 uint8[] data\n",
                &[HEADER, TIME],
            ),
            MessageType::CompressedImage => ("std_msgs/Header header\nstring format\nuint8[] data\n", &[HEADER, TIME]),
            MessageType::CameraInfo => (
                "std_msgs/Header header\nuint32 height\nuint32 width\nstring distortion_model\nfloat64[] d\n\
                 float64[9] k\nfloat64[9] r\nfloat64[12] p\nuint32 binning_x\nuint32 binning_y\n\
                 sensor_msgs/RegionOfInterest roi\n",
                &[HEADER, TIME, ROI],
            ),
        };
        let mut text = own.to_string();
        for u in used {
            let (name, fields) = u.split_once('\n').unwrap_or((u, ""));
            text.push_str(&format!("{}\nMSG: {name}\n{fields}", "=".repeat(80)));
        }
        text
    }
}
