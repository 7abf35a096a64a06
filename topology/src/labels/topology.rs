//! [`NodeTopology`]: what a node's labels say, read from them and written
//! to them. The accessors of one key's field (`count`, `counts`, `flag`,
//! `word` and their setters) are generated from the key table (`keys.rs`);
//! here are the value encodings by kind, the labels to publish, the shape
//! digest and the reading of a node's labels.

use std::collections::BTreeMap;

use super::{
    device_key_name, device_resource_of, distances, format_count_list, format_numa_distances,
    parse_count, parse_count_list, parse_numa_distances, AmdComputePartition, AmdMemoryPartition,
    CpuManagerPolicy, DistanceChunks, GpuClique, Interconnect, KubeletVersion, LabelError,
    LabelKey, LabelPrefix, MemoryManagerPolicy, ShapeId, TopologyManagerPolicy,
    TopologyManagerScope, ValueKind,
};

/// What a node's labels say about its GPU topology and its kubelet. `None`
/// means unknown, and an unknown value is never published.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NodeTopology {
    pub gpus: Option<u32>,
    pub gpus_per_numa_max: Option<u32>,
    pub numa_nodes: Option<u32>,
    pub nvlink_group_max: Option<u32>,
    pub pcie_switch_group_max: Option<u32>,
    pub cpus_per_numa: Option<u32>,
    pub memory_per_numa_gib: Option<u32>,
    pub interconnect: Option<Interconnect>,
    pub topology_manager_policy: Option<TopologyManagerPolicy>,
    pub topology_manager_scope: Option<TopologyManagerScope>,
    pub cpu_manager_policy: Option<CpuManagerPolicy>,
    /// GPUs per NUMA node, every NUMA node of the machine in id order.
    pub numa_gpus: Option<Vec<u32>>,
    /// Online CPUs per NUMA node, reserved ones included.
    pub numa_cpus: Option<Vec<u32>>,
    /// CPUs the kubelet reserves per NUMA node.
    pub numa_reserved_cpus: Option<Vec<u32>>,
    /// Physical cores holding reserved CPUs per NUMA node (SMT, static CPU Manager).
    pub numa_reserved_cores: Option<Vec<u32>>,
    /// The socket of each NUMA node's CPUs (0 for a NUMA node without CPUs).
    pub numa_sockets: Option<Vec<u32>>,
    pub threads_per_core: Option<u32>,
    /// Regular memory (MiB) the Memory Manager can allocate per NUMA node.
    pub numa_memory_mib: Option<Vec<u32>>,
    pub numa_hugepages_2mi: Option<Vec<u32>>,
    pub numa_hugepages_1gi: Option<Vec<u32>>,
    pub memory_manager_policy: Option<MemoryManagerPolicy>,
    pub prefer_closest_numa_nodes: Option<bool>,
    pub max_allowable_numa_nodes: Option<u32>,
    pub full_pcpus_only: Option<bool>,
    pub distribute_cpus_across_numa: Option<bool>,
    pub align_by_socket: Option<bool>,
    /// Every NUMA node of the machine, as the kubelet counts them.
    pub machine_numa_nodes: Option<u32>,
    /// The kubelet's minor version.
    pub kubelet_version: Option<KubeletVersion>,
    /// The AMD GPUs' compute partition mode, when they all share one.
    pub amd_compute_partition: Option<AmdComputePartition>,
    /// The AMD GPUs' memory partition mode, when they all share one.
    pub amd_memory_partition: Option<AmdMemoryPartition>,
    /// The multi-node NVLink clique every fabric-attached GPU is in.
    pub gpu_clique: Option<GpuClique>,
    /// SLIT distances (`/sys/devices/system/node/node<N>/distance`), one row
    /// per NUMA node in id order, each row over every NUMA node.
    pub numa_distances: Option<Vec<Vec<u32>>>,
    pub shape: Option<ShapeId>,
    /// Per-NUMA counts of device-plugin resources other than the GPUs of
    /// `numa_gpus` (RDMA HCAs, SR-IOV VFs, MIG slices of the mixed
    /// strategy), by resource name, every NUMA node in id order. A resource
    /// not in the map is unknown, never absent: the labeler publishes `0`s
    /// for a configured resource the node lacks.
    pub devices: BTreeMap<String, Vec<u32>>,
}

impl NodeTopology {
    /// The value of `key` as its label string, or `None` when unknown (or,
    /// for a list, when it cannot be written as a valid label value). The
    /// distances are one string here, which [`Self::to_labels`] cuts into
    /// label values.
    pub fn value(&self, key: LabelKey) -> Option<String> {
        match key.kind() {
            ValueKind::Count => self.count(key).map(|n| n.to_string()),
            ValueKind::CountList => self.counts(key).and_then(format_count_list),
            ValueKind::Word => self.word(key).map(str::to_owned),
            ValueKind::Flag => self.flag(key).map(|flag| flag.to_string()),
            ValueKind::Digest => self.shape.map(|shape| shape.to_string()),
            ValueKind::Version => self.kubelet_version.map(|version| version.to_string()),
            ValueKind::Distances => self
                .numa_distances
                .as_deref()
                .and_then(format_numa_distances),
            ValueKind::Clique => self.gpu_clique.as_ref().map(GpuClique::to_string),
        }
    }

    /// The labels to publish, keyed by full label key. Unknown values are
    /// left out; the distances take as many labels as their chunks.
    pub fn to_labels(&self, prefix: &LabelPrefix) -> BTreeMap<String, String> {
        let devices = self
            .device_values()
            .filter_map(|(resource, value)| prefix.device_key(resource).map(|key| (key, value)));
        let mut labels: BTreeMap<String, String> = LabelKey::ALL
            .into_iter()
            .filter(|key| *key != LabelKey::NumaDistances)
            .filter_map(|key| self.value(key).map(|value| (prefix.key(key), value)))
            .chain(devices)
            .collect();
        if let Some(value) = self.value(LabelKey::NumaDistances) {
            labels.extend(distances::chunks(&value).map(|(index, chunk)| {
                (
                    prefix.named_key(&distances::chunk_name(index)),
                    chunk.to_owned(),
                )
            }));
        }
        labels
    }

    /// Each device resource with its per-NUMA counts as a label value; a
    /// resource whose counts cannot be one ([`format_count_list`]) is left out.
    pub fn device_values(&self) -> impl Iterator<Item = (&str, String)> + '_ {
        self.devices.iter().filter_map(|(resource, counts)| {
            format_count_list(counts).map(|value| (resource.as_str(), value))
        })
    }

    /// Every label as `name=value` pairs under no prefix: the fixed keys in
    /// [`LabelKey::ALL`] order, then the device resources
    /// ([`device_key_name`]) in resource-name order. The distances are one
    /// pair here, uncut (these pairs are no label values).
    pub fn named_values(&self) -> Vec<(String, String)> {
        let devices = self
            .device_values()
            .filter_map(|(resource, value)| device_key_name(resource).map(|name| (name, value)));
        LabelKey::ALL
            .into_iter()
            .filter_map(|key| self.value(key).map(|value| (key.name().to_owned(), value)))
            .chain(devices)
            .collect()
    }

    /// Sets the label named `name` (under no prefix: a [`LabelKey`] name or
    /// a device key name) as [`NodeTopology::set`] does; names this version
    /// does not know are ignored.
    pub fn set_named(&mut self, name: &str, full_key: &str, value: &str) -> Result<(), LabelError> {
        if let Some(key) = LabelKey::from_name(name) {
            return self.set(key, full_key, value);
        }
        if let Some(resource) = device_resource_of(name) {
            self.set_device(resource, value);
        }
        Ok(())
    }

    /// Sets the per-NUMA counts of device resource `resource` from its
    /// label value. Device counts are facts of the kubelet model, never read
    /// by the fit terms: a value that does not parse leaves the resource
    /// unknown (false), as for [`LabelRole::Fact`] labels.
    ///
    /// [`LabelRole::Fact`]: super::LabelRole::Fact
    pub fn set_device(&mut self, resource: String, value: &str) -> bool {
        match parse_count_list(value) {
            Some(counts) => {
                self.devices.insert(resource, counts);
                true
            }
            None => {
                self.devices.remove(&resource);
                false
            }
        }
    }

    /// The digest of every label the admission decision reads
    /// ([`LabelKey::shapes`]), as the labeler publishes it in `shape`. Each
    /// known value is hashed as `name=value;` in [`LabelKey::ALL`] order
    /// (FNV-1a, 64 bits), so equal facts give equal shapes on every
    /// platform and version that reads the same facts.
    ///
    /// `machine-numa-nodes` is left out where a published per-NUMA list has
    /// that many entries: the lists range over every NUMA node of the
    /// machine (every labeler version writes them so), so the count then
    /// follows from them, and the machines labeled before the count was
    /// published keep their shape.
    pub fn shape_id(&self) -> ShapeId {
        const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
        const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
        let mut hash = FNV_OFFSET;
        let mut feed = |bytes: &[u8]| {
            for byte in bytes {
                hash ^= u64::from(*byte);
                hash = hash.wrapping_mul(FNV_PRIME);
            }
        };
        let implied = self.machine_numa_nodes_follow_from_lists();
        for key in LabelKey::ALL.into_iter().filter(|key| key.shapes()) {
            if key == LabelKey::MachineNumaNodes && implied {
                continue;
            }
            if let Some(value) = self.value(key) {
                feed(key.name().as_bytes());
                feed(b"=");
                feed(value.as_bytes());
                feed(b";");
            }
        }
        // Device resources are facts of the model: after the fixed keys, in
        // resource-name order, so nodes without any keep their shape.
        for (resource, value) in self.device_values() {
            if let Some(name) = device_key_name(resource) {
                feed(name.as_bytes());
                feed(b"=");
                feed(value.as_bytes());
                feed(b";");
            }
        }
        ShapeId(hash)
    }

    /// True when a per-NUMA list that is published has as many entries as
    /// `machine-numa-nodes` says ([`Self::shape_id`]).
    fn machine_numa_nodes_follow_from_lists(&self) -> bool {
        let Some(nodes) = self.machine_numa_nodes else {
            return false;
        };
        LabelKey::ALL.into_iter().any(|key| {
            self.counts(key).is_some_and(|list| {
                usize::try_from(nodes).is_ok_and(|nodes| list.len() == nodes)
                    && format_count_list(list).is_some()
            })
        })
    }

    /// Takes the kubelet version its Node reports (`status.nodeInfo.kubeletVersion`,
    /// [`KubeletVersion::parse_node_info`]), as the policy and the summarizer
    /// read every Node: the running kubelet's own report wins over a
    /// `kubelet-version` label, which a labeler without the kubernetes sink
    /// only has from `--kubelet-version` (or not at all), and which lags a
    /// kubelet upgraded since its last publish. The `shape` label is kept as
    /// published: node affinity selects by it, so a reader never recomputes
    /// it. Nodes that share a shape label yet differ in version are then two
    /// groups with one shape; the policy selects such a shape only where the
    /// kubelet answers both alike.
    pub fn take_reported_kubelet_version(&mut self, version: KubeletVersion) {
        self.kubelet_version = Some(version);
    }

    /// This topology with its `shape` set from its facts ([`Self::shape_id`]).
    pub fn with_shape(mut self) -> Self {
        self.shape = Some(self.shape_id());
        self
    }

    /// Sets one field from its label string, validating the value. A value
    /// that does not parse is an error for a label the fit terms read
    /// ([`LabelKey::decides_fit`]); for the others the field stays unknown.
    pub fn set(&mut self, key: LabelKey, full_key: &str, value: &str) -> Result<(), LabelError> {
        match self.set_strictly(key, full_key, value) {
            Err(_) if !key.decides_fit() => Ok(()),
            result => result,
        }
    }

    /// [`NodeTopology::set`], failing on any value that does not parse.
    pub fn set_strictly(
        &mut self,
        key: LabelKey,
        full_key: &str,
        value: &str,
    ) -> Result<(), LabelError> {
        let invalid = |expected| LabelError::InvalidValue {
            key: full_key.to_owned(),
            value: value.to_owned(),
            expected,
        };
        match key.kind() {
            ValueKind::Count => {
                let count =
                    parse_count(value).ok_or_else(|| invalid("a non-negative decimal integer"))?;
                if let Some(field) = self.count_mut(key) {
                    *field = Some(count);
                }
            }
            ValueKind::CountList => {
                let counts = parse_count_list(value).ok_or_else(|| {
                    invalid(
                        "non-negative decimal integers joined by '.', one per NUMA node (a run as <count>_<times>)",
                    )
                })?;
                if let Some(field) = self.counts_mut(key) {
                    *field = Some(counts);
                }
            }
            ValueKind::Flag => {
                let flag = match value {
                    "true" => true,
                    "false" => false,
                    _ => return Err(invalid("true or false")),
                };
                if let Some(field) = self.flag_mut(key) {
                    *field = Some(flag);
                }
            }
            ValueKind::Digest => {
                self.shape = Some(
                    ShapeId::parse(value)
                        .ok_or_else(|| invalid("16 lowercase hexadecimal digits"))?,
                );
            }
            ValueKind::Version => {
                self.kubelet_version = Some(
                    KubeletVersion::parse_label(value)
                        .ok_or_else(|| invalid("<major>.<minor>, e.g. 1.36"))?,
                );
            }
            ValueKind::Distances => {
                self.numa_distances = Some(parse_numa_distances(value).ok_or_else(|| {
                    invalid("a symmetric NUMA distance matrix in base 36, whole")
                })?);
            }
            ValueKind::Clique => {
                self.gpu_clique = Some(GpuClique::parse_label(value).ok_or_else(|| {
                    invalid("<ClusterUUID>.<CliqueId>, a lowercase UUID and a decimal integer")
                })?);
            }
            ValueKind::Word => self.set_word(key, value).map_err(invalid)?,
        }
        Ok(())
    }

    /// Reads the topology from a node's labels. Labels outside `prefix`, and
    /// names under it that this version does not know (a newer labeler), are
    /// ignored; a malformed value of a label the fit reads is an error naming
    /// it, one of another label leaves that field unknown ([`Self::set`]).
    pub fn from_labels<'a, I>(prefix: &LabelPrefix, labels: I) -> Result<Self, LabelError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut topology = NodeTopology::default();
        let mut distance_chunks = DistanceChunks::default();
        for (full_key, value) in labels {
            if let Some(name) = prefix.name_of(full_key) {
                if !distance_chunks.add(name, value) {
                    topology.set_named(name, full_key, value)?;
                }
            }
        }
        topology.set_distance_chunks(&distance_chunks);
        Ok(topology)
    }

    /// Sets the distances from the chunks of a node's labels; any chunk
    /// missing, extra or garbled leaves them unknown, never a guess.
    pub fn set_distance_chunks(&mut self, chunks: &DistanceChunks) {
        if !chunks.is_empty() {
            self.numa_distances = chunks.matrix();
        }
    }

    /// True when no label of the contract is present.
    pub fn is_empty(&self) -> bool {
        *self == NodeTopology::default()
    }
}
