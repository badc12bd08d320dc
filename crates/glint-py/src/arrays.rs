//! Arrays a caller hands in. The `out=` buffers glint fills are checked by one rule with one
//! message: glint writes a buffer row after row, so an array in any other layout (Fortran
//! order, a strided view) would come back scrambled rather than refused. The arrays glint
//! reads (`actions`, `pnt`, `vec`, field values) are anything numpy reads as float64.

use glam::DVec3;
use glint_core::NGROUP;
use numpy::{PyArray2, PyReadonlyArrayDyn, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{Class, raise};

/// `out` when given (see [`checked_out`]), else a new zeroed float32 array of `shape`.
pub(crate) fn out_array<'py>(
    py: Python<'py>,
    out: Option<Bound<'py, PyAny>>,
    shape: [usize; 2],
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    match out {
        Some(out) => checked_out(out, shape),
        None => Ok(PyArray2::zeros(py, shape, false)),
    }
}

/// `out` when it is a writeable, aligned, C-ordered float32 array of `shape`; anything else is
/// a `glint.ShapeError` saying what the buffer must be and what it is. Every `out=` argument
/// of the module goes through here.
pub(crate) fn checked_out(out: Bound<'_, PyAny>, shape: [usize; 2]) -> PyResult<Bound<'_, PyArray2<f32>>> {
    if let Ok(array) = out.cast::<PyArray2<f32>>()
        && fits(array, shape)?
    {
        return Ok(array.clone());
    }
    let want = tuple(&shape);
    Err(raise(
        Class::ShapeError,
        format!(
            "out must be a writeable C-ordered float32 array of shape {want}, such as numpy.zeros({want}, \
             numpy.float32); got {}",
            describe(&out)?
        ),
    ))
}

/// Whether `array` can be filled as the rows of `shape`, world after world.
fn fits(array: &Bound<'_, PyArray2<f32>>, shape: [usize; 2]) -> PyResult<bool> {
    Ok(array.shape() == shape && array.is_c_contiguous() && array.is_aligned() && writeable(array.as_any())?)
}

/// Whether numpy lets the array be written (`array.flags.writeable`).
fn writeable(array: &Bound<'_, PyAny>) -> PyResult<bool> {
    array.getattr("flags")?.getattr("writeable")?.extract()
}

/// What `value` is, for the message: "a float64 array of shape (2, 5760) in Fortran order",
/// "a read-only float32 array of ...", "an object of type list".
fn describe(value: &Bound<'_, PyAny>) -> PyResult<String> {
    let Ok(array) = value.cast::<PyUntypedArray>() else {
        return Ok(format!("an object of type {}", value.get_type().name()?));
    };
    let mut kind = String::new();
    if !writeable(value)? {
        kind.push_str("read-only ");
    }
    if !array.is_aligned() {
        kind.push_str("unaligned ");
    }
    let layout = if array.is_c_contiguous() {
        "C order"
    } else if array.is_fortran_contiguous() {
        "Fortran order"
    } else {
        "a strided layout"
    };
    Ok(format!("a {kind}{} array of shape {} in {layout}", array.dtype().str()?, tuple(array.shape())))
}

/// `shape` as Python writes a tuple: `(2, 5760)`, `(5760,)`, `()`.
pub(crate) fn tuple(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!("({})", shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// `value`, an array argument named `name` that glint reads, as float64: a float64 array as
/// it is, and anything else numpy reads as numbers (a list, a float32 array) converted; a
/// `TypeError` naming the argument otherwise.
pub(crate) fn float64_input<'py>(value: &Bound<'py, PyAny>, name: &str) -> PyResult<PyReadonlyArrayDyn<'py, f64>> {
    if let Ok(array) = value.extract::<PyReadonlyArrayDyn<'py, f64>>() {
        return Ok(array);
    }
    let py = value.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("dtype", "float64")?;
    let converted = py.import("numpy")?.call_method("asarray", (value,), Some(&kwargs));
    converted.and_then(|a| a.extract::<PyReadonlyArrayDyn<'py, f64>>()).map_err(|e| {
        let got = describe(value).unwrap_or_else(|_| "something else".to_string());
        PyTypeError::new_err(format!(
            "{name} must be numbers numpy reads as float64 (an array or lists); got {got} ({e})"
        ))
    })
}

/// The rows of a C-ordered array (one [`out_array`] gave), world after world, to fill.
pub(crate) fn rows<'a>(view: &'a mut numpy::PyReadwriteArray2<'_, f32>) -> PyResult<&'a mut [f32]> {
    // `as_slice_mut` takes Fortran order as readily as C order; `out_array` has ruled it out.
    view.as_slice_mut().map_err(|e| raise(Class::ShapeError, format!("out is not contiguous ({e})")))
}

/// The rays of a `rays()` call, with `mj_multiRay`'s arguments: `pnt` one origin `(3,)`, one
/// per ray `(nray, 3)` or one per world and ray `(nworld, nray, 3)`; `vec` `(nray, 3)` (or
/// `nray × 3` flat, as `mj_multiRay` takes it) or `(nworld, nray, 3)`; `geomgroup` six flags.
pub(crate) struct RayQuery {
    /// Rays per world.
    pub(crate) nray: usize,
    /// Origins, as given (1, `nray` or `nworld × nray`).
    pub(crate) pnt: Vec<DVec3>,
    /// Directions, as given (`nray` or `nworld × nray`).
    pub(crate) vec: Vec<DVec3>,
    /// Which geom groups the rays meet (`None`: all).
    pub(crate) geomgroup: Option<[bool; NGROUP]>,
}

impl RayQuery {
    /// Reads and checks the arguments for `nworld` worlds.
    pub(crate) fn read(
        pnt: &Bound<'_, PyAny>,
        vec: &Bound<'_, PyAny>,
        geomgroup: Option<Vec<u8>>,
        nworld: usize,
    ) -> PyResult<RayQuery> {
        let (pnt, vec) = (float64_input(pnt, "pnt")?, float64_input(vec, "vec")?);
        let vshape = vec.shape().to_vec();
        let nray = match vshape.as_slice() {
            [n, 3] => *n,
            [flat] if flat % 3 == 0 => flat / 3,
            [w, n, 3] if *w == nworld => *n,
            _ => {
                return Err(raise(
                    Class::ShapeError,
                    format!("vec has shape {vshape:?}: give (nray, 3) or (nworld, nray, 3) with nworld = {nworld}"),
                ));
            }
        };
        let pshape = pnt.shape().to_vec();
        let pnt_ok = matches!(pshape.as_slice(), [3]) || pshape == [nray, 3] || pshape == [nworld, nray, 3];
        if !pnt_ok {
            return Err(raise(
                Class::ShapeError,
                format!("pnt has shape {pshape:?}: give (3,), (nray, 3) or (nworld, nray, 3) with nray = {nray}"),
            ));
        }
        let points = |a: &PyReadonlyArrayDyn<'_, f64>| -> Vec<DVec3> {
            a.as_array().iter().copied().collect::<Vec<_>>().chunks_exact(3).map(DVec3::from_slice).collect()
        };
        let geomgroup = match geomgroup {
            None => None,
            Some(g) if g.len() == NGROUP => Some(std::array::from_fn(|i| g[i] != 0)),
            Some(g) => {
                return Err(raise(
                    Class::ShapeError,
                    format!("geomgroup has {} entries: give {NGROUP} (one per geom group)", g.len()),
                ));
            }
        };
        Ok(RayQuery { nray, pnt: points(&pnt), vec: points(&vec), geomgroup })
    }
}
