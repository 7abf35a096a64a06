//! Kubernetes' RFC 1123 name rules: DNS labels (namespace names) and DNS
//! subdomains (most object names, label prefixes, resource domains). The
//! policy's settings, the labeler's flags and [`LabelPrefix`] all check names
//! with these.
//!
//! [`LabelPrefix`]: crate::LabelPrefix

/// Kubernetes limits a DNS label to 63 characters.
pub const MAX_DNS_LABEL_LEN: usize = 63;
/// Kubernetes limits a DNS subdomain to 253 characters.
pub const MAX_DNS_SUBDOMAIN_LEN: usize = 253;

/// An RFC 1123 DNS label, as namespace names must be: lowercase letters,
/// digits and '-', starting and ending with a letter or digit, at most 63
/// characters.
pub fn is_dns_label(name: &str) -> bool {
    label_fault(name).is_none()
}

/// An RFC 1123 DNS subdomain, as most object names (ConfigMaps, nodes, pods)
/// must be: DNS labels joined by '.', at most 253 characters.
pub fn is_dns_subdomain(name: &str) -> bool {
    dns_subdomain_fault(name).is_none()
}

/// Why `name` is not a DNS subdomain (the first rule it breaks, worded for
/// an error about it), or `None` when it is one.
pub fn dns_subdomain_fault(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("it is empty");
    }
    if name.len() > MAX_DNS_SUBDOMAIN_LEN {
        return Some("it is longer than 253 characters");
    }
    name.split('.')
        .find_map(label_fault)
        .map(|fault| match fault {
            LabelFault::Empty => "it has an empty DNS label (leading, trailing or double dot)",
            LabelFault::TooLong => "a DNS label in it is longer than 63 characters",
            LabelFault::Character => "only lowercase letters, digits, '-' and '.' are allowed",
            LabelFault::Dash => "a DNS label in it starts or ends with '-'",
        })
}

/// The first DNS-label rule `label` breaks.
enum LabelFault {
    Empty,
    TooLong,
    Character,
    Dash,
}

fn label_fault(label: &str) -> Option<LabelFault> {
    if label.is_empty() {
        Some(LabelFault::Empty)
    } else if label.len() > MAX_DNS_LABEL_LEN {
        Some(LabelFault::TooLong)
    } else if !label
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        Some(LabelFault::Character)
    } else if label.starts_with('-') || label.ends_with('-') {
        Some(LabelFault::Dash)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::simple("kube-system", true)]
    #[case::digits("team-42", true)]
    #[case::uppercase("Kube", false)]
    #[case::underscore("a_b", false)]
    #[case::dot("a.b", false)]
    #[case::trailing_dash("a-", false)]
    #[case::leading_dash("-a", false)]
    #[case::empty("", false)]
    #[case::longest(&"a".repeat(63), true)]
    #[case::too_long(&"a".repeat(64), false)]
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

    #[rstest]
    #[case::empty("", "it is empty")]
    #[case::too_long(&format!("{}a", "a.".repeat(127)), "it is longer than 253 characters")]
    #[case::double_dot("a..b", "it has an empty DNS label (leading, trailing or double dot)")]
    #[case::long_label(&"a".repeat(64), "a DNS label in it is longer than 63 characters")]
    #[case::underscore("a_b.io", "only lowercase letters, digits, '-' and '.' are allowed")]
    #[case::dash("a.-b", "a DNS label in it starts or ends with '-'")]
    #[case::first_fault_wins("A.-b", "only lowercase letters, digits, '-' and '.' are allowed")]
    fn a_subdomain_fault_names_the_first_rule_broken(#[case] name: &str, #[case] fault: &str) {
        assert_eq!(dns_subdomain_fault(name), Some(fault));
    }
}
