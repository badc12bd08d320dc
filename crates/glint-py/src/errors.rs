//! Errors as Python exceptions: the classes of `glint.errors` (each a subclass of
//! `glint.GlintError`, and of `ValueError`, `IndexError` or `FileNotFoundError` where the
//! error is one), carrying the messages the CLI prints.

use glint_sim::SimError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// The `glint.errors` class for `e`.
fn class_name(e: &SimError) -> &'static str {
    match e {
        SimError::Manifest(glint_manifest::ManifestError::Read { .. }) => "ManifestNotFoundError",
        SimError::Manifest(_) => "ManifestError",
        SimError::Mujoco(_) => "SceneError",
        SimError::Lidar(_) | SimError::Rate(_) => "LidarError",
        SimError::NoSuchSensor { .. } | SimError::NoSuchWorld { .. } => "IndexOutOfRangeError",
        SimError::NoSuchBake { .. } => "BakeNotFoundError",
        SimError::NoBake { .. } => "BakeError",
        SimError::Record(_) => "RecordingError",
        SimError::Recording { .. } | SimError::NotRecording(_) => "RecordingStateError",
        SimError::BufferLength { .. } | SimError::Rays(_) => "ShapeError",
        _ => "SettingError",
    }
}

/// A Python exception from a glint error.
pub(crate) fn to_py(e: SimError) -> PyErr {
    raise(class_name(&e), e.to_string())
}

/// A Python exception of `glint.errors.<class>` with `message`.
pub(crate) fn raise(class: &str, message: String) -> PyErr {
    Python::attach(|py| {
        let class = py.import("glint.errors").and_then(|m| m.getattr(class));
        match class {
            Ok(class) => match class.call1((message.clone(),)) {
                Ok(instance) => PyErr::from_value(instance),
                Err(e) => e,
            },
            Err(_) => PyRuntimeError::new_err(message),
        }
    })
}

/// `Result<T, SimError>` into `PyResult<T>`.
pub(crate) trait IntoPy<T> {
    /// The result with its error as a Python exception.
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, SimError> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
