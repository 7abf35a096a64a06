//! The kubelet's CPU Manager as far as the labels need it: the machine's
//! CPU topology as the kubelet builds it, and which CPUs the static policy
//! reserves when it is given a count (`kubeReserved`/`systemReserved` cpu)
//! instead of a list (`reservedSystemCPUs`).
//!
//! Reproduced from kubernetes/kubernetes, pkg/kubelet/cm/cpumanager:
//! - topology/topology.go `Discover`, over cAdvisor's `GetNodesInfo`
//!   (utils/sysinfo/sysinfo.go): a CPU is an online CPU of a NUMA node's
//!   directory; a core is the CPUs of one node sharing `core_id` and
//!   `physical_package_id`, identified by its lowest CPU id; a socket is a
//!   `physical_package_id`. `CPUsPerCore` and `CPUsPerSocket` are integer
//!   averages (`NumCPUs / NumCores`, `NumCPUs / NumSockets`), as there;
//! - cpu_assignment.go `takeByTopologyNUMAPacked` and
//!   `takeByTopologyNUMADistributed`, which policy_static.go
//!   `NewStaticPolicy` runs over all CPUs: the topology crate's walk over
//!   CPU ids ([`gpu_topology::kubelet::cpu::by_id`]), which says what it
//!   does not reproduce (the callers leave the reservation unknown there).

use crate::model::{CpuView, NumaNode};
use gpu_topology::kubelet::cpu::by_id::{self, CpuPlacement};
use std::collections::BTreeMap;

/// The kubelet's `CPUTopology` as discovered from sysfs, and how many
/// threads sysfs gives each core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuTopology {
    kubelet: by_id::CpuTopology,
    /// CPUs per core (cAdvisor's grouping), and the sibling count each CPU's
    /// `thread_siblings_list` gives, to tell a uniform SMT machine.
    core_sizes: Vec<usize>,
    sibling_counts: Vec<usize>,
}

impl CpuTopology {
    /// The topology of the online CPUs of `nodes`, `None` when sysfs shows no
    /// CPU placement (`topology/` directories) or no CPU at all.
    pub fn discover(nodes: &BTreeMap<u32, NumaNode>, view: &CpuView) -> Option<Self> {
        let places = view.places.as_ref()?;
        let mut cores: BTreeMap<(u32, u64, u64), Vec<u32>> = BTreeMap::new();
        let mut sibling_counts = Vec::new();
        for (&numa, node) in nodes {
            for cpu in node.cpus.intersection(&view.online) {
                let place = places.get(cpu)?;
                cores
                    .entry((numa, place.package, place.core_id))
                    .or_default()
                    .push(*cpu);
                sibling_counts.push(place.siblings);
            }
        }
        let mut cpus = BTreeMap::new();
        for (&(numa, socket, _), threads) in &cores {
            let core = *threads.iter().min()?;
            for &cpu in threads {
                cpus.insert(cpu, CpuPlacement { numa, socket, core });
            }
        }
        (!cpus.is_empty()).then(|| Self {
            kubelet: by_id::CpuTopology::new(cpus),
            core_sizes: cores.values().map(Vec::len).collect(),
            sibling_counts,
        })
    }

    /// The kubelet's `CPUTopology`: what the static policy's takes read.
    pub fn kubelet(&self) -> &by_id::CpuTopology {
        &self.kubelet
    }

    /// Hardware threads per core when every core has the same number, and
    /// each CPU's `thread_siblings_list` agrees; `None` on a machine mixing
    /// core kinds (hybrid CPUs, SMT off on some cores), where the kubelet's
    /// `CPUsPerCore` is an average that describes no core.
    pub fn uniform_threads_per_core(&self) -> Option<u32> {
        let first = *self.core_sizes.first()?;
        let uniform = self.core_sizes.iter().all(|&n| n == first)
            && self.sibling_counts.iter().all(|&n| n == first);
        uniform.then(|| u32::try_from(first).ok()).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CpuPlace, IdSet};
    use gpu_topology::kubelet::cpu::by_id::take_packed;
    use rstest::rstest;

    /// A machine of `sockets` sockets, each one NUMA node per `numa_per_socket`,
    /// each NUMA node `cores` cores of `threads` threads, numbered as Linux
    /// numbers x86 CPUs: first thread of every core, then the second ones.
    fn machine(
        sockets: u32,
        numa_per_socket: u32,
        cores: u32,
        threads: u32,
    ) -> (BTreeMap<u32, NumaNode>, CpuView) {
        let numas = sockets * numa_per_socket;
        let per_thread = numas * cores;
        let mut nodes = BTreeMap::new();
        let mut places = BTreeMap::new();
        for numa in 0..numas {
            let mut cpus = IdSet::new();
            for core in 0..cores {
                for thread in 0..threads {
                    let cpu = thread * per_thread + numa * cores + core;
                    cpus.insert(cpu);
                    places.insert(
                        cpu,
                        CpuPlace {
                            core_id: u64::from(numa % numa_per_socket * cores + core),
                            package: u64::from(numa / numa_per_socket),
                            siblings: threads as usize,
                        },
                    );
                }
            }
            nodes.insert(
                numa,
                NumaNode {
                    cpus,
                    ..NumaNode::default()
                },
            );
        }
        let online = places.keys().copied().collect();
        (
            nodes,
            CpuView {
                online,
                places: Some(places),
            },
        )
    }

    fn topology(sockets: u32, numa_per_socket: u32, cores: u32, threads: u32) -> CpuTopology {
        let (nodes, view) = machine(sockets, numa_per_socket, cores, threads);
        CpuTopology::discover(&nodes, &view).unwrap()
    }

    fn place(numa: u32, socket: u64, core: u32) -> Option<CpuPlacement> {
        Some(CpuPlacement { numa, socket, core })
    }

    /// Two sockets of 4 cores with 2 threads (socket 0: CPUs 0-3 and their
    /// siblings 8-11): a core is named by its lowest CPU id, and `core_id`
    /// counts within a package only.
    #[rstest]
    #[case::first_thread(0, place(0, 0, 0))]
    #[case::its_sibling(8, place(0, 0, 0))]
    #[case::second_socket_first_core(4, place(1, 1, 4))]
    #[case::second_socket_sibling(13, place(1, 1, 5))]
    #[case::no_such_cpu(16, None)]
    fn discover_places_cpus_as_the_kubelet(
        #[case] cpu: u32,
        #[case] expected: Option<CpuPlacement>,
    ) {
        let topology = topology(2, 1, 4, 2);
        assert_eq!(topology.kubelet().placement(cpu), expected);
        assert_eq!(topology.kubelet().num_cores(), 8);
        assert_eq!(topology.kubelet().cpus_per_core(), 2);
    }

    /// Offline CPUs and those of no NUMA node's `cpulist` are not the
    /// kubelet's; without `topology/` directories there is no topology.
    #[test]
    fn discover_keeps_the_online_cpus_of_the_nodes() {
        let (nodes, mut view) = machine(1, 1, 4, 2);
        view.online.remove(&3);
        let topology = CpuTopology::discover(&nodes, &view).unwrap();
        assert_eq!(
            topology.kubelet().cpus(),
            (0..8).filter(|&c| c != 3).collect::<IdSet>()
        );
        // Core 3 keeps its online thread 7, which names it now.
        assert_eq!(topology.kubelet().placement(7), place(0, 0, 7));
        view.places = None;
        assert_eq!(CpuTopology::discover(&nodes, &view), None);
    }

    /// The example of policy_static.go, through discovery: "Given a system
    /// with 8 CPUs available and HT enabled, if numReservedCPUs=2, then
    /// reserved={0,4}".
    #[test]
    fn two_reserved_cpus_are_the_first_core() {
        let topology = topology(1, 1, 4, 2);
        let kubelet = topology.kubelet();
        assert_eq!(
            take_packed(kubelet, &kubelet.cpus(), 2),
            Ok(IdSet::from([0, 4]))
        );
    }

    #[test]
    fn threads_per_core_needs_every_core_alike() {
        assert_eq!(topology(2, 1, 4, 2).uniform_threads_per_core(), Some(2));
        assert_eq!(topology(1, 1, 4, 1).uniform_threads_per_core(), Some(1));
        // A hybrid CPU: 2 cores with 2 threads (0-3), 4 single-thread cores (4-7).
        let mut places = BTreeMap::new();
        for cpu in 0..8u32 {
            let (core_id, siblings) = if cpu < 4 {
                (u64::from(cpu / 2), 2)
            } else {
                (u64::from(cpu), 1)
            };
            places.insert(
                cpu,
                CpuPlace {
                    core_id,
                    package: 0,
                    siblings,
                },
            );
        }
        let nodes = BTreeMap::from([(
            0,
            NumaNode {
                cpus: (0..8).collect(),
                ..NumaNode::default()
            },
        )]);
        let view = CpuView {
            online: (0..8).collect(),
            places: Some(places),
        };
        let hybrid = CpuTopology::discover(&nodes, &view).unwrap();
        assert_eq!(hybrid.uniform_threads_per_core(), None);
        // The kubelet's average: 8 CPUs on 6 cores.
        assert_eq!(hybrid.kubelet().cpus_per_core(), 1);
    }
}
