//! The hollow scheduler: binds pending pods to hollow nodes by resource requests, and emulates
//! Volcano gang scheduling for pods of `schedulerName: volcano` (PodGroups, Queue capability).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::pod_facts::PodFacts;
use super::quantity::{Resources, pod_requests};
use super::{
    ANN_GROUP_NAME, ANN_VOLCANO_GROUP_NAME, Agent, Cache, Key, VOLCANO_SCHEDULER, annotation, is_terminal, node_name,
    set_condition, status_patch,
};
use crate::config::AgentConfig;
use crate::kinds::Gvr;
use crate::patch::PatchKind;
use crate::store::{Store, StoredObject};

/// Scheduler names bound by the default logic.
const DEFAULT_SCHEDULERS: &[&str] = &["default-scheduler", ""];
/// Volcano's default queue.
const DEFAULT_QUEUE: &str = "default";

/// A node as the scheduler sees it.
#[derive(Debug, Clone)]
struct NodeInfo {
    name: String,
    labels: Arc<Value>,
    free: Resources,
    schedulable: bool,
}

/// A PodGroup's key: (namespace, name).
type GroupKey = (String, String);

/// The scheduler's state between passes: a cache of nodes, pods, PodGroups and Queues with the indexes a pass
/// needs (per-node usage, pending pods in creation order, PodGroup members).
pub(super) struct Scheduler {
    config: AgentConfig,
    next: usize,
    cache: Cache,
    /// Schedulable view of the existing nodes, in name order.
    nodes: Vec<NodeInfo>,
    node_index: HashMap<String, usize>,
    nodes_dirty: bool,
    /// Requests of the bound, non-terminal pods per node name (nodes that do not exist included).
    usage: HashMap<String, Resources>,
    /// Each bound, non-terminal pod's node and requests.
    placed: HashMap<Key, (String, Resources)>,
    /// Unbound, live pods by creation key.
    pending: BTreeMap<(String, String, String), Arc<StoredObject>>,
    /// PodGroup → keys of the pods naming it.
    members: HashMap<GroupKey, BTreeSet<Key>>,
    /// What the indexes above last read of each pod (the last version their changes have been applied for).
    facts: HashMap<Key, PodFacts>,
    /// Requests reserved on `nodes` during the current pass (undone at its end: the binds come back through the
    /// feed).
    reserved: Vec<(usize, Resources)>,
}

const NODES: usize = 0;
const PODS: usize = 1;
const GROUPS: usize = 2;
const QUEUES: usize = 3;

impl Agent for Scheduler {
    fn pass(&mut self, store: &Store) -> Option<Duration> {
        Scheduler::pass(self, store)
    }

    fn feed(&mut self) -> &mut super::Cache {
        &mut self.cache
    }
}

fn queues_gvr() -> Gvr {
    Gvr::new("scheduling.volcano.sh", "v1beta1", "queues")
}

/// The PodGroup a pod names: `scheduling.k8s.io/group-name`, else Volcano's annotation.
pub(super) fn group_of(pod: &Value) -> Option<&str> {
    annotation(pod, ANN_GROUP_NAME).or_else(|| annotation(pod, ANN_VOLCANO_GROUP_NAME))
}

fn group_key(p: &StoredObject, pod: &Value) -> Option<GroupKey> {
    group_of(pod).map(|g| (p.namespace().unwrap_or_default().to_string(), g.to_string()))
}

fn scheduler_name(pod: &Value) -> &str {
    pod["spec"]["schedulerName"].as_str().unwrap_or("")
}

fn creation_key(o: &StoredObject, pod: &Value) -> (String, String, String) {
    (
        pod["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        o.namespace().unwrap_or_default().to_string(),
        o.name().to_string(),
    )
}

/// A pending pod's place in the queue: creation time, then namespace and name (as [`creation_key`]).
fn pending_key(key: &Key, facts: &PodFacts) -> (String, String, String) {
    (facts.created.clone(), key.0.clone(), key.1.clone())
}

fn selector_matches(pod: &Value, labels: &Value) -> bool {
    pod["spec"]["nodeSelector"]
        .as_object()
        .is_none_or(|sel| sel.iter().all(|(k, v)| labels[k] == *v))
}

/// Why a pod does not fit a node, for the `0/N nodes are available` message.
fn misfit(node: &NodeInfo, pod: &Value, req: &Resources) -> Option<Vec<String>> {
    if !node.schedulable {
        return Some(vec!["node(s) were unschedulable".into()]);
    }
    if !selector_matches(pod, &node.labels) {
        return Some(vec!["node(s) didn't match Pod's node affinity/selector".into()]);
    }
    let short = node.free.insufficient(req);
    if short.is_empty() {
        None
    } else {
        Some(
            short
                .into_iter()
                .map(|r| {
                    if r == "pods" {
                        "Too many pods".into()
                    } else {
                        format!("Insufficient {r}")
                    }
                })
                .collect(),
        )
    }
}

impl Scheduler {
    pub(super) fn new(config: AgentConfig, store: &Store) -> Self {
        let cache = Cache::new(
            store,
            &[Gvr::nodes(), Gvr::pods(), Gvr::volcano_podgroups(), queues_gvr()],
        );
        Self {
            config,
            next: 0,
            cache,
            nodes: Vec::new(),
            node_index: HashMap::new(),
            nodes_dirty: true,
            usage: HashMap::new(),
            placed: HashMap::new(),
            pending: BTreeMap::new(),
            members: HashMap::new(),
            facts: HashMap::new(),
            reserved: Vec::new(),
        }
    }

    /// Applies the feed to the indexes.
    fn sync(&mut self) {
        for ch in self.cache.sync() {
            match ch.kind {
                NODES => self.nodes_dirty = true,
                PODS => self.pod_changed(&ch.key, ch.new.as_ref()),
                _ => {}
            }
        }
        if self.nodes_dirty {
            self.nodes_dirty = false;
            self.nodes = self.cache.maps[NODES]
                .values()
                .map(|n| {
                    let ready = n.value()["status"]["conditions"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
                    let mut free = Resources::from_json(&n.value()["status"]["allocatable"]);
                    if let Some(u) = self.usage.get(n.name()) {
                        free.sub(u);
                    }
                    NodeInfo {
                        name: n.name().to_string(),
                        labels: Arc::new(n.value()["metadata"]["labels"].clone()),
                        free,
                        schedulable: ready && n.value()["spec"]["unschedulable"].as_bool() != Some(true),
                    }
                })
                .collect();
            self.node_index = self
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.name.clone(), i))
                .collect();
        }
    }

    fn pod_changed(&mut self, key: &Key, new_arc: Option<&Arc<StoredObject>>) {
        // The previous version's facts were read when it arrived; only the new version is read here.
        let old = self.facts.remove(key);
        let new = new_arc.map(|p| PodFacts::of(p));
        // Node usage.
        let now_placed = new
            .as_ref()
            .filter(|p| !p.terminal)
            .and_then(|p| p.node.clone().map(|n| (n, p.requests.clone())));
        if self.placed.get(key) != now_placed.as_ref() {
            if let Some((n, r)) = self.placed.remove(key) {
                if let Some(u) = self.usage.get_mut(&n) {
                    u.sub(&r);
                }
                if let Some(i) = self.node_index.get(&n) {
                    self.nodes[*i].free.add(&r);
                }
            }
            if let Some((n, r)) = now_placed {
                self.usage.entry(n.clone()).or_default().add(&r);
                if let Some(i) = self.node_index.get(&n) {
                    self.nodes[*i].free.sub(&r);
                }
                self.placed.insert(key.clone(), (n, r));
            }
        }
        // Pending pods.
        if let Some(o) = &old
            && o.is_pending()
        {
            self.pending.remove(&pending_key(key, o));
        }
        // The change's own object, not the cache's: a later change in the same batch may have removed it.
        if let (Some(p), Some(facts)) = (new_arc, &new)
            && facts.is_pending()
        {
            self.pending.insert(pending_key(key, facts), Arc::clone(p));
        }
        // PodGroup members.
        let group_key = |f: &PodFacts| f.group.as_ref().map(|g| (key.0.clone(), g.clone()));
        let og = old.as_ref().and_then(group_key);
        let ng = new.as_ref().and_then(group_key);
        if og != ng || new.is_none() {
            if let Some(g) = og
                && let Some(set) = self.members.get_mut(&g)
            {
                set.remove(key);
                if set.is_empty() {
                    self.members.remove(&g);
                }
            }
            if let (Some(g), Some(_)) = (ng, &new) {
                self.members.entry(g).or_default().insert(key.clone());
            }
        }
        if let Some(facts) = new {
            self.facts.insert(key.clone(), facts);
        }
    }

    /// Picks a node for `pod` (round-robin first fit), reserving its requests in `nodes`; or explains why none
    /// fits. Returns the node's index.
    fn place(&mut self, nodes: &mut [NodeInfo], pod: &Value, req: &Resources) -> Result<usize, String> {
        let n = nodes.len();
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        for k in 0..n {
            let idx = (self.next + k) % n;
            match misfit(&nodes[idx], pod, req) {
                None => {
                    nodes[idx].free.sub(req);
                    self.reserved.push((idx, req.clone()));
                    self.next = idx + 1;
                    return Ok(idx);
                }
                Some(rs) => {
                    for r in rs {
                        *reasons.entry(r).or_insert(0) += 1;
                    }
                }
            }
        }
        let detail: Vec<String> = reasons.iter().map(|(r, c)| format!("{c} {r}")).collect();
        Err(format!("0/{n} nodes are available: {}.", detail.join(", ")))
    }

    /// One scheduling pass over the pending pods (and, with Volcano, the PodGroups).
    pub(super) fn pass(&mut self, store: &Store) -> Option<Duration> {
        self.sync();
        let pending: Vec<Arc<StoredObject>> = self.pending.values().cloned().collect();
        let volcano = self.config.volcano;
        let mut nodes = std::mem::take(&mut self.nodes);
        for pod in &pending {
            let value = pod.value();
            let name = scheduler_name(&value);
            // Volcano wraps a lone pod in its own group of one.
            let ours = DEFAULT_SCHEDULERS.contains(&name)
                || (volcano && name == VOLCANO_SCHEDULER && group_of(&value).is_none());
            if !ours {
                continue;
            }
            let req = pod_requests(&value["spec"]);
            match self.place(&mut nodes, &value, &req) {
                Ok(i) => bind(store, pod, &value, &nodes[i].name),
                Err(msg) => mark_unschedulable(store, pod, "Unschedulable", &msg),
            }
        }
        if self.config.volcano {
            self.volcano(store, &mut nodes, &pending);
        }
        // Reservations were only for this pass: the binds come back through the feed.
        for (i, r) in std::mem::take(&mut self.reserved) {
            if let Some(n) = nodes.get_mut(i) {
                n.free.add(&r);
            }
        }
        self.nodes = nodes;
        None
    }

    /// Volcano emulation: gang-binds the pending members of each PodGroup and maintains PodGroup status.
    fn volcano(&mut self, store: &Store, nodes: &mut Vec<NodeInfo>, pending: &[Arc<StoredObject>]) {
        let pg_gvr = Gvr::volcano_podgroups();
        let Some(pg_info) = store.resource(&pg_gvr) else {
            return;
        };
        let mut groups: Vec<Arc<StoredObject>> = self.cache.maps[GROUPS].values().cloned().collect();
        groups.sort_by_cached_key(|g| creation_key(g, &g.value()));
        let queues: HashMap<String, Arc<StoredObject>> = self.cache.maps[QUEUES]
            .values()
            .map(|q| (q.name().to_string(), q.clone()))
            .collect();
        let queue_of = |pg: &Value| pg["spec"]["queue"].as_str().unwrap_or(DEFAULT_QUEUE).to_string();
        let member_pods = |this: &Self, key: &GroupKey| -> Vec<Arc<StoredObject>> {
            this.members
                .get(key)
                .into_iter()
                .flatten()
                .filter_map(|k| this.cache.maps[PODS].get(k).cloned())
                .collect()
        };
        let mut queue_used: HashMap<String, Resources> = HashMap::new();
        for g in &groups {
            let key = (g.namespace().unwrap_or_default().to_string(), g.name().to_string());
            let q = queue_of(&g.value());
            for k in self.members.get(&key).into_iter().flatten() {
                if let Some((_, r)) = self.placed.get(k) {
                    queue_used.entry(q.clone()).or_default().add(r);
                }
            }
        }
        let mut waiting_of: HashMap<GroupKey, Vec<&Arc<StoredObject>>> = HashMap::new();
        for p in pending {
            let value = p.value();
            if scheduler_name(&value) == VOLCANO_SCHEDULER
                && let Some(k) = group_key(p, &value)
            {
                waiting_of.entry(k).or_default().push(p);
            }
        }
        let mut queue_running: HashMap<String, usize> = HashMap::new();
        for pg in &groups {
            let key = (pg.namespace().unwrap_or_default().to_string(), pg.name().to_string());
            let members = member_pods(self, &key);
            let waiting: Vec<&Arc<StoredObject>> = waiting_of.remove(&key).unwrap_or_default();
            let live = members.iter().filter(|p| !is_terminal(&p.value())).count();
            let min = pg.value()["spec"]["minMember"].as_u64().unwrap_or(1) as usize;
            let queue = queue_of(&pg.value());
            let mut admitted = false;
            let mut held: Option<String> = None;
            let mut just_bound = 0;
            if !waiting.is_empty() {
                let gang_msg = format!(
                    "{n}/{n} tasks in gang unschedulable: pod group is not ready, {n} Pending, {min} minAvailable; Pending: {n} Undetermined",
                    n = waiting.len()
                );
                if live < min {
                    held = Some(gang_msg);
                } else {
                    let mut need = Resources::default();
                    for p in &waiting {
                        need.add(&pod_requests(&p.value()["spec"]));
                    }
                    let mut total = queue_used.get(&queue).cloned().unwrap_or_default();
                    total.add(&need);
                    let queue_ok = match queues.get(&queue) {
                        Some(q) => {
                            q.value()["status"]["state"].as_str().is_none_or(|s| s == "Open")
                                && total.within(&Resources::from_json(&q.value()["spec"]["capability"]))
                        }
                        None => true,
                    };
                    if queue_ok {
                        admitted = true;
                        let mut scratch = nodes.clone();
                        let saved = self.next;
                        let mark = self.reserved.len();
                        let placed: Result<Vec<usize>, String> = waiting
                            .iter()
                            .map(|p| {
                                let value = p.value();
                                self.place(&mut scratch, &value, &pod_requests(&value["spec"]))
                            })
                            .collect();
                        match placed {
                            Ok(targets) => {
                                *nodes = scratch;
                                queue_used.insert(queue.clone(), total);
                                for (p, i) in waiting.iter().zip(targets) {
                                    bind(store, p, &p.value(), &nodes[i].name);
                                }
                                just_bound = waiting.len();
                            }
                            Err(_) => {
                                self.next = saved;
                                self.reserved.truncate(mark);
                                held = Some(gang_msg);
                            }
                        }
                    } else {
                        held = Some(gang_msg);
                    }
                }
                if let Some(msg) = &held {
                    for p in &waiting {
                        mark_unschedulable(store, p, "Unschedulable", msg);
                    }
                }
            }
            let count = |ph: &str| members.iter().filter(|p| super::phase(&p.value()) == ph).count();
            let (running, succeeded, failed) = (count("Running"), count("Succeeded"), count("Failed"));
            let bound = members
                .iter()
                .filter(|p| node_name(&p.value()).is_some() && !is_terminal(&p.value()))
                .count()
                + just_bound;
            let mut status = pg.value()["status"].as_object().cloned().unwrap_or_default();
            let mut conds: Vec<Value> = status
                .get("conditions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let phase = if !members.is_empty() && live == 0 && succeeded > 0 {
                "Completed"
            } else if bound + succeeded >= min && bound > 0 {
                set_condition(
                    &mut conds,
                    "Scheduled",
                    "True",
                    Some("tasks in the gang are ready to be scheduled"),
                    None,
                );
                "Running"
            } else if let Some(msg) = &held {
                set_condition(
                    &mut conds,
                    "Unschedulable",
                    "True",
                    Some("NotEnoughResources"),
                    Some(msg),
                );
                if admitted { "Inqueue" } else { "Pending" }
            } else {
                status.get("phase").and_then(Value::as_str).unwrap_or("Pending")
            };
            if phase == "Running" {
                *queue_running.entry(queue.clone()).or_insert(0) += 1;
            }
            status.insert("phase".into(), json!(phase));
            if !conds.is_empty() {
                status.insert("conditions".into(), json!(conds));
            }
            for (k, v) in [("running", running), ("succeeded", succeeded), ("failed", failed)] {
                if v > 0 {
                    status.insert(k.into(), json!(v));
                } else {
                    status.remove(k);
                }
            }
            let desired = Value::Object(status);
            if desired != pg.value()["status"] {
                let sub = pg_info.status_subresource.then_some("status");
                if let Err(e) = store.patch(
                    &pg_gvr,
                    pg.namespace(),
                    pg.name(),
                    &PatchKind::Merge,
                    &status_patch(pg, &desired),
                    sub,
                ) {
                    tracing::debug!(error = %e, podgroup = pg.name(), "scheduler: PodGroup status write failed");
                }
            }
        }
        if let Some(q_info) = store.resource(&queues_gvr()) {
            for q in queues.values() {
                let mut status = q.value()["status"].as_object().cloned().unwrap_or_default();
                status.insert(
                    "state".into(),
                    json!(status.get("state").cloned().unwrap_or(json!("Open"))),
                );
                match queue_running.get(q.name()) {
                    Some(n) => status.insert("running".into(), json!(n)),
                    None => status.remove("running"),
                };
                let desired = Value::Object(status);
                if desired != q.value()["status"] {
                    let sub = q_info.status_subresource.then_some("status");
                    let _ = store.patch(
                        &queues_gvr(),
                        None,
                        q.name(),
                        &PatchKind::Merge,
                        &status_patch(q, &desired),
                        sub,
                    );
                }
            }
        }
    }
}

/// Binds `pod` (`value` is its decoded JSON) to `node` as `POST pods/{name}/binding` does: `spec.nodeName` and
/// `PodScheduled=True` in one write.
fn bind(store: &Store, pod: &StoredObject, value: &Value, node: &str) {
    let mut conds: Vec<Value> = value["status"]["conditions"].as_array().cloned().unwrap_or_default();
    set_condition(&mut conds, "PodScheduled", "True", None, None);
    let namespace = pod.namespace().unwrap_or_default();
    if let Err(e) = store.bind_pod(namespace, pod.name(), pod.rv, node, conds) {
        tracing::debug!(error = %e, pod = pod.name(), "scheduler: bind failed");
    }
}

/// Records `PodScheduled=False` with `reason` and `message` (no write when already recorded).
fn mark_unschedulable(store: &Store, pod: &StoredObject, reason: &str, message: &str) {
    let mut conds: Vec<Value> = pod.value()["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !set_condition(&mut conds, "PodScheduled", "False", Some(reason), Some(message)) {
        return;
    }
    let body = json!({"metadata": {"resourceVersion": pod.rv.to_string()}, "status": {"conditions": conds}});
    if let Err(e) = store.patch(
        &Gvr::pods(),
        pod.namespace(),
        pod.name(),
        &PatchKind::Merge,
        &body,
        Some("status"),
    ) {
        tracing::debug!(error = %e, pod = pod.name(), "scheduler: Unschedulable write failed");
    }
}
