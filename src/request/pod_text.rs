//! A Pod's JSON text, read for the few fields the policy decides on and
//! rewritten in place: a mutation replaces only the bytes of the values it
//! changes and leaves every other byte as the API server sent it.
//!
//! Reading a 5 KB pod into a JSON tree, cloning it and writing it back costs
//! far more than the decision itself. [`PodText::read`] instead scans the
//! text once ([`crate::json::scan`]), keeps where each field the policy may
//! rewrite sits, and builds
//! the *reduced pod*: a small JSON tree holding only the fields the policy
//! reads (`spec.containers[].{name,restartPolicy,resources}`, the same for
//! `initContainers`, `spec.resources`, `spec.nodeName`, `spec.affinity`,
//! `spec.schedulerName`, `spec.resourceClaims`; and, for a pod that names
//! DRA claims, its `metadata`, which names it in their messages).
//! The decision runs on the reduced pod, and [`PodText::rewrite`] splices the
//! values it changed back into the original text: a changed value in place,
//! an added field after a sibling (container `resources` after its `name`,
//! pod-level fields after the container list).
//!
//! Text the reader does not expect (a duplicated key, a field of the wrong
//! type) is not guessed at: `read` answers `None` and the caller decides on
//! the whole JSON tree instead, which names the problem.

use crate::json::scan::{tree_refusal_hints, Scanner, Span};
use crate::json::write::{write_string, write_value};
use crate::request::pod::names_resource_claims;
use serde_json::{Map, Value};

/// The PodSpec fields the policy may rewrite, besides container resources.
const SPEC_RESOURCES: &str = "resources";
const SPEC_AFFINITY: &str = "affinity";
/// The scheduler a GPU pod is handed to (`scheduling.topologyAwareScheduler`).
const SPEC_SCHEDULER_NAME: &str = "schedulerName";
/// The pod's DRA claims, read by `decide::claim::pod`.
const SPEC_RESOURCE_CLAIMS: &str = "resourceClaims";
/// The container field the policy may rewrite.
const CONTAINER_RESOURCES: &str = "resources";
/// Room for one written value: a node affinity with a few terms fits, so
/// writing it seldom grows the buffer.
const EDIT_CAPACITY: usize = 1024;
/// The container lists, in the order the reduced pod holds them.
const CONTAINER_LISTS: [&str; 2] = ["initContainers", "containers"];

/// A Pod's text with the places of the fields the policy reads.
#[derive(Debug)]
pub struct PodText<'a> {
    /// The text the pod was read from (the pod, or the payload around it).
    text: &'a str,
    /// Where the pod is in `text`.
    object: Span,
    reduced: Value,
    spec: Option<SpecPlaces>,
    /// The text holds a value serde_json's tree may refuse (see
    /// [`tree_refusal_hints`]).
    may_be_refused: bool,
}

/// Where a field the policy may rewrite is, or can be added: the span of its
/// value when present; else the end of a sibling value, after which
/// `,"key":value` can be inserted (`None`: nowhere to add it).
#[derive(Debug, Clone, Copy)]
struct Slot {
    value: Option<Span>,
    after: Option<usize>,
}

#[derive(Debug)]
struct SpecPlaces {
    resources: Slot,
    affinity: Slot,
    scheduler_name: Slot,
    /// Per list of [`CONTAINER_LISTS`], each container's `resources` slot.
    containers: [Vec<Slot>; 2],
}

// What the reader finds in the text: the span of each field it reads. A
// `null` value is kept as present, so that a rewrite replaces it rather than
// adding a second key.

/// The fields of a pod the policy reads, found in place by
/// [`PodFields::read`] while a larger text (the payload) is scanned.
#[derive(Debug)]
pub struct PodFields<'a> {
    text: &'a str,
    object: Span,
    /// Where `metadata` is (the last one, as serde_json's tree keeps it);
    /// parsed only for a pod that names claims.
    metadata: Option<Span>,
    /// `None` when the pod has no `spec`, or `spec: null`.
    spec: Option<SpecFields>,
    /// See [`PodText`]'s field.
    may_be_refused: bool,
}

#[derive(Debug, Default)]
struct SpecFields {
    /// Per list of [`CONTAINER_LISTS`].
    lists: [Option<ListFields>; 2],
    resources: Option<Span>,
    node_name: Option<Span>,
    affinity: Option<Span>,
    scheduler_name: Option<Span>,
    /// `spec.resourceClaims`, which `decide::claim` reads.
    resource_claims: Option<Span>,
}

/// A container list: its span, and its containers (none when `null`).
#[derive(Debug)]
struct ListFields {
    span: Span,
    containers: Vec<ContainerFields>,
}

#[derive(Debug, Default)]
struct ContainerFields {
    name: Option<Span>,
    restart_policy: Option<Span>,
    resources: Option<Span>,
}

impl<'a> PodFields<'a> {
    /// Reads the object that is the scanner's next value, or `None` when it
    /// is no object or its shape is not one this reader handles (see the
    /// module documentation); the scanner is then left mid-value.
    pub fn read(scanner: &mut Scanner<'a>) -> Option<Self> {
        let hints = tree_refusal_hints();
        scanner.peek_value();
        let start = scanner.position();
        let (mut spec, mut metadata) = (None, None);
        let mut members = scanner.object().ok()?;
        while let Some(key) = members.next_key().ok()? {
            match key.name().ok()?.as_ref() {
                "spec" => set_once(&mut spec, read_spec(members.scanner())?)?,
                // Never refused for a duplicate: no answer changes metadata.
                "metadata" => metadata = Some(members.scanner().value().ok()?),
                _ => read_value(members.scanner(), None)?,
            }
        }
        Some(PodFields {
            text: scanner.text(),
            object: Span {
                start,
                end: scanner.position(),
            },
            metadata,
            spec: spec.flatten(),
            may_be_refused: tree_refusal_hints() != hints,
        })
    }

    /// The pod's JSON text.
    pub fn object_text(&self) -> &'a str {
        self.object.of(self.text)
    }
}

impl<'a> PodText<'a> {
    /// Reads the pod `text`, or `None` when its shape is not one this reader
    /// handles (see the module documentation).
    pub fn read(text: &'a str) -> Option<Self> {
        let mut scanner = Scanner::new(text);
        let fields = PodFields::read(&mut scanner)?;
        scanner.finish().ok()?;
        Self::from_fields(&fields)
    }

    /// The pod whose fields were read in place.
    pub(crate) fn from_fields(pod: &PodFields<'a>) -> Option<Self> {
        let (text, object, may_be_refused) = (pod.text, pod.object, pod.may_be_refused);
        let pod_fields_metadata = pod.metadata;
        let Some(fields) = &pod.spec else {
            return Some(PodText {
                text,
                object,
                reduced: Value::Object(Map::new()),
                spec: None,
                may_be_refused,
            });
        };
        let mut reduced = Map::new();
        let mut containers: [Vec<Slot>; 2] = [Vec::new(), Vec::new()];
        for ((field, list), slots) in CONTAINER_LISTS
            .iter()
            .zip(&fields.lists)
            .zip(containers.iter_mut())
        {
            let Some(list) = list.as_ref().filter(|list| list.span.of(text) != "null") else {
                continue;
            };
            let mut reduced_items = Vec::with_capacity(list.containers.len());
            for container in &list.containers {
                let mut reduced_container = Map::new();
                for (key, value) in [
                    ("name", container.name),
                    ("restartPolicy", container.restart_policy),
                    (CONTAINER_RESOURCES, container.resources),
                ] {
                    if let Some(value) = value {
                        reduced_container.insert(key.to_owned(), parse(text, value)?);
                    }
                }
                slots.push(Slot {
                    value: container.resources,
                    after: container.name.map(|name| name.end),
                });
                reduced_items.push(Value::Object(reduced_container));
            }
            reduced.insert((*field).to_owned(), Value::Array(reduced_items));
        }
        for (key, value) in [
            (SPEC_RESOURCES, fields.resources),
            ("nodeName", fields.node_name),
            (SPEC_AFFINITY, fields.affinity),
            (SPEC_SCHEDULER_NAME, fields.scheduler_name),
            (SPEC_RESOURCE_CLAIMS, fields.resource_claims),
        ] {
            if let Some(value) = value {
                reduced.insert(key.to_owned(), parse(text, value)?);
            }
        }
        // Pod-level fields are added after a container list, which every pod
        // the policy mutates has (its GPUs are requested there).
        let [init_containers, app_containers] = &fields.lists;
        let after = app_containers
            .as_ref()
            .or(init_containers.as_ref())
            .map(|list| list.span.end);
        let slot = |value| Slot { value, after };
        let spec = SpecPlaces {
            resources: slot(fields.resources),
            affinity: slot(fields.affinity),
            scheduler_name: slot(fields.scheduler_name),
            containers,
        };
        let mut pod = Map::new();
        let names_claims = names_resource_claims(reduced.get(SPEC_RESOURCE_CLAIMS));
        if let (Some(metadata), true) = (pod_fields_metadata, names_claims) {
            // Only pods that name claims pay for it: their messages name
            // the pod from it (a generated name). Metadata serde_json
            // refuses is left out: the request's names stand in.
            if let Some(metadata) = parse(text, metadata) {
                pod.insert("metadata".to_owned(), metadata);
            }
        }
        pod.insert("spec".to_owned(), Value::Object(reduced));
        Some(PodText {
            text,
            object,
            reduced: Value::Object(pod),
            spec: Some(spec),
            may_be_refused,
        })
    }

    /// The pod with only the fields the policy reads.
    pub fn reduced(&self) -> &Value {
        &self.reduced
    }

    /// The pod text with the changes from [`reduced`](Self::reduced) to
    /// `changed` written in. Changes outside the fields this reader places
    /// are an error, never dropped silently.
    pub fn rewrite(&self, changed: &Value) -> Result<String, String> {
        let unplaceable = || "the decision changed a field the rewrite cannot place".to_owned();
        // The scanner passes over values as serde_json does when it skips
        // them, so a lone surrogate escape (`"\udc00"`) or a number beyond
        // f64 (`1e400`) is read; copied into the answer, it would make a
        // response the host's serde_json refuses. Such a pod is left to the
        // tree, which names the problem. Checked only for a pod holding a
        // `\u` escape or a number that may be one, which are rare.
        let object = self.object.of(self.text);
        if self.may_be_refused && serde_json::from_slice::<Value>(object.as_bytes()).is_err() {
            return Err("the pod's text is not JSON serde_json reads".to_owned());
        }
        let Some(places) = &self.spec else {
            return if *changed == self.reduced {
                Ok(self.object.of(self.text).to_owned())
            } else {
                Err(unplaceable())
            };
        };
        let before = &self.reduced["spec"];
        let after = changed.get("spec").ok_or("the rewrite lost spec")?;
        let pod_level = [SPEC_RESOURCES, SPEC_AFFINITY, SPEC_SCHEDULER_NAME];
        if !same_except(&self.reduced, changed, &["spec"])
            || !same_except(
                before,
                after,
                &[&pod_level[..], &CONTAINER_LISTS[..]].concat(),
            )
        {
            return Err(unplaceable());
        }
        let mut edits = Vec::new();
        let slots = [&places.resources, &places.affinity, &places.scheduler_name];
        for (key, slot) in pod_level.iter().zip(slots) {
            edits.extend(edit(key, slot, before.get(key), after.get(key))?);
        }
        for (field, slots) in CONTAINER_LISTS.iter().zip(&places.containers) {
            let length = |spec: &Value| spec.get(field).and_then(Value::as_array).map(Vec::len);
            if length(before) != length(after) {
                return Err(unplaceable());
            }
            for (index, slot) in slots.iter().enumerate() {
                let container = |spec| container_at(spec, field, index);
                let (old, new) = (container(before), container(after));
                if !same_except(
                    old.unwrap_or(&Value::Null),
                    new.unwrap_or(&Value::Null),
                    &[CONTAINER_RESOURCES],
                ) {
                    return Err(unplaceable());
                }
                let (old, new) = (
                    old.and_then(|c| c.get(CONTAINER_RESOURCES)),
                    new.and_then(|c| c.get(CONTAINER_RESOURCES)),
                );
                edits.extend(edit(CONTAINER_RESOURCES, slot, old, new)?);
            }
        }
        splice(self.text, self.object, edits)
    }
}

/// True when `before` and `after` agree on everything but the fields `except`
/// (objects), or are equal (anything else).
fn same_except(before: &Value, after: &Value, except: &[&str]) -> bool {
    match (before.as_object(), after.as_object()) {
        (Some(before), Some(after)) => {
            let kept = |(key, _): &(&String, &Value)| !except.contains(&key.as_str());
            before.iter().filter(kept).eq(after.iter().filter(kept))
        }
        _ => before == after,
    }
}

/// One change to the text: replace `span` (empty for an insertion) by `text`.
struct Edit {
    span: Span,
    text: String,
}

/// The edit that takes `key` of `slot` from `old` to `new`, if it changed.
fn edit(
    key: &str,
    slot: &Slot,
    old: Option<&Value>,
    new: Option<&Value>,
) -> Result<Option<Edit>, String> {
    if old == new {
        return Ok(None);
    }
    let new = new.ok_or_else(|| format!("the decision removed {key}"))?;
    let mut text = String::with_capacity(EDIT_CAPACITY);
    let span = match (slot.value, slot.after) {
        (Some(span), _) => span,
        (None, Some(at)) => {
            text.push(',');
            write_string(key, &mut text);
            text.push(':');
            Span { start: at, end: at }
        }
        (None, None) => return Err(format!("no place to add {key}")),
    };
    write_value(new, &mut text);
    Ok(Some(Edit { span, text }))
}

/// The `object` part of `text` with `edits` applied; insertions at one place
/// keep their order.
fn splice(text: &str, object: Span, mut edits: Vec<Edit>) -> Result<String, String> {
    gpu_topology::sort::sort_by_key(&mut edits, |edit| (edit.span.start, edit.span.end));
    let extra: usize = edits.iter().map(|edit| edit.text.len()).sum();
    let mut out = String::with_capacity(object.end.saturating_sub(object.start) + extra);
    let mut copied = object.start;
    for edit in edits {
        // Spans never overlap; an overlap would be a bug here, so refuse it.
        let before = text
            .get(copied..edit.span.start)
            .ok_or("the rewrite's edits overlap")?;
        out.push_str(before);
        out.push_str(&edit.text);
        copied = edit.span.end;
    }
    let rest = text
        .get(copied..object.end)
        .ok_or("the rewrite's edits leave the object")?;
    out.push_str(rest);
    Ok(out)
}

fn container_at<'v>(spec: &'v Value, list: &str, index: usize) -> Option<&'v Value> {
    spec.get(list)?.get(index)
}

/// Sets a field read from the text; a field given twice is refused (which
/// would the API server keep?), and the whole tree decides instead.
fn set_once<T>(field: &mut Option<T>, value: T) -> Option<()> {
    field.replace(value).is_none().then_some(())
}

/// `spec`: `Some(None)` when `null`; `None` when not an object.
fn read_spec(scanner: &mut Scanner<'_>) -> Option<Option<SpecFields>> {
    if scanner.peek_value() == Some(b'n') {
        return (scanner.value_text().ok()? == "null").then_some(None);
    }
    let mut fields = SpecFields::default();
    let mut members = scanner.object().ok()?;
    while let Some(key) = members.next_key().ok()? {
        let scanner = members.scanner();
        let name = key.name().ok()?;
        let list = CONTAINER_LISTS.iter().position(|list| *list == name);
        if let Some(index) = list {
            set_once(&mut fields.lists[index], read_list(scanner)?)?;
            continue;
        }
        let field = match name.as_ref() {
            SPEC_RESOURCES => Some(&mut fields.resources),
            "nodeName" => Some(&mut fields.node_name),
            SPEC_AFFINITY => Some(&mut fields.affinity),
            SPEC_SCHEDULER_NAME => Some(&mut fields.scheduler_name),
            SPEC_RESOURCE_CLAIMS => Some(&mut fields.resource_claims),
            _ => None,
        };
        read_value(scanner, field)?;
    }
    Some(Some(fields))
}

/// A container list: `null`, or a list of objects.
fn read_list(scanner: &mut Scanner<'_>) -> Option<ListFields> {
    if scanner.peek_value() == Some(b'n') {
        let span = scanner.value().ok()?;
        return (span.of(scanner.text()) == "null").then_some(ListFields {
            span,
            containers: Vec::new(),
        });
    }
    let start = scanner.position();
    let mut containers = Vec::new();
    let mut elements = scanner.array().ok()?;
    while elements.has_next().ok()? {
        containers.push(read_container(elements.scanner())?);
    }
    let end = scanner.position();
    Some(ListFields {
        span: Span { start, end },
        containers,
    })
}

fn read_container(scanner: &mut Scanner<'_>) -> Option<ContainerFields> {
    let mut fields = ContainerFields::default();
    let mut members = scanner.object().ok()?;
    while let Some(key) = members.next_key().ok()? {
        let field = match key.name().ok()?.as_ref() {
            "name" => Some(&mut fields.name),
            "restartPolicy" => Some(&mut fields.restart_policy),
            CONTAINER_RESOURCES => Some(&mut fields.resources),
            _ => None,
        };
        read_value(members.scanner(), field)?;
    }
    Some(fields)
}

/// Passes over the next value, keeping its span in `field` if given.
fn read_value(scanner: &mut Scanner<'_>, field: Option<&mut Option<Span>>) -> Option<()> {
    let span = scanner.value().ok()?;
    match field {
        Some(field) => set_once(field, span),
        None => Some(()),
    }
}

fn parse(text: &str, value: Span) -> Option<Value> {
    serde_json::from_slice(value.of(text).as_bytes()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    /// Reads `text`, applies `change` to the reduced pod and rewrites.
    fn rewritten(text: &str, change: impl FnOnce(&mut Value)) -> String {
        let pod = PodText::read(text).expect("readable pod");
        let mut changed = pod.reduced().clone();
        change(&mut changed);
        pod.rewrite(&changed).unwrap()
    }

    #[test]
    fn reduces_to_the_fields_the_policy_reads() {
        let text = r#"{"apiVersion": "v1", "metadata": {"name": "p", "managedFields": [{"a": 1}]},
            "spec": {"nodeName": "n1", "volumes": [], "containers": [
                {"name": "app", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
              "initContainers": [{"name": "proxy", "restartPolicy": "Always", "env": []}],
              "affinity": null, "futureField": {"x": 1}}}"#;
        let pod = PodText::read(text).unwrap();
        assert_eq!(
            pod.reduced(),
            &json!({"spec": {
                "nodeName": "n1",
                "containers": [{"name": "app", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                "initContainers": [{"name": "proxy", "restartPolicy": "Always"}],
                "affinity": null
            }})
        );
    }

    /// A pod that names DRA claims keeps them and its metadata in the
    /// reduced pod (the DRA stage reads both there); any other pod keeps no
    /// metadata. (pod text, reduced pod)
    #[rstest]
    #[case::claims_and_metadata_kept(
        r#"{"metadata": {"generateName": "train-", "namespace": "ml", "labels": {"a": "b"}},
            "spec": {"resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}], "containers": [{"name": "c"}]}}"#,
        json!({"metadata": {"generateName": "train-", "namespace": "ml", "labels": {"a": "b"}},
               "spec": {"resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}], "containers": [{"name": "c"}]}})
    )]
    #[case::no_claims_no_metadata(
        r#"{"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}"#,
        json!({"spec": {"containers": [{"name": "c"}]}})
    )]
    #[case::empty_claims_no_metadata(
        r#"{"metadata": {"name": "p"}, "spec": {"resourceClaims": [], "containers": [{"name": "c"}]}}"#,
        json!({"spec": {"resourceClaims": [], "containers": [{"name": "c"}]}})
    )]
    #[case::null_metadata_kept_null(
        r#"{"metadata": null, "spec": {"resourceClaims": [{"name": "g"}], "containers": []}}"#,
        json!({"metadata": null, "spec": {"resourceClaims": [{"name": "g"}], "containers": []}})
    )]
    fn a_pod_naming_claims_keeps_them_and_its_metadata(#[case] text: &str, #[case] reduced: Value) {
        assert_eq!(PodText::read(text).unwrap().reduced(), &reduced);
    }

    #[test]
    fn metadata_given_twice_is_the_last_as_in_the_whole_tree() {
        let text = r#"{"metadata": {"name": "a"}, "metadata": {"name": "b"}, "spec": {"resourceClaims": [{"name": "g"}], "containers": []}}"#;
        let reduced = PodText::read(text).unwrap().reduced().clone();
        assert_eq!(reduced["metadata"], json!({"name": "b"}));
        let text = r#"{"metadata": {}, "metadata": {}, "spec": {"containers": [{"name": "c"}]}}"#;
        assert!(
            PodText::read(text).is_some(),
            "a pod without claims reads as before"
        );
    }

    #[test]
    fn metadata_serde_json_refuses_is_left_out() {
        let text = r#"{"metadata": {"name": "p", "annotations": {"a": "\udc00"}}, "spec": {"resourceClaims": [{"name": "g"}], "containers": []}}"#;
        let reduced = PodText::read(text).unwrap().reduced().clone();
        assert_eq!(
            reduced,
            json!({"spec": {"resourceClaims": [{"name": "g"}], "containers": []}})
        );
    }

    #[test]
    fn a_name_given_twice_is_the_last_as_in_the_whole_tree() {
        let text = r#"{"metadata": {"name": "a", "name": "b"}, "spec": {"resourceClaims": [{"name": "g"}], "containers": []}}"#;
        let whole: Value = serde_json::from_str(text).unwrap();
        let reduced = PodText::read(text).unwrap().reduced().clone();
        assert_eq!(reduced["metadata"], json!({"name": "b"}));
        assert_eq!(reduced["metadata"]["name"], whole["metadata"]["name"]);
    }

    #[test]
    fn an_unchanged_pod_is_rewritten_byte_for_byte() {
        let text = "{ \"spec\" : {\"containers\": [ {\"name\":\"a\"} ] },\n \"z\": [1, 2] }";
        assert_eq!(rewritten(text, |_| {}), text);
    }

    /// (pod text, change to the reduced pod, expected text).
    #[rstest]
    #[case::replaces_container_resources(
        r#"{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":"1"}},"image":"i"}]},"z":0}"#,
        json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "2"}}}]}),
        r#"{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":"2"}},"image":"i"}]},"z":0}"#
    )]
    #[case::inserts_missing_resources_after_the_name(
        r#"{"spec":{"containers":[{"name":"a", "image":"i"}]}}"#,
        json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}),
        r#"{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}, "image":"i"}]}}"#
    )]
    #[case::replaces_null_affinity_in_place(
        r#"{"spec":{"affinity":null,"containers":[]}}"#,
        json!({"affinity": {"nodeAffinity": {}}, "containers": []}),
        r#"{"spec":{"affinity":{"nodeAffinity":{}},"containers":[]}}"#
    )]
    #[case::inserts_affinity_and_pod_resources_after_the_containers(
        r#"{"spec":{"containers":[] ,"x":1}}"#,
        json!({"containers": [], "affinity": {"a": 1}, "resources": {"r": 1}}),
        r#"{"spec":{"containers":[],"resources":{"r":1},"affinity":{"a":1} ,"x":1}}"#
    )]
    #[case::inserts_the_scheduler_name_after_the_containers(
        r#"{"spec":{"containers":[] ,"x":1}}"#,
        json!({"containers": [], "schedulerName": "topo-aware-scheduler"}),
        r#"{"spec":{"containers":[],"schedulerName":"topo-aware-scheduler" ,"x":1}}"#
    )]
    #[case::replaces_the_default_scheduler_in_place(
        r#"{"spec":{"schedulerName": "default-scheduler","containers":[]}}"#,
        json!({"containers": [], "schedulerName": "topo-aware-scheduler"}),
        r#"{"spec":{"schedulerName": "topo-aware-scheduler","containers":[]}}"#
    )]
    #[case::inserts_after_init_containers_without_containers(
        r#"{"spec":{"initContainers":[]}}"#,
        json!({"initContainers": [], "affinity": {}}),
        r#"{"spec":{"initContainers":[],"affinity":{}}}"#
    )]
    #[case::edits_init_and_app_containers(
        r#"{"spec":{"initContainers":[{"name":"i"}],"containers":[{"name":"a","resources":{}}]}}"#,
        json!({"initContainers": [{"name": "i", "resources": {"limits": {}}}],
               "containers": [{"name": "a", "resources": {"limits": {"cpu": "1"}}}]}),
        r#"{"spec":{"initContainers":[{"name":"i","resources":{"limits":{}}}],"containers":[{"name":"a","resources":{"limits":{"cpu":"1"}}}]}}"#
    )]
    fn rewrites_only_the_changed_values(
        #[case] text: &str,
        #[case] spec: Value,
        #[case] expected: &str,
    ) {
        let out = rewritten(text, |pod| pod["spec"] = spec);
        assert_eq!(out, expected);
        serde_json::from_str::<Value>(&out).expect("valid JSON");
    }

    #[test]
    fn unknown_fields_and_their_order_survive_a_rewrite() {
        let text = r#"{"zeta":{"newer":[1,{"k":"v"}]},"spec":{"x-future":true,"containers":[{"futureContainerField":{"q":1},"name":"a"}],"affinity":{"podAffinity":{"keep":1}}},"alpha":null}"#;
        let out = rewritten(text, |pod| {
            pod["spec"]["containers"][0]["resources"] = json!({"limits": {"cpu": "1"}});
            pod["spec"]["affinity"]["nodeAffinity"] = json!({"n": 1});
        });
        assert_eq!(
            out,
            r#"{"zeta":{"newer":[1,{"k":"v"}]},"spec":{"x-future":true,"containers":[{"futureContainerField":{"q":1},"name":"a","resources":{"limits":{"cpu":"1"}}}],"affinity":{"nodeAffinity":{"n":1},"podAffinity":{"keep":1}}},"alpha":null}"#
        );
    }

    #[rstest]
    #[case::renamed_container(|pod: &mut Value| pod["spec"]["containers"][0]["name"] = json!("b"))]
    #[case::added_container(|pod: &mut Value| pod["spec"]["containers"].as_array_mut().unwrap().push(json!({})))]
    #[case::node_name(|pod: &mut Value| pod["spec"]["nodeName"] = json!("n"))]
    #[case::removed_resources(|pod: &mut Value| { pod["spec"]["containers"][0].as_object_mut().unwrap().remove("resources"); })]
    #[case::other_spec_field(|pod: &mut Value| pod["spec"]["hostNetwork"] = json!(true))]
    fn changes_it_cannot_place_are_errors(#[case] change: fn(&mut Value)) {
        let pod =
            PodText::read(r#"{"spec":{"containers":[{"name":"a","resources":{}}]}}"#).unwrap();
        let mut changed = pod.reduced().clone();
        change(&mut changed);
        assert!(pod.rewrite(&changed).is_err());
    }

    /// Nothing to insert after: the caller decides on the whole tree instead.
    #[rstest]
    #[case::container_without_a_name(
        r#"{"spec":{"containers":[{ }]}}"#,
        json!({"containers": [{"resources": {}}]})
    )]
    #[case::spec_without_container_lists(r#"{"spec":{}}"#, json!({"affinity": {}}))]
    fn additions_without_an_anchor_are_errors(#[case] text: &str, #[case] spec: Value) {
        let pod = PodText::read(text).unwrap();
        let error = pod.rewrite(&json!({ "spec": spec })).unwrap_err();
        assert!(error.starts_with("no place to add"), "{error}");
    }

    #[rstest]
    #[case::duplicate_key(r#"{"spec":{"containers":[{"resources":{},"resources":{}}]}}"#)]
    #[case::duplicate_spec(r#"{"spec":{},"spec":{}}"#)]
    #[case::spec_not_an_object(r#"{"spec":"x"}"#)]
    #[case::containers_not_a_list(r#"{"spec":{"containers":{}}}"#)]
    #[case::container_not_an_object(r#"{"spec":{"containers":[1]}}"#)]
    #[case::not_an_object("[]")]
    #[case::spec_as_a_list(r#"{"spec":[[{"name":"a"}]]}"#)]
    #[case::container_as_a_list(r#"{"spec":{"containers":[["a","Always",{}]]}}"#)]
    #[case::not_json(r#"{"spec":"#)]
    fn unexpected_shapes_are_left_to_the_tree(#[case] text: &str) {
        assert!(PodText::read(text).is_none());
    }

    #[rstest]
    #[case::no_spec(r#"{"metadata":{}}"#)]
    #[case::null_spec(r#"{"spec":null}"#)]
    fn pods_without_a_spec_reduce_to_nothing(#[case] text: &str) {
        let pod = PodText::read(text).unwrap();
        assert_eq!(pod.reduced(), &json!({}));
        assert_eq!(pod.rewrite(&json!({})).unwrap(), text);
    }

    #[test]
    fn escaped_keys_are_read_by_their_meaning() {
        let text = r#"{"sp\u0065c":{"c\u006fntainers":[{"name":"a"}]}}"#;
        let out = rewritten(text, |pod| {
            pod["spec"]["containers"][0]["resources"] = json!({});
        });
        assert_eq!(
            out,
            r#"{"sp\u0065c":{"c\u006fntainers":[{"name":"a","resources":{}}]}}"#
        );
    }
}
