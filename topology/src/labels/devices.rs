//! The labels of device resources other than the GPUs (RDMA HCAs, SR-IOV
//! VFs, MIG slices): `numa-devices.<domain>_<name>`, the resource name
//! written into a label name and read back.

use super::{is_label_value, LabelPrefix, MAX_LABEL_VALUE_LEN};

/// What begins the name of a device resource's per-NUMA label:
/// `numa-devices.<domain>_<name>` for resource `<domain>/<name>`, e.g.
/// `gpu-topology.io/numa-devices.rdma_ib=4.4` for `rdma/ib` and
/// `gpu-topology.io/numa-devices.nvidia.com_mig-1g.10gb=7.7` for a MIG
/// profile. The value is a count list, as `numa-gpus`.
pub const DEVICE_KEY_PREFIX: &str = "numa-devices.";

/// The label name (under the prefix) of device resource `resource`'s
/// per-NUMA counts. A resource's domain is a DNS subdomain, which has no
/// `_`, so its `/` is written `_` and the first `_` reads back as the `/`.
/// `None` when `resource` is no extended resource name (`domain/name`) or
/// the name would pass a label name's 63 characters (such a resource
/// cannot be published: it stays unknown).
pub fn device_key_name(resource: &str) -> Option<String> {
    let (domain, name) = resource.split_once('/')?;
    if !is_resource_domain(domain) || !is_resource_name_part(name) {
        return None;
    }
    let key = [DEVICE_KEY_PREFIX, domain, "_", name].concat();
    (key.len() <= MAX_LABEL_VALUE_LEN).then_some(key)
}

/// The device resource a label name written by [`device_key_name`] is about.
pub fn device_resource_of(name: &str) -> Option<String> {
    let encoded = name.strip_prefix(DEVICE_KEY_PREFIX)?;
    let (domain, resource_name) = encoded.split_once('_')?;
    if name.len() > MAX_LABEL_VALUE_LEN
        || !is_resource_domain(domain)
        || !is_resource_name_part(resource_name)
    {
        return None;
    }
    Some([domain, "/", resource_name].concat())
}

/// A resource name's domain: a DNS subdomain, as a label prefix.
fn is_resource_domain(domain: &str) -> bool {
    LabelPrefix::new(domain).is_ok()
}

/// A resource name's part after `/`: a qualified name (letters, digits,
/// `-`, `_`, `.`, beginning and ending with a letter or digit).
fn is_resource_name_part(name: &str) -> bool {
    !name.is_empty() && is_label_value(name)
}
