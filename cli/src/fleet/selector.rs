//! Label selectors as the API server reads them (`labels.Parse` of
//! apimachinery): requirements joined by commas, each `key`, `!key`,
//! `key=value`, `key==value`, `key!=value`, `key in (a,b)` or `key notin
//! (a,b)`. The policy lists Nodes with `<prefix>/gpus` (exists); the file
//! reader answers any selector it is sent the same way the API would.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Exists(String),
    DoesNotExist(String),
    /// `=`, `==` and `in`: the label is one of the values.
    In(String, Vec<String>),
    /// `!=` and `notin`: the label is absent or none of the values.
    NotIn(String, Vec<String>),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector(Vec<Requirement>);

impl Selector {
    /// Parses `text`; `Err` says what the API server would refuse.
    pub fn parse(text: &str) -> Result<Self, String> {
        split_requirements(text)
            .into_iter()
            .filter(|part| !part.trim().is_empty())
            .map(|part| requirement(part.trim()))
            .collect::<Result<_, _>>()
            .map(Selector)
            .map_err(|problem| {
                format!("unable to parse requirement in label selector {text:?}: {problem}")
            })
    }

    /// Whether an object with `labels` (its `metadata.labels`) is selected.
    pub fn matches(&self, labels: Option<&Value>) -> bool {
        let label = |key: &str| {
            labels
                .and_then(|labels| labels.get(key))
                .and_then(Value::as_str)
        };
        self.0.iter().all(|requirement| match requirement {
            Requirement::Exists(key) => label(key).is_some(),
            Requirement::DoesNotExist(key) => label(key).is_none(),
            Requirement::In(key, values) => {
                label(key).is_some_and(|v| values.iter().any(|x| x == v))
            }
            Requirement::NotIn(key, values) => {
                !label(key).is_some_and(|v| values.iter().any(|x| x == v))
            }
        })
    }
}

/// The requirements, split on the commas outside parentheses.
fn split_requirements(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (index, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn requirement(text: &str) -> Result<Requirement, String> {
    if let Some(key) = text.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(key_of(key)?));
    }
    for (operator, negated) in [("!=", true), ("==", false), ("=", false)] {
        if let Some((key, value)) = text.split_once(operator) {
            let (key, values) = (key_of(key)?, vec![value.trim().to_owned()]);
            return Ok(if negated {
                Requirement::NotIn(key, values)
            } else {
                Requirement::In(key, values)
            });
        }
    }
    let words: Vec<&str> = text.splitn(2, char::is_whitespace).collect();
    if let [key, rest] = words[..] {
        let rest = rest.trim_start();
        for (operator, negated) in [("notin", true), ("in", false)] {
            if let Some(list) = rest.strip_prefix(operator) {
                let values = list
                    .trim()
                    .strip_prefix('(')
                    .and_then(|list| list.strip_suffix(')'))
                    .ok_or_else(|| format!("{text:?}: expected a parenthesised list of values"))?
                    .split(',')
                    .map(|value| value.trim().to_owned())
                    .collect();
                let key = key_of(key)?;
                return Ok(if negated {
                    Requirement::NotIn(key, values)
                } else {
                    Requirement::In(key, values)
                });
            }
        }
        return Err(format!("{text:?}: unknown operator"));
    }
    Ok(Requirement::Exists(key_of(text)?))
}

fn key_of(text: &str) -> Result<String, String> {
    let key = text.trim();
    if key.is_empty() || key.contains(char::is_whitespace) {
        return Err(format!("{key:?} is not a label key"));
    }
    Ok(key.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case::the_policy_s_selector("gpu-topology.io/gpus", true)]
    #[case::exists_absent("other.io/x", false)]
    #[case::does_not_exist("!other.io/x", true)]
    #[case::equals("pool=train", true)]
    #[case::double_equals("pool==serve", false)]
    #[case::not_equals("pool!=serve", true)]
    #[case::in_set("pool in (serve, train)", true)]
    #[case::notin_set("pool notin (train)", false)]
    #[case::all_must_hold("gpu-topology.io/gpus,pool in (a,train),!x", true)]
    #[case::empty("", true)]
    fn selectors_match_as_the_api_server_does(#[case] selector: &str, #[case] selected: bool) {
        let labels = json!({"gpu-topology.io/gpus": "8", "pool": "train"});
        assert_eq!(
            Selector::parse(selector).unwrap().matches(Some(&labels)),
            selected
        );
    }

    #[rstest]
    #[case::unknown_operator("pool within (a)")]
    #[case::unparenthesised_set("pool in a,b")]
    #[case::no_key("=x")]
    fn bad_selectors_are_refused(#[case] selector: &str) {
        assert!(Selector::parse(selector).is_err());
    }

    #[test]
    fn a_node_without_labels_matches_only_negative_requirements() {
        assert!(!Selector::parse("a").unwrap().matches(None));
        assert!(Selector::parse("!a,b!=c").unwrap().matches(None));
    }
}
