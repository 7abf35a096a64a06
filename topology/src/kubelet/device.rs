//! The Device Manager for one device-plugin resource: hints and which NUMA
//! nodes the devices are taken from. The GPUs are one such resource; RDMA
//! HCAs, SR-IOV VFs and MIG slices (a slice sits on its parent GPU's NUMA
//! node) are others, each with a [`DeviceState`] of its own.
//!
//! Reproduces `pkg/kubelet/cm/devicemanager/topology_hints.go`
//! (`GetTopologyHints`, `GetPodTopologyHints`, `generateDeviceTopologyHints`,
//! `getPodDeviceRequest`) and `manager.go` (`Allocate`, `devicesToAllocate`,
//! `filterByAffinity`, the reuse of init containers' devices), per
//! resource: `GetTopologyHints` answers a map from each device resource the
//! container lists to its own hint list, and `allocateContainerResources`
//! allocates each resource on its own under the one hint the Topology
//! Manager chose. Devices are counted per NUMA node as the device plugin
//! reports them, each with one NUMA node.
//!
//! Which GPUs inside a NUMA node are taken never matters. Which NUMA nodes of
//! a multi-node mask they come from is the device plugin's
//! `GetPreferredAllocation` (or Go's map order): when that is not forced by
//! the counts, the split is marked unknown, and a later container that needs
//! GPUs gets [`Indeterminate::GpuPick`](super::outcome::Indeterminate::GpuPick).

use super::counts::{counted_hints, CountedResource};
use super::facts::ContainerKind;
use super::hint::ResourceHints;
use super::mask::NumaMask;
use super::outcome::{AllocationFailure, HintReport, Unknown};

/// The devices of one device-plugin resource during admission.
pub type DeviceState = GpuState;

/// The devices of one resource (the GPUs, or another device-plugin
/// resource: [`DeviceState`]) during admission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuState {
    /// GPUs per NUMA node (`allDevices`).
    pub total: Vec<u32>,
    /// Not allocated (`healthyDevices` minus `allocatedDevices`).
    pub free: Vec<u32>,
    /// Allocated to regular init containers of this pod (`devicesToReuse`).
    pub reusable: Vec<u32>,
    /// `free` and `reusable` are right per NUMA node (their sums always
    /// are), or why not.
    pub split: Result<(), Unknown>,
}

impl GpuState {
    /// An empty machine with `total` GPUs per NUMA node.
    pub fn new(total: Vec<u32>) -> Self {
        GpuState {
            free: total.clone(),
            reusable: vec![0; total.len()],
            total,
            split: Ok(()),
        }
    }

    /// Marks `held` devices of NUMA node `numa` allocated to other pods;
    /// `false` when the node has fewer.
    pub fn occupy(&mut self, numa: usize, held: u32) -> bool {
        match (self.total.get(numa), self.free.get_mut(numa)) {
            (Some(&total), Some(free)) if held <= total => {
                *free = total - held;
                true
            }
            _ => held == 0,
        }
    }

    pub fn total_gpus(&self) -> u64 {
        self.total.iter().map(|&g| u64::from(g)).sum()
    }

    fn free_total(&self) -> u64 {
        self.free.iter().map(|&g| u64::from(g)).sum()
    }

    fn reusable_total(&self) -> u64 {
        self.reusable.iter().map(|&g| u64::from(g)).sum()
    }

    /// Nodes of `within` that hold at least one GPU of `counts`.
    fn holding(counts: &[u32], within: NumaMask) -> NumaMask {
        within.nodes().fold(NumaMask::EMPTY, |mask, node| {
            if counts.get(node).copied().unwrap_or(0) > 0 {
                mask.with(node)
            } else {
                mask
            }
        })
    }
}

/// Which NUMA nodes `generateDeviceTopologyHints` walks the masks of.
///
/// Up to 1.35 it calls `bitmask.IterateBitMasks(m.numaNodes, ...)`: every
/// NUMA node the kubelet knows. kubernetes/kubernetes#138244 (merged for
/// 1.36; its source is not in the reference corpus, this follows the PR's
/// description) adds `deviceNUMANodes(resource)`, the NUMA nodes of every
/// registered device of the resource (`m.allDevices[resource]`, allocated
/// or not), and walks only their masks; `minAffinitySize` and `Preferred`
/// are computed as before. The hints then never name a NUMA node without
/// the resource's devices. (kubernetes/kubernetes#138172, which would also
/// restrict the masks to NUMA nodes with CPUs, `restrict-to-cpu-numa-nodes`,
/// is not merged and not modelled.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceHintRange {
    /// Every NUMA node (kubelets before 1.36).
    EveryNumaNode,
    /// The NUMA nodes holding the resource's devices (1.36 and later).
    DeviceNumaNodes,
}

impl DeviceHintRange {
    /// The rule of a kubelet version.
    pub fn of(version: super::facts::KubeletVersion) -> Self {
        if version.at_least(1, 36) {
            DeviceHintRange::DeviceNumaNodes
        } else {
            DeviceHintRange::EveryNumaNode
        }
    }

    /// The NUMA nodes walked on a machine with `total` devices per NUMA node.
    pub fn universe(self, total: &[u32]) -> NumaMask {
        let all = NumaMask::all(total.len());
        match self {
            DeviceHintRange::EveryNumaNode => all,
            DeviceHintRange::DeviceNumaNodes => GpuState::holding(total, all),
        }
    }
}

/// [`device_hints`] under the rule of kubelets before 1.36 (every NUMA node).
pub fn gpu_hints(
    state: &GpuState,
    request: u32,
    with_reusable: bool,
) -> Result<Option<(ResourceHints, HintReport)>, Unknown> {
    device_hints(
        state,
        request,
        with_reusable,
        DeviceHintRange::EveryNumaNode,
    )
}

/// `generateDeviceTopologyHints` for `request` GPUs over the masks of the
/// NUMA nodes `range` names; `with_reusable` for a
/// container (init containers' GPUs count and must be inside the mask), not
/// for a pod. `None` when the node has no GPUs: the resource is then not a
/// device plugin resource and the Device Manager gives no hint for it.
/// An error when past allocations left the split per NUMA node unknown.
pub fn device_hints(
    state: &GpuState,
    request: u32,
    with_reusable: bool,
    range: DeviceHintRange,
) -> Result<Option<(ResourceHints, HintReport)>, Unknown> {
    if state.total_gpus() == 0 {
        return Ok(None);
    }
    state.split?;
    let nodes = state.total.len();
    let reusable = if with_reusable {
        state.reusable_total()
    } else {
        0
    };
    let request = u64::from(request);
    if state.free_total() + reusable < request {
        return Ok(Some((
            ResourceHints::List(super::hint::HintSet::empty(nodes)),
            HintReport::NoFit,
        )));
    }
    let widen = |v: &[u32]| v.iter().map(|&g| u64::from(g)).collect::<Vec<u64>>();
    let (capacity, free) = (widen(&state.total), widen(&state.free));
    let reusable_nodes = if with_reusable {
        GpuState::holding(&state.reusable, NumaMask::all(nodes))
    } else {
        NumaMask::EMPTY
    };
    let resource = CountedResource {
        nodes,
        universe: range.universe(&state.total),
        capacity: &capacity,
        free: &free,
        reusable_nodes,
        reusable,
    };
    let (set, report) = counted_hints(&resource, request, |_, _| false);
    Ok(Some((ResourceHints::List(set), report)))
}

/// Takes `count` GPUs from `counts` on the nodes of `from`, into `taken`;
/// false when several nodes could give them (the plugin's choice).
fn take_from(counts: &mut [u32], taken: &mut [u32], from: NumaMask, count: u32) -> bool {
    if count == 0 {
        return true;
    }
    let holders = GpuState::holding(counts, from);
    let held: u64 = holders
        .nodes()
        .map(|n| u64::from(counts.get(n).copied().unwrap_or(0)))
        .sum();
    let forced = holders.count() <= 1 || u64::from(count) == held;
    // Forced or not, take lowest nodes first so the sums stay right.
    let mut left = count;
    for node in holders.nodes() {
        if let (Some(c), Some(t)) = (counts.get_mut(node), taken.get_mut(node)) {
            let n = left.min(*c);
            *c -= n;
            *t += n;
            left -= n;
        }
    }
    forced
}

/// `devicesToAllocate` for a container needing `needed` GPUs under the
/// Topology Manager's `hint` (`None`: no NUMA affinity), then the reuse
/// bookkeeping of `Allocate`: a regular init container's GPUs become
/// reusable, a sidecar's or app container's reused GPUs stop being so.
/// `Ok(false)`: the NUMA nodes they came from were the plugin's choice.
pub fn allocate_gpus(
    state: &mut GpuState,
    kind: ContainerKind,
    needed: u32,
    hint: Option<NumaMask>,
) -> Result<bool, AllocationFailure> {
    let nodes = state.total.len();
    let all = NumaMask::all(nodes);
    let mut from_reusable = vec![0u32; nodes];
    let mut from_free = vec![0u32; nodes];
    // Reusable devices first, whatever the hint.
    let reuse = needed.min(u32::try_from(state.reusable_total()).unwrap_or(u32::MAX));
    let mut forced = take_from(&mut state.reusable, &mut from_reusable, all, reuse);
    let remaining = needed - reuse;
    if remaining > 0 {
        let available = state.free_total();
        if available < u64::from(remaining) {
            // Undo: a failed allocation leaves the state as it was.
            for (r, t) in state.reusable.iter_mut().zip(&from_reusable) {
                *r += t;
            }
            return Err(AllocationFailure::NotEnough {
                requested: u64::from(remaining),
                available,
            });
        }
        let aligned_mask = hint.unwrap_or(NumaMask::EMPTY);
        let aligned: u64 = aligned_mask
            .nodes()
            .map(|n| u64::from(state.free.get(n).copied().unwrap_or(0)))
            .sum();
        if u64::from(remaining) < aligned {
            forced &= take_from(&mut state.free, &mut from_free, aligned_mask, remaining);
        } else {
            let aligned = u32::try_from(aligned).unwrap_or(u32::MAX);
            forced &= take_from(&mut state.free, &mut from_free, aligned_mask, aligned);
            let rest = remaining - aligned;
            forced &= take_from(
                &mut state.free,
                &mut from_free,
                aligned_mask.complement_in(all),
                rest,
            );
        }
    }
    match kind {
        ContainerKind::Init => {
            for (r, t) in state.reusable.iter_mut().zip(&from_free) {
                *r += t;
            }
            // Reused GPUs stay reusable.
            for (r, t) in state.reusable.iter_mut().zip(&from_reusable) {
                *r += t;
            }
        }
        ContainerKind::Sidecar | ContainerKind::App => {}
    }
    Ok(forced)
}

/// [`pod_gpu_request`] for the pod's device resource `index`
/// ([`super::facts::PodDemand::devices`]): `getPodDeviceRequest` runs per
/// resource.
pub fn pod_device_request(
    containers: &[super::facts::ContainerDemand],
    index: usize,
) -> Option<u32> {
    containers
        .iter()
        .any(|c| c.device(index).is_some())
        .then(|| {
            let requests = containers
                .iter()
                .map(|c| (c.kind, u64::from(c.device(index).unwrap_or(0))));
            u32::try_from(super::pod_effective(requests)).unwrap_or(u32::MAX)
        })
}

/// `getPodDeviceRequest` (`resource.PodLimits`): the larger of the app
/// containers plus all sidecars, and of each init container plus the
/// sidecars started before it. `None` when no container lists GPUs.
pub fn pod_gpu_request(containers: &[super::facts::ContainerDemand]) -> Option<u32> {
    containers.iter().any(|c| c.gpus.is_some()).then(|| {
        let requests = containers
            .iter()
            .map(|c| (c.kind, u64::from(c.gpus.unwrap_or(0))));
        u32::try_from(super::pod_effective(requests)).unwrap_or(u32::MAX)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    // TestTopologyAlignedAllocation (devicemanager/topology_hints_test.go).
    #[case::request_for_4_unsatisfiable_prefer_socket_0(vec![3, 3], 4, 0b01, vec![0, 2])]
    #[case::request_for_4_unsatisfiable_prefer_socket_1(vec![3, 3], 4, 0b10, vec![2, 0])]
    #[case::request_for_4_multisocket(vec![2, 2, 2, 2], 4, 0b1010, vec![2, 0, 2, 0])]
    fn aligned_devices_are_taken_first(
        #[case] total: Vec<u32>,
        #[case] needed: u32,
        #[case] hint: u32,
        #[case] free_after: Vec<u32>,
    ) {
        let mut state = GpuState::new(total);
        let forced = allocate_gpus(
            &mut state,
            ContainerKind::App,
            needed,
            Some(NumaMask::from_bits(hint.into())),
        )
        .unwrap();
        assert_eq!(state.free, free_after);
        assert!(forced);
    }

    #[test]
    fn a_split_inside_a_wide_mask_is_the_plugins_choice() {
        let mut state = GpuState::new(vec![4, 4]);
        let forced = allocate_gpus(
            &mut state,
            ContainerKind::App,
            6,
            Some(NumaMask::from_bits(0b11)),
        )
        .unwrap();
        assert!(!forced);
        assert_eq!(state.free.iter().sum::<u32>(), 2);
    }

    #[test]
    fn init_container_gpus_are_reused_first() {
        let mut state = GpuState::new(vec![4, 4]);
        allocate_gpus(
            &mut state,
            ContainerKind::Init,
            2,
            Some(NumaMask::from_bits(0b01)),
        )
        .unwrap();
        assert_eq!(
            (state.free.clone(), state.reusable.clone()),
            (vec![2, 4], vec![2, 0])
        );
        allocate_gpus(
            &mut state,
            ContainerKind::App,
            3,
            Some(NumaMask::from_bits(0b01)),
        )
        .unwrap();
        assert_eq!(
            (state.free.clone(), state.reusable.clone()),
            (vec![1, 4], vec![0, 0])
        );
    }

    #[test]
    fn more_than_free_fails_and_changes_nothing() {
        let mut state = GpuState::new(vec![1, 1]);
        let before = state.clone();
        let err = allocate_gpus(&mut state, ContainerKind::App, 3, None).unwrap_err();
        assert_eq!(
            err,
            AllocationFailure::NotEnough {
                requested: 3,
                available: 2
            }
        );
        assert_eq!(state, before);
    }
}
