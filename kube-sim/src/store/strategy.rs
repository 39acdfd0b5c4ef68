//! The write pipeline behind the store lock: create / update / delete with per-kind strategies (server-populated
//! metadata, namespaces, update and patch rules, status subresources, generation, deletion and finalizers, the
//! Job strategy, Pod and Service defaulting).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::apps;
use super::{
    DeleteOptions, DeleteOutcome, EventType, FOREGROUND_FINALIZER, GcTask, Inner, JOB_ORPHAN_WARNING, Key,
    MAX_GENERATE_NAME_PREFIX, NAMESPACE_FINALIZER, ORPHAN_FINALIZER, Propagation, StoreConfig, StoredObject,
    finalizers, is_terminating, kind_key, meta_str, now_rfc3339, rfc3339_after, scope_key,
};
use crate::error::{ApiError, FieldError};
use crate::kinds::{GenerationRule, Gvr, ResourceInfo, resources_from_crd};
use crate::validate::{validate_metadata, validate_name};

/// Default pod termination grace period.
const DEFAULT_GRACE_SECONDS: i64 = 30;
/// Tries before giving up on a free generated name.
const GENERATE_NAME_ATTEMPTS: usize = 8;
/// Job labels and annotation keys the API server adds.
const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
const JOB_NAME_LABEL_LEGACY: &str = "job-name";
const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
const CONTROLLER_UID_LABEL_LEGACY: &str = "controller-uid";

fn is(info: &ResourceInfo, group: &str, plural: &str) -> bool {
    info.gvr.group == group && info.gvr.resource == plural
}

fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    match obj.get_mut("metadata").and_then(Value::as_object_mut) {
        Some(m) => m,
        None => unreachable_meta(),
    }
}

#[allow(clippy::panic)]
fn unreachable_meta() -> ! {
    // `metadata` was set to an object just above.
    panic!("metadata is an object")
}

fn check_type_meta(info: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    let Some(m) = obj.as_object_mut() else {
        return Err(ApiError::bad_request("the request body must be a JSON object"));
    };
    let api_version = info.gvr.api_version();
    if let Some(v) = m.get("apiVersion").and_then(Value::as_str).filter(|v| !v.is_empty())
        && v != api_version
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({v}) does not match the expected API version ({api_version})"
        )));
    }
    if let Some(k) = m.get("kind").and_then(Value::as_str).filter(|k| !k.is_empty())
        && k != info.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({})",
            info.kind
        )));
    }
    // Keep apiVersion and kind first, as the real server renders them.
    let rest: Map<String, Value> = std::mem::take(m)
        .into_iter()
        .filter(|(k, _)| k != "apiVersion" && k != "kind")
        .collect();
    m.insert("apiVersion".into(), json!(api_version));
    m.insert("kind".into(), json!(info.kind));
    m.extend(rest);
    Ok(())
}

fn spec_diff(info: &ResourceInfo, old: &Value, new: &Value) -> bool {
    match info.generation {
        GenerationRule::None => false,
        GenerationRule::Spec => old.get("spec") != new.get("spec"),
        GenerationRule::AllButMetadataAndStatus | GenerationRule::AllButMetadata => {
            let skip_status = info.generation == GenerationRule::AllButMetadataAndStatus;
            let strip = |v: &Value| -> Map<String, Value> {
                v.as_object()
                    .map(|m| {
                        m.iter()
                            .filter(|(k, _)| *k != "metadata" && !(skip_status && *k == "status"))
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            strip(old) != strip(new)
        }
    }
}

fn bump_generation(obj: &mut Value) {
    if let Some(g) = obj["metadata"]["generation"].as_i64()
        && g > 0
    {
        meta_mut(obj).insert("generation".into(), json!(g + 1));
    }
}

impl Inner {
    /// The create pipeline.
    pub(super) fn create(
        &mut self,
        config: &StoreConfig,
        info: &ResourceInfo,
        namespace: Option<&str>,
        mut obj: Value,
    ) -> Result<Arc<StoredObject>, ApiError> {
        check_type_meta(info, &mut obj)?;
        let meta = meta_mut(&mut obj);
        if info.namespaced {
            let url_ns = namespace.filter(|n| !n.is_empty());
            match (
                meta.get("namespace").and_then(Value::as_str).filter(|n| !n.is_empty()),
                url_ns,
            ) {
                (Some(body), Some(url)) if body != url => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                (_, Some(url)) => {
                    meta.insert("namespace".into(), json!(url));
                }
                (Some(_), None) => {}
                (None, None) => return Err(ApiError::bad_request("a namespace is required")),
            }
        } else {
            meta.remove("namespace");
        }
        if meta
            .get("resourceVersion")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
        {
            return Err(ApiError::internal(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        for server_owned in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
            "generation",
            "managedFields",
        ] {
            meta.remove(server_owned);
        }
        let ns = meta
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut name = meta.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        let generate = meta
            .get("generateName")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let kind_store_key = kind_key(&info.gvr);
        if name.is_empty() {
            if generate.is_empty() {
                return Err(ApiError::invalid(
                    info.target(""),
                    &[FieldError::required(
                        "metadata.name",
                        "name or generateName is required",
                    )],
                ));
            }
            let prefix: String = generate.chars().take(MAX_GENERATE_NAME_PREFIX).collect();
            for _ in 0..GENERATE_NAME_ATTEMPTS {
                name = format!("{prefix}{}", self.name_suffix());
                let taken = self
                    .kinds
                    .get(&kind_store_key)
                    .is_some_and(|k| k.objects.contains_key(&(ns.clone(), name.clone())));
                if !taken {
                    break;
                }
            }
            meta_mut(&mut obj).insert("name".into(), json!(name));
        }
        if let Err(msg) = validate_name(&name, info.name_rule) {
            return Err(ApiError::invalid(
                info.target(&name),
                &[FieldError::invalid("metadata.name", &name, &msg)],
            ));
        }
        let errs = validate_metadata(&obj["metadata"]);
        if !errs.is_empty() {
            return Err(ApiError::invalid(info.target(&name), &errs));
        }
        if info.namespaced {
            match self.lookup_ns(&ns) {
                None => return Err(ApiError::namespace_not_found(&ns)),
                Some(n) if is_terminating(&n.value()) => {
                    return Err(ApiError::forbidden(
                        info.target(&name),
                        &format!("unable to create new content in namespace {ns} because it is being terminated"),
                        Some(("NamespaceTerminating", "metadata.namespace")),
                    ));
                }
                Some(_) => {}
            }
        }
        let key: Key = (if info.namespaced { ns.clone() } else { String::new() }, name.clone());
        if self
            .kinds
            .get(&kind_store_key)
            .is_some_and(|k| k.objects.contains_key(&key))
        {
            return Err(ApiError::already_exists(info.target(&name)));
        }
        let uid = self.new_uid();
        {
            let meta = meta_mut(&mut obj);
            meta.insert("uid".into(), json!(uid));
            meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
            if info.generation != GenerationRule::None {
                meta.insert("generation".into(), json!(1));
            }
        }
        self.prepare_create(config, info, &mut obj, &uid)?;
        crate::crd_schema::admit_write(info, config.validate_custom_resources, &mut obj, None)?;
        let created = self.commit(info, key, obj, EventType::Added, None, config.history_len);
        if is(info, "", "namespaces") {
            let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": name}});
            if let Ok(sa_info) = self.info(&Gvr::service_accounts()) {
                let _ = self.create(config, &sa_info, Some(&name), sa);
            }
        }
        if is(info, "apiextensions.k8s.io", "customresourcedefinitions") {
            for r in resources_from_crd(&created.value()) {
                self.register(Arc::new(r), config.channel_capacity);
            }
        }
        Ok(created)
    }

    fn lookup_ns(&self, ns: &str) -> Option<Arc<StoredObject>> {
        self.kinds
            .get(&(String::new(), "namespaces".to_string()))
            .and_then(|k| k.objects.get(&(String::new(), ns.to_string())))
            .cloned()
    }

    fn prepare_create(
        &mut self,
        config: &StoreConfig,
        info: &ResourceInfo,
        obj: &mut Value,
        uid: &str,
    ) -> Result<(), ApiError> {
        let o = obj
            .as_object_mut()
            .ok_or_else(|| ApiError::bad_request("object expected"))?;
        if info.custom && info.status_subresource {
            o.remove("status");
        }
        if info.custom {
            return Ok(());
        }
        if apps::is_workload(info) {
            let name = meta_str(obj, "name").unwrap_or_default().to_string();
            apps::validate(info, &name, obj)?;
            apps::default_workload(info, obj);
            obj["status"] = apps::initial_status(info);
            return Ok(());
        }
        match (info.gvr.group.as_str(), info.gvr.resource.as_str()) {
            ("", "pods") => {
                default_pod(obj);
                obj["status"] = json!({"phase": "Pending", "qosClass": qos_class(&obj["spec"])});
                if config.service_account_admission {
                    let ns = meta_str(obj, "namespace").unwrap_or_default().to_string();
                    let sa = obj["spec"]["serviceAccountName"]
                        .as_str()
                        .unwrap_or("default")
                        .to_string();
                    let exists = self
                        .kinds
                        .get(&(String::new(), "serviceaccounts".to_string()))
                        .is_some_and(|k| k.objects.contains_key(&(ns.clone(), sa.clone())));
                    if !exists {
                        let name = meta_str(obj, "name").unwrap_or_default().to_string();
                        return Err(ApiError::forbidden(
                            info.target(&name),
                            &format!("error looking up service account {ns}/{sa}: serviceaccount {sa:?} not found"),
                            None,
                        ));
                    }
                }
            }
            ("", "services") => {
                let ip = self.allocate_service_ip(&config.service_cidr);
                default_service(obj, None, &ip);
                obj["status"] = json!({"loadBalancer": {}});
            }
            ("batch", "jobs") => {
                default_job(obj, uid);
                obj["status"] = json!({});
            }
            ("networking.k8s.io", "ingresses") => {
                obj["status"] = json!({"loadBalancer": {}});
            }
            ("networking.k8s.io", "networkpolicies") => default_network_policy(obj),
            ("", "namespaces") => {
                let name = meta_str(obj, "name").unwrap_or_default().to_string();
                let meta = meta_mut(obj);
                let labels = meta.entry("labels").or_insert_with(|| json!({}));
                if let Some(l) = labels.as_object_mut() {
                    l.insert("kubernetes.io/metadata.name".into(), json!(name));
                }
                obj["spec"] = json!({"finalizers": [NAMESPACE_FINALIZER]});
                obj["status"] = json!({"phase": "Active"});
            }
            ("apiextensions.k8s.io", "customresourcedefinitions") => {
                let now = now_rfc3339();
                let names = obj["spec"]["names"].clone();
                let stored: Vec<Value> = obj["spec"]["versions"]
                    .as_array()
                    .map(|vs| {
                        vs.iter()
                            .filter(|v| v["storage"].as_bool() == Some(true))
                            .map(|v| v["name"].clone())
                            .collect()
                    })
                    .unwrap_or_default();
                obj["status"] = json!({
                    "acceptedNames": names,
                    "conditions": [
                        {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now, "reason": "NoConflicts", "message": "no conflicts found"},
                        {"type": "Established", "status": "True", "lastTransitionTime": now, "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}
                    ],
                    "storedVersions": stored,
                });
            }
            _ => {
                if info.status_subresource && info.gvr.resource != "nodes" {
                    o_remove_status(obj);
                }
            }
        }
        Ok(())
    }

    fn allocate_service_ip(&mut self, block: &crate::network::Ipv4Cidr) -> String {
        // Skip the network address and the first host address (the `kubernetes` Service's); wrap around
        // when the block is used up.
        self.next_service_ip += 1;
        let span = block.size().saturating_sub(2).max(1);
        let n = 2 + u64::from(self.next_service_ip.saturating_sub(2)) % span;
        block.nth(n).map(|ip| ip.to_string()).unwrap_or_default()
    }

    /// The update pipeline shared by PUT and PATCH (after the patch is applied).
    pub(super) fn update(
        &mut self,
        config: &StoreConfig,
        info: &ResourceInfo,
        old: &Arc<StoredObject>,
        mut new: Value,
        subresource: Option<&str>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        check_type_meta(info, &mut new)?;
        // Decoded once: every check below reads the stored version (the store keeps only its JSON).
        let old_value = old.value();
        let name = old.name().to_string();
        let target = info.target(&name);
        if let Some(ns) = meta_str(&new, "namespace")
            && info.namespaced
            && Some(ns) != old.namespace()
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        if meta_str(&new, "name").is_some_and(|n| n != name) {
            return Err(ApiError::bad_request(
                "the name of the object does not match the name on the URL",
            ));
        }
        if let Some(uid) = meta_str(&new, "uid")
            && uid != old.uid()
        {
            return Err(ApiError::conflict_msg(
                target,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    old.uid()
                ),
            ));
        }
        if subresource == Some("status") {
            let mut base = old_value.clone();
            base["status"] = new.get("status").cloned().unwrap_or(Value::Null);
            if base["status"].is_null() {
                o_remove_status(&mut base);
            }
            if !info.custom {
                for f in ["labels", "annotations"] {
                    match new["metadata"].get(f) {
                        Some(v) if !v.is_null() => {
                            meta_mut(&mut base).insert(f.into(), v.clone());
                        }
                        _ => {
                            meta_mut(&mut base).remove(f);
                        }
                    }
                }
            }
            new = base;
        } else if info.status_subresource {
            match old_value.get("status") {
                Some(s) => new["status"] = s.clone(),
                None => o_remove_status(&mut new),
            }
        }
        {
            let old_meta = &old_value["metadata"];
            let meta = meta_mut(&mut new);
            for f in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "name",
                "namespace",
            ] {
                match old_meta.get(f) {
                    Some(v) => {
                        meta.insert(f.into(), v.clone());
                    }
                    None => {
                        meta.remove(f);
                    }
                }
            }
            meta.remove("resourceVersion");
            meta.remove("selfLink");
            meta.remove("managedFields");
        }
        let errs = validate_metadata(&new["metadata"]);
        if !errs.is_empty() {
            return Err(ApiError::invalid(target, &errs));
        }
        if is_terminating(&old_value) {
            let before = finalizers(&old_value);
            if finalizers(&new).iter().any(|f| !before.contains(f)) {
                return Err(ApiError::invalid(
                    target,
                    &[FieldError::forbidden(
                        "metadata.finalizers",
                        "no new finalizers can be added if the object is being deleted",
                    )],
                ));
            }
        }
        crate::crd_schema::admit_write(info, config.validate_custom_resources, &mut new, Some(&old_value))?;
        if subresource.is_none() {
            self.prepare_update(info, old, &old_value, &mut new)?;
            if spec_diff(info, &old_value, &new) {
                bump_generation(&mut new);
            }
        }
        meta_mut(&mut new).insert("resourceVersion".into(), json!(old.rv.to_string()));
        if new == old_value {
            return Ok(old.clone());
        }
        let key = scope_key(info, old.namespace(), &name)?;
        if is_terminating(&new) && finalizers(&new).is_empty() && !namespace_pending(info, &new) {
            // D-3: upstream aborts the update and deletes the last stored state: only DELETED is emitted.
            return Ok(self.remove(config, info, key, old.clone()));
        }
        let terminating = is_terminating(&new);
        let updated = self.commit(
            info,
            key.clone(),
            new,
            EventType::Modified,
            Some(old.clone()),
            config.history_len,
        );
        if is(info, "apiextensions.k8s.io", "customresourcedefinitions") {
            for r in resources_from_crd(&updated.value()) {
                self.register(Arc::new(r), config.channel_capacity);
            }
        }
        if terminating {
            let _ = self.gc_tx.send(GcTask::Recheck(updated.uid().to_string()));
        }
        Ok(updated)
    }

    fn prepare_update(
        &mut self,
        info: &ResourceInfo,
        old: &Arc<StoredObject>,
        old_value: &Value,
        new: &mut Value,
    ) -> Result<(), ApiError> {
        if info.custom {
            return Ok(());
        }
        let name = old.name().to_string();
        if apps::is_workload(info) {
            apps::validate_update(info, &name, old_value, new)?;
            apps::default_workload(info, new);
            return Ok(());
        }
        let immutable = |field: &str, v: &Value| {
            ApiError::invalid(
                info.target(&name),
                &[FieldError::invalid(field, &v.to_string(), "field is immutable")],
            )
        };
        match (info.gvr.group.as_str(), info.gvr.resource.as_str()) {
            ("", "pods") => {
                default_pod(new);
                let old_spec = &old_value["spec"];
                let new_spec = &new["spec"];
                if pod_spec_mutable_view(old_spec) != pod_spec_mutable_view(new_spec) {
                    return Err(ApiError::invalid(
                        info.target(&name),
                        &[FieldError::forbidden(
                            "spec",
                            "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
                        )],
                    ));
                }
            }
            ("", "services") => {
                let old_ip = old_value["spec"]["clusterIP"].as_str().unwrap_or_default().to_string();
                match new["spec"]["clusterIP"].as_str() {
                    Some(ip) if !ip.is_empty() && ip != old_ip => return Err(immutable("spec.clusterIP", &json!(ip))),
                    _ => {}
                }
                default_service(new, Some(old_value), &old_ip);
            }
            ("networking.k8s.io", "networkpolicies") => default_network_policy(new),
            ("batch", "jobs") => {
                for f in ["template", "selector", "completionMode"] {
                    let (o, n) = (&old_value["spec"][f], &new["spec"][f]);
                    if !n.is_null() && o != n {
                        return Err(immutable(&format!("spec.{f}"), n));
                    }
                    if n.is_null() && !o.is_null() {
                        new["spec"][f] = o.clone();
                    }
                }
            }
            ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings")
                if old_value["roleRef"] != new["roleRef"] =>
            {
                return Err(ApiError::invalid(
                    info.target(&name),
                    &[FieldError::invalid(
                        "roleRef",
                        &new["roleRef"].to_string(),
                        "cannot change roleRef",
                    )],
                ));
            }
            ("", "namespaces") if new["spec"].is_null() => {
                new["spec"] = old_value["spec"].clone();
            }
            _ => {}
        }
        Ok(())
    }

    /// Removes an object for good (new RV, DELETED event) and queues garbage collection.
    pub(super) fn remove(
        &mut self,
        config: &StoreConfig,
        info: &ResourceInfo,
        key: Key,
        last: Arc<StoredObject>,
    ) -> Arc<StoredObject> {
        let uid = last.uid().to_string();
        let owners: Vec<String> = last.owner_uids().map(str::to_string).collect();
        let gone = self.commit(
            info,
            key,
            last.value(),
            EventType::Deleted,
            Some(last),
            config.history_len,
        );
        if is(info, "apiextensions.k8s.io", "customresourcedefinitions") {
            self.remove_crd_instances(config, &gone.value());
        }
        let _ = self.gc_tx.send(GcTask::OwnerGone(uid));
        for o in owners {
            let _ = self.gc_tx.send(GcTask::Recheck(o));
        }
        gone
    }

    fn remove_crd_instances(&mut self, config: &StoreConfig, crd: &Value) {
        for r in resources_from_crd(crd) {
            let k = kind_key(&r.gvr);
            let objs: Vec<(Key, Arc<StoredObject>)> = self
                .kinds
                .get(&k)
                .map(|ks| ks.objects.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default();
            for (key, obj) in objs {
                self.commit(&r, key, obj.value(), EventType::Deleted, Some(obj), config.history_len);
            }
            self.resources
                .remove(&(r.gvr.group.clone(), r.gvr.version.clone(), r.gvr.resource.clone()));
        }
    }

    /// The delete pipeline.
    pub(super) fn delete(
        &mut self,
        config: &StoreConfig,
        info: &ResourceInfo,
        old: &Arc<StoredObject>,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let name = old.name().to_string();
        let target = info.target(&name);
        if let Some(uid) = opts.precondition_uid.as_deref()
            && uid != old.uid()
        {
            return Err(ApiError::conflict_msg(
                target,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    old.uid()
                ),
            ));
        }
        if let Some(rv) = opts.precondition_rv.as_deref()
            && rv != old.rv.to_string()
        {
            return Err(ApiError::conflict_msg(
                target,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    old.rv
                ),
            ));
        }
        let warning = (info.default_orphan && opts.propagation.is_none()).then(|| JOB_ORPHAN_WARNING.to_string());
        let propagation = opts.propagation.unwrap_or(if info.default_orphan {
            Propagation::Orphan
        } else {
            Propagation::Background
        });
        let key = scope_key(info, old.namespace(), &name)?;
        let is_pod = is(info, "", "pods");
        let mut fins = finalizers(&old.value());
        if is_terminating(&old.value()) {
            if fins.is_empty()
                && !namespace_pending(info, &old.value())
                && (!is_pod || opts.grace_period_seconds == Some(0))
            {
                let gone = self.remove(config, info, key, old.clone());
                return Ok(DeleteOutcome {
                    object: gone,
                    finished: true,
                    warning,
                });
            }
            return Ok(DeleteOutcome {
                object: old.clone(),
                finished: false,
                warning,
            });
        }
        let mut gc_task = None;
        match propagation {
            Propagation::Orphan if !fins.iter().any(|f| f == ORPHAN_FINALIZER) => {
                fins.push(ORPHAN_FINALIZER.into());
                gc_task = Some(GcTask::Orphan(old.uid().to_string()));
            }
            Propagation::Foreground if !fins.iter().any(|f| f == FOREGROUND_FINALIZER) => {
                fins.push(FOREGROUND_FINALIZER.into());
                gc_task = Some(GcTask::Foreground(old.uid().to_string()));
            }
            _ => {}
        }
        // Orphaning something that owns nothing needs no finalizer round trip.
        if matches!(propagation, Propagation::Orphan)
            && !self.dependents.contains_key(old.uid())
            && !finalizers(&old.value()).iter().any(|f| f == ORPHAN_FINALIZER)
        {
            fins.retain(|f| f != ORPHAN_FINALIZER);
            gc_task = None;
        }
        let mut marked = old.value();
        if is(info, "", "namespaces") {
            meta_mut(&mut marked).insert("deletionTimestamp".into(), json!(now_rfc3339()));
            meta_mut(&mut marked).insert("deletionGracePeriodSeconds".into(), json!(0));
            marked["status"]["phase"] = json!("Terminating");
            let updated = self.commit(
                info,
                key,
                marked,
                EventType::Modified,
                Some(old.clone()),
                config.history_len,
            );
            let _ = self.gc_tx.send(GcTask::Namespace(name));
            return Ok(DeleteOutcome {
                object: updated,
                finished: false,
                warning,
            });
        }
        let graceful_pod = is_pod
            && old.value()["spec"]["nodeName"].as_str().is_some_and(|n| !n.is_empty())
            && !matches!(old.value()["status"]["phase"].as_str(), Some("Succeeded" | "Failed"));
        let grace = opts
            .grace_period_seconds
            .or_else(|| old.value()["spec"]["terminationGracePeriodSeconds"].as_i64())
            .unwrap_or(DEFAULT_GRACE_SECONDS)
            .max(0);
        if (graceful_pod && grace > 0) || !fins.is_empty() {
            let (ts, g) = if graceful_pod && grace > 0 {
                (rfc3339_after(grace), grace)
            } else {
                (now_rfc3339(), 0)
            };
            let meta = meta_mut(&mut marked);
            meta.insert("deletionTimestamp".into(), json!(ts));
            meta.insert("deletionGracePeriodSeconds".into(), json!(g));
            if fins.is_empty() {
                meta.remove("finalizers");
            } else {
                meta.insert("finalizers".into(), json!(fins));
            }
            bump_generation(&mut marked);
            let updated = self.commit(
                info,
                key,
                marked,
                EventType::Modified,
                Some(old.clone()),
                config.history_len,
            );
            if let Some(t) = gc_task {
                let _ = self.gc_tx.send(t);
            }
            return Ok(DeleteOutcome {
                object: updated,
                finished: false,
                warning,
            });
        }
        let gone = self.remove(config, info, key, old.clone());
        Ok(DeleteOutcome {
            object: gone,
            finished: true,
            warning,
        })
    }
}

/// A terminating Namespace is removed only once its `spec.finalizers` are empty too.
fn namespace_pending(info: &ResourceInfo, obj: &Value) -> bool {
    is(info, "", "namespaces") && obj["spec"]["finalizers"].as_array().is_some_and(|a| !a.is_empty())
}

fn o_remove_status(obj: &mut Value) {
    if let Some(m) = obj.as_object_mut() {
        m.remove("status");
    }
}

/// The parts of a pod spec that may not change on update (mutable fields blanked).
fn pod_spec_mutable_view(spec: &Value) -> Value {
    let mut s = spec.clone();
    if let Some(m) = s.as_object_mut() {
        for f in [
            "activeDeadlineSeconds",
            "tolerations",
            "terminationGracePeriodSeconds",
            "schedulingGates",
        ] {
            m.remove(f);
        }
        // Binding sets nodeName once; treat an empty → set transition as allowed.
        m.remove("nodeName");
        for list in ["containers", "initContainers"] {
            if let Some(cs) = m.get_mut(list).and_then(Value::as_array_mut) {
                for c in cs {
                    if let Some(c) = c.as_object_mut() {
                        c.remove("image");
                    }
                }
            }
        }
    }
    s
}

fn set_default(obj: &mut Value, key: &str, v: Value) {
    if let Some(m) = obj.as_object_mut()
        && m.get(key).is_none_or(Value::is_null)
    {
        m.insert(key.into(), v);
    }
}

/// Upstream Pod defaults that make the stored spec differ from what the client sent.
pub(super) fn default_pod(obj: &mut Value) {
    if !obj["spec"].is_object() {
        return;
    }
    let spec = &mut obj["spec"];
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "terminationGracePeriodSeconds", json!(DEFAULT_GRACE_SECONDS));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "enableServiceLinks", json!(true));
    set_default(spec, "priority", json!(0));
    set_default(spec, "serviceAccountName", json!("default"));
    let sa = spec["serviceAccountName"].clone();
    set_default(spec, "serviceAccount", sa);
    set_default(
        spec,
        "tolerations",
        json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ]),
    );
    for list in ["containers", "initContainers"] {
        if let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs {
                let image = c["image"].as_str().unwrap_or_default().to_string();
                let tag_latest = !image.contains('@')
                    && image
                        .rsplit('/')
                        .next()
                        .is_none_or(|last| !last.contains(':') || last.ends_with(":latest"));
                set_default(
                    c,
                    "imagePullPolicy",
                    json!(if tag_latest { "Always" } else { "IfNotPresent" }),
                );
                set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
                set_default(c, "terminationMessagePolicy", json!("File"));
                set_default(c, "resources", json!({}));
                if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
                    for p in ports {
                        set_default(p, "protocol", json!("TCP"));
                    }
                }
            }
        }
    }
}

fn qos_class(spec: &Value) -> &'static str {
    // Borrowed, not cloned: this runs on every pod create.
    let containers = spec["containers"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in containers {
        let req = &c["resources"]["requests"];
        let lim = &c["resources"]["limits"];
        for r in ["cpu", "memory"] {
            if !req[r].is_null() || !lim[r].is_null() {
                any = true;
            }
            let l = &lim[r];
            if l.is_null() || (!req[r].is_null() && req[r] != *l) {
                guaranteed = false;
            }
        }
    }
    if guaranteed && any {
        "Guaranteed"
    } else if any {
        "Burstable"
    } else {
        "BestEffort"
    }
}

/// Service defaults; `old` (on update) supplies the allocated cluster IP.
/// The API server's NetworkPolicy defaults: `TCP` for a rule port without a protocol, and without
/// `policyTypes`, `Ingress` plus `Egress` when there are egress rules.
fn default_network_policy(obj: &mut Value) {
    let spec = &mut obj["spec"];
    for direction in ["ingress", "egress"] {
        let rules = spec[direction].as_array_mut().into_iter().flatten();
        for port in rules.flat_map(|r| r["ports"].as_array_mut().into_iter().flatten()) {
            if port.get("protocol").is_none_or(Value::is_null) {
                port["protocol"] = json!("TCP");
            }
        }
    }
    if spec.get("policyTypes").is_none_or(Value::is_null) && spec.is_object() {
        let has_egress = spec["egress"].as_array().is_some_and(|e| !e.is_empty());
        spec["policyTypes"] = if has_egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
    }
}

fn default_service(obj: &mut Value, old: Option<&Value>, ip: &str) {
    if !obj["spec"].is_object() {
        obj["spec"] = json!({});
    }
    let spec = &mut obj["spec"];
    set_default(spec, "type", json!("ClusterIP"));
    set_default(spec, "sessionAffinity", json!("None"));
    let ty = spec["type"].as_str().unwrap_or("ClusterIP").to_string();
    if ty != "ExternalName" {
        let headless = spec["clusterIP"].as_str() == Some("None");
        if let Some(old) = old {
            set_default(spec, "clusterIP", old["spec"]["clusterIP"].clone());
            set_default(spec, "clusterIPs", old["spec"]["clusterIPs"].clone());
        } else if !headless {
            set_default(spec, "clusterIP", json!(ip));
        }
        let cip = spec["clusterIP"].clone();
        set_default(spec, "clusterIPs", json!([cip]));
        set_default(spec, "ipFamilies", json!(["IPv4"]));
        set_default(spec, "ipFamilyPolicy", json!("SingleStack"));
        set_default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            set_default(p, "protocol", json!("TCP"));
            let port = p["port"].clone();
            set_default(p, "targetPort", port);
        }
    }
}

/// The Job API-server strategy: selector, template labels and spec defaults.
fn default_job(obj: &mut Value, uid: &str) {
    let name = meta_str(obj, "name").unwrap_or_default().to_string();
    if !obj["spec"].is_object() {
        obj["spec"] = json!({});
    }
    let spec = &mut obj["spec"];
    if spec["manualSelector"].as_bool() != Some(true) {
        spec["selector"] = json!({"matchLabels": {CONTROLLER_UID_LABEL: uid}});
        if !spec["template"]["metadata"].is_object() {
            spec["template"]["metadata"] = json!({});
        }
        let tmeta = &mut spec["template"]["metadata"];
        if !tmeta["labels"].is_object() {
            tmeta["labels"] = json!({});
        }
        if let Some(l) = tmeta["labels"].as_object_mut() {
            l.insert(CONTROLLER_UID_LABEL.into(), json!(uid));
            l.insert(CONTROLLER_UID_LABEL_LEGACY.into(), json!(uid));
            l.insert(JOB_NAME_LABEL.into(), json!(name));
            l.insert(JOB_NAME_LABEL_LEGACY.into(), json!(name));
        }
    }
    if spec["parallelism"].is_null() && spec["completions"].is_null() {
        spec["parallelism"] = json!(1);
        spec["completions"] = json!(1);
    }
    set_default(spec, "parallelism", json!(1));
    set_default(spec, "backoffLimit", json!(6));
    set_default(spec, "completionMode", json!("NonIndexed"));
    set_default(spec, "suspend", json!(false));
    set_default(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    if spec["template"]["spec"].is_object() {
        let mut pod = json!({"spec": spec["template"]["spec"].clone()});
        default_pod(&mut pod);
        spec["template"]["spec"] = pod["spec"].take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_policy_ports_default_to_tcp_and_policy_types_follow_the_rules() {
        let mut np = json!({"spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}, {"port": 53, "protocol": "UDP"}]}]}});
        default_network_policy(&mut np);
        assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(np["spec"]["egress"][0]["ports"][1]["protocol"], "UDP");
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        let mut ingress_only = json!({"spec": {"podSelector": {}}});
        default_network_policy(&mut ingress_only);
        assert_eq!(ingress_only["spec"]["policyTypes"], json!(["Ingress"]));
        let mut explicit = json!({"spec": {"podSelector": {}, "policyTypes": ["Egress"]}});
        default_network_policy(&mut explicit);
        assert_eq!(explicit["spec"]["policyTypes"], json!(["Egress"]));
    }
}
