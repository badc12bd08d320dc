"""Issue 36: the seed's rule (lidars tick only while live or recording) is said, not silent.

A scan of lidars that are neither live nor recording is all -1, and the first such scan of a
Simulation warns with the fix; a pendulum stepping at 0.02 s (dm_control's suite) loads
without a lidar's runner rule, and with a lidar the default rate moves with a warning.
"""

import warnings

import numpy as np
import pytest

import glint

SCENE = """
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom type="box" size="3 3 0.1" pos="0 0 -0.1"/>
    <geom type="box" size="0.2 3 1" pos="2 0 1"/>
    <site name="lidar" pos="0 0 0.5"/>
  </worldbody>
</mujoco>
"""

PENDULUM = """
<mujoco model="pendulum">
  <option timestep="0.02" integrator="RK4"/>
  <worldbody>
    <geom name="floor" size="2 2 .2" type="plane"/>
    <body name="pole" pos="0 0 .6">
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom name="pole" type="capsule" fromto="0 0 0 0 0 .5" size="0.02"/>
      <site name="lidar" pos="0 0 .6"/>
    </body>
  </worldbody>
</mujoco>
"""

LIDAR = {"attach_site": "lidar", "channels": 4, "azimuth_bins": 36}


def idle_warnings(caught):
    return [w for w in caught if issubclass(w.category, glint.GlintWarning) and "lidar_live = True" in str(w.message)]


def test_a_scan_of_idle_lidars_warns_once_with_the_fix():
    sim = glint.Simulation.from_xml(SCENE, lidars=[LIDAR])
    sim.step()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ranges = sim.lidars[0].scan().ranges
        sim.lidars[0].scan()
    assert (ranges == -1).all()
    assert len(idle_warnings(caught)) == 1, [str(w.message) for w in caught]
    # Live, the lidar scans and nothing warns.
    sim = glint.Simulation.from_xml(SCENE, lidars=[LIDAR])
    sim.lidar_live = True
    sim.step()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ranges = sim.lidars[0].scan().ranges
    assert (ranges > 0).any()
    assert idle_warnings(caught) == []


def test_a_pendulum_at_dm_controls_timestep_loads_with_or_without_a_lidar():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = glint.Simulation.from_xml(PENDULUM)
    assert [w for w in caught if issubclass(w.category, glint.GlintWarning)] == []
    sim.step()
    assert np.allclose(sim.time, 0.02)
    with pytest.warns(glint.GlintWarning, match="default 100 ticks per second.*50 per second"):
        glint.Simulation.from_xml(PENDULUM, lidars=[LIDAR])
    with pytest.raises(glint.GlintError, match="lidar_runner_hz = 100 is 0.500 physics steps"):
        glint.Simulation.from_xml(PENDULUM, lidars=[LIDAR], runner_hz=100.0)
    sim = glint.Simulation.from_xml(PENDULUM, runner_hz=25.0)
    sim.step()
    assert np.allclose(sim.time, 0.04)
