//! The MJCF rangefinders cast by glint's BVH against MuJoCo's own `sensordata`, on every step
//! of a run of a scene with moving bodies (`tests/data/rangefinders.xml`): a fan on a
//! swinging arm, free bodies tumbling to the floor, one that always misses, one inside a
//! static sphere, one with a cutoff, one with every data field, one with noise, and geoms of
//! groups 3-5 and a mesh.

use std::path::PathBuf;

use glint_sim::{Frame, Output, SensorKind, SimError, SimOptions, Simulation, TickFrame, Warning};

fn scene() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/rangefinders.xml")
}

fn simulation(nworld: usize) -> Simulation {
    Simulation::from_xml_file(scene(), Vec::new(), SimOptions { nworld, ..SimOptions::default() }).unwrap()
}

/// Per world, the rangefinders' values as MuJoCo's `sensordata` holds them, in glint's order.
fn mujoco_values(sim: &Simulation, w: usize) -> Vec<f64> {
    let data = sim.sensordata(w).unwrap();
    sim.rangefinder_sensors().iter().flat_map(|f| data[f.adr..f.adr + f.dim].iter().copied()).collect()
}

#[test]
fn rangefinders_equal_mujoco_sensordata_on_every_step() {
    let mut sim = simulation(2);
    let names = sim.rangefinder_names().to_vec();
    assert_eq!(sim.rangefinder_sensors().len(), 18, "every rangefinder of the scene: {names:?}");
    assert_eq!(names.len(), 18 - 2 + 14 + 4, "the fields sensor has 14 values, the ball's side one 4");
    assert!(names.contains(&"fields/normal_z".to_string()) && names.contains(&"sky".to_string()));
    let column = |name: &str| names.iter().position(|n| n == name).unwrap();
    let (sky, inside, cut, noisy) = (column("sky"), column("inside"), column("cut"), column("noisy"));
    let width = names.len();

    // Seen over the run: misses, hits, the cutoff clamping both ways.
    let (mut misses, mut hits, mut clamped) = (0usize, 0usize, 0usize);
    let mut worst_normal = 0.0f64;
    for step in 0..=1000 {
        if step > 0 {
            sim.step(None).unwrap();
        }
        let glint = sim.rangefinders().unwrap();
        assert_eq!(glint.len(), 2 * width);
        for w in 0..2 {
            let row = &glint[w * width..(w + 1) * width];
            let mujoco = mujoco_values(&sim, w);
            for (k, (&g, &m)) in row.iter().zip(&mujoco).enumerate() {
                if names[k].contains("/normal_") {
                    // Surface normals: MuJoCo and glint's core may round the last bit apart.
                    worst_normal = worst_normal.max((g - m).abs());
                    assert!((g - m).abs() <= 1e-12, "step {step}, world {w}, {}: glint {g}, MuJoCo {m}", names[k]);
                } else {
                    assert!(g == m, "step {step}, world {w}, {}: glint {g}, MuJoCo {m}", names[k]);
                }
            }
            assert_eq!(row[sky], -1.0, "nothing above the sky site");
            assert!((row[inside] - 0.5).abs() < 1e-12, "from the centre of the 0.5 m sphere to its inside");
            assert!(row[cut].abs() <= 0.5, "the cutoff clamps to ±0.5");
            misses += row.iter().filter(|&&v| v == -1.0).count();
            hits += row.iter().filter(|&&v| v > 0.0).count();
            clamped += usize::from(row[cut].abs() == 0.5);
            let _ = row[noisy]; // MuJoCo adds no noise: the equality above covers it
        }
    }
    assert!(misses > 2000 && hits > 20000 && clamped > 1000, "misses {misses}, hits {hits}, clamped {clamped}");
    println!("largest normal difference from MuJoCo: {worst_normal:e}");

    // After a reset the values are the new state's, as MuJoCo's are.
    sim.reset(glint_sim::Worlds::One(1), None).unwrap();
    let glint = sim.rangefinders().unwrap();
    assert!(glint[width..].iter().zip(&mujoco_values(&sim, 1)).all(|(g, m)| (g - m).abs() <= 1e-12));
}

/// World 0's rangefinder frames: (tick, values, names).
type Kept = std::sync::Arc<std::sync::Mutex<Vec<(u64, Vec<f64>, usize)>>>;

/// Keeps world 0's rangefinder frames.
struct Keep(Kept);

impl Output for Keep {
    fn wants(&self, (kind, _): (SensorKind, usize), _unit: usize, world: usize, _tick: u64) -> bool {
        kind == SensorKind::Rangefinder && world == 0
    }

    fn write(&mut self, f: &TickFrame) -> Result<(), SimError> {
        if let Frame::Rangefinders { values, names } = f.frame {
            self.0.lock().unwrap().push((f.tick, values.to_vec(), names.len()));
        }
        Ok(())
    }
}

#[test]
fn outputs_get_the_values_of_each_tick_through_the_sensor_seam() {
    let mut sim = simulation(2);
    let kept = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    sim.add_output(Box::new(Keep(kept.clone())));
    for tick in 1..=20u64 {
        sim.step(None).unwrap();
        let kept = kept.lock().unwrap();
        let (t, values, names) = kept.last().unwrap();
        assert_eq!((*t, *names), (tick, sim.rangefinder_names().len()));
        let mujoco = mujoco_values(&sim, 0);
        assert!(values.iter().zip(&mujoco).all(|(g, m)| (g - m).abs() <= 1e-12), "tick {tick}");
        assert_eq!(values[..], sim.rangefinders().unwrap()[..values.len()], "the frame is the state's values");
    }
    assert_eq!(kept.lock().unwrap().len(), 20, "one frame per tick of world 0");
}

#[test]
fn a_camera_rangefinder_is_left_to_mujoco_with_a_warning() {
    let xml = r#"<mujoco><worldbody><geom type="plane" size="5 5 .1"/>
        <camera name="eye" pos="0 0 2" resolution="4 3"/><site name="s" pos="0 0 1" zaxis="0 0 -1"/>
        </worldbody><sensor><rangefinder name="depth" camera="eye"/><rangefinder name="down" site="s"/></sensor>
        </mujoco>"#;
    let mut sim = Simulation::from_xml(xml, Vec::new(), SimOptions::default()).unwrap();
    assert_eq!(sim.rangefinder_names(), ["down"]);
    let warnings = sim.take_warnings();
    assert!(
        warnings.iter().any(|w| matches!(w, Warning::RangefinderSkipped { sensor, .. } if sensor == "depth")),
        "{warnings:?}"
    );
    assert_eq!(
        sim.rangefinders().unwrap(),
        [-1.0],
        "a site of the world body ignores the world's geoms, the floor too"
    );
    assert_eq!(sim.sensordata(0).unwrap()[12], -1.0, "after the camera's 12 values, as MuJoCo has it");
    let mut wrong = [0.0; 3];
    let err = sim.rangefinders_into(&mut wrong).unwrap_err().to_string();
    assert!(err.contains("rangefinder buffer") && err.contains('1'), "{err}");
}

#[test]
fn a_scene_without_rangefinders_has_none() {
    let xml = r#"<mujoco><worldbody><geom type="plane" size="5 5 .1"/></worldbody></mujoco>"#;
    let sim = Simulation::from_xml(xml, Vec::new(), SimOptions::default()).unwrap();
    assert!(sim.rangefinder_names().is_empty());
    assert!(sim.rangefinders().unwrap().is_empty());
}

#[test]
fn the_observation_reads_the_rangefinders_of_the_state() {
    let mut sim = simulation(2);
    sim.set_observation(&[
        glint_sim::ObservationComponent::JointPositions,
        glint_sim::ObservationComponent::Rangefinders,
    ])
    .unwrap();
    let nq = sim.joint_positions(0).unwrap().len();
    let names = sim.observation().names().to_vec();
    assert_eq!(names.len(), nq + sim.rangefinder_names().len());
    assert_eq!(names[nq], format!("rangefinders/{}", sim.rangefinder_names()[0]));
    let size = sim.observation().size();
    for _ in 0..50 {
        sim.step(None).unwrap();
        let mut all = vec![0.0f32; 2 * size];
        sim.observe_all(&mut all).unwrap();
        for w in 0..2 {
            let expected: Vec<f32> = mujoco_values(&sim, w).iter().map(|&v| v as f32).collect();
            assert_eq!(all[w * size + nq..(w + 1) * size], expected[..], "world {w}");
            let mut one = vec![0.0f32; size];
            sim.observe(w, &mut one).unwrap();
            assert_eq!(one[..], all[w * size..(w + 1) * size]);
        }
    }
}

#[test]
fn a_recording_holds_every_ticks_rangefinder_values_and_survives_a_kill() {
    let out = std::env::temp_dir().join(format!("glint-rangefinder-recording-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut sim = simulation(2);
    let options = glint_sim::RecordingOptions { out: Some(out.clone()), episodes: 1 };
    let dir = sim.arm_recording(&options).unwrap();
    // Per world, the values MuJoCo's `sensordata` holds after each tick.
    let mut expected: Vec<Vec<f64>> = vec![Vec::new(), Vec::new()];
    for _ in 0..30 {
        sim.step(None).unwrap();
        for (w, rows) in expected.iter_mut().enumerate() {
            rows.extend(mujoco_values(&sim, w));
        }
    }
    sim.stop_recording(glint_record::EpisodeStatus::Interrupted).unwrap();
    assert!(glint_record::check_session(&dir).unwrap().ok(), "{:?}", glint_record::check_session(&dir).unwrap());
    let log = std::fs::read_to_string(dir.join("meta/episodes.jsonl")).unwrap();
    for (episode, rows) in expected.iter().enumerate() {
        let rel = glint_record::TickTable::Rangefinders.file(episode as u32);
        assert!(log.contains(&rel.to_string_lossy().to_string()), "episodes.jsonl lists {rel:?}: {log}");
        let table = glint_record::read_tick_table(&dir.join(&rel)).unwrap();
        assert_eq!(table.names, sim.rangefinder_names());
        assert_eq!(table.timestamp.len(), 30, "one row per tick");
        assert!(table.timestamp.windows(2).all(|t| t[1] > t[0]));
        for (k, (g, m)) in table.values.iter().zip(rows).enumerate() {
            assert!((g - m).abs() <= 1e-12, "episode {episode}, value {k}: recorded {g}, MuJoCo {m}");
        }
    }

    // A run killed mid-episode leaves the table `.partial` with its log; `recover` rebuilds it.
    let killed = dir.join(glint_record::TickTable::Rangefinders.file(0));
    let partial = killed.with_extension("parquet.partial");
    let table = glint_record::read_tick_table(&killed).unwrap();
    std::fs::rename(&killed, &partial).unwrap();
    std::fs::remove_file(killed.with_extension("json")).unwrap();
    assert!(!glint_record::check_session(&dir).unwrap().ok(), "a .partial table is reported");
    let report = glint_record::recover_session(&dir).unwrap();
    assert!(
        report.files.iter().any(|f| matches!(f.outcome, glint_record::SalvageOutcome::TableRecovered { rows: 30, .. })),
        "{report:?}"
    );
    assert_eq!(glint_record::read_tick_table(&killed).unwrap(), table);
    assert!(glint_record::check_session(&dir).unwrap().ok());
    std::fs::remove_dir_all(&out).unwrap();
}
