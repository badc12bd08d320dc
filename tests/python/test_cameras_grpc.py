"""Cameras over gRPC, through LuckyEngine's own client: CameraService.ListCameras and
GetCameraConfig, and AgentService.Step answering camera_requests with RGBA colour and
gray16le depth frames (metres = code * depth_scale)."""

from __future__ import annotations

import numpy as np

import glint
from conftest import RPC_TIMEOUT_S

T = RPC_TIMEOUT_S


def test_list_cameras_and_config(showroom):
    _, c = showroom
    assert c.list_cameras() == [{"name": "overview", "id": 0}]
    cfg = c.get_camera_config("overview")
    assert cfg.found
    assert (cfg.config.width, cfg.config.height) == (320, 240)
    assert abs(cfg.config.depth_scale - 0.001) < 1e-9 and cfg.config.record_depth
    assert not c.get_camera_config("nowhere").found


def test_step_answers_colour_and_depth_frames(showroom):
    server, c = showroom
    c.configure_cameras(
        [{"name": "overview"}, {"name": "overview", "kind": "depth", "width": 64, "height": 48}]
    )
    obs = c.step([0.0, 0.0, 0.0])
    colour, depth = obs.camera_frames
    assert (colour.name, colour.width, colour.height, colour.channels) == ("overview", 320, 240, 4)
    rgba = np.frombuffer(colour.data, np.uint8).reshape(240, 320, 4)
    assert (rgba[..., 3] == 255).all() and rgba[..., :3].mean() > 30
    assert (depth.width, depth.height, depth.channels) == (64, 48, 1)
    metres = np.frombuffer(depth.data, "<u2").reshape(48, 64) * depth.depth_scale
    # The same camera of the same manifest (its glass seen through by depth) rendered
    # in-process: within the millimetre codes' rounding.
    sim = glint.Simulation.from_manifest(str(server.manifest))
    sim.set_cameras([{"camera": "overview", "width": 64, "height": 48, "outputs": ["depth"]}])
    expected = sim.render()["overview"]["depth"][0]
    close = np.abs(metres - expected) <= 0.0006
    assert close.mean() > 0.98, close.mean()


def test_bad_camera_requests_are_refused_before_stepping(showroom):
    _, c = showroom
    before = c.agent.Step(c.pb.agent.StepRequest(actions=[0.0, 0.0, 0.0]), timeout=T).observation.frame_number
    for request, want in [
        (c.pb.agent.GetCameraFrameRequest(name="overveiw"), "did you mean `overview`"),
        (c.pb.agent.GetCameraFrameRequest(name="overview", width=10, height=0), "give both sides"),
        (c.pb.agent.GetCameraFrameRequest(name="overview", width=100000, height=10), "give both sides"),
    ]:
        r = c.agent.Step(c.pb.agent.StepRequest(actions=[0.0, 0.0, 0.0], camera_requests=[request]), timeout=T)
        assert not r.success and want in r.message, r.message
    after = c.agent.Step(c.pb.agent.StepRequest(actions=[0.0, 0.0, 0.0]), timeout=T).observation.frame_number
    assert after == before + 1, "the refused steps moved nothing"


def test_camera_requests_are_refused_while_recording_camera_bindings(tmp_path, serve, connect):
    from conftest import showroom_manifest

    manifest = showroom_manifest() + '\n[[camera]]\ncamera = "overview"\nwidth = 32\nheight = 24\n'
    server = serve(manifest, extra=["--record", str(tmp_path / "rec")])
    c = connect(server)
    first = c.agent.Step(c.pb.agent.StepRequest(actions=[0.0, 0.0, 0.0]), timeout=T)
    assert first.success, first.message
    request = c.pb.agent.GetCameraFrameRequest(name="overview")
    r = c.agent.Step(c.pb.agent.StepRequest(actions=[0.0, 0.0, 0.0], camera_requests=[request]), timeout=T)
    assert not r.success and "--record" in r.message, r.message
    after = c.agent.Step(c.pb.agent.StepRequest(actions=[0.0, 0.0, 0.0]), timeout=T)
    assert after.observation.frame_number == first.observation.frame_number + 1, "the refused step moved nothing"


def test_set_camera_config_round_trips_and_steps_follow_the_model(serve, connect):
    """SetCameraConfig with luckyrobots' own messages: GetCameraConfig then reports every
    field as set, Step's depth frames come from the chosen model at its depth_scale, and
    out-of-range values are refused with the field's name, changing nothing."""
    from conftest import showroom_manifest

    c = connect(serve(showroom_manifest()))
    new = c.pb.camera.CameraConfig()
    new.CopyFrom(c.get_camera_config("overview").config)
    new.width, new.height = 96, 64
    new.record_mask = False
    new.sensor_model = 1  # active stereo
    new.depth_scale = 0.0001
    new.max_range, new.min_range = 6.0, 0.2
    new.detect_floor = 0.004
    new.baseline, new.subpixel_sigma = 0.06, 0.02
    ack = c.set_camera_config("overview", new)
    assert ack.ok, ack.message
    got = c.get_camera_config("overview").config
    assert got == new, (got, new)

    def depth_frame():
        request = c.pb.agent.GetCameraFrameRequest(name="overview", kind=c.pb.agent.CAMERA_STREAM_DEPTH)
        r = c.agent.Step(c.pb.agent.StepRequest(actions=[0.0, 0.0, 0.0], camera_requests=[request]), timeout=T)
        assert r.success, r.message
        frame = r.camera_frames[0].frame
        return frame, np.frombuffer(frame.data, "<u2").reshape(frame.height, frame.width)

    frame, stereo = depth_frame()
    assert (frame.width, frame.height) == (96, 64), "the configured size"
    assert abs(frame.depth_scale - 0.0001) < 1e-9
    # The right imager sees nothing left of f·B/z pixels: the first columns are holes.
    clean_config = c.pb.camera.CameraConfig()
    clean_config.CopyFrom(got)
    clean_config.sensor_model = 0
    assert c.set_camera_config("overview", clean_config).ok
    _, clean = depth_frame()
    # Stereo loses pixels the clean depth has (the left band, occlusion shadows, the range
    # gate at 6 m) and measures the others within its noise (z²σ/(f·B): a few % at 4-6 m).
    clean_m, stereo_m = clean * 0.0001, stereo * 0.0001
    assert ((stereo == 0) & (clean > 0) & (clean_m < 6.0)).sum() > 20
    both = (clean_m < 6.0) & (stereo > 0)
    assert both.sum() > 500, both.sum()
    assert np.median(np.abs(stereo_m[both] / clean_m[both] - 1.0)) < 0.03

    for field, value, want in [
        ("baseline", -0.05, "baseline = -0.05"),
        ("depth_scale", 0.0, "depth_scale = 0"),
        ("sensor_model", 7, "sensor_model"),
        ("debug_channel", 12, "debug_channel"),
    ]:
        bad = c.pb.camera.CameraConfig()
        bad.CopyFrom(clean_config)
        setattr(bad, field, value)
        ack = c.set_camera_config("overview", bad)
        assert not ack.ok and want in ack.message and "nothing changed" in ack.message, ack.message
        assert c.get_camera_config("overview").config == clean_config, f"{field}: nothing changed"
    assert not c.set_camera_config("nowhere", clean_config).ok
    debug = c.pb.camera.CameraConfig()
    debug.CopyFrom(clean_config)
    debug.debug_channel = 3
    assert c.set_camera_config("overview", debug).ok
    assert c.get_camera_config("overview").config.debug_channel == 3
