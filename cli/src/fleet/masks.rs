//! Field masks: policy-server prunes each object it hands a policy to the
//! fields the request names (`metadata.labels`, dotted paths), which keeps
//! its cache small. An object read from a file is pruned the same way, so
//! the policy never sees more than it would in a cluster.

use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// `object` with only the fields at `masks` (dotted paths); `None` or no
/// masks: the whole object.
pub fn prune(object: &Value, masks: Option<&BTreeSet<String>>) -> Value {
    let Some(masks) = masks.filter(|masks| !masks.is_empty()) else {
        return object.clone();
    };
    let mut kept = Value::Object(Map::new());
    for mask in masks {
        let path: Vec<&str> = mask.split('.').collect();
        if let Some(value) = lookup(object, &path) {
            insert(&mut kept, &path, value.clone());
        }
    }
    kept
}

fn lookup<'v>(object: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(object, |value, key| value.get(key))
}

fn insert(into: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = into;
    for key in parents {
        let Value::Object(fields) = at else { return };
        at = fields
            .entry((*key).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if let Value::Object(fields) = at {
        fields.insert((*last).to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn masks(masks: &[&str]) -> BTreeSet<String> {
        masks.iter().map(|mask| (*mask).to_owned()).collect()
    }

    #[rstest]
    #[case::the_node_masks(&["metadata.labels", "metadata.name"],
        json!({"metadata": {"name": "gpu-1", "labels": {"a": "1"}}}))]
    #[case::a_missing_field_is_left_out(&["metadata.labels", "spec.nothing"],
        json!({"metadata": {"labels": {"a": "1"}}}))]
    #[case::a_whole_branch(&["status"], json!({"status": {"capacity": {"cpu": "8"}}}))]
    fn objects_keep_only_the_masked_fields(#[case] names: &[&str], #[case] kept: Value) {
        let node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "gpu-1", "labels": {"a": "1"}, "uid": "x"},
            "status": {"capacity": {"cpu": "8"}}
        });
        assert_eq!(prune(&node, Some(&masks(names))), kept);
    }

    #[test]
    fn no_masks_keep_everything() {
        let node = json!({"metadata": {"name": "a"}, "spec": {}});
        assert_eq!(prune(&node, None), node);
        assert_eq!(prune(&node, Some(&BTreeSet::new())), node);
    }
}
