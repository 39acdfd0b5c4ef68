//! `kuberay-bench scale --cpu-split`: the simulated control plane and the client side on separate CPUs, as on a
//! cluster where the operator's pod runs on another node than the API server.
//!
//! Without it, every process of a run shares every core, so whatever CPU the operator spends is taken from
//! the simulator, which the bare client (a few HTTP requests per pod) leaves to itself: the ratio then
//! measures the operator's CPU as much as whether it keeps the API server busy. With it, this process (kube-sim
//! and its agents) runs on the first half of the allowed CPUs, and the clients (the bare client's creators, the
//! RayCluster creates that stand for the user, the operator child) and the measuring (the progress follower)
//! on the second half, in every phase alike. The halves come from this process's affinity mask: under a cgroup CPU
//! quota both halves still share that one quota, so the split isolates only on dedicated cores.

use anyhow::{Context as _, bail};
use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};

/// The two CPU sets of a split run.
#[derive(Clone, Debug)]
pub struct CpuSplit {
    /// The simulator's CPUs.
    sim: Vec<usize>,
    /// The clients' CPUs.
    client: Vec<usize>,
}

impl CpuSplit {
    /// Splits the CPUs this process may run on into two halves (the simulator gets the first, and the extra
    /// CPU of an odd count); fails with fewer than two.
    pub fn halves() -> anyhow::Result<Self> {
        let allowed = sched_getaffinity(None).context("reading this process's CPU affinity")?;
        let cpus: Vec<usize> = (0..CpuSet::MAX_CPU).filter(|&cpu| allowed.is_set(cpu)).collect();
        Self::of(&cpus)
    }

    /// Splits `cpus` into the simulator's first half and the clients' second half.
    fn of(cpus: &[usize]) -> anyhow::Result<Self> {
        if cpus.len() < 2 {
            bail!(
                "--cpu-split needs at least 2 CPUs; this process may run on {}",
                cpus.len()
            );
        }
        let (sim, client) = cpus.split_at(cpus.len().div_ceil(2));
        Ok(Self {
            sim: sim.to_vec(),
            client: client.to_vec(),
        })
    }

    /// Pins the calling thread to the simulator's CPUs; threads it starts afterwards inherit them, so calling
    /// this before the runtime is built keeps the whole simulator there.
    pub fn pin_to_sim(&self) -> anyhow::Result<()> {
        pin_current_thread(&self.sim)
    }

    /// Pins the calling thread to the clients' CPUs (a client thread, or around starting a client process).
    pub fn pin_to_client(&self) -> anyhow::Result<()> {
        pin_current_thread(&self.client)
    }

    /// Runs `start` (which starts a client process: a child inherits the affinity of the thread that starts it)
    /// with the calling thread on the clients' CPUs, then puts the thread back on the simulator's.
    pub fn start_client<T>(&self, start: impl FnOnce() -> T) -> anyhow::Result<T> {
        self.pin_to_client()?;
        let started = start();
        self.pin_to_sim()?;
        Ok(started)
    }

    /// How many CPUs the simulator has.
    pub fn sim_cpus(&self) -> usize {
        self.sim.len()
    }

    /// The split in words, for the report (`simulator on CPU 0, clients on CPU 1`).
    pub fn describe(&self) -> String {
        let list = |cpus: &[usize]| cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
        format!(
            "simulator on CPU {}, clients on CPU {}",
            list(&self.sim),
            list(&self.client)
        )
    }
}

fn pin_current_thread(cpus: &[usize]) -> anyhow::Result<()> {
    let mut set = CpuSet::new();
    for &cpu in cpus {
        set.set(cpu);
    }
    sched_setaffinity(None, &set).with_context(|| format!("pinning a thread to CPUs {cpus:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simulator_gets_the_first_half_and_the_odd_cpu() {
        let split = CpuSplit::of(&[0, 1]).unwrap();
        assert_eq!((split.sim.as_slice(), split.client.as_slice()), (&[0][..], &[1][..]));
        let split = CpuSplit::of(&[2, 3, 5]).unwrap();
        assert_eq!((split.sim.as_slice(), split.client.as_slice()), (&[2, 3][..], &[5][..]));
        assert!(CpuSplit::of(&[0]).is_err());
    }

    #[test]
    fn a_pinned_thread_runs_only_on_its_cpus() {
        let split = CpuSplit::halves().expect("the benchmark machines have at least 2 CPUs");
        std::thread::spawn(move || {
            split.pin_to_client().unwrap();
            let now = sched_getaffinity(None).unwrap();
            let on: Vec<usize> = (0..CpuSet::MAX_CPU).filter(|&c| now.is_set(c)).collect();
            assert_eq!(on, split.client);
        })
        .join()
        .unwrap();
    }
}
