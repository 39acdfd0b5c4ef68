//! Resource demand as Ray sees it, inside one hollow Ray head: actors with logical resource requests
//! (`{"CPU": 1}`), placed on the cluster's Running Ray nodes the way Ray's scheduler would place them, or left
//! pending when no node has room. Pending actors are the demand the hollow autoscaler plans for; what each node
//! holds tells it which workers are idle.
//!
//! Served by the head under `/api/hollow/actors` (a prefix no real dashboard route uses; see `docs/kube-sim.md`).

use std::collections::BTreeMap;

use http::{Method, StatusCode};
use ray_autoscale::planner::ResourceSet;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::head::{HollowRayHead, text};
use kube_sim::http::proxy::ProxyResponse;

/// What an actor requests when the request names no resources: Ray schedules an actor with 1 CPU by default.
pub const DEFAULT_ACTOR_CPU: f64 = 1.0;
/// Ray's state of an actor waiting for a node with room.
pub const ACTOR_PENDING: &str = "PENDING_CREATION";
/// Ray's state of a placed actor.
pub const ACTOR_ALIVE: &str = "ALIVE";

/// Why an actor request was refused. The `Display` text is the response body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActorError {
    /// The request body could not be parsed (HTTP 400).
    #[error("Failed to parse request: {0}")]
    BadRequest(String),
    /// A live actor already has this name (HTTP 409; Ray's `ray.remote(...).options(name=...)` text).
    #[error("Actor with name '{0}' already exists in the namespace")]
    Duplicate(String),
    /// No actor with this name (HTTP 404).
    #[error("Failed to look up actor with name '{0}'")]
    NotFound(String),
}

impl ActorError {
    /// The HTTP status the head answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Duplicate(_) => StatusCode::CONFLICT,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
        }
    }
}

/// Body of `POST /api/hollow/actors`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ActorRequest {
    /// The actor's name (unique among live actors); generated when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Logical resources, e.g. `{"CPU": 1}`; absent means `{"CPU": 1}`, Ray's default for an actor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<BTreeMap<String, f64>>,
}

/// An actor as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActorInfo {
    /// Generated id (hex).
    pub actor_id: String,
    /// Name.
    pub name: String,
    /// `PENDING_CREATION` or `ALIVE`.
    pub state: String,
    /// Requested logical resources.
    pub resources: BTreeMap<String, f64>,
    /// The pod (Ray node) it runs on, once placed.
    pub node: Option<String>,
}

/// One Ray node of the cluster (a Running head or worker pod) and its logical capacity.
#[derive(Debug, Clone, PartialEq)]
pub struct RayNode {
    /// Pod name.
    pub name: String,
    /// Whether it is the head.
    pub is_head: bool,
    /// Logical resources (`num-cpus` etc., as KubeRay passes them to `ray start`).
    pub resources: ResourceSet,
}

/// A node as `GET /api/hollow/nodes` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// Pod name.
    pub name: String,
    /// Whether it is the head.
    pub is_head: bool,
    /// Logical capacity.
    pub total: BTreeMap<String, f64>,
    /// What its actors hold.
    pub used: BTreeMap<String, f64>,
    /// Names of the actors on it.
    pub actors: Vec<String>,
}

struct Actor {
    id: String,
    name: String,
    resources: ResourceSet,
    node: Option<String>,
}

/// The actors of one head and the nodes they can be placed on.
#[derive(Default)]
pub(crate) struct ActorTable {
    /// Live actors in creation order (Ray schedules pending ones in that order).
    actors: Vec<Actor>,
    /// Ray nodes: head first, then workers by name.
    nodes: Vec<RayNode>,
    next_id: u64,
}

fn to_map(set: &ResourceSet) -> BTreeMap<String, f64> {
    set.iter_units().map(|(k, _)| (k.to_string(), set.get(k))).collect()
}

impl ActorTable {
    /// Replaces the node list (nodes that left drop their actors back to pending, as Ray would restart them)
    /// and places pending actors.
    pub(crate) fn set_nodes(&mut self, mut nodes: Vec<RayNode>) {
        nodes.sort_by(|a, b| b.is_head.cmp(&a.is_head).then_with(|| a.name.cmp(&b.name)));
        for actor in &mut self.actors {
            if actor
                .node
                .as_ref()
                .is_some_and(|n| !nodes.iter().any(|node| &node.name == n))
            {
                actor.node = None;
            }
        }
        self.nodes = nodes;
        self.schedule();
    }

    /// Creates an actor and places it if some node has room.
    pub(crate) fn create(&mut self, request: ActorRequest) -> Result<ActorInfo, ActorError> {
        self.next_id += 1;
        let id = format!("{:016x}", self.next_id);
        let name = request
            .name
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| format!("actor-{id}"));
        if self.actors.iter().any(|a| a.name == name) {
            return Err(ActorError::Duplicate(name));
        }
        let resources = match request.resources {
            Some(map) => {
                if let Some((k, v)) = map.iter().find(|(_, v)| !v.is_finite() || **v < 0.0) {
                    return Err(ActorError::BadRequest(format!(
                        "resource {k:?} has an invalid amount {v}"
                    )));
                }
                map.into_iter().collect()
            }
            None => ResourceSet::new().with(ray_autoscale::planner::resources::CPU, DEFAULT_ACTOR_CPU),
        };
        self.actors.push(Actor {
            id,
            name: name.clone(),
            resources,
            node: None,
        });
        self.schedule();
        self.get(&name).ok_or(ActorError::NotFound(name))
    }

    /// Ends an actor (`ray.kill`), freeing its resources; pending actors may then be placed.
    pub(crate) fn kill(&mut self, name: &str) -> Result<(), ActorError> {
        let idx = self
            .actors
            .iter()
            .position(|a| a.name == name)
            .ok_or_else(|| ActorError::NotFound(name.to_string()))?;
        self.actors.remove(idx);
        self.schedule();
        Ok(())
    }

    /// One actor.
    pub(crate) fn get(&self, name: &str) -> Option<ActorInfo> {
        self.actors.iter().find(|a| a.name == name).map(info)
    }

    /// Every live actor, in creation order.
    pub(crate) fn list(&self) -> Vec<ActorInfo> {
        self.actors.iter().map(info).collect()
    }

    /// The resource requests of the actors no node has room for (the autoscaler's demand).
    pub(crate) fn pending_demands(&self) -> Vec<ResourceSet> {
        self.actors
            .iter()
            .filter(|a| a.node.is_none())
            .map(|a| a.resources.clone())
            .collect()
    }

    /// What the actors on `node` hold (empty for an unknown or idle node).
    pub(crate) fn used(&self, node: &str) -> ResourceSet {
        let mut used = ResourceSet::new();
        for a in self.actors.iter().filter(|a| a.node.as_deref() == Some(node)) {
            used.add(&a.resources);
        }
        used
    }

    /// Whether some actor runs on `node` (a Ray node with an actor is not idle).
    pub(crate) fn busy(&self, node: &str) -> bool {
        self.actors.iter().any(|a| a.node.as_deref() == Some(node))
    }

    /// The nodes with their usage.
    pub(crate) fn nodes(&self) -> Vec<NodeInfo> {
        self.nodes
            .iter()
            .map(|n| NodeInfo {
                name: n.name.clone(),
                is_head: n.is_head,
                total: to_map(&n.resources),
                used: to_map(&self.used(&n.name)),
                actors: self
                    .actors
                    .iter()
                    .filter(|a| a.node.as_deref() == Some(n.name.as_str()))
                    .map(|a| a.name.clone())
                    .collect(),
            })
            .collect()
    }

    /// Places pending actors in creation order, each on the first node (head first, then workers by name) with
    /// room for all of its resources.
    fn schedule(&mut self) {
        let mut free: Vec<ResourceSet> = self
            .nodes
            .iter()
            .map(|n| {
                let mut f = n.resources.clone();
                f.subtract(&self.used(&n.name));
                f
            })
            .collect();
        for actor in self.actors.iter_mut().filter(|a| a.node.is_none()) {
            if let Some(i) = free.iter().position(|f| f.fits(&actor.resources)) {
                free[i].subtract(&actor.resources);
                actor.node = Some(self.nodes[i].name.clone());
            }
        }
    }
}

impl HollowRayHead {
    /// Creates an actor (`POST /api/hollow/actors`): placed on a node with room, else pending.
    pub fn create_actor(&self, request: ActorRequest) -> Result<ActorInfo, ActorError> {
        self.actors.lock().create(request)
    }

    /// Ends an actor (`DELETE /api/hollow/actors/{name}`), freeing its node.
    pub fn kill_actor(&self, name: &str) -> Result<(), ActorError> {
        self.actors.lock().kill(name)
    }

    /// One actor by name (`GET /api/hollow/actors/{name}`).
    pub fn actor(&self, name: &str) -> Option<ActorInfo> {
        self.actors.lock().get(name)
    }

    /// Every live actor, in creation order (`GET /api/hollow/actors`).
    pub fn actors(&self) -> Vec<ActorInfo> {
        self.actors.lock().list()
    }

    /// The Ray nodes with their capacity and usage (`GET /api/hollow/nodes`).
    pub fn ray_nodes(&self) -> Vec<NodeInfo> {
        self.actors.lock().nodes()
    }

    /// The resource requests of the actors waiting for room: what the autoscaler must find nodes for.
    pub fn pending_demands(&self) -> Vec<ResourceSet> {
        self.actors.lock().pending_demands()
    }

    /// What the actors on `node` hold.
    pub fn node_used(&self, node: &str) -> ResourceSet {
        self.actors.lock().used(node)
    }

    /// Whether an actor runs on `node`.
    pub fn node_busy(&self, node: &str) -> bool {
        self.actors.lock().busy(node)
    }

    /// Tells the head which Ray nodes are up (kept current by [`crate::HollowRay`] from the cluster's pods);
    /// pending actors are placed on nodes with room, actors of departed nodes become pending.
    pub fn set_ray_nodes(&self, nodes: Vec<RayNode>) {
        self.actors.lock().set_nodes(nodes);
    }

    /// Answers `/api/hollow/<rest>`.
    pub(crate) fn handle_hollow(&self, method: &Method, rest: &[&str], body: &[u8]) -> ProxyResponse {
        let result: Result<ProxyResponse, ActorError> = match (method.clone(), rest) {
            (Method::GET, ["actors"]) => Ok(ProxyResponse::json(&json!(self.actors()))),
            (Method::POST, ["actors"]) => serde_json::from_slice::<ActorRequest>(body)
                .map_err(|e| ActorError::BadRequest(e.to_string()))
                .and_then(|req| self.create_actor(req))
                .map(|a| ProxyResponse::json(&json!(a))),
            (Method::GET, ["actors", name]) => self
                .actor(name)
                .map(|a| ProxyResponse::json(&json!(a)))
                .ok_or_else(|| ActorError::NotFound((*name).to_string())),
            (Method::DELETE, ["actors", name]) => self
                .kill_actor(name)
                .map(|()| ProxyResponse::json(&json!({"killed": true}))),
            (Method::GET, ["nodes"]) => Ok(ProxyResponse::json(&json!(self.ray_nodes()))),
            (_, ["actors"] | ["actors", _] | ["nodes"]) => {
                Ok(text(StatusCode::METHOD_NOT_ALLOWED, "405: Method Not Allowed"))
            }
            _ => Ok(text(StatusCode::NOT_FOUND, "404: Not Found")),
        };
        result.unwrap_or_else(|e| text(e.status(), &e.to_string()))
    }
}

fn info(a: &Actor) -> ActorInfo {
    ActorInfo {
        actor_id: a.id.clone(),
        name: a.name.clone(),
        state: if a.node.is_some() { ACTOR_ALIVE } else { ACTOR_PENDING }.to_string(),
        resources: to_map(&a.resources),
        node: a.node.clone(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use ray_autoscale::planner::resources::CPU;

    fn node(name: &str, is_head: bool, cpu: f64) -> RayNode {
        RayNode {
            name: name.into(),
            is_head,
            resources: ResourceSet::new().with(CPU, cpu),
        }
    }

    fn actor(name: &str, cpu: f64) -> ActorRequest {
        ActorRequest {
            name: Some(name.into()),
            resources: Some(BTreeMap::from([(CPU.to_string(), cpu)])),
        }
    }

    #[test]
    fn actors_wait_for_a_node_with_room() {
        let mut t = ActorTable::default();
        t.set_nodes(vec![node("head", true, 0.0)]);
        let a1 = t.create(actor("actor1", 1.0)).unwrap();
        assert_eq!((a1.state.as_str(), a1.node), (ACTOR_PENDING, None));
        assert_eq!(t.pending_demands(), vec![ResourceSet::new().with(CPU, 1.0)]);
        // A 1-CPU worker joins: actor1 runs there.
        t.set_nodes(vec![node("head", true, 0.0), node("w1", false, 1.0)]);
        assert_eq!(t.get("actor1").unwrap().node.as_deref(), Some("w1"));
        assert!(t.pending_demands().is_empty());
        assert!(t.busy("w1"));
        // actor2 does not fit next to it.
        t.create(actor("actor2", 1.0)).unwrap();
        assert_eq!(t.pending_demands().len(), 1);
        // Ending actor1 frees w1 for actor2.
        t.kill("actor1").unwrap();
        assert_eq!(t.get("actor2").unwrap().state, ACTOR_ALIVE);
        assert_eq!(t.used("w1"), ResourceSet::new().with(CPU, 1.0));
    }

    #[test]
    fn head_is_tried_first_and_departed_nodes_release_actors() {
        let mut t = ActorTable::default();
        t.set_nodes(vec![node("w1", false, 4.0), node("head", true, 1.0)]);
        t.create(actor("a", 1.0)).unwrap();
        t.create(actor("b", 1.0)).unwrap();
        assert_eq!(t.get("a").unwrap().node.as_deref(), Some("head"));
        assert_eq!(t.get("b").unwrap().node.as_deref(), Some("w1"));
        t.set_nodes(vec![node("head", true, 1.0)]);
        assert_eq!(t.get("b").unwrap().state, ACTOR_PENDING);
        assert_eq!(t.nodes()[0].actors, vec!["a".to_string()]);
    }

    #[test]
    fn http_api_creates_lists_and_ends_actors() {
        let head = HollowRayHead::new(crate::HollowRayOptions::default());
        head.set_ray_nodes(vec![node("h", true, 0.0), node("w1", false, 1.0)]);
        let call = |method: Method, path: &str, body: &str| {
            let r = head.handle_dashboard(&method, path, body.as_bytes());
            let text = String::from_utf8_lossy(&r.body).into_owned();
            (
                r.status.as_u16(),
                serde_json::from_str::<serde_json::Value>(&text).unwrap_or(json!(text)),
            )
        };
        let (status, a) = call(
            Method::POST,
            "/api/hollow/actors",
            r#"{"name": "x", "resources": {"CPU": 1}}"#,
        );
        assert_eq!(
            (status, &a["state"], &a["node"]),
            (200, &json!(ACTOR_ALIVE), &json!("w1"))
        );
        let (status, b) = call(Method::POST, "/api/hollow/actors/", r#"{"name": "y"}"#);
        assert_eq!((status, &b["state"]), (200, &json!(ACTOR_PENDING)));
        assert_eq!(call(Method::POST, "/api/hollow/actors", r#"{"name": "y"}"#).0, 409);
        assert_eq!(call(Method::POST, "/api/hollow/actors", "not json").0, 400);
        let (_, list) = call(Method::GET, "/api/hollow/actors", "");
        assert_eq!(list.as_array().unwrap().len(), 2);
        let (_, nodes) = call(Method::GET, "/api/hollow/nodes", "");
        assert_eq!(
            nodes[1],
            json!({"name": "w1", "is_head": false, "total": {"CPU": 1.0}, "used": {"CPU": 1.0}, "actors": ["x"]})
        );
        assert_eq!(
            call(Method::DELETE, "/api/hollow/actors/x", ""),
            (200, json!({"killed": true}))
        );
        assert_eq!(call(Method::GET, "/api/hollow/actors/y", "").1["node"], json!("w1"));
        assert_eq!(call(Method::DELETE, "/api/hollow/actors/x", "").0, 404);
        assert_eq!(call(Method::PUT, "/api/hollow/actors", "").0, 405);
        assert_eq!(call(Method::GET, "/api/hollow/other", "").0, 404);
    }

    #[test]
    fn default_request_is_one_cpu_and_names_are_unique() {
        let mut t = ActorTable::default();
        let a = t.create(ActorRequest::default()).unwrap();
        assert_eq!(a.resources, BTreeMap::from([(CPU.to_string(), DEFAULT_ACTOR_CPU)]));
        let dup = t.create(ActorRequest {
            name: Some(a.name.clone()),
            resources: None,
        });
        assert_eq!(dup, Err(ActorError::Duplicate(a.name.clone())));
        assert_eq!(t.kill("nope"), Err(ActorError::NotFound("nope".into())));
        assert!(matches!(t.create(actor("neg", -1.0)), Err(ActorError::BadRequest(_))));
        assert_eq!(t.list().len(), 1);
    }
}
