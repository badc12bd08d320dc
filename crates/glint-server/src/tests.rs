//! The serving loop's costs, counted through the real services (a server on a free loopback
//! port, tonic clients): what a lockstep `Step`, a read-only call and the scan readers of a
//! tick cost in snapshot copies ([`crate::EngineStats`]). Counts only, never timings.

use std::path::PathBuf;

use glint_sim::Manifest;

use crate::bench::{Served, channel, client, start};
use crate::engine::Pace;
use crate::proto::agent_service_client::AgentServiceClient;
use crate::proto::mujoco_service_client::MujocoServiceClient;
use crate::proto::{
    GetAgentSchemaRequest, GetJointStateRequest, GetLidarScanRequest, LidarSensorRequest, SetLidarLiveRequest,
    StepRequest,
};
use crate::{EngineStats, TICK_METADATA};

/// Lidars in the test scene.
const SENSORS: u64 = 2;

/// A manifest over the primitives scene with two small lidars, in a folder of its own.
fn manifest(tag: &str) -> Manifest {
    let dir = std::env::temp_dir().join(format!("glint-server-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", "primitives.xml"].iter().collect();
    let lidar = |name: &str| {
        format!("[[lidar]]\nname = \"{name}\"\nattach_site = \"lidar\"\nchannels = 4\nazimuth_bins = 90\n")
    };
    let text = format!("scene = \"{}\"\n{}{}", scene.display().to_string().replace('\\', "/"), lidar("a"), lidar("b"));
    let path = dir.join("serve.toml");
    std::fs::write(&path, text).unwrap();
    Manifest::load(&path).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    crate::server_runtime().unwrap()
}

/// `now` less `before`, counter by counter.
fn since(before: EngineStats, now: EngineStats) -> EngineStats {
    EngineStats {
        ticks: now.ticks - before.ticks,
        publishes: now.publishes - before.publishes,
        sensor_copies: now.sensor_copies - before.sensor_copies,
    }
}

fn tick_of<T>(response: &tonic::Response<T>) -> u64 {
    response.metadata().get(TICK_METADATA).unwrap().to_str().unwrap().parse().unwrap()
}

#[test]
fn a_lockstep_step_copies_each_sensor_once_and_its_readers_share_it() {
    runtime().block_on(async {
        let served: Served = start(&manifest("lockstep"), Pace::Lockstep).await.unwrap();
        let mut lidar = client(served.addr).await.unwrap();
        lidar.set_lidar_live(SetLidarLiveRequest { live: true }).await.unwrap();
        let mut agent = AgentServiceClient::new(channel(served.addr).await.unwrap());
        let nu = agent.get_agent_schema(GetAgentSchemaRequest::default()).await.unwrap().into_inner().schema.unwrap();
        let step = StepRequest { actions: vec![0.0; nu.action_size as usize], ..StepRequest::default() };
        let readers: Vec<_> = {
            let mut all = Vec::new();
            for _ in 0..8 {
                all.push(client(served.addr).await.unwrap());
            }
            all
        };
        const STEPS: u64 = 5;
        let before = served.engine.stats();
        for k in 1..=STEPS {
            assert!(agent.step(step.clone()).await.unwrap().into_inner().success);
            // Eight readers of the tick, at once, of both sensors.
            let reads = readers.iter().cloned().enumerate().map(|(i, mut c)| {
                tokio::spawn(async move {
                    let r = GetLidarScanRequest { sensor: (i % 2) as u32, want_intensity: true, ..Default::default() };
                    let answer = c.get_lidar_scan(r).await.unwrap();
                    (tick_of(&answer), answer.into_inner().into_message().ranges.len())
                })
            });
            for read in reads.collect::<Vec<_>>() {
                let (tick, beams) = read.await.unwrap();
                assert_eq!((tick, beams), (before.ticks + k, 360), "every reader sees the step just taken");
            }
        }
        let spent = since(before, served.engine.stats());
        assert_eq!(spent.ticks, STEPS);
        assert_eq!(spent.publishes, STEPS, "one snapshot per Step (it was two: the tick's and the job's)");
        assert_eq!(spent.sensor_copies, STEPS * SENSORS, "one copy per sensor per Step");

        // Calls that only read the simulation copy nothing.
        let before = served.engine.stats();
        let mut mujoco = MujocoServiceClient::new(channel(served.addr).await.unwrap());
        assert!(mujoco.get_joint_state(GetJointStateRequest::default()).await.unwrap().into_inner().success);
        let angles = lidar.get_lidar_beam_angles(LidarSensorRequest { sensor: 1 }).await.unwrap().into_inner();
        assert_eq!(angles.beams, 360);
        lidar.get_lidar_scan(GetLidarScanRequest::default()).await.unwrap();
        assert_eq!(since(before, served.engine.stats()), EngineStats::default());
        drop((lidar, agent, mujoco, readers));
        served.stop().await.unwrap();
    });
}

#[test]
fn a_free_running_loop_copies_only_what_readers_ask_for() {
    runtime().block_on(async {
        let served = start(&manifest("free"), Pace::Free).await.unwrap();
        let mut lidar = client(served.addr).await.unwrap();
        lidar.set_lidar_live(SetLidarLiveRequest { live: true }).await.unwrap();
        // Nobody reads: the loop ticks and copies nothing.
        let before = served.engine.stats();
        while served.engine.stats().ticks < before.ticks + 50 {
            tokio::task::yield_now().await;
        }
        let idle = since(before, served.engine.stats());
        assert!(idle.ticks >= 50);
        assert_eq!((idle.publishes, idle.sensor_copies), (0, 0), "{idle:?}");

        // Eight readers back to back: never more copies than ticks, and each scan is of a
        // tick completed no earlier than when it was asked for.
        let before = served.engine.stats();
        let readers = (0..8).map(|_| {
            let engine = served.engine.clone();
            tokio::spawn(async move {
                for _ in 0..50 {
                    let asked = engine.stats().ticks;
                    let snapshot = engine.fresh().await;
                    assert!(snapshot.tick >= asked, "tick {} after {asked} had completed", snapshot.tick);
                    assert_eq!(snapshot.sensors.len(), SENSORS as usize);
                }
            })
        });
        for r in readers.collect::<Vec<_>>() {
            r.await.unwrap();
        }
        let read = since(before, served.engine.stats());
        assert!(read.publishes <= read.ticks + 1, "{read:?}");
        assert!(read.publishes <= 8 * 50, "{read:?}");
        assert_eq!(read.sensor_copies, read.publishes * SENSORS);
        drop(lidar);
        served.stop().await.unwrap();
    });
}

#[test]
fn glints_own_service_sets_and_reports_the_physical_return_model() {
    use crate::proto::glint::glint_lidar_service_client::GlintLidarServiceClient;
    use crate::proto::glint::{GetReturnModelRequest, PhysicalModel, ReturnModel};

    runtime().block_on(async {
        let served: Served = start(&manifest("return-model"), Pace::Lockstep).await.unwrap();
        let mut glint = GlintLidarServiceClient::new(channel(served.addr).await.unwrap());
        let get = |mut c: GlintLidarServiceClient<_>| async move {
            c.get_return_model(GetReturnModelRequest {}).await.unwrap().into_inner()
        };
        assert_eq!(get(glint.clone()).await, ReturnModel { model: "seed".into(), physical: None });
        let all_on = glint
            .set_return_model(ReturnModel { model: "physical".into(), physical: None })
            .await
            .unwrap()
            .into_inner();
        assert!(all_on.success, "{}", all_on.message);
        let terms = get(glint.clone()).await.physical.unwrap();
        assert!(terms.detection && terms.fresnel && terms.beam_divergence_deg == 0.18);
        assert_eq!(terms.footprint_rays, 1);
        let chosen = PhysicalModel { fresnel: false, beam_divergence_deg: 0.3, footprint_rays: 7, ..terms };
        let ack = glint
            .set_return_model(ReturnModel { model: "physical".into(), physical: Some(chosen) })
            .await
            .unwrap()
            .into_inner();
        assert!(ack.success);
        assert_eq!(get(glint.clone()).await.physical, Some(chosen));
        let wide = PhysicalModel { beam_divergence_deg: 45.0, ..chosen };
        let refused =
            glint.set_return_model(ReturnModel { model: "physical".into(), physical: Some(wide) }).await.unwrap();
        let refused = refused.into_inner();
        assert!(!refused.success && refused.message.contains("beam_divergence_deg"), "{}", refused.message);
        let many = PhysicalModel { footprint_rays: 33, ..chosen };
        let refused =
            glint.set_return_model(ReturnModel { model: "physical".into(), physical: Some(many) }).await.unwrap();
        let refused = refused.into_inner();
        assert!(!refused.success && refused.message.contains("footprint_rays"), "{}", refused.message);
        let unknown = glint.set_return_model(ReturnModel { model: "fancy".into(), physical: None }).await.unwrap();
        assert!(unknown.into_inner().message.contains("fancy"));
        assert_eq!(get(glint.clone()).await.physical, Some(chosen), "nothing changed on a refusal");
        let seed = glint.set_return_model(ReturnModel { model: "seed".into(), physical: None }).await.unwrap();
        assert!(seed.into_inner().success);
        assert_eq!(get(glint).await.model, "seed");
        served.stop().await.unwrap();
    });
}
