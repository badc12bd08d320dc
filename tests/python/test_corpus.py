"""The acceptance corpus of real robot models (issue 36; tests/corpus/scenes.toml, built by
`make corpus`): on every scene glint's rays equal `mj_ray` (geom, distance, normal), its depth
and segmentation equal `mj_ray` per pixel, and its RGB is within the bounds of MuJoCo's classic
renderer (SSIM >= 0.95, foreground mean luminance within 3 %); every dm_control suite model
loads and renders.

A check that fails today is named in its scene's `known` list with its cause: the test then
asserts that it STILL fails, so that a fix makes it fail until the entry is removed. Every
scene's figures are printed (`pytest -s`); tests/python/corpus_figures.py writes them into
docs/corpus.md."""

from __future__ import annotations

import numpy as np
import pytest

import corpus_figures as cf

SCENES = cf.scenes()
NAMES = [s["name"] for s in SCENES]
BY_NAME = {s["name"]: s for s in SCENES}


@pytest.fixture(scope="module")
def figures() -> dict[str, cf.Figures]:
    """Every scene measured once: MuJoCo's classic renders in one child process, then glint."""
    cf.require_corpus()
    images = cf.reference_images([(s["name"], cf.scene_file(s)) for s in SCENES])
    out = {}
    for s in SCENES:
        out[s["name"]] = cf.measure(s, images[s["name"]])
        print(out[s["name"]].line())
    return out


def assert_check(name: str, check: str, fig: cf.Figures) -> None:
    known = cf.known_checks(BY_NAME[name])
    passed = fig.passed(check)
    if check in known:
        assert not passed, (
            f"{name}: the {check} check passes now ({fig.line()}); remove its known entry "
            f"'{check}: {known[check]}' from tests/corpus/scenes.toml"
        )
    else:
        assert passed, f"{name}: the {check} check fails: {fig.line()}"


@pytest.mark.parametrize("name", NAMES)
def test_rays_equal_mj_ray(figures, name):
    assert_check(name, "rays", figures[name])


@pytest.mark.parametrize("name", NAMES)
def test_depth_and_segmentation_equal_mj_ray(figures, name):
    assert_check(name, "camera", figures[name])


@pytest.mark.parametrize("name", NAMES)
def test_rgb_within_bounds_of_mujoco_classic_renderer(figures, name):
    assert_check(name, "rgb", figures[name])


SUITE = cf.suite_models() if cf.CORPUS.is_dir() else []


def test_the_suite_has_its_19_models():
    cf.require_corpus()
    assert len(SUITE) == 19, [p.name for p in SUITE]
    unknown = set(cf.suite_known()) - {p.stem for p in SUITE}
    assert not unknown, f"[suite] known names models the suite lacks: {sorted(unknown)}"


@pytest.mark.parametrize("path", SUITE, ids=lambda p: p.stem)
def test_suite_model_loads_and_renders(path):
    import glint
    import mujoco

    model = mujoco.MjModel.from_xml_path(str(path))
    names = [model.camera(i).name for i in range(model.ncam) if model.camera(i).name]
    assert names, f"{path.name} has no named camera"
    cause = cf.suite_known().get(path.stem)
    try:
        sim = glint.Simulation.from_xml(str(path))
        sim.set_cameras([{"camera": names[0], "width": 64, "height": 48, "outputs": ["rgb", "seg"]}])
        view = sim.render()[names[0]]
        error = None
    except glint.errors.GlintError as e:
        error = e
    if cause is not None:
        assert error is not None, (
            f"{path.stem} loads and renders now; remove its known entry '{path.stem}: {cause}' from the [suite] "
            "table of tests/corpus/scenes.toml"
        )
        print(f"{path.stem}: still fails ({cause}): {error}")
        return
    assert error is None, f"{path.stem} does not load and render: {error}"
    assert view["rgb"].shape == (1, 48, 64, 3)
    assert (view["seg"][0] >= 0).any(), f"{path.stem}: camera {names[0]} sees no geom"


def test_the_corpus_covers_the_acceptance_features():
    features = {f for s in SCENES for f in s["features"]}
    assert len(SCENES) >= 12
    for wanted in ("textured meshes", "skin", "flex", "groups 3-5"):
        assert wanted in features, f"no corpus scene covers {wanted}"
    assert any(f.startswith("height field") for f in features)
    pins = cf.pinned()
    for s in SCENES:
        assert s["package"] == "glint" or s["package"] in pins, f"{s['name']}: {s['package']} is not pinned"
        cf.known_checks(s)
    assert {"robosuite", "dm-control", "mjlab", "dm-robotics-panda"} <= {s["package"] for s in SCENES}


def test_ssim_and_luma_measures():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 256, size=(32, 32, 3), dtype=np.uint8)
    assert cf.ssim(a, a) == pytest.approx(1.0, abs=1e-12)
    flat = np.full_like(a, 128)
    assert cf.ssim(a, flat) < 0.1
    brighter = np.clip(a.astype(int) + 10, 0, 255).astype(np.uint8)
    assert cf.ssim(a, brighter) > 0.9
    # A window-sized image has one window: SSIM from its Gaussian-weighted moments.
    x, y = cf.luma(a[:11, :11].astype(float)), cf.luma(brighter[:11, :11].astype(float))
    g = np.exp(-((np.arange(11) - 5) ** 2) / 4.5)
    w = np.outer(g, g) / np.outer(g, g).sum()
    mx, my = (w * x).sum(), (w * y).sum()
    vx, vy, c = (w * x * x).sum() - mx**2, (w * y * y).sum() - my**2, (w * x * y).sum() - mx * my
    c1, c2 = 6.5025, 58.5225
    want = (2 * mx * my + c1) * (2 * c + c2) / ((mx**2 + my**2 + c1) * (vx + vy + c2))
    assert cf.ssim(a[:11, :11], brighter[:11, :11]) == pytest.approx(want, rel=1e-12)
    img = np.zeros((96, 128, 3), dtype=np.uint8)
    img[18:78, 24:104] = 100  # the centred 60 x 80 foreground
    assert cf.foreground_mean(img) == pytest.approx(100.0)
