//! The label keys as one table (`label_keys!`): each key's name, how
//! readers treat it ([`LabelRole`]), the kind of its value ([`ValueKind`]),
//! the [`NodeTopology`] field it fills and the kubelet setting it publishes
//! are written once, in the key's row; [`LabelKey`]'s lookups and
//! [`NodeTopology`]'s per-key accessors are generated from the rows.

use super::{
    AmdComputePartition, AmdMemoryPartition, CpuManagerPolicy, Interconnect, MemoryManagerPolicy,
    NodeTopology, TopologyManagerPolicy, TopologyManagerScope,
};

/// How the readers treat a label ([`LabelKey::role`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelRole {
    /// Read by the count-based fit terms ([`crate::fit`]): a value that does
    /// not parse makes the node malformed.
    Fit,
    /// A fact the kubelet admission model reads: an unreadable value leaves
    /// it unknown, and the model then answers "unknown" where it matters.
    Fact,
    /// Describes the node for people; an unreadable value leaves it unknown.
    Informational,
    /// The node's shape digest itself.
    Identity,
}

/// The kind of value a label holds, which decides its encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A non-negative decimal integer (`8`), comparable with `Gt`/`Lt`.
    Count,
    /// Counts, one per NUMA node in id order, joined by `.` (`4.4`), runs
    /// of equal ones as `count_times` where the plain form is too long.
    CountList,
    /// One word of a fixed list (`single-numa-node`).
    Word,
    /// `true` or `false`.
    Flag,
    /// 16 lowercase hexadecimal digits.
    Digest,
    /// A Kubernetes minor version, `<major>.<minor>` (`1.36`).
    Version,
    /// A matrix of NUMA distances, base-36, in chunks ([`distances`](super::distances)).
    Distances,
    /// A multi-node NVLink clique, `<ClusterUUID>.<CliqueId>` ([`GpuClique`](super::GpuClique)).
    Clique,
}

/// One arm of a generated [`NodeTopology`] accessor: the key's field when
/// its row's kind is the accessor's (`count` reads `Count` rows, `counts`
/// `CountList` rows, `word` `Word` rows...), nothing for any other row.
#[rustfmt::skip]
macro_rules! field_arm {
    (count, $s:tt, Count($f:ident)) => { $s.$f };
    (count_mut, $s:tt, Count($f:ident)) => { Some(&mut $s.$f) };
    (counts, $s:tt, CountList($f:ident)) => { $s.$f.as_deref() };
    (counts_mut, $s:tt, CountList($f:ident)) => { Some(&mut $s.$f) };
    (flag, $s:tt, Flag($f:ident)) => { $s.$f };
    (flag_mut, $s:tt, Flag($f:ident)) => { Some(&mut $s.$f) };
    (word, $s:tt, Word($f:ident: $t:ident)) => { $s.$f.map($t::as_str) };
    (set_word, $s:tt, $v:tt, Word($f:ident: $t:ident)) => {{
        $s.$f = Some($v.parse().map_err(|()| $t::EXPECTED)?);
    }};
    (set_word, $($other:tt)*) => { {} };
    ($accessor:ident, $($other:tt)*) => { None };
}

/// Declares [`LabelKey`] from its table, one row per key in [`LabelKey::ALL`]
/// order (the order labels are listed and hashed into the shape in):
///
/// ```text
/// /// doc
/// Variant => "name", Role, Kind(field) [, kubelet "setting"];
/// ```
///
/// `Role` is a [`LabelRole`], `Kind` a [`ValueKind`]; `field` is the
/// [`NodeTopology`] field of a `Count`, `CountList` or `Flag` key, and
/// `field: Type` that of a `Word` key, `Type` a `label_enum!` enum. The
/// kinds of a single key (`Digest`, `Version`, `Distances`, `Clique`) name
/// no field: [`NodeTopology::value`] and [`NodeTopology::set_strictly`]
/// read and write theirs by kind. `setting` is the key's
/// [`LabelKey::kubelet_setting`].
macro_rules! label_keys {
    (@setting $setting:literal) => { Some($setting) };
    (@setting) => { None };
    ($(
        $(#[$doc:meta])*
        $key:ident => $name:literal, $role:ident, $kind:ident $(($($field:tt)+))?
            $(, kubelet $setting:literal)?;
    )+) => {
        /// Every label of the contract. The name is the part after `<prefix>/`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum LabelKey {
            $($(#[$doc])* $key,)+
        }

        impl LabelKey {
            pub const ALL: [LabelKey; [$($name),+].len()] = [$(LabelKey::$key),+];

            /// The key's name under the prefix.
            pub const fn name(self) -> &'static str {
                match self {
                    $(LabelKey::$key => $name,)+
                }
            }

            /// The kubelet setting the label publishes, named as the
            /// `KubeletConfiguration` names it (a policy option as
            /// `<options field>.<option>`); `None` for a label of the hardware or
            /// of the shape. The words of their values are the kubelet's,
            /// lowercased (`memoryManagerPolicy: Static` is `static`).
            pub const fn kubelet_setting(self) -> Option<&'static str> {
                match self {
                    $(LabelKey::$key => label_keys!(@setting $($setting)?),)+
                }
            }

            /// How readers treat the label's value.
            pub const fn role(self) -> LabelRole {
                match self {
                    $(LabelKey::$key => LabelRole::$role,)+
                }
            }

            /// The kind of value the label holds.
            pub const fn kind(self) -> ValueKind {
                match self {
                    $(LabelKey::$key => ValueKind::$kind,)+
                }
            }
        }

        impl NodeTopology {
            /// The integer value of a count label, or `None` when unknown or when
            /// `key` is not a count.
            pub fn count(&self, key: LabelKey) -> Option<u32> {
                match key {
                    $(LabelKey::$key => field_arm!(count, self, $kind $(($($field)+))?),)+
                }
            }

            pub(super) fn count_mut(&mut self, key: LabelKey) -> Option<&mut Option<u32>> {
                match key {
                    $(LabelKey::$key => field_arm!(count_mut, self, $kind $(($($field)+))?),)+
                }
            }

            /// The per-NUMA counts of a list label, or `None` when unknown or when
            /// `key` is not a list.
            pub fn counts(&self, key: LabelKey) -> Option<&[u32]> {
                match key {
                    $(LabelKey::$key => field_arm!(counts, self, $kind $(($($field)+))?),)+
                }
            }

            pub(super) fn counts_mut(&mut self, key: LabelKey) -> Option<&mut Option<Vec<u32>>> {
                match key {
                    $(LabelKey::$key => field_arm!(counts_mut, self, $kind $(($($field)+))?),)+
                }
            }

            /// The value of a `true`/`false` label, or `None` when unknown or when
            /// `key` is not a flag.
            pub fn flag(&self, key: LabelKey) -> Option<bool> {
                match key {
                    $(LabelKey::$key => field_arm!(flag, self, $kind $(($($field)+))?),)+
                }
            }

            pub(super) fn flag_mut(&mut self, key: LabelKey) -> Option<&mut Option<bool>> {
                match key {
                    $(LabelKey::$key => field_arm!(flag_mut, self, $kind $(($($field)+))?),)+
                }
            }

            /// The value of an enumerated label, or `None` when unknown or when `key`
            /// is not a word.
            pub fn word(&self, key: LabelKey) -> Option<&'static str> {
                match key {
                    $(LabelKey::$key => field_arm!(word, self, $kind $(($($field)+))?),)+
                }
            }

            /// Sets an enumerated label's field from `value`; the accepted
            /// values (the enum's `EXPECTED`) when it is none of them. A key
            /// that is not a word sets nothing.
            pub(super) fn set_word(
                &mut self,
                key: LabelKey,
                value: &str,
            ) -> Result<(), &'static str> {
                match key {
                    $(LabelKey::$key => field_arm!(set_word, self, value, $kind $(($($field)+))?),)+
                }
                Ok(())
            }
        }
    };
}

label_keys! {
    /// GPUs on the node.
    Gpus => "gpus", Fit, Count(gpus);
    /// GPUs on the NUMA node that has the most.
    GpusPerNumaMax => "gpus-per-numa-max", Fit, Count(gpus_per_numa_max);
    /// NUMA nodes that hold at least one GPU.
    NumaNodes => "numa-nodes", Informational, Count(numa_nodes);
    /// Largest group of GPUs all pairwise linked by NVLink/NVSwitch/XGMI.
    NvlinkGroupMax => "nvlink-group-max", Fit, Count(nvlink_group_max);
    /// Largest group of GPUs behind one PCIe switch (PIX/PXB).
    PcieSwitchGroupMax => "pcie-switch-group-max", Informational, Count(pcie_switch_group_max);
    /// Smallest CPU count of a NUMA node that holds GPUs.
    CpusPerNuma => "cpus-per-numa", Informational, Count(cpus_per_numa);
    /// Smallest memory (GiB, rounded down) of a NUMA node that holds GPUs.
    MemoryPerNumaGib => "memory-per-numa-gib", Informational, Count(memory_per_numa_gib);
    /// Fastest GPU-to-GPU interconnect: `nvswitch`, `nvlink`, `xgmi` or `pcie`.
    Interconnect => "interconnect", Informational, Word(interconnect: Interconnect);
    /// The kubelet's `topologyManagerPolicy`.
    TopologyManagerPolicy => "topology-manager-policy", Fit,
        Word(topology_manager_policy: TopologyManagerPolicy), kubelet "topologyManagerPolicy";
    /// The kubelet's `topologyManagerScope`.
    TopologyManagerScope => "topology-manager-scope", Fact,
        Word(topology_manager_scope: TopologyManagerScope), kubelet "topologyManagerScope";
    /// The kubelet's `cpuManagerPolicy`.
    CpuManagerPolicy => "cpu-manager-policy", Fact,
        Word(cpu_manager_policy: CpuManagerPolicy), kubelet "cpuManagerPolicy";
    /// GPUs on each NUMA node of the machine, in NUMA id order (`4.4`).
    NumaGpus => "numa-gpus", Fact, CountList(numa_gpus);
    /// Online CPUs on each NUMA node, reserved ones included (`56.56`).
    NumaCpus => "numa-cpus", Fact, CountList(numa_cpus);
    /// CPUs the kubelet reserves (CPU Manager `static`) on each NUMA node (`2.0`).
    NumaReservedCpus => "numa-reserved-cpus", Fact, CountList(numa_reserved_cpus);
    /// Physical cores holding at least one reserved CPU on each NUMA node
    /// (`1.0`); only with SMT (`threads-per-core` above 1) and the static CPU
    /// Manager, where `full-pcpus-only` keeps the free siblings of such cores.
    NumaReservedCores => "numa-reserved-cores", Fact, CountList(numa_reserved_cores);
    /// The socket (`physical_package_id`) of each NUMA node's CPUs (`0.1`;
    /// `0` for a NUMA node without CPUs, whose socket nothing reads).
    NumaSockets => "numa-sockets", Fact, CountList(numa_sockets);
    /// Hardware threads per physical core (SMT): `2` with Hyper-Threading.
    ThreadsPerCore => "threads-per-core", Fact, Count(threads_per_core);
    /// Regular memory (MiB) the Memory Manager can allocate on each NUMA
    /// node: MemTotal less hugepages and reserved memory, rounded down to
    /// whole GiB ([`published_numa_memory_mib`]), so that machines of one
    /// kind whose firmware keeps a few MiB more or less share a shape.
    /// Readers take it as at least the value and less than
    /// [`NUMA_MEMORY_GRANULARITY_MIB`] more.
    ///
    /// [`published_numa_memory_mib`]: super::published_numa_memory_mib
    /// [`NUMA_MEMORY_GRANULARITY_MIB`]: super::NUMA_MEMORY_GRANULARITY_MIB
    NumaMemoryMib => "numa-memory-mib", Fact, CountList(numa_memory_mib);
    /// 2 MiB hugepages the Memory Manager can allocate on each NUMA node.
    NumaHugepages2Mi => "numa-hugepages-2mi", Fact, CountList(numa_hugepages_2mi);
    /// 1 GiB hugepages the Memory Manager can allocate on each NUMA node.
    NumaHugepages1Gi => "numa-hugepages-1gi", Fact, CountList(numa_hugepages_1gi);
    /// The kubelet's `memoryManagerPolicy` (`none`, `static`).
    MemoryManagerPolicy => "memory-manager-policy", Fact,
        Word(memory_manager_policy: MemoryManagerPolicy), kubelet "memoryManagerPolicy";
    /// The Topology Manager option `prefer-closest-numa-nodes` (`true`, `false`).
    TopologyManagerPreferClosestNumaNodes => "topology-manager-prefer-closest-numa-nodes", Fact,
        Flag(prefer_closest_numa_nodes),
        kubelet "topologyManagerPolicyOptions.prefer-closest-numa-nodes";
    /// The Topology Manager option `max-allowable-numa-nodes`.
    TopologyManagerMaxAllowableNumaNodes => "topology-manager-max-allowable-numa-nodes", Fact,
        Count(max_allowable_numa_nodes),
        kubelet "topologyManagerPolicyOptions.max-allowable-numa-nodes";
    /// The CPU Manager option `full-pcpus-only` (`true`, `false`).
    CpuManagerFullPcpusOnly => "cpu-manager-full-pcpus-only", Fact,
        Flag(full_pcpus_only), kubelet "cpuManagerPolicyOptions.full-pcpus-only";
    /// The CPU Manager option `distribute-cpus-across-numa` (`true`, `false`).
    CpuManagerDistributeCpusAcrossNuma => "cpu-manager-distribute-cpus-across-numa", Fact,
        Flag(distribute_cpus_across_numa),
        kubelet "cpuManagerPolicyOptions.distribute-cpus-across-numa";
    /// The CPU Manager option `align-by-socket` (`true`, `false`).
    CpuManagerAlignBySocket => "cpu-manager-align-by-socket", Fact,
        Flag(align_by_socket), kubelet "cpuManagerPolicyOptions.align-by-socket";
    /// Every NUMA node of the machine, as the kubelet counts them (cadvisor's
    /// `machineInfo.Topology`: one per `/sys/devices/system/node/node<N>`,
    /// CPU-less and memory-only ones included). `numa-nodes` counts only
    /// those with GPUs. Decides whether the Topology Manager starts
    /// (`max-allowable-numa-nodes`) even when the per-NUMA lists are unknown.
    MachineNumaNodes => "machine-numa-nodes", Fact, Count(machine_numa_nodes);
    /// The kubelet's version as `<major>.<minor>` (`1.36`), from the Node's
    /// `status.nodeInfo.kubeletVersion`: the kubelet's rules differ by
    /// version, and node affinity can select labels only.
    KubeletVersion => "kubelet-version", Fact, Version;
    /// The SLIT distance matrix ([`NodeTopology::numa_distances`]), in
    /// chunks of 63 characters: `numa-distances`, `numa-distances.1`, ...
    /// ([`distances`]).
    ///
    /// [`distances`]: super::distances
    NumaDistances => "numa-distances", Fact, Distances;
    /// The compute partition mode of the node's AMD GPUs (`spx`, `dpx`,
    /// `qpx`, `cpx`): how many logical GPUs the AMD device plugin makes of
    /// each. For people; left out when the GPUs' modes differ.
    AmdComputePartition => "amd-compute-partition", Informational,
        Word(amd_compute_partition: AmdComputePartition);
    /// The memory partition mode of the node's AMD GPUs (`nps1`, `nps2`,
    /// `nps4`, `nps8`). For people; left out when the GPUs' modes differ.
    AmdMemoryPartition => "amd-memory-partition", Informational,
        Word(amd_memory_partition: AmdMemoryPartition);
    /// The multi-node NVLink clique of the node's GPUs as GPU Feature
    /// Discovery writes `nvidia.com/gpu.clique`: `<ClusterUUID>.<CliqueId>`.
    /// For people and for schedulers that co-place pods across nodes.
    GpuClique => "gpu-clique", Informational, Clique;
    /// A digest of every fact the admission decision reads ([`ShapeId`]):
    /// nodes with equal facts share it, so node affinity can select exactly
    /// the machine shapes whose kubelet admits a pod (`In`, `NotIn`).
    ///
    /// [`ShapeId`]: super::ShapeId
    Shape => "shape", Identity, Digest;
}

impl LabelKey {
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|key| key.name() == name)
    }

    /// The label publishing the kubelet setting `name` ([`Self::kubelet_setting`]).
    pub fn from_kubelet_setting(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|key| key.kubelet_setting() == Some(name))
    }

    /// Whether the count-based fit terms ([`crate::fit`]) read this label. A
    /// value of any other label that this version cannot read (a newer
    /// labeler's) leaves that field unknown instead of leaving the whole node
    /// out.
    pub const fn decides_fit(self) -> bool {
        matches!(self.role(), LabelRole::Fit)
    }

    /// Whether the label is part of the node's [`ShapeId`]: every label the
    /// admission decision reads (the fit terms and the kubelet model's facts).
    ///
    /// [`ShapeId`]: super::ShapeId
    pub const fn shapes(self) -> bool {
        matches!(self.role(), LabelRole::Fit | LabelRole::Fact)
    }
}
