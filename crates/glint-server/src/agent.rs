//! The step loop as `luckyrobots`' `LuckyEnv` and `Session` drive it: `AgentService`
//! (`GetAgentSchema`, `ResetAgent`, `Step`) and `MujocoService` (`GetMujocoInfo`,
//! `GetJointState`). Agent `agent_N` (empty: `agent_0`) is world N.

use std::collections::HashMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use glint_sim::{Simulation, WorldStatus, Worlds};
use tonic::{Request, Response, Status};

use crate::camera;
use crate::engine::{Engine, Pace};
use crate::proto::agent_service_server::AgentService;
use crate::proto::mujoco_service_server::MujocoService;
use crate::proto::{
    ActionGroupEntry, AgentFrame, AgentSchema, GetAgentSchemaRequest, GetAgentSchemaResponse, GetJointStateRequest,
    GetJointStateResponse, GetMujocoInfoRequest, GetMujocoInfoResponse, JointState, NamedImageFrame, ResetAgentRequest,
    ResetAgentResponse, SimulationContract, StepRequest, StepResponse,
};
use crate::size::{Limit, Size};

/// `AgentService` and `MujocoService` over the loop.
#[derive(Clone)]
pub struct Agents {
    engine: Engine,
    limit: Limit,
}

/// Bytes the fixed fields of an `AgentFrame`, `AgentSchema` or `JointState` take at most.
const NESTED_FIXED: usize = 64;

/// How to ask for a smaller observation.
const SMALLER_OBSERVATION: &str =
    "read fewer values in the manifest's [[observation]] (a lidar_ranges component is one value per beam)";

impl Agents {
    /// The services over `engine`, answering within `limit`.
    pub fn new(engine: Engine, limit: Limit) -> Agents {
        Agents { engine, limit }
    }

    /// The world an agent (or robot) name selects: empty is `agent_0`, `agent_N` is world N.
    fn world(&self, name: &str) -> Result<usize, String> {
        let nworld = self.engine.info().nworld;
        let known = || {
            if nworld == 1 {
                "agent_0 (or an empty name)".to_string()
            } else {
                format!("agent_0 to agent_{}", nworld - 1)
            }
        };
        if name.is_empty() {
            return Ok(0);
        }
        match name.strip_prefix("agent_").and_then(|n| n.parse::<usize>().ok()) {
            Some(w) if w < nworld => Ok(w),
            _ => Err(format!("no agent named '{name}': glint serve runs {nworld} worlds, agents {}", known())),
        }
    }
}

/// Why a `Step` is refused: a message in the answer (`success = false`), or a status (an
/// answer too large to send).
enum Refusal {
    Message(String),
    Status(Status),
}

impl From<String> for Refusal {
    fn from(message: String) -> Refusal {
        Refusal::Message(message)
    }
}

impl From<Status> for Refusal {
    fn from(status: Status) -> Refusal {
        Refusal::Status(status)
    }
}

/// Checks that the `Step` answer of `world` (an observation of `observation` values, `nu`
/// actions, a frame per camera request) fits `limit`, before anything steps or renders.
fn check_step(
    limit: Limit,
    world: usize,
    (observation, nu): (usize, usize),
    requests: &[camera::FrameRequest],
) -> Result<(), Status> {
    let frame = Size::of(NESTED_FIXED).floats(observation).floats(nu);
    let size = camera::with_frames(Size::answer().message(frame), requests);
    let what = format!(
        "the Step answer of agent_{world} (an observation of {observation} values and {})",
        camera::describe(requests)
    );
    let smaller = format!(
        "ask for smaller frames (camera_requests' width and height) or fewer of them, or {SMALLER_OBSERVATION}"
    );
    limit.check(what, size, &smaller)
}

fn milliseconds_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// The action vector `actions` with each group written over it at its indices; an empty
/// `actions` starts from the controls in force. Errors name the length or index at fault.
fn compose_actions(actions: &[f32], groups: &[ActionGroupEntry], current: &[f64]) -> Result<Vec<f64>, String> {
    let nu = current.len();
    let mut out: Vec<f64> = if actions.is_empty() && !groups.is_empty() {
        current.to_vec()
    } else {
        actions.iter().map(|&a| a as f64).collect()
    };
    if out.len() != nu {
        return Err(format!(
            "the action vector has {} values, and the model has {nu} actuators: send {nu} actions, one per actuator \
             in GetAgentSchema's action_names order",
            out.len()
        ));
    }
    for group in groups {
        if group.actions.len() != group.action_indices.len() {
            return Err(format!(
                "action group '{}' has {} actions and {} indices: give one index per action",
                group.group_name,
                group.actions.len(),
                group.action_indices.len()
            ));
        }
        for (&a, &i) in group.actions.iter().zip(&group.action_indices) {
            let slot = usize::try_from(i).ok().filter(|&i| i < nu).ok_or_else(|| {
                format!(
                    "action group '{}' writes index {i}, outside the {nu} actuators (0 to {})",
                    group.group_name,
                    nu.saturating_sub(1)
                )
            })?;
            out[slot] = a as f64;
        }
    }
    Ok(out)
}

/// The fields of a simulation contract that are set, by name.
fn contract_fields(c: &SimulationContract) -> Vec<&'static str> {
    let lists = [
        ("pose_position_noise", &c.pose_position_noise),
        ("friction_range", &c.friction_range),
        ("restitution_range", &c.restitution_range),
        ("mass_scale_range", &c.mass_scale_range),
        ("com_offset_range", &c.com_offset_range),
        ("motor_strength_range", &c.motor_strength_range),
        ("motor_offset_range", &c.motor_offset_range),
        ("push_interval_range", &c.push_interval_range),
        ("push_velocity_range", &c.push_velocity_range),
        ("vel_command_x_range", &c.vel_command_x_range),
        ("vel_command_y_range", &c.vel_command_y_range),
        ("vel_command_yaw_range", &c.vel_command_yaw_range),
        ("vel_command_resampling_time_range", &c.vel_command_resampling_time_range),
    ];
    let scalars = [
        ("pose_orientation_noise", c.pose_orientation_noise),
        ("joint_position_noise", c.joint_position_noise),
        ("joint_velocity_noise", c.joint_velocity_noise),
        ("terrain_difficulty", c.terrain_difficulty),
        ("vel_command_standing_probability", c.vel_command_standing_probability),
    ];
    let mut set: Vec<&str> = lists.iter().filter(|(_, v)| !v.is_empty()).map(|(n, _)| *n).collect();
    set.extend(scalars.iter().filter(|(_, v)| *v != 0.0).map(|(n, _)| *n));
    if !c.terrain_type.is_empty() {
        set.push("terrain_type");
    }
    set
}

/// What one agent step produced, built on the loop thread.
struct Stepped {
    observations: Vec<f32>,
    actions: Vec<f32>,
    frame: u64,
    status: WorldStatus,
    seconds: f64,
    task: Option<glint_sim::TaskOutcome>,
}

fn step_world(sim: &mut Simulation, world: usize, actions: &[f64]) -> Result<Stepped, String> {
    let started = Instant::now();
    // The error's kind first, as Python's class names it: the same mistake reads the same.
    let report = sim.step_agent(world, actions).map_err(|e| format!("{}: {e}", e.kind().name()))?;
    let seconds = started.elapsed().as_secs_f64();
    let mut observations = vec![0.0; sim.observation().size()];
    sim.observe(world, &mut observations).map_err(|e| e.to_string())?;
    let applied = sim.controls(world).map_err(|e| e.to_string())?.iter().map(|&c| c as f32).collect();
    Ok(Stepped {
        observations,
        actions: applied,
        frame: sim.episode_tick(world).map_err(|e| e.to_string())?,
        status: report.status[world],
        seconds,
        task: report.task.get(world).copied(),
    })
}

#[tonic::async_trait]
impl AgentService for Agents {
    async fn get_agent_schema(
        &self,
        request: Request<GetAgentSchemaRequest>,
    ) -> Result<Response<GetAgentSchemaResponse>, Status> {
        let name = request.into_inner().agent_name;
        let world = self.world(&name).map_err(Status::not_found)?;
        let info = self.engine.info();
        let observations = info.observation_names.iter().map(String::len);
        let schema = Size::of(NESTED_FIXED).strings(observations).strings(info.actuators.iter().map(|(n, _)| n.len()));
        let what = format!(
            "the schema of agent_{world} ({} observation names, {} action names)",
            info.observation_names.len(),
            info.actuators.len()
        );
        self.limit.check(what, Size::answer().message(schema), SMALLER_OBSERVATION)?;
        let schema = AgentSchema {
            agent_name: format!("agent_{world}"),
            observation_names: info.observation_names.clone(),
            action_names: info.actuators.iter().map(|(n, _)| n.clone()).collect(),
            observation_size: info.observation_names.len() as u32,
            action_size: info.actuators.len() as u32,
        };
        Ok(Response::new(GetAgentSchemaResponse { schema: Some(schema) }))
    }

    async fn reset_agent(&self, request: Request<ResetAgentRequest>) -> Result<Response<ResetAgentResponse>, Status> {
        let r = request.into_inner();
        let world = match self.world(&r.agent_name) {
            Ok(w) => w,
            Err(message) => return Ok(Response::new(ResetAgentResponse { success: false, message })),
        };
        let ignored = r.simulation_contract.as_ref().map(contract_fields).unwrap_or_default();
        let answer =
            self.engine.call(move |core| core.sim.reset(Worlds::One(world), None).map_err(|e| e.to_string())).await?;
        let response = match answer {
            Ok(()) if ignored.is_empty() => {
                ResetAgentResponse { success: true, message: format!("agent_{world} reset") }
            }
            Ok(()) => ResetAgentResponse {
                success: true,
                message: format!(
                    "agent_{world} reset; the simulation contract's {} are not applied: glint draws each episode's \
                     initial state from the manifest's [reset] table",
                    ignored.join(", ")
                ),
            },
            Err(message) => ResetAgentResponse { success: false, message },
        };
        Ok(Response::new(response))
    }

    async fn step(&self, request: Request<StepRequest>) -> Result<Response<StepResponse>, Status> {
        let r = request.into_inner();
        let info = self.engine.info();
        let fail =
            |message: String| Ok(Response::new(StepResponse { success: false, message, ..StepResponse::default() }));
        if info.pace != Pace::Lockstep {
            return fail(format!(
                "glint serve runs with --pace {}: the simulation advances on its own clock and Step does not move it; \
                 start glint serve with --pace lockstep to step it from the client",
                info.pace.name()
            ));
        }
        let world = match self.world(&r.agent_name) {
            Ok(w) => w,
            Err(message) => return fail(message),
        };
        let (limit, layout) = (self.limit, (info.observation_names.len(), info.actuators.len()));
        let answer = self
            .engine
            .call(move |core| -> Result<(Stepped, Vec<NamedImageFrame>), Refusal> {
                // Camera requests and the answer's size are checked before the step, so a
                // refused one moves nothing and renders nothing.
                let requests = camera::resolve(&core.sim, &core.cameras, &r.camera_requests)?;
                check_step(limit, world, layout, &requests)?;
                let current = core.sim.controls(world).map_err(|e| e.to_string())?.to_vec();
                let actions = compose_actions(&r.actions, &r.action_groups, &current)?;
                let stepped = step_world(&mut core.sim, world, &actions)?;
                core.ticked();
                let number = stepped.frame.min(u32::MAX as u64) as u32;
                let frames = camera::frames(&mut core.sim, world, &requests, number, milliseconds_now())?;
                Ok((stepped, frames))
            })
            .await?;
        let (stepped, camera_frames) = match answer {
            Ok(s) => s,
            Err(Refusal::Message(message)) => return fail(message),
            Err(Refusal::Status(status)) => return Err(status),
        };
        let unstable = stepped.status == WorldStatus::Unstable;
        let reached = stepped.task.is_some_and(|t| t.reached);
        let (terminated, truncated) = stepped.status.terminated_truncated(reached);
        // The manifest's [task], as raw signals: the reward, and its terms unweighted.
        let (reward_signals, info) = match stepped.task {
            Some(t) => (
                HashMap::from([
                    ("reward".to_string(), t.reward as f32),
                    ("progress".to_string(), t.progress as f32),
                    ("goal_reached".to_string(), t.reached as u8 as f32),
                    ("collision".to_string(), t.collided as u8 as f32),
                ]),
                HashMap::from([("distance".to_string(), t.distance as f32)]),
            ),
            None => (HashMap::new(), HashMap::new()),
        };
        let mut termination_flags = HashMap::new();
        if unstable {
            termination_flags.insert("unstable".to_string(), true);
        }
        if reached {
            termination_flags.insert("goal_reached".to_string(), true);
        }
        Ok(Response::new(StepResponse {
            success: true,
            message: String::new(),
            observation: Some(AgentFrame {
                timestamp_ms: milliseconds_now(),
                frame_number: stepped.frame.min(u32::MAX as u64) as u32,
                observations: stepped.observations,
                actions: stepped.actions,
                agent_name: format!("agent_{world}"),
                target_fps: 0,
            }),
            physics_step_duration_us: (stepped.seconds * 1e6) as u64,
            camera_frames,
            reward_signals,
            terminated,
            truncated,
            info,
            termination_flags,
        }))
    }
}

#[tonic::async_trait]
impl MujocoService for Agents {
    async fn get_joint_state(
        &self,
        request: Request<GetJointStateRequest>,
    ) -> Result<Response<GetJointStateResponse>, Status> {
        let world = match self.world(&request.into_inner().robot_name) {
            Ok(w) => w,
            Err(message) => return Ok(Response::new(GetJointStateResponse { success: false, message, state: None })),
        };
        let (nq, nv) = (self.engine.info().nq, self.engine.info().nv);
        let size = Size::answer().message(Size::of(NESTED_FIXED).floats(nq).floats(nv));
        let what = format!("the joint state of agent_{world} ({nq} positions, {nv} velocities)");
        self.limit.check(what, size, "serve a model with fewer joints")?;
        let state = self
            .engine
            .query(move |core| -> Result<JointState, String> {
                let f32s = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
                let positions = f32s(core.sim.joint_positions(world).map_err(|e| e.to_string())?);
                let velocities = f32s(core.sim.joint_velocities(world).map_err(|e| e.to_string())?);
                let (nq, nv) = (positions.len() as u32, velocities.len() as u32);
                Ok(JointState { positions, velocities, nq, nv })
            })
            .await?;
        Ok(Response::new(match state {
            Ok(state) => GetJointStateResponse { success: true, message: String::new(), state: Some(state) },
            Err(message) => GetJointStateResponse { success: false, message, state: None },
        }))
    }

    async fn get_mujoco_info(
        &self,
        request: Request<GetMujocoInfoRequest>,
    ) -> Result<Response<GetMujocoInfoResponse>, Status> {
        if let Err(message) = self.world(&request.into_inner().robot_name) {
            return Ok(Response::new(GetMujocoInfoResponse { success: false, message, ..Default::default() }));
        }
        let info = self.engine.info();
        let joints = info.joint_names.iter().map(String::len);
        let size = Size::answer().strings(joints).strings(info.actuators.iter().map(|(n, _)| n.len()));
        let what = format!(
            "the MuJoCo info ({} joint names, {} actuator names)",
            info.joint_names.len(),
            info.actuators.len()
        );
        self.limit.check(what, size, "serve a model with fewer joints and actuators")?;
        Ok(Response::new(GetMujocoInfoResponse {
            success: true,
            message: String::new(),
            nq: info.nq as u32,
            nv: info.nv as u32,
            nu: info.actuators.len() as u32,
            joint_names: info.joint_names.clone(),
            actuator_names: info.actuators.iter().map(|(n, _)| n.clone()).collect(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_write_over_the_base_vector() {
        let group = ActionGroupEntry { group_name: "arm".into(), actions: vec![5.0], action_indices: vec![1] };
        assert_eq!(compose_actions(&[1.0, 2.0], std::slice::from_ref(&group), &[0.0, 0.0]).unwrap(), vec![1.0, 5.0]);
        assert_eq!(compose_actions(&[], &[group], &[7.0, 8.0]).unwrap(), vec![7.0, 5.0]);
    }

    #[test]
    fn a_wrong_length_names_both_lengths() {
        let e = compose_actions(&[1.0], &[], &[0.0, 0.0, 0.0]).unwrap_err();
        assert!(e.contains("1 values") && e.contains("3 actuators"), "{e}");
        let bad = ActionGroupEntry { group_name: "g".into(), actions: vec![1.0], action_indices: vec![9] };
        assert!(compose_actions(&[0.0], &[bad], &[0.0]).unwrap_err().contains("index 9"));
    }
}
