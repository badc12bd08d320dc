//! `glint bench variants`: step-plus-scan throughput of worlds on per-world assets (the
//! manifest's `[variants]`, plus its `[randomize]`) against the same number of identical
//! worlds (the manifest without them), in one process; and the memory the worlds' geometry
//! takes, per world and shared.

use std::path::PathBuf;

use glint_manifest::Manifest;
use serde::Serialize;

use super::median_time;
use crate::{SimError, SimOptions, Simulation};

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct VariantsBench {
    /// A manifest with `[variants]` (and lidars, which fire on every step).
    pub manifest: PathBuf,
    /// Worlds.
    pub worlds: u32,
    /// Steps per timed run.
    pub steps: u32,
    /// Timed runs per measurement (the median is reported).
    pub repeats: u32,
}

/// What `glint bench variants` measures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VariantsReport {
    /// The manifest.
    pub manifest: String,
    /// Worlds.
    pub worlds: usize,
    /// Variants, and the distinct geometries among the worlds.
    pub variants: usize,
    /// Distinct geometries the ray caster holds for the randomized worlds.
    pub geometries: usize,
    /// Meshes, each held once for every world, and their bytes with their BVHs.
    pub meshes: usize,
    /// Bytes of the meshes, height fields and distinct geometries, shared by all worlds.
    pub shared_bytes: usize,
    /// Geometry bytes per randomized world (its top-level BVH, boxes and poses).
    pub bytes_per_world: f64,
    /// The same for identical worlds.
    pub bytes_per_identical_world: f64,
    /// Steps (with every lidar firing) per second of the randomized worlds, all worlds.
    pub randomized_steps_per_s: f64,
    /// The same for identical worlds.
    pub identical_steps_per_s: f64,
    /// `randomized_steps_per_s / identical_steps_per_s` (target at least 0.9).
    pub ratio: f64,
}

fn per_world(sim: &Simulation) -> f64 {
    let (per_world, _) = sim.geometry_bytes();
    per_world.iter().sum::<usize>() as f64 / per_world.len().max(1) as f64
}

/// Builds both simulations, then times `steps` steps of each in turn.
pub fn variants(args: &VariantsBench) -> Result<VariantsReport, SimError> {
    let manifest = Manifest::load(&args.manifest)?;
    if manifest.variants.is_empty() {
        return Err(SimError::Setting(format!(
            "{} has no [variants] table: the benchmark compares worlds on variants with identical ones",
            args.manifest.display()
        )));
    }
    let nvariant = manifest.variants.len();
    let identical_manifest =
        Manifest { variants: Vec::new(), variant_assign: Vec::new(), randomize: Vec::new(), ..manifest.clone() };
    let options = SimOptions { nworld: args.worlds as usize, ..SimOptions::default() };
    let mut randomized = Simulation::from_loaded(manifest, options.clone())?;
    let mut identical = Simulation::from_loaded(identical_manifest, options)?;
    for sim in [&mut randomized, &mut identical] {
        sim.set_lidar_live(true);
    }
    let steps = args.steps.max(1);
    let mut error = None;
    let mut run = |sim: &mut Simulation| {
        for _ in 0..steps {
            if let Err(e) = sim.step(None) {
                error.get_or_insert(e);
            }
        }
    };
    // Interleaved, so that both see the same machine.
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..args.repeats.max(1) {
        a.push(median_time(1, || run(&mut randomized)));
        b.push(median_time(1, || run(&mut identical)));
    }
    if let Some(e) = error {
        return Err(e);
    }
    let (ta, tb) = (super::median(&mut a), super::median(&mut b));
    let rate = |t: f64| f64::from(steps) * args.worlds as f64 / t;
    let (_, shared_bytes) = randomized.geometry_bytes();
    Ok(VariantsReport {
        manifest: args.manifest.display().to_string(),
        worlds: args.worlds as usize,
        variants: nvariant,
        geometries: randomized.distinct_geometries(),
        meshes: randomized.meshes().len(),
        shared_bytes,
        bytes_per_world: per_world(&randomized),
        bytes_per_identical_world: per_world(&identical),
        randomized_steps_per_s: rate(ta),
        identical_steps_per_s: rate(tb),
        ratio: tb / ta,
    })
}
