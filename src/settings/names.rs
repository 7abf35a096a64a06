//! Kubernetes name rules the settings are checked against.

use gpu_topology::LabelPrefix;

/// Kubernetes limits a DNS label (a namespace name) and a qualified name's
/// name part to 63 characters.
const MAX_NAME_LEN: usize = 63;
/// Kubernetes limits a DNS subdomain (most object names) to 253 characters.
const MAX_SUBDOMAIN_LEN: usize = 253;
/// Extended resources may not live in the kubernetes.io domain, which is
/// reserved for native resources.
const RESERVED_DOMAIN: &str = "kubernetes.io";

/// An RFC 1123 DNS label, as namespace names must be: lowercase letters,
/// digits and '-', starting and ending with a letter or digit.
pub fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// An RFC 1123 DNS subdomain, as most object names (ConfigMaps) must be: DNS
/// labels joined by '.', at most 253 characters.
pub fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= MAX_SUBDOMAIN_LEN && name.split('.').all(is_dns_label)
}

/// An extended resource name: `domain/name` with a DNS-subdomain domain outside
/// kubernetes.io and a qualified name part (letters, digits, '-', '_', '.',
/// starting and ending with a letter or digit), e.g. `nvidia.com/gpu`.
pub fn is_extended_resource_name(resource: &str) -> bool {
    let Some((domain, name)) = resource.split_once('/') else {
        return false;
    };
    let reserved = domain == RESERVED_DOMAIN || domain.ends_with(".kubernetes.io");
    let name_ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric());
    // A label prefix and a resource domain follow the same DNS-subdomain rule.
    !reserved && name_ok && LabelPrefix::new(domain).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::nvidia("nvidia.com/gpu", true)]
    #[case::intel("gpu.intel.com/i915", true)]
    #[case::mig_profile("nvidia.com/mig-1g.10gb", true)]
    #[case::no_domain("gpu", false)]
    #[case::native("cpu", false)]
    #[case::reserved_domain("kubernetes.io/gpu", false)]
    #[case::reserved_subdomain("node.kubernetes.io/gpu", false)]
    #[case::empty_name("nvidia.com/", false)]
    #[case::two_slashes("nvidia.com/gpu/x", false)]
    #[case::leading_dash("nvidia.com/-gpu", false)]
    #[case::uppercase_domain("NVIDIA.com/gpu", false)]
    #[case::long_name(
        "nvidia.com/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        false
    )]
    fn extended_resource_names(#[case] name: &str, #[case] expected: bool) {
        assert_eq!(is_extended_resource_name(name), expected);
    }

    #[rstest]
    #[case::simple("kube-system", true)]
    #[case::digits("team-42", true)]
    #[case::uppercase("Kube", false)]
    #[case::underscore("a_b", false)]
    #[case::dot("a.b", false)]
    #[case::trailing_dash("a-", false)]
    #[case::empty("", false)]
    fn namespace_names(#[case] name: &str, #[case] expected: bool) {
        assert_eq!(is_dns_label(name), expected);
    }

    #[rstest]
    #[case::label("gpu-topology-fleet", true)]
    #[case::dotted("fleet.gpu-topology.io", true)]
    #[case::empty_part("a..b", false)]
    #[case::leading_dot(".a", false)]
    #[case::uppercase("Fleet", false)]
    #[case::slash("a/b", false)]
    #[case::empty("", false)]
    #[case::longest(&format!("{}a", "a.".repeat(126)), true)]
    #[case::too_long(&format!("{}a", "a.".repeat(127)), false)]
    fn object_names(#[case] name: &str, #[case] expected: bool) {
        assert_eq!(is_dns_subdomain(name), expected);
    }
}
