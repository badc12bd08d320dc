"""Many clients at once: eight processes poll GetLidarScan while a ninth steps the simulation
in lockstep. No call fails, and no scan is older than the last step completed before it was
asked for (its `glint-tick` metadata). The step rate with and without the pollers is printed,
not asserted."""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback

from conftest import RPC_TIMEOUT_S, SMALL_BEAMS, showroom_manifest

T = RPC_TIMEOUT_S
POLLERS = 8
STEPS = 150
HANG_GUARD_S = 300.0


def _tick(call) -> int:
    for md in (call.initial_metadata() or (), call.trailing_metadata() or ()):
        for item in md:
            if item.key == "glint-tick":
                return int(item.value)
    raise AssertionError("no glint-tick metadata")


def poller(target, published, ready, started, stop, results, index):
    """Polls GetLidarScan until `stop`; each scan's tick must be at least the tick the
    stepper had published before the request was sent."""
    import grpc
    from luckyrobots.grpc.generated import lidar_pb2, lidar_pb2_grpc

    polls, errors, lowest_margin = 0, [], None
    try:
        with grpc.insecure_channel(target) as channel:
            lidar = lidar_pb2_grpc.LidarServiceStub(channel)
            request = lidar_pb2.GetLidarScanRequest(sensor=0)
            lidar.GetLidarScan(request, timeout=T)  # connected
            ready.wait(timeout=HANG_GUARD_S)  # idle while the stepper runs alone
            started.wait(timeout=HANG_GUARD_S)
            while True:
                done = stop.is_set()
                floor = published.value
                try:
                    scan, call = lidar.GetLidarScan.with_call(request, timeout=T)
                except grpc.RpcError as e:
                    errors.append(f"poller {index}: {e.code()}: {e.details()}")
                    if len(errors) > 10:
                        break
                    continue
                tick = _tick(call)
                polls += 1
                if tick < floor:
                    errors.append(f"poller {index}: a scan of tick {tick} after step {floor} had completed")
                if len(scan.ranges) != scan.beams or scan.beams != SMALL_BEAMS:
                    errors.append(f"poller {index}: {len(scan.ranges)} ranges for {scan.beams} beams")
                margin = tick - floor
                lowest_margin = margin if lowest_margin is None else min(lowest_margin, margin)
                if done:
                    break
    except Exception:
        errors.append(f"poller {index}: {traceback.format_exc()}")
    results.put(("poller", index, polls, errors, lowest_margin))


def stepper(target, published, ready, started, stop, results):
    """Steps alone, then with the pollers running; publishes each completed step's tick."""
    import grpc
    from luckyrobots.grpc.generated import agent_pb2, agent_pb2_grpc, lidar_pb2, lidar_pb2_grpc

    errors, rates = [], {}
    try:
        with grpc.insecure_channel(target) as channel:
            agent = agent_pb2_grpc.AgentServiceStub(channel)
            lidar = lidar_pb2_grpc.LidarServiceStub(channel)
            _, call = lidar.GetLidarScan.with_call(lidar_pb2.GetLidarScanRequest(sensor=0), timeout=T)
            tick = _tick(call)
            published.value = tick

            def run(label):
                nonlocal tick
                t0 = time.perf_counter()
                for k in range(STEPS):
                    actions = [0.3, 0.2 if (k // 25) % 2 else -0.2, 0.1]
                    r = agent.Step(agent_pb2.StepRequest(actions=actions), timeout=T)
                    if not r.success:
                        errors.append(f"stepper: {r.message}")
                        return
                    tick += 1
                    published.value = tick
                rates[label] = STEPS / (time.perf_counter() - t0)

            ready.wait(timeout=HANG_GUARD_S)  # every poller is connected, and idle
            run("alone")
            started.wait(timeout=HANG_GUARD_S)  # every poller polls from now on
            run("with pollers")
            # The stepper itself reads its last step.
            _, call = lidar.GetLidarScan.with_call(lidar_pb2.GetLidarScanRequest(sensor=0), timeout=T)
            if _tick(call) != tick:
                errors.append(f"stepper: scan tick {_tick(call)} after {tick} steps")
    except Exception:
        errors.append(f"stepper: {traceback.format_exc()}")
    finally:
        stop.set()
    results.put(("stepper", rates, errors, tick))


def test_eight_pollers_and_a_stepper(serve, connect, capsys):
    server = serve(showroom_manifest())
    c = connect(server)
    assert c.set_lidar_live(True).ok
    ctx = mp.get_context("spawn")
    published = ctx.Value("q", 0)
    ready = ctx.Barrier(POLLERS + 1)
    started = ctx.Barrier(POLLERS + 1)
    stop = ctx.Event()
    results = ctx.Queue()
    procs = [
        ctx.Process(target=poller, args=(server.target, published, ready, started, stop, results, i))
        for i in range(POLLERS)
    ]
    procs.append(ctx.Process(target=stepper, args=(server.target, published, ready, started, stop, results)))
    for p in procs:
        p.start()
    reports = [results.get(timeout=HANG_GUARD_S) for _ in procs]
    for p in procs:
        p.join(timeout=HANG_GUARD_S)
        assert p.exitcode == 0, f"a client process exited {p.exitcode}"

    stepper_report = [r for r in reports if r[0] == "stepper"]
    poller_reports = [r for r in reports if r[0] == "poller"]
    assert len(stepper_report) == 1 and len(poller_reports) == POLLERS
    _, rates, step_errors, last_tick = stepper_report[0]
    errors = list(step_errors)
    for _, index, polls, errs, _margin in poller_reports:
        errors.extend(errs)
        assert polls > 0, f"poller {index} never polled"
    assert not errors, "\n".join(errors[:20])
    assert last_tick == 2 * STEPS

    total_polls = sum(r[2] for r in poller_reports)
    with capsys.disabled():
        print(
            f"\n[glint serve] lockstep steps/s: {rates.get('alone', 0):.0f} alone, "
            f"{rates.get('with pollers', 0):.0f} with {POLLERS} polling processes "
            f"({total_polls} scans served while stepping)"
        )
    # The server is still whole.
    assert c.get_lidar_beam_count() == SMALL_BEAMS
