//! The loop `glint.gym.VectorEnv` runs, driven from Rust, for `python -m glint.bench gym`'s
//! Python-against-Rust figure.

use std::path::PathBuf;
use std::time::Instant;

use glint_sim::{SimOptions, Worlds};
use numpy::PyUntypedArrayMethods;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::arrays::float64_input;
use crate::convert::Seed;
use crate::errors::IntoPy;

/// The loop `glint.gym.VectorEnv` runs, driven from Rust, over `nworld` worlds of the manifest
/// at `path`: each step applies uniform random actions within the actuators' control ranges
/// (±1 where unlimited), gathers every world's observation, and resets the worlds whose
/// episodes ended. `run(steps)` runs steps and returns the seconds they took, so that a
/// benchmark can alternate it with the Python-driven loop in short runs; `run(steps, actions)`
/// takes the given actions instead, so that both loops drive the robots alike.
#[pyclass(module = "glint._glint", unsendable)]
pub struct VectorLoop {
    sim: glint_sim::Simulation,
    seed: u64,
    /// Each actuator's control range.
    ranges: Vec<[f64; 2]>,
    actions: Vec<f64>,
    observations: Vec<f32>,
    /// The state of a small xorshift generator: the figure measures the loop, not the RNG.
    rng: u64,
}

impl VectorLoop {
    fn uniform(&mut self) -> f64 {
        let s = &mut self.rng;
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        (*s >> 11) as f64 / (1u64 << 53) as f64
    }

    /// One step with `given` actions (`nworld × nu`), or uniform random ones.
    fn step(&mut self, given: Option<&[f64]>) -> Result<(), glint_sim::SimError> {
        let nu = self.ranges.len();
        match given {
            Some(actions) => self.actions.copy_from_slice(actions),
            None => {
                for i in 0..self.actions.len() {
                    let [lo, hi] = self.ranges[i % nu];
                    self.actions[i] = lo + (hi - lo) * self.uniform();
                }
            }
        }
        let (actions, observations) = (&self.actions, &mut self.observations);
        self.sim.in_pool(|sim| {
            let report = sim.step(Some(actions))?;
            sim.observe_all(observations)?;
            let done: Vec<usize> = (0..sim.nworld())
                .filter(|&w| {
                    let (terminated, truncated) =
                        report.status[w].terminated_truncated(report.task.get(w).is_some_and(|t| t.reached));
                    terminated || truncated
                })
                .collect();
            if !done.is_empty() {
                sim.reset(Worlds::These(&done), None)?;
            }
            Ok::<_, glint_sim::SimError>(())
        })?;
        std::hint::black_box(&self.observations);
        Ok(())
    }
}

#[pymethods]
impl VectorLoop {
    /// `nworld` worlds of the manifest at `path`, reset with run seed `seed`.
    #[new]
    #[pyo3(signature = (path, nworld = 16, seed = Seed(0)), text_signature = "(path, nworld=16, seed=0)")]
    fn new(py: Python<'_>, path: PathBuf, nworld: usize, seed: Seed) -> PyResult<VectorLoop> {
        let Seed(seed) = seed;
        let options = SimOptions { nworld, seed: Some(seed), ..SimOptions::default() };
        let mut sim = py.detach(|| glint_sim::Simulation::from_manifest(&path, options)).py()?;
        sim.take_warnings();
        sim.set_keep_surfaces(false); // as `Simulation.from_manifest` does
        let ranges: Vec<[f64; 2]> = sim.actuators().into_iter().map(|(_, r)| r.unwrap_or([-1.0, 1.0])).collect();
        let (actions, observations) = (vec![0.0; nworld * ranges.len()], vec![0.0; nworld * sim.observation().size()]);
        let mut this = VectorLoop { sim, seed, ranges, actions, observations, rng: 0 };
        this.reset()?;
        Ok(this)
    }

    /// Starts every world's episode again from the run seed, and the actions' generator too.
    fn reset(&mut self) -> PyResult<()> {
        self.rng = self.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        self.sim.reset(Worlds::All, Some(self.seed)).py()
    }

    /// Runs `steps` steps (the GIL released); returns the seconds they took. `actions`, when
    /// given, holds every step's actions (`(steps, nworld, nu)` float64); otherwise each step
    /// draws uniform random ones.
    #[pyo3(signature = (steps, actions = None))]
    fn run(&mut self, py: Python<'_>, steps: usize, actions: Option<Bound<'_, PyAny>>) -> PyResult<f64> {
        let per_step = self.actions.len();
        let given: Option<Vec<f64>> = match actions {
            None => None,
            Some(a) => {
                let a = float64_input(&a, "actions")?;
                let expected = [steps, self.sim.nworld(), self.ranges.len()];
                if a.shape() != expected {
                    return Err(PyValueError::new_err(format!(
                        "actions have shape {:?}: give {expected:?} (steps, nworld, nu)",
                        a.shape()
                    )));
                }
                Some(a.as_array().iter().copied().collect())
            }
        };
        py.detach(|| {
            let started = Instant::now();
            for k in 0..steps {
                self.step(given.as_ref().map(|g| &g[k * per_step..(k + 1) * per_step]))?;
            }
            Ok(started.elapsed().as_secs_f64())
        })
        .py()
    }
}

/// [`VectorLoop`] in one call: `steps` steps of `nworld` worlds from a reset; returns
/// environment steps per second (`nworld` per loop step).
#[pyfunction]
#[pyo3(
    signature = (path, nworld = 16, steps = 200, seed = Seed(0)),
    text_signature = "(path, nworld=16, steps=200, seed=0)"
)]
pub fn bench_vector_loop(py: Python<'_>, path: PathBuf, nworld: usize, steps: usize, seed: Seed) -> PyResult<f64> {
    let mut bench = VectorLoop::new(py, path, nworld, seed)?;
    let seconds = bench.run(py, steps, None)?;
    Ok((steps * nworld) as f64 / seconds)
}
