//! Why a render cannot be set up or run.

use thiserror::Error;

/// A render that cannot be set up or run, phrased for the user.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CameraError {
    /// A camera index past the model's cameras.
    #[error("camera {index} does not exist (the model has {count} cameras)")]
    NoSuchCamera {
        /// The index asked for.
        index: usize,
        /// How many there are.
        count: usize,
    },
    /// A resolution of zero or beyond the renderer's bound.
    #[error("camera '{camera}': resolution {width}x{height} is out of range; use 1 to {max} pixels per side")]
    Resolution {
        /// The camera's name.
        camera: String,
        /// Width asked for.
        width: usize,
        /// Height asked for.
        height: usize,
        /// The largest side allowed.
        max: usize,
    },
    /// A camera model that cannot project (a zero field of view or focal length).
    #[error("camera '{camera}': {message}")]
    Projection {
        /// The camera's name.
        camera: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// An output asked of a camera that is not active.
    #[error("camera '{camera}' is not active (cam_active is off); activate it or ask another camera")]
    Inactive {
        /// The camera's name.
        camera: String,
    },
    /// A caller's buffer of the wrong length.
    #[error("the {what} buffer holds {len} values, and the layout needs {expected}")]
    Buffer {
        /// Which buffer.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The length needed.
        expected: usize,
    },
    /// A depth-sensor setting out of range, or a model glint does not build yet.
    #[error("depth sensor: {0}")]
    DepthSensor(String),
    /// The ray core refused a query.
    #[error(transparent)]
    Rays(#[from] glint_core::CoreError),
}
