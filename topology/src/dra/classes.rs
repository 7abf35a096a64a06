//! DeviceClasses as the policy reads them: the driver and the attribute
//! equalities of their CEL selectors ([`ClassSelector`]), and the
//! attributes worth keeping of each device ([`KeptAttributes`]).

use super::{partition_size, Atom, Device};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What a DeviceClass selects, as far as the policy reads its CEL: the
/// driver, and attribute equalities. A clause it does not read only narrows
/// the class further, so the devices it matches are an upper bound then.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassSelector {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub equals: Vec<(String, Atom)>,
    /// A clause was not read: the class may select fewer devices.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub narrower: bool,
    /// `spec.extendedResourceName` (KEP-5004): the extended resource a pod
    /// may request instead of a claim, which the scheduler then allocates
    /// from this class's devices on nodes without a device plugin for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_resource_name: Option<String>,
}

impl ClassSelector {
    /// Whether `device` can be one of the class's (exactly, unless
    /// [`narrower`](Self::narrower)).
    pub fn admits(&self, device: &Device) -> bool {
        self.driver.as_deref() == Some(device.driver.as_str())
            && self.equals.iter().all(|(name, atom)| {
                device
                    .attribute(name)
                    .is_some_and(|value| value.0.len() == 1 && value.holds(atom))
            })
    }
}

/// The classes of a DeviceClass list, by name. Read as JSON, not through
/// readers derived for the list's five types (issue #35: the module's
/// size); `null` reads as unset, and a value of a type the API server
/// never stores is an error that names it.
pub fn parse_classes(list: &[u8]) -> Result<BTreeMap<String, ClassSelector>, String> {
    use serde_json::Value;
    let unreadable = |problem: String| format!("the DeviceClass list cannot be read: {problem}");
    let list: Value =
        serde_json::from_slice(list).map_err(|error| unreadable(error.to_string()))?;
    if !list.is_object() {
        return Err(unreadable(format!("{list} is not an object")));
    }
    let items = typed(
        member(&list, "items"),
        Value::as_array,
        || "items".into(),
        "a list",
    )
    .map_err(unreadable)?;
    let mut classes = BTreeMap::new();
    for (index, class) in items.map_or(&[][..], Vec::as_slice).iter().enumerate() {
        let at = |field: &str| format!("items[{index}]{field}");
        if !class.is_object() {
            return Err(unreadable(format!("{}: {class} is not an object", at(""))));
        }
        let name = text(
            member(class, "metadata").and_then(|metadata| member(metadata, "name")),
            || at(".metadata.name"),
        )
        .map_err(unreadable)?;
        let spec = member(class, "spec");
        let selectors = typed(
            spec.and_then(|spec| member(spec, "selectors")),
            Value::as_array,
            || at(".spec.selectors"),
            "a list",
        )
        .map_err(unreadable)?;
        let mut selector = ClassSelector::default();
        for entry in selectors.map_or(&[][..], Vec::as_slice) {
            let expression = text(
                member(entry, "cel").and_then(|cel| member(cel, "expression")),
                || at(".spec.selectors[].cel.expression"),
            )
            .map_err(unreadable)?;
            read_expression(expression.unwrap_or_default(), &mut selector);
        }
        selector.extended_resource_name = text(
            spec.and_then(|spec| member(spec, "extendedResourceName")),
            || at(".spec.extendedResourceName"),
        )
        .map_err(unreadable)?
        .filter(|name| !name.is_empty())
        .map(str::to_owned);
        classes.insert(name.unwrap_or_default().to_owned(), selector);
    }
    Ok(classes)
}

/// `value` as a string (see [`typed`]).
fn text(
    value: Option<&serde_json::Value>,
    field: impl Fn() -> String,
) -> Result<Option<&str>, String> {
    typed(value, serde_json::Value::as_str, field, "a string")
}

/// `object[key]`, `None` when absent or `null`.
fn member<'a>(object: &'a serde_json::Value, key: &str) -> Option<&'a serde_json::Value> {
    object.get(key).filter(|value| !value.is_null())
}

/// `value` read by `read`; an error names the field (`field()`) and what
/// it should have been.
fn typed<'a, T>(
    value: Option<&'a serde_json::Value>,
    read: impl Fn(&'a serde_json::Value) -> Option<T>,
    field: impl Fn() -> String,
    expected: &str,
) -> Result<Option<T>, String> {
    value
        .map(|value| read(value).ok_or_else(|| format!("{}: {value} is not {expected}", field())))
        .transpose()
}

/// Reads the clauses of one CEL selector that the policy understands:
/// `device.driver == "x"` and `device.attributes["domain"].name == value`,
/// joined by `&&`. Anything else (`||`, negation, functions) marks the
/// class as possibly narrower, never wider: a selector only removes devices.
pub(super) fn read_expression(expression: &str, selector: &mut ClassSelector) {
    if expression.contains("||") || expression.contains('(') {
        selector.narrower = true;
        return;
    }
    for clause in expression.split("&&").map(str::trim) {
        match read_clause(clause) {
            Some(Clause::Driver(driver)) => match &selector.driver {
                Some(known) if *known != driver => selector.narrower = true,
                _ => selector.driver = Some(driver),
            },
            Some(Clause::Equals(name, atom)) => selector.equals.push((name, atom)),
            None => selector.narrower = true,
        }
    }
}

enum Clause {
    Driver(String),
    Equals(String, Atom),
}

fn read_clause(clause: &str) -> Option<Clause> {
    let (left, right) = clause.split_once("==")?;
    let (left, right) = (left.trim(), right.trim());
    if right.contains("==") || left.contains('!') {
        return None;
    }
    if left == "device.driver" {
        return quoted(right).map(|driver| Clause::Driver(driver.to_owned()));
    }
    let rest = left.strip_prefix("device.attributes[")?;
    let (domain, rest) = rest.split_once(']')?;
    let name = rest.strip_prefix('.')?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let atom = match quoted(right) {
        Some(text) => Atom::String(text.to_owned()),
        None => match right {
            "true" => Atom::Bool(true),
            "false" => Atom::Bool(false),
            number => Atom::Int(number.parse().ok()?),
        },
    };
    Some(Clause::Equals(format!("{}/{name}", quoted(domain)?), atom))
}

/// The text inside `"…"` or `'…'`, when it has no quote or escape inside.
fn quoted(text: &str) -> Option<&str> {
    let inner = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .or_else(|| text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')))?;
    (!inner.contains(['"', '\'', '\\'])).then_some(inner)
}

/// The attributes worth keeping: those the classes select on, and every
/// `numaNode`, `pcieRoot` and `partition<N>` (what an alignment constraint
/// could name).
#[derive(Debug, Clone)]
pub struct KeptAttributes {
    named: BTreeSet<String>,
}

impl KeptAttributes {
    pub fn keeps(&self, qualified: &str) -> bool {
        let name = qualified.rsplit('/').next().unwrap_or(qualified);
        name == "numaNode"
            || name == "pcieRoot"
            || partition_size(qualified).is_some()
            || self.named.contains(qualified)
    }
}

pub fn kept_attributes(classes: &BTreeMap<String, ClassSelector>) -> KeptAttributes {
    KeptAttributes {
        named: crate::sort::btree_set(
            classes
                .values()
                .flat_map(|class| class.equals.iter().map(|(name, _)| name.clone())),
        ),
    }
}
