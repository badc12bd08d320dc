"""LidarService: every one of its 14 RPCs through the raw stubs and through the client's own
wrappers, the optional-presence rule of SetLidarReturnParams, the answers to a bad sensor
index, and a 65 535-beam scan with every array inside the client's default 4 MiB."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import (
    BASE_FIELDS,
    GOOD_CONFIG,
    RPC_TIMEOUT_S,
    SMALL_BEAMS,
    SMALL_BINS,
    SMALL_CHANNELS,
    assert_serving,
    lidar_table,
    showroom_manifest,
    step,
    tick_of,
)

T = RPC_TIMEOUT_S

OPTICS_FIELDS = [
    "spec_slope_floor",
    "spec_peak_max",
    "retro_gain",
    "retro_cos_exp",
    "fold_max_slope",
    "range_floor",
    "min_return_separation",
    "max_returns",
]
ALL_PARAMS = BASE_FIELDS + OPTICS_FIELDS

# The Generic preset (docs/manifest.md, "Return model").
GENERIC = {
    "max_range_at_ref": 20.0,
    "ref_reflectivity": 0.90,
    "range_exp": 0.32,
    "noise_sigma0": 0.02,
    "grazing_cos_cutoff": 0.10,
    "intensity_ref_range": 5.0,
    "detect_floor": 0.03,
    "near_range_r0": 0.6,
    "noise_slope_per_m": 0.0005,
    "spec_slope_floor": 0.03,
    "spec_peak_max": 900.0,
    "retro_gain": 800.0,
    "retro_cos_exp": 5.0,
    "fold_max_slope": 0.20,
    "range_floor": 0.01,
    "min_return_separation": 1.0,
    "max_returns": 1,
}
# SetLidarPreset index -> the four values a preset changes (the other 13 stay Generic).
PRESETS = {
    0: {"max_range_at_ref": 20.0, "ref_reflectivity": 0.90, "range_exp": 0.32, "max_returns": 1},
    1: {"max_range_at_ref": 20.0, "ref_reflectivity": 0.90, "range_exp": 0.32, "max_returns": 1},
    2: {"max_range_at_ref": 70.0, "ref_reflectivity": 0.80, "range_exp": 0.27, "max_returns": 1},
    3: {"max_range_at_ref": 170.0, "ref_reflectivity": 0.80, "range_exp": 0.31, "max_returns": 2},
}

SECOND_CHANNELS = 4
SECOND_BINS = 90


def two_lidar_manifest(**kw) -> str:
    return showroom_manifest(
        lidars=[
            lidar_table("roof"),
            lidar_table("low", channels=SECOND_CHANNELS, azimuth_bins=SECOND_BINS),
        ],
        **kw,
    )


def params_of(client) -> dict:
    r = client.lidar.GetLidarReturnParams(client.pb.lidar.GetLidarReturnParamsRequest(), timeout=T)
    return {f: getattr(r, f) for f in ALL_PARAMS}


def assert_params(got: dict, want: dict) -> None:
    for f, v in want.items():
        if f == "max_returns":
            assert got[f] == v, f"{f}: got {got[f]}, want {v}"
        else:
            assert got[f] == pytest.approx(v, rel=1e-6, abs=1e-7), f"{f}: got {got[f]}, want {v}"


def base_request(pb, values: dict, **optics):
    return pb.SetLidarReturnParamsRequest(**{f: values[f] for f in BASE_FIELDS}, **optics)


def config_of(client, sensor: int = 0):
    return client.lidar.GetLidarConfig(client.pb.lidar.LidarSensorRequest(sensor=sensor), timeout=T)


def scan(client, sensor=0, material=False, want_secondary=False, want_intensity=False):
    pb = client.pb.lidar
    return client.lidar.GetLidarScan(
        pb.GetLidarScanRequest(
            sensor=sensor, material=material, want_secondary=want_secondary, want_intensity=want_intensity
        ),
        timeout=T,
    )


def assert_ranges_valid(ranges, min_range: float, max_range: float) -> None:
    r = np.asarray(ranges, dtype=np.float64)
    hits = r[r != -1.0]
    assert np.all((hits >= min_range - 1e-4) & (hits < max_range + 1e-4)), "a range outside [min_range, max_range)"


def test_every_lidar_rpc_through_the_raw_stubs(tmp_path, serve, connect):
    server = serve(two_lidar_manifest())
    c = connect(server)
    L, pb = c.lidar, c.pb.lidar

    # GetLidarBeamCount: channels * azimuth_bins per sensor, in binding order.
    assert L.GetLidarBeamCount(pb.LidarSensorRequest(sensor=0), timeout=T).beams == SMALL_BEAMS
    assert L.GetLidarBeamCount(pb.LidarSensorRequest(sensor=1), timeout=T).beams == SECOND_CHANNELS * SECOND_BINS

    # GetLidarConfig: the manifest's binding (the VLP-16 preset with 360 bins).
    cfg = config_of(c, 0)
    assert cfg.found
    assert (cfg.scan_pattern, cfg.channels, cfg.azimuth_bins) == (0, SMALL_CHANNELS, SMALL_BINS)
    assert (cfg.vfov_min_deg, cfg.vfov_max_deg) == (pytest.approx(-15.0), pytest.approx(15.0))
    assert (cfg.min_range, cfg.max_range) == (pytest.approx(0.5), pytest.approx(100.0))
    assert cfg.rotation_hz == pytest.approx(10.0)
    assert cfg.geom_group_mask == 255
    assert cfg.self_ignore == 2  # whole-robot
    assert (cfg.secondary_capture, cfg.secondary_scope) == (0, 0)
    assert config_of(c, 1).azimuth_bins == SECOND_BINS

    # GetLidarBeamAngles: one azimuth and one elevation per beam, radians, spanning the FOV;
    # beam k = bin * channels + channel.
    angles = L.GetLidarBeamAngles(pb.LidarSensorRequest(sensor=0), timeout=T)
    assert angles.beams == SMALL_BEAMS
    assert len(angles.azimuth) == len(angles.elevation) == SMALL_BEAMS
    el = np.asarray(angles.elevation)
    az = np.asarray(angles.azimuth)
    assert el.min() == pytest.approx(math.radians(-15.0), abs=1e-4)
    assert el.max() == pytest.approx(math.radians(15.0), abs=1e-4)
    assert len(np.unique(el.round(4))) == SMALL_CHANNELS
    # Bin 0 along +X, azimuth counter-clockwise, one bin every 360 / azimuth_bins degrees.
    assert az[0] == pytest.approx(0.0, abs=1e-6)
    assert np.all(az[:SMALL_CHANNELS] == az[0])
    assert np.diff(np.unwrap(az[::SMALL_CHANNELS])) == pytest.approx(2 * math.pi / SMALL_BINS, abs=1e-4)
    assert el[0] == pytest.approx(math.radians(-15.0), abs=1e-4)
    assert el[SMALL_CHANNELS - 1] == pytest.approx(math.radians(15.0), abs=1e-4)

    # SetLidarLive, then steps: scans of world 0's latest tick, ranges only.
    ack = L.SetLidarLive(pb.SetLidarLiveRequest(live=True), timeout=T)
    assert ack.ok, ack.message
    for _ in range(5):  # 10 Hz on a 50 Hz runner: one revolution
        step(c)
    s, call = L.GetLidarScan.with_call(pb.GetLidarScanRequest(sensor=0), timeout=T)
    assert tick_of(call) == 5
    assert s.beams == SMALL_BEAMS and len(s.ranges) == SMALL_BEAMS
    assert len(s.secondary_ranges) == len(s.intensity) == len(s.reflectivity_calibrated) == 0
    assert np.count_nonzero(np.asarray(s.ranges) > 0) > SMALL_BEAMS // 4, "the showroom's walls give hits"
    assert_ranges_valid(s.ranges, 0.5, 100.0)
    s1 = scan(c, sensor=1)
    assert s1.beams == SECOND_CHANNELS * SECOND_BINS and len(s1.ranges) == s1.beams

    # SetLidarConfig replaces the scan configuration; GetLidarConfig reads it back.
    new = dict(
        sensor=0,
        scan_pattern=0,
        channels=8,
        azimuth_bins=180,
        vfov_min_deg=-20.0,
        vfov_max_deg=10.0,
        min_range=0.25,
        max_range=30.0,
        rotation_hz=5.0,
        geom_group_mask=7,
        self_ignore=1,
    )
    ack = L.SetLidarConfig(pb.SetLidarConfigRequest(**new), timeout=T)
    assert ack.ok, ack.message
    cfg = config_of(c, 0)
    assert cfg.found
    for f, v in new.items():
        if f != "sensor":
            assert getattr(cfg, f) == pytest.approx(v), f
    assert (cfg.secondary_capture, cfg.secondary_scope) == (0, 0)
    assert L.GetLidarBeamCount(pb.LidarSensorRequest(sensor=0), timeout=T).beams == 8 * 180
    angles = L.GetLidarBeamAngles(pb.LidarSensorRequest(sensor=0), timeout=T)
    assert angles.beams == 8 * 180 and len(angles.azimuth) == len(angles.elevation) == 8 * 180
    assert min(angles.elevation) == pytest.approx(math.radians(-20.0), abs=1e-4)
    assert max(angles.elevation) == pytest.approx(math.radians(10.0), abs=1e-4)
    for _ in range(10):  # 5 Hz: one revolution
        step(c)
    s = scan(c, 0)
    assert s.beams == 8 * 180 and len(s.ranges) == 8 * 180
    assert np.count_nonzero(np.asarray(s.ranges) > 0) > 0
    assert_ranges_valid(s.ranges, 0.25, 30.0)
    # The other sensor is untouched.
    assert L.GetLidarBeamCount(pb.LidarSensorRequest(sensor=1), timeout=T).beams == SECOND_CHANNELS * SECOND_BINS
    # The seed keeps the group mask's low six bits.
    ack = L.SetLidarConfig(pb.SetLidarConfigRequest(**{**new, "geom_group_mask": 0xC7}), timeout=T)
    assert ack.ok, ack.message
    assert config_of(c, 0).geom_group_mask == 0x07

    # GetLidarReturnParams: the manifest's Generic preset; SetLidarReturnParams replaces.
    assert_params(params_of(c), GENERIC)
    chosen = {
        "max_range_at_ref": 42.0,
        "ref_reflectivity": 0.5,
        "range_exp": 0.5,
        "noise_sigma0": 0.01,
        "grazing_cos_cutoff": 0.2,
        "intensity_ref_range": 7.0,
        "detect_floor": 0.05,
        "near_range_r0": 0.3,
        "noise_slope_per_m": 0.001,
        "spec_slope_floor": 0.05,
        "spec_peak_max": 500.0,
        "retro_gain": 300.0,
        "retro_cos_exp": 3.0,
        "fold_max_slope": 0.4,
        "range_floor": 0.02,
        "min_return_separation": 0.5,
        "max_returns": 3,
    }
    ack = L.SetLidarReturnParams(pb.SetLidarReturnParamsRequest(**chosen), timeout=T)
    assert ack.ok, ack.message
    assert_params(params_of(c), chosen)

    # SetLidarPreset: each index resets all seventeen to that preset.
    for index in (3, 2, 1, 0):
        ack = L.SetLidarPreset(pb.SetLidarPresetRequest(preset=index), timeout=T)
        assert ack.ok, ack.message
        assert_params(params_of(c), {**GENERIC, **PRESETS[index]})

    # SetLidarSecondaryCapture on sensor 1 only; GetLidarConfig reports it.
    ack = L.SetLidarSecondaryCapture(pb.SetLidarSecondaryCaptureRequest(sensor=1, capture=3, scope=1), timeout=T)
    assert ack.ok, ack.message
    cfg1 = config_of(c, 1)
    assert (cfg1.secondary_capture, cfg1.secondary_scope) == (3, 1)
    assert (config_of(c, 0).secondary_capture, config_of(c, 0).secondary_scope) == (0, 0)
    # SetLidarConfig does not touch the capture.
    ack = L.SetLidarConfig(
        pb.SetLidarConfigRequest(**{**new, "sensor": 1, "channels": 2, "azimuth_bins": 45}), timeout=T
    )
    assert ack.ok, ack.message
    cfg1 = config_of(c, 1)
    assert (cfg1.channels, cfg1.azimuth_bins, cfg1.secondary_capture, cfg1.secondary_scope) == (2, 45, 3, 1)

    # GetLidarBakeStatus before any bake: not valid. Saving then is refused.
    st = L.GetLidarBakeStatus(pb.LidarSensorRequest(sensor=0), timeout=T)
    assert not st.valid
    ack = L.SaveLidarBake(pb.SaveLidarBakeRequest(name="early"), timeout=T)
    assert not ack.ok and ack.message
    assert not (tmp_path / "MaterialBakes" / "early.lvxb").exists()

    # BakeLidarMaterial with every field 0: the scene's [bake] settings.
    ack = L.BakeLidarMaterial(pb.BakeLidarMaterialRequest(), timeout=T)
    assert ack.ok, ack.message
    st = L.GetLidarBakeStatus(pb.LidarSensorRequest(sensor=0), timeout=T)
    assert st.valid and not st.stale
    assert st.format_version >= 1
    assert st.cell_size_m == pytest.approx(0.1)
    assert st.splat_radius >= 1  # the scene's setting (a positive radius by default)
    dims = (st.dim_x, st.dim_y, st.dim_z)
    assert all(d > 0 for d in dims)
    assert 0 < st.filled_cells <= st.dim_x * st.dim_y * st.dim_z
    assert st.geom_materials > 0
    assert st.material_fingerprint != 0
    first = st

    # Explicit fields: a coarser cell, splat_radius -1 = an explicit 0, exclude hidden geoms.
    ack = L.BakeLidarMaterial(
        pb.BakeLidarMaterialRequest(cell_size=0.2, max_dim=0, splat_radius=-1, include_hidden=2), timeout=T
    )
    assert ack.ok, ack.message
    st = L.GetLidarBakeStatus(pb.LidarSensorRequest(sensor=0), timeout=T)
    assert st.valid and not st.stale
    assert st.cell_size_m == pytest.approx(0.2)
    assert st.splat_radius == 0
    assert st.dim_x < first.dim_x and st.dim_y < first.dim_y
    coarse = st
    ack = L.BakeLidarMaterial(pb.BakeLidarMaterialRequest(cell_size=0.2, splat_radius=2), timeout=T)
    assert ack.ok, ack.message
    assert L.GetLidarBakeStatus(pb.LidarSensorRequest(), timeout=T).splat_radius == 2

    # SaveLidarBake / LoadLidarBake: MaterialBakes/<name>.lvxb beside the manifest; empty
    # name = the scene's [bake] name.
    ack = L.BakeLidarMaterial(pb.BakeLidarMaterialRequest(cell_size=0.2, splat_radius=-1), timeout=T)
    assert ack.ok, ack.message
    ack = L.SaveLidarBake(pb.SaveLidarBakeRequest(name="coarse"), timeout=T)
    assert ack.ok, ack.message
    assert (tmp_path / "MaterialBakes" / "coarse.lvxb").is_file()
    ack = L.BakeLidarMaterial(pb.BakeLidarMaterialRequest(), timeout=T)
    assert ack.ok, ack.message
    ack = L.SaveLidarBake(pb.SaveLidarBakeRequest(name=""), timeout=T)
    assert ack.ok, ack.message
    assert (tmp_path / "MaterialBakes" / "scenebake.lvxb").is_file()

    ack = L.LoadLidarBake(pb.LoadLidarBakeRequest(name="coarse"), timeout=T)
    assert ack.ok, ack.message
    st = L.GetLidarBakeStatus(pb.LidarSensorRequest(), timeout=T)
    assert st.valid and not st.stale
    assert (st.cell_size_m, st.splat_radius, st.dim_x, st.dim_y, st.dim_z, st.filled_cells) == (
        pytest.approx(0.2),
        0,
        coarse.dim_x,
        coarse.dim_y,
        coarse.dim_z,
        coarse.filled_cells,
    )
    ack = L.LoadLidarBake(pb.LoadLidarBakeRequest(name=""), timeout=T)
    assert ack.ok, ack.message
    st = L.GetLidarBakeStatus(pb.LidarSensorRequest(), timeout=T)
    assert (st.dim_x, st.dim_y, st.dim_z, st.filled_cells) == (first.dim_x, first.dim_y, first.dim_z, first.filled_cells)
    assert st.material_fingerprint == first.material_fingerprint
    # A bake that was never saved is refused.
    ack = L.LoadLidarBake(pb.LoadLidarBakeRequest(name="never-saved"), timeout=T)
    assert not ack.ok and ack.message

    # GetLidarScan with every array, the bake loaded: full length, material channels known.
    for _ in range(10):
        step(c)
    s = scan(c, 0, material=True, want_secondary=True, want_intensity=True)
    n = 8 * 180
    assert s.beams == n
    assert len(s.ranges) == len(s.secondary_ranges) == len(s.intensity) == len(s.reflectivity_calibrated) == n
    assert np.all(np.asarray(s.secondary_ranges) == -1.0), "Generic preset: max_returns 1, so every secondary is -1"
    assert np.count_nonzero(np.asarray(s.intensity) >= 0) > 0, "a loaded bake resolves materials"
    assert np.count_nonzero(np.asarray(s.reflectivity_calibrated) >= 0) > 0
    # material=false: no return strength, so intensity and reflectivity are all -1.
    s = scan(c, 0, material=False, want_intensity=True)
    assert len(s.intensity) == len(s.reflectivity_calibrated) == n
    assert np.all(np.asarray(s.intensity) == -1.0) and np.all(np.asarray(s.reflectivity_calibrated) == -1.0)
    assert len(s.secondary_ranges) == 0

    assert_serving(c, 1)


def test_client_wrappers(tmp_path, serve, connect):
    server = serve(showroom_manifest())
    c = connect(server)

    assert c.set_lidar_live(True).ok
    assert c.get_lidar_beam_count() == SMALL_BEAMS
    assert c.get_lidar_beam_count(sensor=0) == SMALL_BEAMS

    # Argument order (capture, scope, sensor).
    ack = c.set_lidar_secondary_capture(2, 1, 0)
    assert ack.ok, ack.message
    cfg = config_of(c, 0)
    assert (cfg.secondary_capture, cfg.secondary_scope) == (2, 1)
    ack = c.set_lidar_secondary_capture(capture=1, scope=0, sensor=0)
    assert ack.ok, ack.message
    cfg = config_of(c, 0)
    assert (cfg.secondary_capture, cfg.secondary_scope) == (1, 0)

    st = c.get_lidar_bake_status()
    assert not st.valid
    # No bake: intensity and reflectivity are -1 even with material=True.
    for _ in range(5):
        step(c)
    s = c.get_lidar_scan(sensor=0, material=True, want_intensity=True)
    assert s.beams == SMALL_BEAMS
    assert len(s.intensity) == len(s.reflectivity_calibrated) == SMALL_BEAMS
    assert np.all(np.asarray(s.intensity) == -1.0) and np.all(np.asarray(s.reflectivity_calibrated) == -1.0)
    assert len(s.secondary_ranges) == 0

    ack = c.bake_lidar_material()
    assert ack.ok, ack.message
    st = c.get_lidar_bake_status()
    assert st.valid and not st.stale and st.filled_cells > 0 and st.cell_size_m == pytest.approx(0.1)
    ack = c.bake_lidar_material(cell_size=0.3, splat_radius=-1)
    assert ack.ok, ack.message
    st = c.get_lidar_bake_status(sensor=0)
    assert st.valid and st.cell_size_m == pytest.approx(0.3) and st.splat_radius == 0

    for _ in range(5):
        step(c)
    s = c.get_lidar_scan(material=True, want_secondary=True, want_intensity=True)
    assert len(s.ranges) == len(s.secondary_ranges) == len(s.intensity) == len(s.reflectivity_calibrated)
    assert len(s.ranges) == SMALL_BEAMS
    assert np.count_nonzero(np.asarray(s.intensity) >= 0) > 0
    s = c.get_lidar_scan()
    assert len(s.ranges) == SMALL_BEAMS and not s.secondary_ranges and not s.intensity and not s.reflectivity_calibrated


def test_secondaries_full_length_for_both_presets(serve, connect):
    """secondary_ranges is sized to ranges whenever asked for: all -1 with max_returns 1
    (Generic), still full length with max_returns 2 (Ouster OS1)."""
    server = serve(showroom_manifest(return_preset="generic"))
    c = connect(server)
    L, pb = c.lidar, c.pb.lidar
    assert c.set_lidar_live(True).ok
    assert c.bake_lidar_material().ok
    assert c.set_lidar_secondary_capture(3, 1, 0).ok
    for _ in range(5):
        step(c)
    for material in (False, True):
        s = scan(c, 0, material=material, want_secondary=True)
        assert len(s.secondary_ranges) == SMALL_BEAMS
        assert np.all(np.asarray(s.secondary_ranges) == -1.0)
    ack = L.SetLidarPreset(pb.SetLidarPresetRequest(preset=3), timeout=T)
    assert ack.ok, ack.message
    assert params_of(c)["max_returns"] == 2
    for _ in range(5):
        step(c)
    s = scan(c, 0, material=True, want_secondary=True, want_intensity=True)
    assert len(s.ranges) == len(s.secondary_ranges) == len(s.intensity) == len(s.reflectivity_calibrated)
    assert len(s.ranges) == SMALL_BEAMS
    sec = np.asarray(s.secondary_ranges)
    assert np.all((sec == -1.0) | (sec > 0))


def test_bake_fields_at_zero_take_the_scene_settings(serve, connect):
    server = serve(showroom_manifest(cell_size=0.05, bake_extra="max_dim = 64\nsplat_radius = 3\n"))
    c = connect(server)
    assert c.bake_lidar_material().ok
    st = c.get_lidar_bake_status()
    assert st.valid and st.splat_radius == 3
    assert max(st.dim_x, st.dim_y, st.dim_z) == 64, "max_dim caps the cells per axis"
    assert st.cell_size_m > 0.05, "the cell grew to fit max_dim"
    # Explicit fields win over the scene's; -1 is an explicit radius of 0.
    assert c.bake_lidar_material(max_dim=32, splat_radius=-1).ok
    st = c.get_lidar_bake_status()
    assert st.splat_radius == 0 and max(st.dim_x, st.dim_y, st.dim_z) == 32
    assert c.bake_lidar_material(cell_size=0.5, max_dim=1024, splat_radius=5).ok
    st = c.get_lidar_bake_status()
    assert st.splat_radius == 5 and st.cell_size_m == pytest.approx(0.5)
    assert max(st.dim_x, st.dim_y, st.dim_z) < 64


def test_stale_bake_loads_without_saying_so(tmp_path, serve, connect):
    """A bake saved before the manifest's materials changed loads with ok=true, the ack does
    not mention staleness, and GetLidarBakeStatus reports stale=true."""
    first = serve(showroom_manifest(), name="first.toml")
    c = connect(first)
    assert c.bake_lidar_material().ok
    assert not c.get_lidar_bake_status().stale
    ack = c.lidar.SaveLidarBake(c.pb.lidar.SaveLidarBakeRequest(name="old"), timeout=T)
    assert ack.ok, ack.message
    assert (tmp_path / "MaterialBakes" / "old.lvxb").is_file()
    assert first.stop() == 0

    changed = showroom_manifest(
        materials=(
            "[materials.storefront_glass]\npreset = \"tinted-glass\"\n"
            "[materials.mirror_silver]\npreset = \"mirror\"\n"
            "[materials.back_wall]\npreset = \"diffuse\"\nreflectivity = 0.3\n"
        )
    )
    second = serve(changed, name="second.toml")
    c = connect(second)
    ack = c.lidar.LoadLidarBake(c.pb.lidar.LoadLidarBakeRequest(name="old"), timeout=T)
    assert ack.ok, ack.message
    assert "stale" not in ack.message.lower()
    st = c.get_lidar_bake_status()
    assert st.valid and st.stale
    # A fresh bake of the new materials is not stale.
    assert c.bake_lidar_material().ok
    assert not c.get_lidar_bake_status().stale


def test_optional_optics_fields_keep_their_value_when_absent(serve, connect):
    server = serve(showroom_manifest())
    c = connect(server)
    L, pb = c.lidar, c.pb.lidar
    before = params_of(c)

    req = base_request(pb, before, retro_gain=123.0, max_returns=2)
    assert req.HasField("retro_gain") and not req.HasField("spec_peak_max")
    ack = L.SetLidarReturnParams(req, timeout=T)
    assert ack.ok, ack.message
    got = params_of(c)
    assert got["retro_gain"] == pytest.approx(123.0)
    assert got["max_returns"] == 2

    # Absent: kept. The nine base fields always replace.
    changed_base = {**before, "max_range_at_ref": 33.0, "noise_sigma0": 0.0}
    req = base_request(pb, changed_base)
    assert not any(req.HasField(f) for f in OPTICS_FIELDS)
    ack = L.SetLidarReturnParams(req, timeout=T)
    assert ack.ok, ack.message
    got = params_of(c)
    assert got["retro_gain"] == pytest.approx(123.0), "an absent optics field keeps its value"
    assert got["max_returns"] == 2
    assert got["max_range_at_ref"] == pytest.approx(33.0)
    assert got["noise_sigma0"] == 0.0
    for f in OPTICS_FIELDS:
        if f not in ("retro_gain", "max_returns"):
            assert got[f] == pytest.approx(before[f]), f

    # Sent as 0: means 0.
    req = base_request(pb, changed_base, spec_peak_max=0.0)
    assert req.HasField("spec_peak_max")
    ack = L.SetLidarReturnParams(req, timeout=T)
    assert ack.ok, ack.message
    got = params_of(c)
    assert got["spec_peak_max"] == 0.0
    assert got["retro_gain"] == pytest.approx(123.0)
    ack = L.SetLidarReturnParams(base_request(pb, changed_base, retro_gain=0.0, min_return_separation=0.0), timeout=T)
    assert ack.ok, ack.message
    got = params_of(c)
    assert got["retro_gain"] == 0.0 and got["min_return_separation"] == 0.0 and got["spec_peak_max"] == 0.0

    # A base field left out of the request is a 0 that replaces (and 0 is out of range for
    # max_range_at_ref, so this one is refused and nothing changes).
    ack = L.SetLidarReturnParams(pb.SetLidarReturnParamsRequest(retro_gain=5.0), timeout=T)
    assert not ack.ok
    assert params_of(c) == got


@pytest.mark.parametrize("bad", [2, 3, 1000, 4294967295])
def test_bad_sensor_index(serve, connect, bad):
    server = serve(two_lidar_manifest())
    c = connect(server)
    L, pb = c.lidar, c.pb.lidar
    expected = f"no lidar sensor at index {bad}"

    ack = L.SetLidarConfig(
        pb.SetLidarConfigRequest(**{**GOOD_CONFIG, "sensor": bad}),
        timeout=T,
    )
    assert not ack.ok
    assert ack.message == expected
    ack = L.SetLidarSecondaryCapture(pb.SetLidarSecondaryCaptureRequest(sensor=bad, capture=1, scope=0), timeout=T)
    assert not ack.ok
    assert ack.message == expected
    ack = c.set_lidar_secondary_capture(3, 1, bad)
    assert not ack.ok and ack.message == expected

    cfg = L.GetLidarConfig(pb.LidarSensorRequest(sensor=bad), timeout=T)
    assert not cfg.found

    for kwargs in ({}, {"material": True, "want_secondary": True, "want_intensity": True}):
        s = L.GetLidarScan(pb.GetLidarScanRequest(sensor=bad, **kwargs), timeout=T)
        assert s.beams == 0 and len(s.ranges) == 0
    assert L.GetLidarBeamCount(pb.LidarSensorRequest(sensor=bad), timeout=T).beams == 0
    assert c.get_lidar_beam_count(sensor=bad) == 0
    a = L.GetLidarBeamAngles(pb.LidarSensorRequest(sensor=bad), timeout=T)
    assert a.beams == 0 and len(a.azimuth) == 0 and len(a.elevation) == 0

    # The real sensors are untouched.
    assert config_of(c, 0).channels == SMALL_CHANNELS
    assert config_of(c, 1).secondary_capture == 0
    assert_serving(c, 0, SMALL_BEAMS)
    assert_serving(c, 1, SECOND_CHANNELS * SECOND_BINS)


RING_CONFIG = dict(
    sensor=0,
    scan_pattern=0,
    channels=1,
    azimuth_bins=65535,
    vfov_min_deg=0.0,
    vfov_max_deg=0.0,
    min_range=0.1,
    max_range=100.0,
    rotation_hz=10.0,
    geom_group_mask=255,
    self_ignore=2,
)
RING_MANIFEST_LIDAR = lidar_table(
    "ring", channels=1, azimuth_bins=65535, extra="vfov_min_deg = 0.0\nvfov_max_deg = 0.0\nmin_range = 0.1"
)


@pytest.mark.parametrize("via", ["SetLidarConfig", "manifest"])
def test_65535_beam_scan_fits_the_default_message_limit(serve, connect, via):
    """One channel of 65 535 bins with all four arrays: about 1 MiB, inside the 4 MiB a
    client accepts by default; every array is full length."""
    lidars = [RING_MANIFEST_LIDAR] if via == "manifest" else None
    server = serve(showroom_manifest(lidars=lidars))
    c = connect(server)  # LuckyEngineClient keeps gRPC's default receive limit
    L, pb = c.lidar, c.pb.lidar
    if via == "SetLidarConfig":
        ack = L.SetLidarConfig(pb.SetLidarConfigRequest(**RING_CONFIG), timeout=T)
        assert ack.ok, ack.message
    assert c.get_lidar_beam_count() == 65535
    assert c.set_lidar_live(True).ok
    assert c.bake_lidar_material().ok
    ack = L.SaveLidarBake(pb.SaveLidarBakeRequest(name="big"), timeout=T)
    assert ack.ok, ack.message
    ack = L.LoadLidarBake(pb.LoadLidarBakeRequest(name="big"), timeout=T)
    assert ack.ok, ack.message
    for _ in range(5):  # one revolution
        step(c)
    s = c.get_lidar_scan(sensor=0, material=True, want_secondary=True, want_intensity=True)
    assert s.beams == 65535
    for name in ("ranges", "secondary_ranges", "intensity", "reflectivity_calibrated"):
        assert len(getattr(s, name)) == 65535, name
    assert s.ByteSize() < 4 * 1024 * 1024
    ranges = np.asarray(s.ranges)
    assert np.count_nonzero(ranges > 0) > 65535 // 2, "a horizontal ring in a closed room hits the walls"
    assert np.count_nonzero(np.asarray(s.intensity) >= 0) > 0
    angles = L.GetLidarBeamAngles(pb.LidarSensorRequest(sensor=0), timeout=T)
    assert angles.beams == 65535 and len(angles.azimuth) == len(angles.elevation) == 65535


def test_a_scan_above_max_message_is_refused_with_a_reason(serve, connect):
    """With --max-message-mib 1, ranges alone (256 KiB) are served, all four arrays (1 MiB
    and more) are refused with RESOURCE_EXHAUSTED saying why, and the server goes on."""
    import grpc

    server = serve(showroom_manifest(lidars=[RING_MANIFEST_LIDAR]), extra=["--max-message-mib", "1"])
    c = connect(server)
    assert c.set_lidar_live(True).ok
    for _ in range(5):
        step(c)
    assert len(c.get_lidar_scan().ranges) == 65535
    with pytest.raises(grpc.RpcError) as e:
        c.get_lidar_scan(material=True, want_secondary=True, want_intensity=True)
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "65535" in e.value.details()
    assert_serving(c, 0, 65535)
