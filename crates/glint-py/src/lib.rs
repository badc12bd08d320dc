//! glint-py: the Python module `glint` (its compiled part, `glint._glint`). Python types stay
//! here: the classes translate numpy arrays and Python values into calls on
//! [`glint_sim::Simulation`] and back, and errors into the exceptions of `glint.errors` with
//! the CLI's messages.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod arrays;
mod bench;
mod convert;
mod errors;
mod lidar;
mod own;
mod sim;

use pyo3::prelude::*;

/// The compiled part of the `glint` package.
#[pymodule]
fn _glint(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Every exception class is looked up now: one missing from glint.errors fails the import.
    errors::init(m.py())?;
    m.add_class::<sim::Simulation>()?;
    m.add_class::<sim::Fields>()?;
    m.add_class::<sim::StepReport>()?;
    m.add_class::<sim::Recording>()?;
    m.add_class::<lidar::Lidar>()?;
    m.add_class::<lidar::Scan>()?;
    m.add_class::<own::OwnScene>()?;
    m.add_class::<own::lidar::OwnLidar>()?;
    m.add_class::<own::render::OwnRenderer>()?;
    m.add_function(wrap_pyfunction!(own::model_arrays, m)?)?;
    m.add_class::<bench::VectorLoop>()?;
    m.add_function(wrap_pyfunction!(bench::bench_vector_loop, m)?)?;
    let all = [
        "Simulation",
        "Fields",
        "StepReport",
        "Recording",
        "SimulationLidar",
        "Scan",
        "OwnScene",
        "OwnLidar",
        "OwnRenderer",
        "model_arrays",
        "VectorLoop",
        "bench_vector_loop",
    ];
    m.add("__all__", all)?;
    Ok(())
}
