"""Server reflection (v1alpha through the client, v1 through a raw stream) and UNIMPLEMENTED,
naming the RPC, for what glint does not serve."""

from __future__ import annotations

import grpc
import pytest

from conftest import RPC_TIMEOUT_S, assert_serving, rpc_error, showroom_manifest

T = RPC_TIMEOUT_S
SERVED = {"hazel.rpc.LidarService", "hazel.rpc.AgentService", "hazel.rpc.MujocoService"}
LIDAR_RPCS = {
    "SetLidarLive",
    "SetLidarConfig",
    "GetLidarConfig",
    "SetLidarReturnParams",
    "GetLidarReturnParams",
    "SetLidarPreset",
    "SetLidarSecondaryCapture",
    "BakeLidarMaterial",
    "GetLidarBakeStatus",
    "LoadLidarBake",
    "SaveLidarBake",
    "GetLidarScan",
    "GetLidarBeamCount",
    "GetLidarBeamAngles",
}


@pytest.fixture
def client(serve, connect):
    return connect(serve(showroom_manifest()))


def test_v1alpha_reflection_through_the_client(client):
    from luckyrobots import reflection

    services = set(client.discover_services())
    assert SERVED <= services
    lidar = reflection.describe_service(client.channel, "hazel.rpc.LidarService")
    assert {m.name for m in lidar.methods} == LIDAR_RPCS
    get_scan = lidar.methods_by_name["GetLidarScan"]
    assert get_scan.input_type.full_name == "hazel.rpc.GetLidarScanRequest"
    assert get_scan.output_type.full_name == "hazel.rpc.LidarScanResponse"
    agent = reflection.describe_service(client.channel, "hazel.rpc.AgentService")
    assert {"GetAgentSchema", "ResetAgent", "Step"} <= {m.name for m in agent.methods}
    assert reflection.has_rpc(client.channel, "hazel.rpc.MujocoService/GetMujocoInfo")
    # The wire field numbers a client relies on.
    fields = {f.name: f.number for f in get_scan.output_type.fields}
    assert fields == {
        "beams": 1,
        "ranges": 2,
        "secondary_ranges": 3,
        "intensity": 4,
        "reflectivity_calibrated": 5,
    }


def _reflection_v1(channel, requests):
    """ServerReflectionInfo on grpc.reflection.v1 (same messages as v1alpha, other path)."""
    try:
        from grpc_reflection.v1 import reflection_pb2 as pb  # type: ignore
    except ImportError:
        from grpc_reflection.v1alpha import reflection_pb2 as pb
    call = channel.stream_stream(
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        request_serializer=pb.ServerReflectionRequest.SerializeToString,
        response_deserializer=pb.ServerReflectionResponse.FromString,
    )
    return pb, list(call(iter([pb.ServerReflectionRequest(**r) for r in requests]), timeout=T))


def test_v1_reflection(client):
    from google.protobuf import descriptor_pb2

    pb, responses = _reflection_v1(
        client.channel,
        [{"list_services": ""}, {"file_containing_symbol": "hazel.rpc.LidarService"}],
    )
    assert len(responses) == 2
    listed = {s.name for s in responses[0].list_services_response.service}
    assert SERVED <= listed
    files = responses[1].file_descriptor_response.file_descriptor_proto
    assert files, responses[1]
    services = {}
    for raw in files:
        fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
        for s in fd.service:
            services[f"{fd.package}.{s.name}"] = {m.name for m in s.method}
    assert services.get("hazel.rpc.LidarService") == LIDAR_RPCS


def test_unimplemented_names_the_rpc(client):
    pb = client.pb
    # An RPC of a served service that glint does not serve.
    e = rpc_error(
        client.agent.SetActionGroup,
        pb.agent.SetActionGroupRequest(
            agent_name="", group=pb.agent.ActionGroupEntry(group_name="arm", actions=[0.0], action_indices=[0])
        ),
        timeout=T,
    )
    assert e.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "SetActionGroup" in e.details()
    e = rpc_error(client.set_action_group, "arm", [0.0], [0])
    assert e.code() == grpc.StatusCode.UNIMPLEMENTED and "SetActionGroup" in e.details()

    # A server-streaming RPC of MujocoService.
    e = rpc_error(client.stream_joint_state, "agent_0")
    assert e.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "StreamJointState" in e.details()

    # A whole service glint does not serve.
    e = rpc_error(client.scene.GetSceneInfo, pb.scene.GetSceneInfoRequest(), timeout=T)
    assert e.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "GetSceneInfo" in e.details()

    assert_serving(client)
