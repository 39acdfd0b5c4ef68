//! The EndpointSlice and Endpoints controllers: for every Service with a selector, the addresses of the pods
//! it selects (`discovery.k8s.io/v1` EndpointSlices with ready/serving/terminating conditions, and the
//! legacy `v1` Endpoints), for hollow and process pods alike.
//!
//! Work is per Service: a pod change marks the Services of its namespace that select it (before or after the
//! change, found through [`ServiceSelection`]) when what it adds to their endpoints changed; a pass recomputes
//! each marked Service once from the pods it selects and writes only what differs.
//!
//! What a pod adds ([`contribution`]) is read once per pod change and kept while some Service selected the pod
//! at its last change. A pod's creation and binding add nothing (no IP yet), nor does a kubelet write that
//! leaves its IP, readiness and ports alone, so most pod changes recompute nothing; and a recomputation reads
//! only the pods its Service selects that were not read yet (those of a Service newer than their last change).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::endpoint_pod::endpoint_fields;
use super::service_selection::{Selecting, ServiceSelection, selector_matches_with};
use super::{Agent, Cache, Key, condition_true, is_terminal, is_terminating, node_name};
use crate::kinds::Gvr;
use crate::store::{DeleteOptions, Store, StoredObject};

/// Label naming an EndpointSlice's Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// Label naming the controller that manages an EndpointSlice.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// The [`MANAGED_BY_LABEL`] value of the EndpointSlice controller.
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
/// Label of the objects of a headless Service.
const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";
/// Label on Endpoints written by the Endpoints controller, telling the mirroring controller to skip them.
const SKIP_MIRROR_LABEL: &str = "endpointslice.kubernetes.io/skip-mirror";
/// Delay before retrying a Service whose write failed.
const RETRY_DELAY: Duration = Duration::from_millis(50);

const SERVICES: usize = 0;
const PODS: usize = 1;
const SLICES: usize = 2;
const ENDPOINTS: usize = 3;

/// The `discovery.k8s.io/v1` EndpointSlice resource.
pub fn endpoint_slices() -> Gvr {
    Gvr::new("discovery.k8s.io", "v1", "endpointslices")
}

/// The `v1` Endpoints resource.
pub fn endpoints() -> Gvr {
    Gvr::core("endpoints")
}

/// The controllers' state between passes.
pub(super) struct EndpointsController {
    cache: Cache,
    /// Services to recompute.
    dirty: BTreeSet<Key>,
    /// Names of the managed EndpointSlices per Service.
    slices_of: BTreeMap<Key, BTreeSet<String>>,
    /// Every Service's selector (decoded once per Service change) and the pods each selects (matched by their
    /// indexed labels, so a pod change decodes nothing).
    selection: ServiceSelection,
    /// What the controllers read of every Service's current version ([`service_fields`]), decoded once per
    /// change: a Service is recomputed at each change of its pods, far more often than it changes itself.
    services: HashMap<Key, Arc<Value>>,
    /// What each pod some Service selected at its last change adds to the endpoints ([`contribution`]; `None`:
    /// nothing), as of its current version (an entry outlives the Services that selected it until the pod's
    /// next change, still accurate). A selected pod is missing only until its Service is next recomputed (a
    /// Service that came after the pod's last change), which reads it then.
    contributions: HashMap<Key, Option<Value>>,
    /// What this controller last wrote per EndpointSlice and Endpoints (resource index, namespace, name): the
    /// stored version and the desired object it came from. The watch echo of its own write then marks nothing
    /// dirty, and a recomputation compares with what it wrote instead of decoding the stored copy.
    written: HashMap<(usize, Key), Written>,
}

/// One of the controller's own writes: the version it stored and the object it was written from.
struct Written {
    rv: u64,
    desired: Value,
}

/// A selected pod and what it adds to the endpoints ([`contribution`]).
type Member<'a> = (&'a StoredObject, &'a Value);

/// What a pod version adds to the endpoints of the Services that select it: the fields the controllers read
/// of it ([`endpoint_fields`]), or `None` when it adds no endpoint (it has no IP, or it has finished).
fn contribution(pod: &StoredObject) -> Option<Value> {
    let fields = endpoint_fields(pod);
    (!is_terminal(&fields) && pod_ip(&fields).is_some()).then_some(fields)
}

impl EndpointsController {
    pub(super) fn new(store: &Store) -> Self {
        Self {
            cache: Cache::new(store, &[Gvr::services(), Gvr::pods(), endpoint_slices(), endpoints()]),
            dirty: BTreeSet::new(),
            slices_of: BTreeMap::new(),
            selection: ServiceSelection::default(),
            services: HashMap::new(),
            contributions: HashMap::new(),
            written: HashMap::new(),
        }
    }

    /// Whether a change of one of the controller's own objects is the echo of its last write there.
    fn is_own_write(&self, kind: usize, key: &Key, new: Option<&StoredObject>) -> bool {
        new.is_some_and(|obj| self.written.get(&(kind, key.clone())).is_some_and(|w| w.rv == obj.rv))
    }

    fn note(&mut self, kind: usize, key: &Key, old: Option<&StoredObject>, new: Option<&StoredObject>) {
        match kind {
            SERVICES => {
                let decoded = new.map(|svc| Arc::new(service_fields(svc.value())));
                let selector = decoded.as_ref().map(|svc| svc["spec"]["selector"].clone());
                self.selection.service_changed(key, selector, &self.cache.maps[PODS]);
                match decoded {
                    Some(svc) => self.services.insert(key.clone(), svc),
                    None => self.services.remove(key),
                };
                self.dirty.insert(key.clone());
            }
            ENDPOINTS => {
                if !self.is_own_write(kind, key, new) {
                    self.dirty.insert(key.clone());
                }
                if new.is_none() {
                    self.written.remove(&(kind, key.clone()));
                }
            }
            PODS => {
                let selecting = self.selection.pod_changed(key, old, new);
                self.mark_moved_endpoints(key, new, &selecting);
            }
            _ => {
                let own_write = self.is_own_write(kind, key, new);
                for obj in [old, new].into_iter().flatten() {
                    if let Some(svc) = managed_slice_service(obj) {
                        let svc_key = (key.0.clone(), svc.to_string());
                        let names = self.slices_of.entry(svc_key.clone()).or_default();
                        if new.is_some() {
                            names.insert(key.1.clone());
                        } else {
                            names.remove(&key.1);
                        }
                        if !own_write {
                            self.dirty.insert(svc_key);
                        }
                    }
                }
                if new.is_none() {
                    self.written.remove(&(kind, key.clone()));
                }
            }
        }
    }

    /// Marks the Services a pod change concerns ([`Selecting`]) whose view of the pod changed: it added
    /// something to them before and adds something else (or nothing) now, or the other way round. Keeps what
    /// the pod adds while some Service selects it.
    fn mark_moved_endpoints(&mut self, key: &Key, new: Option<&StoredObject>, selecting: &[Selecting]) {
        // Unknown when the pod was selected only by Services that came after its last change.
        let known = self.contributions.remove(key);
        let selected_now = selecting.iter().any(|s| s.now);
        let current = if selected_now { new.and_then(contribution) } else { None };
        for s in selecting {
            let seen_now = current.as_ref().filter(|_| s.now);
            // What the Service saw of the pod before the change; `None` when that is not known.
            let seen_before = if s.before {
                known.as_ref().map(Option::as_ref)
            } else {
                Some(None)
            };
            if seen_before != Some(seen_now) {
                self.dirty.insert(s.service.clone());
            }
        }
        if selected_now {
            self.contributions.insert(key.clone(), current);
        }
    }

    /// Reads what the selected pods of `svc` add to its endpoints where it is not known yet (pods selected
    /// only since the Service's last change).
    fn read_missing_contributions(&mut self, svc: &Key) {
        let missing: Vec<Key> = self
            .selection
            .members(svc)
            .filter(|pod| !self.contributions.contains_key(*pod))
            .cloned()
            .collect();
        for pod in missing {
            let read = self.cache.maps[PODS].get(&pod).and_then(|p| contribution(p));
            self.contributions.insert(pod, read);
        }
    }

    /// Brings the Service's EndpointSlices and Endpoints up to date; false when a write failed. The Service is
    /// read as its last change left it (`services`), and each selected pod as its last change left it
    /// (`contributions`).
    fn reconcile(&mut self, store: &Store, key: &Key) -> bool {
        let (ns, name) = key;
        let svc = self.cache.maps[SERVICES].get(key).cloned();
        let selected = svc
            .as_ref()
            .zip(self.services.get(key).cloned())
            .filter(|(_, v)| has_selector(v));
        if selected.is_some() {
            self.read_missing_contributions(key);
        }
        let Some((svc, svc_value)) = selected else {
            // Slices are owned by the Service and go with it; the Endpoints we wrote are removed here.
            let ours = self.cache.maps[ENDPOINTS]
                .get(key)
                .is_some_and(|e| e.label(SKIP_MIRROR_LABEL) == Some("true"));
            if svc.is_none() && ours {
                return delete(store, &endpoints(), ns, name);
            }
            return true;
        };
        let pods: Vec<Member<'_>> = self
            .selection
            .members(key)
            .filter_map(|k| {
                let pod = self.cache.maps[PODS].get(k)?;
                let adds = self.contributions.get(k)?.as_ref()?;
                Some((pod.as_ref(), adds))
            })
            .collect();
        let groups = group_by_ports(&svc_value, &pods);
        let mut ok = true;
        let mut wanted = BTreeSet::new();
        let mut writes = Vec::new();
        for (i, (ports, members)) in groups.iter().enumerate() {
            let slice = desired_slice(svc, &svc_value, i, ports, members);
            let slice_name = slice["metadata"]["name"].as_str().unwrap_or_default().to_string();
            writes.push((SLICES, (ns.clone(), slice_name.clone()), slice));
            wanted.insert(slice_name);
        }
        writes.push((ENDPOINTS, key.clone(), desired_endpoints(svc, &svc_value, &groups)));
        for (kind, object_key, desired) in writes {
            ok &= self.write_if_changed(store, kind, object_key, desired);
        }
        // Stale slices go after the wanted ones are written, so that an endpoint moving between slices is
        // always in one of them.
        let stale: Vec<String> = self
            .slices_of
            .get(key)
            .map(|s| s.difference(&wanted).cloned().collect())
            .unwrap_or_default();
        for slice_name in stale {
            ok &= delete(store, &endpoint_slices(), ns, &slice_name);
        }
        ok
    }

    /// Writes `desired` unless the stored object already has its fields; false when a write failed. When the
    /// stored copy is the controller's own last write, the comparison is with what it wrote, not decoded.
    fn write_if_changed(&mut self, store: &Store, kind: usize, key: Key, desired: Value) -> bool {
        let (gvr, fields): (Gvr, &[&str]) = if kind == SLICES {
            (endpoint_slices(), &["endpoints", "ports", "addressType"])
        } else {
            (endpoints(), &["subsets"])
        };
        let current = self.cache.maps[kind].get(&key).cloned();
        let unchanged =
            current.as_ref().is_some_and(
                |c| match self.written.get(&(kind, key.clone())).filter(|w| w.rv == c.rv) {
                    Some(last) => !differs(&last.desired, &desired, fields),
                    None => !differs(&c.value(), &desired, fields),
                },
            );
        if unchanged {
            return true;
        }
        let written = match current {
            None => store.create(&gvr, Some(&key.0), desired.clone()),
            Some(_) => store.update(&gvr, Some(&key.0), desired.clone(), None),
        };
        match written {
            Ok(stored) => {
                self.written.insert((kind, key), Written { rv: stored.rv, desired });
                true
            }
            Err(e) => {
                tracing::debug!(error = %e, resource = %gvr.resource, "endpoints write failed");
                false
            }
        }
    }
}

impl Agent for EndpointsController {
    fn pass(&mut self, store: &Store) -> Option<Duration> {
        for change in self.cache.sync() {
            self.note(change.kind, &change.key, change.old.as_deref(), change.new.as_deref());
        }
        let mut failed = BTreeSet::new();
        for key in std::mem::take(&mut self.dirty) {
            if !self.reconcile(store, &key) {
                failed.insert(key);
            }
        }
        let retry = !failed.is_empty();
        self.dirty = failed;
        retry.then_some(RETRY_DELAY)
    }

    fn feed(&mut self) -> &mut super::Cache {
        &mut self.cache
    }
}

fn delete(store: &Store, gvr: &Gvr, ns: &str, name: &str) -> bool {
    match store.delete(gvr, Some(ns), name, &DeleteOptions::default()) {
        Ok(_) => true,
        Err(e) => e.code == 404,
    }
}

/// Whether any of `fields` of the stored object differs from the desired one (labels included).
fn differs(current: &Value, desired: &Value, fields: &[&str]) -> bool {
    let norm = |v: &Value| if v.is_null() { json!([]) } else { v.clone() };
    fields.iter().any(|f| norm(&current[*f]) != norm(&desired[*f]))
        || current["metadata"]["labels"] != desired["metadata"]["labels"]
}

/// The Service an EndpointSlice belongs to, when the EndpointSlice controller manages it.
fn managed_slice_service(slice: &StoredObject) -> Option<&str> {
    (slice.label(MANAGED_BY_LABEL) == Some(MANAGED_BY))
        .then(|| slice.label(SERVICE_NAME_LABEL))
        .flatten()
}

/// The parts of a Service the controllers read (its labels; `spec.selector`, `ports`, `clusterIP` and
/// `publishNotReadyAddresses`), in a document of the Service's shape.
fn service_fields(mut svc: Value) -> Value {
    let mut spec = Map::new();
    for field in ["selector", "ports", "clusterIP", "publishNotReadyAddresses"] {
        if let Some(value) = svc.get_mut("spec").and_then(|s| s.get_mut(field)) {
            spec.insert(field.into(), value.take());
        }
    }
    let labels = svc
        .pointer_mut("/metadata/labels")
        .map(Value::take)
        .unwrap_or(Value::Null);
    json!({"metadata": {"labels": labels}, "spec": spec})
}

fn has_selector(svc: &Value) -> bool {
    svc["spec"]["selector"].as_object().is_some_and(|m| !m.is_empty())
}

/// Whether the pod's labels carry every pair of a Service's `spec.selector`.
pub fn selector_matches(selector: &Value, pod: &Value) -> bool {
    let labels = &pod["metadata"]["labels"];
    selector_matches_with(selector, |k| labels[k].as_str())
}

fn pod_ip(pod: &Value) -> Option<&str> {
    pod["status"]["podIP"].as_str().filter(|ip| !ip.is_empty())
}

fn is_headless(svc: &Value) -> bool {
    svc["spec"]["clusterIP"] == "None"
}

/// A Service port resolved for a pod: (name, number, protocol, appProtocol).
type ResolvedPort = (String, i64, String, Option<String>);

/// The pod's number for a Service port's `targetPort` (a number, or the name of a container port).
pub fn resolve_target_port(svc_port: &Value, pod: &Value) -> Option<i64> {
    let target = if svc_port["targetPort"].is_null() {
        &svc_port["port"]
    } else {
        &svc_port["targetPort"]
    };
    if let Some(n) = target.as_i64() {
        return Some(n);
    }
    let name = target.as_str()?;
    if let Ok(n) = name.parse::<i64>() {
        return Some(n);
    }
    let containers = pod["spec"]["containers"].as_array()?;
    containers
        .iter()
        .filter_map(|c| c["ports"].as_array())
        .flatten()
        .find(|p| p["name"] == name)
        .and_then(|p| p["containerPort"].as_i64())
}

/// A group of selected pods whose ports resolve alike: one EndpointSlice each.
type PortGroup<'m, 'a> = (Vec<ResolvedPort>, Vec<&'m Member<'a>>);

/// The selected pods grouped by how the Service's ports resolve for them (one EndpointSlice per group); a
/// Service without pods has one empty group.
fn group_by_ports<'m, 'a>(svc: &Value, pods: &'m [Member<'a>]) -> Vec<PortGroup<'m, 'a>> {
    let no_ports = Vec::new();
    let svc_ports = svc["spec"]["ports"].as_array().unwrap_or(&no_ports);
    let mut groups: Vec<PortGroup<'m, 'a>> = Vec::new();
    for member in pods {
        let ports: Vec<ResolvedPort> = svc_ports
            .iter()
            .filter_map(|p| {
                let number = resolve_target_port(p, member.1)?;
                Some((
                    p["name"].as_str().unwrap_or_default().to_string(),
                    number,
                    p["protocol"].as_str().unwrap_or("TCP").to_string(),
                    p["appProtocol"].as_str().map(str::to_string),
                ))
            })
            .collect();
        match groups.iter_mut().find(|(p, _)| *p == ports) {
            Some((_, members)) => members.push(member),
            None => groups.push((ports, vec![member])),
        }
    }
    if groups.is_empty() {
        groups.push((Vec::new(), Vec::new()));
    }
    groups
}

/// Labels of the objects derived from a Service: its own labels plus the headless marker.
fn derived_labels(svc: &Value) -> Map<String, Value> {
    let mut labels = svc["metadata"]["labels"].as_object().cloned().unwrap_or_default();
    if is_headless(svc) {
        labels.insert(HEADLESS_LABEL.into(), json!(""));
    }
    labels
}

/// The pod's `hostname` in its Service's records: set when the pod's `spec.subdomain` names the Service.
fn endpoint_hostname<'a>(svc: &StoredObject, pod: &'a Value) -> Option<&'a str> {
    (pod["spec"]["subdomain"].as_str() == Some(svc.name()))
        .then(|| pod["spec"]["hostname"].as_str())
        .flatten()
}

fn target_ref(pod: &StoredObject) -> Value {
    json!({"kind": "Pod", "namespace": pod.namespace(), "name": pod.name(), "uid": pod.uid()})
}

/// Whether a pod counts as ready behind the Service (its Ready condition, or the Service publishes
/// not-ready addresses).
fn serving(svc: &Value, pod: &Value) -> bool {
    svc["spec"]["publishNotReadyAddresses"].as_bool() == Some(true) || condition_true(pod, "Ready")
}

fn desired_slice(
    svc: &StoredObject,
    svc_value: &Value,
    index: usize,
    ports: &[ResolvedPort],
    pods: &[&Member<'_>],
) -> Value {
    let suffix: String = svc.uid().chars().filter(char::is_ascii_alphanumeric).take(5).collect();
    let name = if index == 0 {
        format!("{}-{suffix}", svc.name())
    } else {
        format!("{}-{suffix}{index}", svc.name())
    };
    let mut labels = derived_labels(svc_value);
    labels.insert(SERVICE_NAME_LABEL.into(), json!(svc.name()));
    labels.insert(MANAGED_BY_LABEL.into(), json!(MANAGED_BY));
    let endpoints: Vec<Value> = pods
        .iter()
        .map(|(pod, p)| {
            let terminating = is_terminating(p);
            let serving = serving(svc_value, p);
            let mut e = json!({
                "addresses": [pod_ip(p)],
                "conditions": {"ready": serving && !terminating, "serving": serving, "terminating": terminating},
                "targetRef": target_ref(pod),
            });
            if let Some(h) = endpoint_hostname(svc, p) {
                e["hostname"] = json!(h);
            }
            if let Some(n) = node_name(p) {
                e["nodeName"] = json!(n);
            }
            e
        })
        .collect();
    let ports: Vec<Value> = ports
        .iter()
        .map(|(name, port, protocol, app)| {
            let mut p = json!({"name": name, "port": port, "protocol": protocol});
            if let Some(a) = app {
                p["appProtocol"] = json!(a);
            }
            p
        })
        .collect();
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "namespace": svc.namespace(),
            "labels": labels,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": svc.name(), "uid": svc.uid(),
                                 "controller": true, "blockOwnerDeletion": true}],
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": ports,
    })
}

fn desired_endpoints(svc: &StoredObject, svc_value: &Value, groups: &[PortGroup<'_, '_>]) -> Value {
    let mut labels = derived_labels(svc_value);
    labels.insert(SKIP_MIRROR_LABEL.into(), json!("true"));
    let subsets: Vec<Value> = groups
        .iter()
        .filter_map(|(ports, pods)| {
            let mut ready = Vec::new();
            let mut not_ready = Vec::new();
            for (pod, p) in pods.iter().map(|m| (m.0, &m.1)).filter(|(_, p)| !is_terminating(p)) {
                let mut a = json!({"ip": pod_ip(p), "targetRef": target_ref(pod)});
                if let Some(h) = endpoint_hostname(svc, p) {
                    a["hostname"] = json!(h);
                }
                if let Some(n) = node_name(p) {
                    a["nodeName"] = json!(n);
                }
                if serving(svc_value, p) {
                    ready.push(a);
                } else {
                    not_ready.push(a);
                }
            }
            if ready.is_empty() && not_ready.is_empty() {
                return None;
            }
            let mut subset = json!({
                "ports": ports.iter().map(|(name, port, protocol, _)| {
                    let mut p = json!({"port": port, "protocol": protocol});
                    if !name.is_empty() {
                        p["name"] = json!(name);
                    }
                    p
                }).collect::<Vec<_>>(),
            });
            if !ready.is_empty() {
                subset["addresses"] = json!(ready);
            }
            if !not_ready.is_empty() {
                subset["notReadyAddresses"] = json!(not_ready);
            }
            Some(subset)
        })
        .collect();
    let mut obj = json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": svc.name(), "namespace": svc.namespace(), "labels": labels},
    });
    if !subsets.is_empty() {
        obj["subsets"] = json!(subsets);
    }
    obj
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store with namespace `ns`, a Service `head` selecting `app=ray` on port `dashboard`, and the
    /// controller's first pass done.
    fn service_fixture() -> (Store, EndpointsController) {
        fixture_with_service(
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "head"},
            "spec": {"selector": {"app": "ray"}, "ports": [{"name": "dash", "port": 8265, "targetPort": "dashboard"}]}}),
        )
    }

    /// A store with namespace `ns` holding `svc`, and the controller's first pass done.
    fn fixture_with_service(svc: Value) -> (Store, EndpointsController) {
        let store = Store::new(crate::store::StoreConfig::default());
        store.create_namespace("ns").unwrap();
        store.create(&Gvr::services(), Some("ns"), svc).unwrap();
        let mut controller = EndpointsController::new(&store);
        controller.pass(&store);
        (store, controller)
    }

    /// The first subset of the legacy Endpoints of Service `head` (its `addresses` and `notReadyAddresses`).
    fn legacy_addresses(store: &Store) -> Value {
        let legacy = store.get(&endpoints(), Some("ns"), "head").unwrap().value();
        legacy["subsets"][0].clone()
    }

    /// Creates pod `name` labelled `app=ray` with a `dashboard` port, then sets its IP and Ready condition.
    fn running_pod(store: &Store, name: &str, ip: &str, ready: bool) {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "ray"}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "ray", "image": "ray",
                "ports": [{"name": "dashboard", "containerPort": 8265}]}]}});
        let created = store.create(&Gvr::pods(), Some("ns"), pod.clone()).unwrap();
        pod["metadata"]["resourceVersion"] = json!(created.rv.to_string());
        pod["status"] = pod_status(ip, ready);
        store.update(&Gvr::pods(), Some("ns"), pod, Some("status")).unwrap();
    }

    fn pod_status(ip: &str, ready: bool) -> Value {
        json!({"phase": "Running", "podIP": ip,
               "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]})
    }

    fn slices(store: &Store) -> Vec<Value> {
        let listed = store.list(&endpoint_slices(), Some("ns"), &Default::default()).unwrap();
        listed.items.iter().map(|o| o.value()).collect()
    }

    /// A headless Service that publishes not-ready addresses: what the controllers keep of the Service still
    /// marks its slice headless, carries its labels and counts a not-ready pod as ready.
    #[test]
    fn headless_services_publishing_not_ready_pods_keep_both_traits() {
        let (store, mut controller) = fixture_with_service(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "head", "labels": {"team": "ray"}},
            "spec": {"selector": {"app": "ray"}, "clusterIP": "None", "publishNotReadyAddresses": true,
                     "ports": [{"name": "dash", "port": 8265, "targetPort": "dashboard"}]}}));
        running_pod(&store, "head-0", "10.0.0.7", false);
        controller.pass(&store);
        let slice = &slices(&store)[0];
        assert_eq!(slice["metadata"]["labels"][HEADLESS_LABEL], json!(""));
        assert_eq!(slice["metadata"]["labels"]["team"], json!("ray"));
        assert_eq!(slice["endpoints"][0]["conditions"]["ready"], json!(true));
        assert_eq!(slice["ports"][0]["port"], json!(8265));
        assert_eq!(legacy_addresses(&store)["addresses"][0]["ip"], json!("10.0.0.7"));
    }

    /// A Service change that keeps its selector still reaches the slices: what the controllers keep of the
    /// Service follows every change, not only the selector's.
    #[test]
    fn a_service_change_that_keeps_its_selector_rewrites_ports_and_labels() {
        let (store, mut controller) = service_fixture();
        running_pod(&store, "head-0", "10.0.0.7", true);
        controller.pass(&store);
        assert_eq!(slices(&store)[0]["ports"][0]["port"], json!(8265));
        let mut svc = store.get(&Gvr::services(), Some("ns"), "head").unwrap().value();
        svc["metadata"]["labels"] = json!({"team": "ray"});
        svc["spec"]["ports"] = json!([{"name": "gcs", "port": 6379, "targetPort": 6380}]);
        store.update(&Gvr::services(), Some("ns"), svc, None).unwrap();
        controller.pass(&store);
        let slice = &slices(&store)[0];
        assert_eq!(
            slice["ports"],
            json!([{"name": "gcs", "port": 6380, "protocol": "TCP"}])
        );
        assert_eq!(slice["metadata"]["labels"]["team"], json!("ray"));
    }

    #[test]
    fn the_echo_of_its_own_writes_marks_nothing_and_a_quiet_pass_writes_nothing() {
        let (store, mut controller) = service_fixture();
        running_pod(&store, "head-0", "10.0.0.7", true);
        controller.pass(&store);
        let slice = &slices(&store)[0];
        assert_eq!(slice["endpoints"][0]["addresses"], json!(["10.0.0.7"]));
        assert_eq!(slice["endpoints"][0]["conditions"]["ready"], json!(true));
        assert_eq!(slice["ports"][0]["port"], json!(8265));
        assert_eq!(legacy_addresses(&store)["addresses"][0]["ip"], json!("10.0.0.7"));
        // The watch echoes of those two writes mark nothing dirty, so the next pass has nothing to recompute.
        let before = store.current_rv();
        for change in controller.cache.sync() {
            controller.note(change.kind, &change.key, change.old.as_deref(), change.new.as_deref());
        }
        assert!(
            controller.dirty.is_empty(),
            "own writes marked {:?} dirty",
            controller.dirty
        );
        controller.pass(&store);
        assert_eq!(store.current_rv(), before, "a pass with nothing new wrote");
    }

    #[test]
    fn a_pod_change_that_moves_an_endpoint_is_written() {
        let (store, mut controller) = service_fixture();
        running_pod(&store, "head-0", "10.0.0.7", true);
        controller.pass(&store);
        set_pod_status(&store, "head-0", pod_status("10.0.0.7", false));
        controller.pass(&store);
        let slice = &slices(&store)[0];
        assert_eq!(slice["endpoints"][0]["conditions"]["ready"], json!(false));
        assert_eq!(
            legacy_addresses(&store)["notReadyAddresses"][0]["ip"],
            json!("10.0.0.7")
        );
    }

    /// The Services the changes since the controller's last pass mark dirty; then runs the pass.
    fn noted_dirty(store: &Store, controller: &mut EndpointsController) -> Vec<Key> {
        for change in controller.cache.sync() {
            controller.note(change.kind, &change.key, change.old.as_deref(), change.new.as_deref());
        }
        let dirty = controller.dirty.iter().cloned().collect();
        controller.pass(store);
        dirty
    }

    /// Writes `status` as pod `name`'s status.
    fn set_pod_status(store: &Store, name: &str, status: Value) {
        let mut pod = store.get(&Gvr::pods(), Some("ns"), name).unwrap().value();
        pod["status"] = status;
        store.update(&Gvr::pods(), Some("ns"), pod, Some("status")).unwrap();
    }

    /// A pod change that moves no endpoint (a new pod without an IP, its binding, a kubelet write that keeps
    /// its IP, readiness and ports) recomputes nothing; one that does (an IP, a readiness flip) marks the
    /// Service.
    #[test]
    fn only_pod_changes_that_move_an_endpoint_mark_their_service() {
        let head = ("ns".to_string(), "head".to_string());
        let (store, mut controller) = service_fixture();
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "head-0", "labels": {"app": "ray"}},
            "spec": {"containers": [{"name": "ray", "image": "ray",
                "ports": [{"name": "dashboard", "containerPort": 8265}]}]}});
        store.create(&Gvr::pods(), Some("ns"), pod).unwrap();
        assert_eq!(
            noted_dirty(&store, &mut controller),
            Vec::<Key>::new(),
            "created without an IP"
        );
        let mut bound = store.get(&Gvr::pods(), Some("ns"), "head-0").unwrap().value();
        bound["spec"]["nodeName"] = json!("node-1");
        store.update(&Gvr::pods(), Some("ns"), bound, None).unwrap();
        assert_eq!(
            noted_dirty(&store, &mut controller),
            Vec::<Key>::new(),
            "bound, still no IP"
        );
        set_pod_status(&store, "head-0", pod_status("10.0.0.7", false));
        assert_eq!(
            noted_dirty(&store, &mut controller),
            std::slice::from_ref(&head),
            "an IP"
        );
        let mut running = pod_status("10.0.0.7", false);
        running["conditions"][0]["lastTransitionTime"] = json!("2026-12-07T00:00:00Z");
        running["containerStatuses"] = json!([{"name": "ray", "ready": false, "restartCount": 0}]);
        set_pod_status(&store, "head-0", running);
        assert_eq!(
            noted_dirty(&store, &mut controller),
            Vec::<Key>::new(),
            "the same endpoint"
        );
        set_pod_status(&store, "head-0", pod_status("10.0.0.7", true));
        assert_eq!(
            noted_dirty(&store, &mut controller),
            std::slice::from_ref(&head),
            "now ready"
        );
        assert_eq!(slices(&store)[0]["endpoints"][0]["conditions"]["ready"], json!(true));
        set_pod_status(&store, "head-0", json!({"phase": "Succeeded", "podIP": "10.0.0.7"}));
        assert_eq!(noted_dirty(&store, &mut controller), [head], "finished");
        assert_eq!(slices(&store)[0]["endpoints"], json!([]));
    }

    /// A Service created after its pods reads them at its first recomputation, and their later changes reach
    /// it.
    #[test]
    fn a_service_after_its_pods_reads_them_and_follows_their_changes() {
        let store = Store::new(crate::store::StoreConfig::default());
        store.create_namespace("ns").unwrap();
        running_pod(&store, "head-0", "10.0.0.7", true);
        let mut controller = EndpointsController::new(&store);
        controller.pass(&store);
        store
            .create(&Gvr::services(), Some("ns"), json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "head"},
                "spec": {"selector": {"app": "ray"}, "ports": [{"name": "dash", "port": 8265, "targetPort": "dashboard"}]}}))
            .unwrap();
        controller.pass(&store);
        assert_eq!(slices(&store)[0]["endpoints"][0]["addresses"], json!(["10.0.0.7"]));
        set_pod_status(&store, "head-0", pod_status("10.0.0.8", true));
        controller.pass(&store);
        assert_eq!(slices(&store)[0]["endpoints"][0]["addresses"], json!(["10.0.0.8"]));
        assert_eq!(legacy_addresses(&store)["addresses"][0]["ip"], json!("10.0.0.8"));
    }

    #[test]
    fn someone_elses_edit_of_a_managed_slice_is_undone() {
        let (store, mut controller) = service_fixture();
        running_pod(&store, "head-0", "10.0.0.7", true);
        controller.pass(&store);
        let mut slice = slices(&store).remove(0);
        slice["endpoints"] = json!([]);
        store.update(&endpoint_slices(), Some("ns"), slice, None).unwrap();
        controller.pass(&store);
        assert_eq!(slices(&store)[0]["endpoints"][0]["addresses"], json!(["10.0.0.7"]));
    }

    #[test]
    fn named_target_ports_resolve_from_container_ports() {
        let pod = json!({"spec": {"containers": [{"ports": [{"name": "dashboard", "containerPort": 8265}]}]}});
        assert_eq!(
            resolve_target_port(&json!({"port": 80, "targetPort": "dashboard"}), &pod),
            Some(8265)
        );
        assert_eq!(
            resolve_target_port(&json!({"port": 80, "targetPort": 8080}), &pod),
            Some(8080)
        );
        assert_eq!(resolve_target_port(&json!({"port": 80}), &pod), Some(80));
        assert_eq!(
            resolve_target_port(&json!({"port": 80, "targetPort": "gcs"}), &pod),
            None
        );
    }

    #[test]
    fn selectors_need_every_pair() {
        let pod = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        assert!(selector_matches(&json!({"a": "1"}), &pod));
        assert!(!selector_matches(&json!({"a": "1", "c": "3"}), &pod));
        assert!(
            !selector_matches(&json!({}), &pod),
            "an empty selector selects nothing here"
        );
    }

    #[test]
    fn selectors_on_stored_pods_read_the_indexed_labels_like_the_decoded_ones() {
        use super::super::service_selection::selector_matches_labels;
        let value = json!({"metadata": {"name": "p", "namespace": "ns", "labels": {"a": "1", "b": "2"}}});
        let stored = StoredObject::new(value.clone(), 7);
        for selector in [
            json!({"a": "1"}),
            json!({"a": "1", "b": "2"}),
            json!({"a": "2"}),
            json!({"a": "1", "c": "3"}),
            json!({"c": null}),
            json!({"a": 1}),
            json!({}),
            json!(null),
        ] {
            assert_eq!(
                selector_matches_labels(&selector, &stored),
                selector_matches(&selector, &value),
                "{selector}"
            );
        }
    }
}
