//! Test-only world simulation: the operator (creates/deletes pods to match `replicas` and
//! `workersToDelete`), Ray (pods join, demands are scheduled on free capacity) and the autoscaler
//! (applies the plan to the spec).

use super::*;

/// A demand that may be running somewhere.
#[derive(Clone, Debug)]
pub(crate) struct Task {
    pub name: String,
    pub demand: ResourceSet,
    /// `None` while pending; `Some(None)` on the head; `Some(Some((group, pod name)))` on a worker.
    pub placed: Option<Option<(usize, String)>>,
}

pub(crate) struct World {
    pub input: PlannerInput,
    pub tasks: Vec<Task>,
    pub next_pod: usize,
}

impl World {
    pub fn new(input: PlannerInput) -> Self {
        Self {
            input,
            tasks: Vec::new(),
            next_pod: 0,
        }
    }

    pub fn submit(&mut self, name: &str, demand: ResourceSet) {
        self.tasks.push(Task {
            name: name.into(),
            demand,
            placed: None,
        });
        self.sync_demands();
    }

    /// Remove a task; the node it ran on becomes idle at `now` if nothing else runs there.
    pub fn finish(&mut self, name: &str) {
        if let Some(i) = self.tasks.iter().position(|t| t.name == name) {
            let task = self.tasks.remove(i);
            match task.placed {
                Some(Some((gi, pod))) => {
                    let now = self.input.now;
                    let p = self.input.groups[gi].pods.iter_mut().find(|p| p.name == pod).unwrap();
                    if let WorkerState::Running { used, idle_since } = &mut p.state {
                        used.subtract(&task.demand);
                        if used.is_empty() {
                            *idle_since = Some(now);
                        }
                    }
                }
                Some(None) => self.input.head.used.subtract(&task.demand),
                None => {}
            }
        }
        self.sync_demands();
    }

    fn sync_demands(&mut self) {
        self.input.demands = self
            .tasks
            .iter()
            .filter(|t| t.placed.is_none())
            .map(|t| t.demand.clone())
            .collect();
    }

    /// The autoscaler patches the CR.
    pub fn apply(&mut self, plan: &Plan) {
        for (g, d) in self.input.groups.iter_mut().zip(&plan.groups) {
            g.replicas.replicas = d.replicas;
            g.workers_to_delete = d.workers_to_delete.clone();
        }
    }

    /// The operator reconciles pods (autoscaling on, no random surplus deletion).
    pub fn operator(&mut self) {
        for gi in 0..self.input.groups.len() {
            let listed = self.input.groups[gi].workers_to_delete.clone();
            let gone: Vec<String> = self.input.groups[gi]
                .pods
                .iter()
                .filter(|p| listed.contains(&p.name))
                .map(|p| p.name.clone())
                .collect();
            for name in &gone {
                // Tasks on a deleted pod go back to pending.
                for t in &mut self.tasks {
                    if t.placed == Some(Some((gi, name.clone()))) {
                        t.placed = None;
                    }
                }
            }
            let g = &mut self.input.groups[gi];
            g.pods.retain(|p| !listed.contains(&p.name));
            let desired = crate::replicas::desired_pods(&g.replicas);
            let hosts = g.replicas.num_of_hosts.max(1);
            while (g.pods.len() as i64) < desired {
                let replica = format!("{}-r{}", g.name, self.next_pod);
                for _ in 0..hosts {
                    let mut pod = WorkerPod::pending(format!("{}-w{:05}", g.name, self.next_pod));
                    if hosts > 1 {
                        pod.replica_name = Some(replica.clone());
                    }
                    g.pods.push(pod);
                    self.next_pod += 1;
                }
            }
        }
        self.sync_demands();
    }

    /// Ray: pending pods join (idle), then pending tasks are scheduled first-fit (head, then pods
    /// in name order).
    pub fn ray(&mut self) {
        let now = self.input.now;
        for g in &mut self.input.groups {
            for p in &mut g.pods {
                if p.state == WorkerState::Pending {
                    p.state = WorkerState::Running {
                        used: ResourceSet::new(),
                        idle_since: Some(now),
                    };
                }
            }
        }
        for t in self.tasks.iter_mut().filter(|t| t.placed.is_none()) {
            let mut head_free = self.input.head.resources.clone();
            head_free.subtract(&self.input.head.used);
            if head_free.fits(&t.demand) {
                self.input.head.used.add(&t.demand);
                t.placed = Some(None);
                continue;
            }
            'groups: for (gi, g) in self.input.groups.iter_mut().enumerate() {
                let mut order: Vec<usize> = (0..g.pods.len()).collect();
                order.sort_by(|&a, &b| g.pods[a].name.cmp(&g.pods[b].name));
                for pi in order {
                    let cap = g.pod_resources.clone();
                    let p = &mut g.pods[pi];
                    if let WorkerState::Running { used, idle_since } = &mut p.state {
                        let mut free = cap;
                        free.subtract(used);
                        if free.fits(&t.demand) {
                            used.add(&t.demand);
                            *idle_since = None;
                            t.placed = Some(Some((gi, p.name.clone())));
                            break 'groups;
                        }
                    }
                }
            }
        }
        self.sync_demands();
    }

    /// One full round: plan, apply, operator, Ray. Returns the plan.
    pub fn round(&mut self) -> Plan {
        let p = plan(&self.input);
        self.apply(&p);
        self.operator();
        self.ray();
        p
    }

    pub fn pods(&self, group: usize) -> usize {
        self.input.groups[group].pods.len()
    }
}
