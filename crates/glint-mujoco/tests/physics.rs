//! Per-world physics fields: a world with its own body masses, dof dampings or geom
//! frictions steps as a plain MuJoCo run of that variant does, bit for bit, on a model copy
//! shared by every world that has those values.

use std::path::PathBuf;

use glint_mujoco::{Model, PhysicsFields, WorldBatch};
use mujoco_rs::mujoco_c::{mj_setConst, mj_step};
use mujoco_rs::prelude::{MjData, MjModel};

fn primitives() -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", "primitives.xml"].iter().collect()
}

/// `fields` applied to a fresh copy of the scene's model, as a MuJoCo user would: write the
/// arrays, then `mj_setConst`; then `steps` steps from the initial state. Returns qpos.
fn plain_mujoco(fields: &PhysicsFields, steps: usize) -> Vec<f64> {
    let mut mj = MjModel::from_xml(primitives()).unwrap();
    // SAFETY: the test's own model and data; sizes come from the model.
    unsafe {
        let m = mj.ffi_mut();
        std::slice::from_raw_parts_mut(m.body_mass, fields.body_mass.len()).copy_from_slice(&fields.body_mass);
        std::slice::from_raw_parts_mut(m.dof_damping, fields.dof_damping.len()).copy_from_slice(&fields.dof_damping);
        std::slice::from_raw_parts_mut(m.geom_friction, fields.geom_friction.len())
            .copy_from_slice(&fields.geom_friction);
        let model_ptr: *mut mujoco_rs::mujoco_c::mjModel = m;
        let mut scratch = MjData::new(&mj);
        mj_setConst(model_ptr, scratch.ffi_mut());
    }
    let mut d = MjData::new(&mj);
    for _ in 0..steps {
        // SAFETY: model and data belong together.
        unsafe { mj_step(mj.ffi(), d.ffi_mut()) };
    }
    let nq = mj.ffi().nq as usize;
    // SAFETY: qpos holds nq values.
    unsafe { std::slice::from_raw_parts(d.ffi().qpos, nq) }.to_vec()
}

#[test]
fn a_world_with_its_own_physics_steps_as_plain_mujoco_bit_for_bit() {
    let model = Model::from_xml_file(primitives()).unwrap();
    let mut worlds = WorldBatch::new(&model, 3).unwrap();
    let base = worlds.physics(0).unwrap();
    let mut heavy = base.clone();
    for (b, m) in heavy.body_mass.iter_mut().enumerate().skip(1) {
        *m *= 1.0 + 0.5 * b as f64;
    }
    for d in heavy.dof_damping.iter_mut() {
        *d += 0.3;
    }
    for f in heavy.geom_friction.chunks_mut(3) {
        f[0] *= 0.4;
    }
    worlds.set_physics(1, &heavy).unwrap();
    worlds.set_physics(2, &heavy).unwrap();
    assert_eq!(worlds.model_variants(), 1, "worlds with the same values share one copy");
    assert_eq!(worlds.physics(1).unwrap(), heavy);
    let steps = 1000;
    worlds.step(steps);
    let (reference, variant) = (plain_mujoco(&base, steps), plain_mujoco(&heavy, steps));
    assert_eq!(worlds.qpos(0), &reference[..], "world 0 keeps the model's physics");
    assert_eq!(worlds.qpos(1), &variant[..], "bit for bit with MuJoCo's own run of the variant");
    assert_eq!(worlds.qpos(2), &variant[..]);
    assert_ne!(reference, variant, "the variant moves differently");
    // Back to the model's values: no new copy.
    worlds.set_physics(2, &base).unwrap();
    assert_eq!(worlds.model_variants(), 1);
    let mut short = base.clone();
    short.body_mass.pop();
    assert!(worlds.set_physics(0, &short).unwrap_err().to_string().contains("body masses"));
}

/// A damped box sliding down a tilted plane: mass (against the damping), damping, friction,
/// size and position each change how it moves.
const SLOPE: &str = r#"<mujoco>
  <worldbody>
    <geom name="slope" type="plane" size="5 5 0.1" euler="0 15 0" friction="0.1 0.005 0.0001"/>
    <body name="box" pos="0 0 0.4">
      <joint type="free" damping="0.3"/>
      <geom name="box" type="box" size="0.1 0.1 0.1" friction="0.2 0.005 0.0001"/>
    </body>
  </worldbody>
</mujoco>"#;

/// A field's name and a change of it alone.
type FieldEdit = (&'static str, fn(&mut PhysicsFields));

#[test]
fn each_physics_field_alone_changes_the_motion_of_its_world_only() {
    let model = Model::from_xml_str(SLOPE).unwrap();
    let base = WorldBatch::new(&model, 1).unwrap().physics(0).unwrap();
    const BOX: usize = 1;
    let edits: [FieldEdit; 5] = [
        ("body_mass", |f| f.body_mass[1] *= 3.0),
        ("dof_damping", |f| f.dof_damping.iter_mut().for_each(|d| *d *= 4.0)),
        ("geom_friction", |f| f.geom_friction[3 * BOX] = 0.6),
        ("geom_size", |f| f.geom_size[3 * BOX + 2] = 0.2),
        ("geom_pos", |f| f.geom_pos[3 * BOX + 2] = 0.15),
    ];
    let mut reference = WorldBatch::new(&model, 1).unwrap();
    reference.step(500);
    for (name, edit) in edits {
        let mut worlds = WorldBatch::new(&model, 2).unwrap();
        let mut fields = base.clone();
        edit(&mut fields);
        assert_ne!(fields, base, "{name}");
        worlds.set_physics(1, &fields).unwrap();
        worlds.step(500);
        assert_eq!(worlds.qpos(0), reference.qpos(0), "{name}: world 0 keeps the model's physics");
        assert_ne!(worlds.qpos(1), reference.qpos(0), "{name}: world 1 moves otherwise");
    }
}
