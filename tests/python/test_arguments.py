"""Arguments checked at the Python edge, each kind by one rule with one message: every `out=`
buffer (`scan`, `observe`, `step`) must be a writeable, C-ordered float32 array of the call's
shape, and is refused otherwise (a Fortran-ordered one would be filled in the wrong order);
every seed must be an integer from 0 to 2**64 - 1; the arrays glint reads (actions, ray
origins and directions, field values) are anything numpy reads as float64."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import glint

REPO = Path(__file__).resolve().parents[2]
SHOWROOM_XML = REPO / "examples" / "showroom" / "showroom.xml"
VLP16_TOML = REPO / "examples" / "python" / "showroom_vlp16.toml"
VLP16 = {"attach_site": "lidar", "preset": "velodyne-vlp16", "self_ignore": "whole-robot"}
OBSERVATION = (2, 6 + 28800)  # VLP16_TOML over two worlds: three joints, their velocities, 28 800 ranges
SCAN = (2, 28800)


def refusal(shape: tuple[int, int], got: str) -> str:
    """The message every refused `out=` carries, as a pattern."""
    return re.escape(
        f"out must be a writeable C-ordered float32 array of shape {shape}, such as "
        f"numpy.zeros({shape}, numpy.float32); got {got}"
    )


@pytest.fixture(scope="module")
def sim():
    sim = glint.Simulation.from_manifest(VLP16_TOML, nworld=2)
    sim.lidar_live = True
    sim.step(np.array([[1.0, 0.0, 0.5], [-1.0, 0.5, 0.0]]), n=5)
    return sim


def calls(sim):
    """Every call with an `out=` buffer: its name, the shape it fills, and the call."""
    return [
        ("scan", SCAN, lambda out: sim.lidars[0].scan(out=out)),
        ("observe", OBSERVATION, lambda out: sim.observe(out=out)),
        ("step", OBSERVATION, lambda out: sim.step(out=out)),
    ]


# -- out= buffers -----------------------------------------------------------------------------


def test_a_c_ordered_out_is_filled_in_place(sim):
    for name, shape, call in calls(sim):
        out = np.full(shape, 7.0, dtype=np.float32)
        got = call(out)
        filled = got.ranges if name == "scan" else (sim.observe() if name == "step" else got)
        if name != "step":
            assert np.shares_memory(filled, out), name
        want = sim.lidars[0].scan().ranges if name == "scan" else sim.observe()
        assert np.array_equal(out, want), name
        assert not np.any(out == 7.0), name


def test_a_fortran_ordered_out_is_refused_not_scrambled(sim):
    for name, shape, call in calls(sim):
        out = np.full(shape, 7.0, dtype=np.float32, order="F")
        time = sim.time.copy()
        with pytest.raises(glint.ShapeError, match=refusal(shape, f"a float32 array of shape {shape} in Fortran order")):
            call(out)
        assert np.all(out == 7.0), f"{name} wrote into the refused buffer"
        assert np.array_equal(sim.time, time), f"a refused {name} ran"


def test_an_out_of_the_wrong_dtype_is_refused_with_the_message(sim):
    for name, shape, call in calls(sim):
        with pytest.raises(glint.ShapeError, match=refusal(shape, f"a float64 array of shape {shape} in C order")):
            call(np.zeros(shape, dtype=np.float64))
        with pytest.raises(glint.ShapeError, match=refusal(shape, f"a >f4 array of shape {shape} in C order")):
            call(np.zeros(shape, dtype=">f4"))


def test_an_out_of_the_wrong_shape_or_layout_is_refused_with_the_message(sim):
    for _, shape, call in calls(sim):
        with pytest.raises(glint.ShapeError, match=refusal(shape, "a float32 array of shape (2, 5) in C order")):
            call(np.zeros((2, 5), dtype=np.float32))
        with pytest.raises(glint.ShapeError, match=refusal(shape, f"a float32 array of shape ({shape[1]},) in C order")):
            call(np.zeros(shape[1], dtype=np.float32))
        strided = np.zeros((shape[0], 2 * shape[1]), dtype=np.float32)[:, ::2]
        with pytest.raises(glint.ShapeError, match=refusal(shape, f"a float32 array of shape {shape} in a strided layout")):
            call(strided)


def test_a_read_only_out_or_another_object_is_refused_with_the_message(sim):
    for _, shape, call in calls(sim):
        frozen = np.zeros(shape, dtype=np.float32)
        frozen.flags.writeable = False
        with pytest.raises(glint.ShapeError, match=refusal(shape, f"a read-only float32 array of shape {shape} in C order")):
            call(frozen)
        with pytest.raises(glint.ShapeError, match=refusal(shape, "an object of type list")):
            call([[0.0] * shape[1]] * shape[0])



# -- arrays glint reads -----------------------------------------------------------------------


def test_read_arrays_take_lists_and_other_dtypes():
    a = glint.Simulation.from_manifest(VLP16_TOML, nworld=2)
    b = glint.Simulation.from_manifest(VLP16_TOML, nworld=2)
    a.step(np.array([1.0, -0.5, 0.25]))
    b.step(np.array([1.0, -0.5, 0.25], dtype=np.float32))
    a.step(np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    b.step([[1, 0, 0], [0, 1, 0]])
    assert np.array_equal(a.observe(), b.observe())
    vec = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    want = a.rays(np.array([0.0, 0.0, 0.5]), vec)
    got = a.rays([0, 0, 0.5], vec.astype(np.float32))
    for x, y in zip(want, got):
        assert np.array_equal(x, y)
    with pytest.raises(TypeError, match="actions must be numbers numpy reads as float64.*; got an object of type str"):
        a.step("fast")
    with pytest.raises(TypeError, match="pnt must be numbers numpy reads as float64"):
        a.rays([0, "x", 0], vec)

# -- seeds ------------------------------------------------------------------------------------

SEED_RANGE = re.escape("give an integer from 0 to 18446744073709551615 (2**64 - 1)")


def seed_calls():
    """Every call taking a seed, as `(name, call(seed))`. A seed is checked before anything
    is loaded, so the scene need not exist."""
    missing = str(REPO / "no-such-scene.xml")
    return [
        ("from_manifest", lambda s: glint.Simulation.from_manifest(VLP16_TOML, seed=s)),
        ("from_xml", lambda s: glint.Simulation.from_xml(missing, seed=s)),
        ("from_variants", lambda s: glint.Simulation.from_variants(missing, [{"name": "a"}], [0], seed=s)),
        ("VectorLoop", lambda s: glint._glint.VectorLoop(VLP16_TOML, 2, seed=s)),
        ("bench_vector_loop", lambda s: glint._glint.bench_vector_loop(VLP16_TOML, 2, 2, seed=s)),
    ]


@pytest.mark.parametrize("seed", [-1, 2**64, -(2**70)])
def test_a_seed_out_of_range_is_refused_with_the_range(sim, seed):
    for name, call in seed_calls() + [("reset", lambda s: sim.reset(seed=s))]:
        with pytest.raises(glint.SettingError, match=re.escape(f"seed = {seed}: ") + SEED_RANGE) as info:
            call(seed)
        assert isinstance(info.value, ValueError), name


def test_a_seed_that_is_not_an_integer_is_refused_with_the_range(sim):
    for name, call in seed_calls() + [("reset", lambda s: sim.reset(seed=s))]:
        with pytest.raises(TypeError, match=re.escape("seed = 1.5: ") + SEED_RANGE):
            call(1.5)


def test_the_largest_seed_and_numpy_integers_are_seeds(sim):
    sim.reset(seed=2**64 - 1)
    sim.reset(seed=np.uint64(2**64 - 1))
    sim.reset(seed=np.int32(3))
    assert np.array_equal(sim.time, [0.0, 0.0])
