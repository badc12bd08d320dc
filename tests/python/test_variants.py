"""Per-world assets and batched geometry from Python: the seed's geom-level example through
`glint.Simulation.from_variants` gives every world the dependent fields and the rays that
the `mujoco` package gives for that world's variant compiled alone (MjSpec, as the seed does
it); `sim.fields` reads and writes the batched arrays."""

from pathlib import Path

import mujoco
import numpy as np
import pytest

import glint

SCENE = Path(__file__).resolve().parent.parent / "data" / "per_world_meshes_geom_level.xml"
XML = SCENE.read_text()

DEPENDENT = ["geom_dataid", "geom_size", "geom_aabb", "geom_rbound", "geom_pos", "body_mass",
             "body_subtreemass", "body_inertia", "body_invweight0", "body_ipos", "body_iquat"]


def seed_variants():
    """The seed's recipe: one spec with every mesh, compiled once per variant."""
    spec = mujoco.MjSpec.from_string(XML)
    geom = spec.geom("obj")
    geom.meshname = "mesh_a"
    mjm_a = spec.compile()
    geom.meshname = "mesh_b"
    mjm_b = spec.compile()
    return [mjm_a, mjm_b]


@pytest.fixture
def scene():
    return SCENE


def test_seed_geom_level_example_matches_each_variant_alone(scene):
    variants = [{"name": "a"}, {"name": "b", "edits": [{"geom": "obj", "mesh": "mesh_b"}]}]
    sim = glint.Simulation.from_variants(scene, variants, ["a", "a", "b", "b"], nworld=4)
    reference = seed_variants()
    assignment = [0, 0, 1, 1]
    for name in DEPENDENT:
        got = sim.fields[name]
        assert got.shape[0] in (1, 4), name
        for w, k in enumerate(assignment):
            want = np.asarray(getattr(reference[k], name), dtype=np.float64).reshape(got.shape[1:])
            np.testing.assert_array_equal(got[w % got.shape[0]], want, err_msg=f"{name}, world {w}")
    assert [sim.world_variant(w) for w in range(4)] == ["a", "a", "b", "b"]

    # Rays in each world equal mj_ray on its variant alone.
    origin = np.array([0.7, 0.6, 2.6])
    rng = np.random.default_rng(3)
    targets = np.array([0.4, 0.4, 1.4]) + rng.uniform(-1.2, 1.2, size=(300, 3))
    vec = targets - origin
    dist, geomid, _ = sim.rays(origin, vec)
    hits_object = [0, 0, 0, 0]
    for w, k in enumerate(assignment):
        m = reference[k]
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        for i in range(300):
            gid = np.array([-1], dtype=np.int32)
            want = mujoco.mj_ray(m, d, origin, vec[i], None, 1, -1, gid)
            assert geomid[w, i] == gid[0], (w, i)
            if gid[0] >= 0:
                assert abs(dist[w, i] - want) <= 1e-9 * max(want, 1.0), (w, i)
                hits_object[w] += int(gid[0] == 1)
    assert min(hits_object) > 5, hits_object
    assert hits_object[2] > hits_object[0], "the bigger mesh of variant b is hit more often"


def test_fields_mapping_reads_and_writes_batched_arrays(scene):
    sim = glint.Simulation.from_xml(str(scene), nworld=3)
    assert "geom_rgba" in sim.fields and "body_inertia" in sim.fields
    assert set(sim.fields) == set(glint.Simulation.field_names()) | set(glint.Simulation.derived_field_names())
    assert len(sim.fields) == len(list(sim.fields))
    rgba = sim.fields["geom_rgba"]
    assert rgba.shape == (1, 2, 4)
    rgba = np.repeat(rgba, 3, axis=0)
    rgba[1, 1] = [1.0, 0.0, 0.0, 1.0]
    sim.fields["geom_rgba"] = rgba
    np.testing.assert_array_equal(sim.fields["geom_rgba"], rgba)
    assert sim.fields["body_inertia"].shape == (3, 2, 3), "derived fields read a row per world"
    with pytest.raises(ValueError, match="derived by MuJoCo"):
        sim.fields["geom_aabb"] = np.zeros((1, 2, 6))
    with pytest.raises(KeyError, match="geom_rgba"):
        sim.fields["geom_rgb"]
    with pytest.raises(ValueError, match=r"\(rows, 2, 4\)"):
        sim.fields["geom_rgba"] = np.zeros((2, 3, 4))


def test_bad_variants_raise_with_the_fix(scene):
    with pytest.raises(glint.GlintError, match="no geom `ob`.*did you mean `obj`"):
        glint.Simulation.from_variants(scene, [{"name": "b", "edits": [{"geom": "ob", "mesh": "mesh_b"}]}], [0])
    with pytest.raises(glint.GlintError, match="not a variant"):
        glint.Simulation.from_variants(scene, [{"name": "b"}], ["c"])
