"""Issue 36: MJCF `<rangefinder>` sensors computed by glint's BVH, read from Python, equal to
MuJoCo's own `sensordata` on every step; and as an `[[observation]]` component."""

from pathlib import Path

import numpy as np
import pytest

import glint

from conftest import REPO

SCENE = REPO / "tests" / "data" / "rangefinders.xml"


def _mujoco_values(sim, world):
    """The rangefinders' values in MuJoCo's `sensordata`, in glint's column order."""
    import mujoco

    model = mujoco.MjModel.from_xml_path(str(SCENE))
    data = sim.sensordata(world)
    values = []
    for i in range(model.nsensor):
        if model.sensor_type[i] == mujoco.mjtSensor.mjSENS_RANGEFINDER and model.sensor_objtype[i] == mujoco.mjtObj.mjOBJ_SITE:
            adr, dim = model.sensor_adr[i], model.sensor_dim[i]
            values.extend(data[adr : adr + dim])
    return np.asarray(values)


def test_rangefinders_equal_sensordata_on_every_step():
    sim = glint.Simulation.from_xml(SCENE.read_text(), nworld=2)
    names = sim.rangefinder_names
    assert "sky" in names and "fields/normal_z" in names
    for step in range(200):
        if step:
            sim.step()
        values = sim.rangefinders()
        assert values.shape == (2, len(names)) and values.dtype == np.float64
        for w in range(2):
            np.testing.assert_allclose(values[w], _mujoco_values(sim, w), rtol=0, atol=1e-12)
        assert values[0, names.index("sky")] == -1.0, "a miss reads -1, as in MuJoCo"


def test_a_scene_without_rangefinders_reads_an_empty_array():
    sim = glint.Simulation.from_xml("<mujoco><worldbody><geom type='plane' size='1 1 1'/></worldbody></mujoco>")
    assert sim.rangefinder_names == []
    assert sim.rangefinders().shape == (1, 0)
    with pytest.raises(IndexError, match="world 5"):
        sim.sensordata(5)


def test_the_observation_component_reads_them(tmp_path: Path):
    manifest = tmp_path / "ranged.toml"
    manifest.write_text(f'scene = "{SCENE}"\n\n[[observation]]\nname = "rangefinders"\n')
    sim = glint.Simulation.from_manifest(str(manifest), nworld=2)
    assert sim.observation_names == [f"rangefinders/{n}" for n in sim.rangefinder_names]
    sim.step(n=10)
    np.testing.assert_array_equal(sim.observe(), sim.rangefinders().astype(np.float32))


def test_a_recording_holds_them_per_tick(tmp_path: Path):
    """Each episode's `rangefinders-NNN.parquet`, read with pyarrow as a user would, holds the
    values of every tick: equal to MuJoCo's `sensordata` after that tick."""
    import json

    import pyarrow.parquet as pq

    sim = glint.Simulation.from_xml(SCENE.read_text(), nworld=2)
    expected = [[], []]
    with sim.record(tmp_path / "rec") as rec:
        for _ in range(25):
            sim.step()
            for w in range(2):
                expected[w].append(_mujoco_values(sim, w))
    session = Path(rec.path)
    lines = [json.loads(l) for l in (session / "meta" / "episodes.jsonl").read_text().splitlines()]
    assert [l["rangefinders"] for l in lines] == [f"data/chunk-000/rangefinders-00{i}.parquet" for i in range(2)]
    for w, line in enumerate(lines):
        table = pq.read_table(session / line["rangefinders"])
        assert table.column_names == ["timestamp"] + sim.rangefinder_names
        assert table.num_rows == 25
        values = np.stack([table.column(n).to_numpy() for n in sim.rangefinder_names], axis=1)
        np.testing.assert_allclose(values, np.asarray(expected[w]), rtol=0, atol=1e-12)
        sidecar = json.loads((session / line["rangefinders"]).with_suffix(".json").read_text())
        assert sidecar["rows"] == 25 and sidecar["columns"][1]["name"] == sim.rangefinder_names[0]
