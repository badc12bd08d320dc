//! Errors as Python exceptions: the classes of `glint.errors` (each a subclass of
//! `glint.GlintError`, and of `ValueError`, `IndexError`, `FileNotFoundError`, `OSError` or
//! `RuntimeError` where the error is one), carrying the messages the CLI prints.
//!
//! Each class is a kind of error of the simulation ([`glint_sim::ErrorKind`], defined once
//! in Rust: gRPC answers the same names) and is looked up once, when the module is imported
//! ([`init`]): a class missing from `glint.errors` stops the import with an error naming it,
//! instead of turning a raise into a bare `RuntimeError`. [`SimError::kind`] is the one place
//! where an error of the simulation meets its class.

use glint_sim::SimError;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// The classes of `glint.errors` glint raises: one per kind of error, named as the kind
/// ([`glint_sim::ErrorKind`], which gRPC names too).
pub(crate) use glint_sim::ErrorKind as Class;

/// The class `e` raises: its kind's ([`SimError::kind`], the one place an error meets its
/// class); `tests/python/test_errors.py` checks each variant's class as Python sees it.
pub(crate) fn class_of(e: &SimError) -> Class {
    e.kind()
}

/// The classes looked up at import, in [`Class::ALL`]'s order, then `GlintWarning`.
static CLASSES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

/// Looks every class up in `glint.errors` (once), checking that it is a `GlintError`.
fn classes(py: Python<'_>) -> PyResult<&[Py<PyType>]> {
    let all = CLASSES.get_or_try_init(py, || {
        let module = py.import("glint.errors")?;
        let base = module.getattr("GlintError")?.cast_into::<PyType>()?;
        let lookup = |name: &str| -> PyResult<Py<PyType>> {
            let class = module.getattr(name).and_then(|c| Ok(c.cast_into::<PyType>()?)).map_err(|e| {
                PyTypeError::new_err(format!("glint.errors.{name} is not a class glint can raise ({e})"))
            })?;
            Ok(class.unbind())
        };
        let mut all = Vec::with_capacity(Class::ALL.len() + 1);
        for class in Class::ALL {
            let found = lookup(class.name())?;
            if !found.bind(py).is_subclass(&base)? {
                return Err(PyTypeError::new_err(format!(
                    "glint.errors.{} does not derive from glint.errors.GlintError",
                    class.name()
                )));
            }
            all.push(found);
        }
        all.push(lookup("GlintWarning")?);
        Ok::<_, PyErr>(all)
    })?;
    Ok(all.as_slice())
}

/// Looks the classes up; called when the module is imported, so a missing one fails the import.
pub(crate) fn init(py: Python<'_>) -> PyResult<()> {
    classes(py).map(|_| ())
}

/// `glint.GlintWarning`, the category of the warnings glint passes to Python.
pub(crate) fn warning_class(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    let all = classes(py)?;
    Ok(all[Class::ALL.len()].bind(py).clone())
}

/// An exception of `class` with `message`.
pub(crate) fn raise(class: Class, message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| match classes(py) {
        Ok(all) => {
            let index = Class::ALL.iter().position(|&c| c == class).expect("every class is in Class::ALL");
            PyErr::from_type(all[index].bind(py).clone(), message)
        }
        Err(e) => e,
    })
}

/// A Python exception from a glint error: its class is [`class_of`]'s.
pub(crate) fn to_py(e: SimError) -> PyErr {
    raise(class_of(&e), e.to_string())
}

/// A Python exception from an error of a crate below the simulation (a `LidarError`, a
/// `ManifestError`, ...), classed as the simulation's error wrapping it would be.
pub(crate) fn from_sim(e: impl Into<SimError>) -> PyErr {
    to_py(e.into())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_class_is_named_once_and_in_order() {
        let names: Vec<&str> = Class::ALL.iter().map(|c| c.name()).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert_eq!(Class::ALL[3], Class::LidarError);
        assert_eq!(Class::LidarError.name(), "LidarError");
    }

    #[test]
    fn wrapped_errors_are_classed_by_their_variant() {
        let lidar = glint_lidar::LidarError::Conflict("x".into());
        assert_eq!(class_of(&SimError::from(lidar)), Class::LidarError);
        assert_eq!(class_of(&SimError::NoSuchWorld { world: 3, nworld: 1 }), Class::IndexOutOfRangeError);
        assert_eq!(class_of(&SimError::Setting("x".into())), Class::SettingError);
    }
}
