//! Finds every settings block the repository shows an operator: the
//! `settings` of each Kubewarden policy manifest (`ClusterAdmissionPolicy`,
//! `AdmissionPolicy`, and the members of their policy groups), spec
//! fragments that carry `settings:`, settings files and fragments (a mapping
//! with a top-level settings key such as `topology:`), and `kwctl run
//! --settings-json '...'` in shell blocks. It reads the YAML and JSON files
//! and the fenced `yaml`, `yml` and `json` blocks of Markdown files, so the
//! docs can be reorganised freely: a block is found wherever it moves.
//!
//! Each block is read twice, as kwctl reads a settings file (YAML 1.2) and
//! as kubectl reads a manifest (YAML 1.1, sigs.k8s.io/yaml: an unquoted
//! `off`, `no` or `yes` is a boolean), so that `tests/documented_settings.rs`
//! can hand both to the module's `validate_settings`. serde_yaml keeps no
//! quoting, so the kubectl reading turns those words into booleans whether
//! quoted or not: the stricter of the two.

use crate::markdown::{is_shell, try_code_blocks};
use crate::repo_files::repo_files;
use anyhow::{anyhow, Context, Result};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The top-level keys of the policy's settings (src/settings, `Settings`):
/// a mapping with one of them, and no `kind`, is a settings block.
pub const SETTINGS_KEYS: [&str; 7] = [
    "gpuResources",
    "labelPrefix",
    "exemptNamespaces",
    "qos",
    "topology",
    "capacity",
    "dra",
];

/// The kinds whose `spec.settings` is a policy's settings.
const POLICY_KINDS: [&str; 2] = ["ClusterAdmissionPolicy", "AdmissionPolicy"];
/// The kinds whose `spec.policies.<name>.settings` are.
const POLICY_GROUP_KINDS: [&str; 2] = ["ClusterAdmissionPolicyGroup", "AdmissionPolicyGroup"];
/// A manifest whose `module` names none of these runs another policy.
const MODULE_NAME: &str = "gpu-topology";
/// The shell argument that carries settings inline.
const SETTINGS_JSON_FLAG: &str = "--settings-json '";

/// Folders never searched besides build output and version control
/// ([`crate::repo_files`]): test inputs that are refused on purpose
/// (scenarios, fixtures) and fuzz corpora.
const SKIPPED_DIRS: [&str; 3] = ["fixtures", "scenarios", "fuzz"];
/// The files that can hold settings blocks.
const SEARCHED_EXTENSIONS: [&str; 4] = ["md", "yaml", "yml", "json"];

/// One settings block and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsBlock {
    /// The file, relative to the searched root.
    pub file: PathBuf,
    /// The 1-based line of the block: its `settings:` line where there is
    /// one, else the start of its document or code block.
    pub line: usize,
    /// What it is, e.g. `ClusterAdmissionPolicy gpu-topology`.
    pub what: String,
    /// The settings as kwctl and serde read them (YAML 1.2).
    pub settings: Value,
    /// The settings as kubectl hands them to the cluster (YAML 1.1 booleans).
    pub as_kubectl_reads_them: Value,
}

impl SettingsBlock {
    /// `file:line (what)`, for a failure message.
    pub fn location(&self) -> String {
        format!("{}:{} ({})", self.file.display(), self.line, self.what)
    }
}

/// Every settings block in the Markdown, YAML and JSON files under `root`.
pub fn find_all(root: &Path) -> Result<Vec<SettingsBlock>> {
    let files = repo_files(root, &SKIPPED_DIRS)
        .with_context(|| format!("cannot list the files under {}", root.display()))?;
    let mut blocks = Vec::new();
    for relative in files {
        let searched = relative
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| SEARCHED_EXTENSIONS.contains(&e));
        if !searched {
            continue;
        }
        let path = root.join(&relative);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        blocks.extend(find_in_file(&relative, &text)?);
    }
    Ok(blocks)
}

/// The settings blocks of one file, by its extension.
pub fn find_in_file(file: &Path, text: &str) -> Result<Vec<SettingsBlock>> {
    let name = file.to_string_lossy();
    if name.ends_with(".md") {
        find_in_markdown(file, text)
    } else {
        find_in_yaml(file, text, 1)
    }
}

fn find_in_markdown(file: &Path, text: &str) -> Result<Vec<SettingsBlock>> {
    let blocks = try_code_blocks(text).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    let mut found = Vec::new();
    for block in blocks {
        if matches!(block.lang.as_str(), "yaml" | "yml" | "json") {
            found.extend(find_in_yaml(file, &block.body, block.body_line())?)
        } else if is_shell(&block) {
            found.extend(find_in_shell(file, &block.body, block.body_line())?)
        }
    }
    Ok(found)
}

/// `--settings-json '...'` arguments (the JSON in single quotes, as a
/// shell passes it).
fn find_in_shell(file: &Path, body: &str, first_line: usize) -> Result<Vec<SettingsBlock>> {
    let mut found = Vec::new();
    for (offset, line) in body.lines().enumerate() {
        let mut rest = line;
        while let Some(start) = rest.find(SETTINGS_JSON_FLAG) {
            let after = &rest[start + SETTINGS_JSON_FLAG.len()..];
            let json = after.split('\'').next().unwrap_or_default();
            let at = first_line + offset;
            let settings: Value = serde_json::from_str(json)
                .with_context(|| format!("{}:{at}: --settings-json is not JSON", file.display()))?;
            found.push(block(file, at, "kwctl run --settings-json", settings));
            rest = &after[json.len()..];
        }
    }
    Ok(found)
}

/// The 0-based line where each YAML document of `text` starts.
fn document_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    for (index, line) in text.lines().enumerate() {
        if index > 0 && (line == "---" || line.starts_with("--- ")) {
            starts.push(index + 1);
        }
    }
    starts
}

fn find_in_yaml(file: &Path, text: &str, first_line: usize) -> Result<Vec<SettingsBlock>> {
    let starts = document_starts(text);
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (index, document) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let start = starts.get(index).copied().unwrap_or(0).min(lines.len());
        let end = starts
            .get(index + 1)
            .copied()
            .unwrap_or(lines.len())
            .min(lines.len());
        let value = serde_yaml::Value::deserialize(document).with_context(|| {
            format!(
                "{}:{}: not YAML, so its settings cannot be checked",
                file.display(),
                first_line + start
            )
        })?;
        // The document's `settings:` lines, in order: the n-th found block
        // that has the key is on the n-th of them.
        let mut settings_lines = lines[start..end]
            .iter()
            .enumerate()
            .filter(|(_, line)| line.trim_start().starts_with("settings:"))
            .map(|(offset, _)| first_line + start + offset);
        for found_settings in settings_of(&value) {
            let line = if found_settings.written {
                settings_lines.next()
            } else {
                None
            };
            found.push(block(
                file,
                line.unwrap_or(first_line + start),
                &found_settings.what,
                found_settings.settings,
            ));
        }
    }
    Ok(found)
}

fn block(file: &Path, line: usize, what: &str, settings: impl Into<Reading>) -> SettingsBlock {
    let reading = settings.into();
    SettingsBlock {
        file: file.to_path_buf(),
        line,
        what: what.to_owned(),
        settings: reading.yaml_1_2,
        as_kubectl_reads_them: reading.yaml_1_1,
    }
}

/// A block's two readings.
pub struct Reading {
    yaml_1_2: Value,
    yaml_1_1: Value,
}

impl From<serde_yaml::Value> for Reading {
    fn from(value: serde_yaml::Value) -> Self {
        let json = yaml_to_json(&value);
        Reading {
            yaml_1_1: yaml_1_1_booleans(&json),
            yaml_1_2: json,
        }
    }
}

impl From<Value> for Reading {
    /// JSON (`--settings-json`) has no YAML reading: both are the same.
    fn from(value: Value) -> Self {
        Reading {
            yaml_1_1: value.clone(),
            yaml_1_2: value,
        }
    }
}

/// serde_yaml's value as JSON; a key that is not a string (YAML allows
/// any) becomes its YAML text.
fn yaml_to_json(value: &serde_yaml::Value) -> Value {
    use serde_yaml::Value as Y;
    match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(*b),
        Y::Number(n) => serde_json::to_value(n).unwrap_or(Value::Null),
        Y::String(s) => Value::String(s.clone()),
        Y::Sequence(items) => Value::Array(items.iter().map(yaml_to_json).collect()),
        Y::Mapping(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Y::String(s) => s.clone(),
                        other => serde_yaml::to_string(other)
                            .unwrap_or_default()
                            .trim()
                            .to_owned(),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        Y::Tagged(tagged) => yaml_to_json(&tagged.value),
    }
}

/// The words goyaml.v2 (sigs.k8s.io/yaml, which kubectl reads manifests
/// with) resolves to booleans (`resolve.go`); YAML 1.2 reads them as strings.
const YAML_1_1_TRUE: [&str; 11] = [
    "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
];
const YAML_1_1_FALSE: [&str; 11] = [
    "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
];

/// `value` with every string that YAML 1.1 reads as a boolean turned into it.
fn yaml_1_1_booleans(value: &Value) -> Value {
    match value {
        Value::String(s) if YAML_1_1_TRUE.contains(&s.as_str()) => Value::Bool(true),
        Value::String(s) if YAML_1_1_FALSE.contains(&s.as_str()) => Value::Bool(false),
        Value::Array(items) => Value::Array(items.iter().map(yaml_1_1_booleans).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), yaml_1_1_booleans(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Settings found in a YAML document.
struct Found {
    what: String,
    settings: serde_yaml::Value,
    /// Under a `settings:` key (else a whole settings file or fragment, or
    /// a policy manifest without settings).
    written: bool,
}

/// The settings one YAML document holds, each with what it is.
fn settings_of(value: &serde_yaml::Value) -> Vec<Found> {
    let mut found = Vec::new();
    collect_settings(value, &mut found);
    found
}

fn text<'a>(value: &'a serde_yaml::Value, key: &str) -> &'a str {
    value
        .get(key)
        .and_then(serde_yaml::Value::as_str)
        .unwrap_or_default()
}

fn runs_this_policy(spec: &serde_yaml::Value) -> bool {
    spec.get("module").is_none() || text(spec, "module").contains(MODULE_NAME)
}

/// A policy's settings: absent from a manifest, they are `null`, the defaults.
fn policy_settings(what: String, spec: &serde_yaml::Value) -> Found {
    let settings = spec.get("settings");
    Found {
        what,
        written: settings.is_some(),
        settings: settings.cloned().unwrap_or(serde_yaml::Value::Null),
    }
}

fn collect_settings(value: &serde_yaml::Value, found: &mut Vec<Found>) {
    use serde_yaml::Value as Y;
    match value {
        Y::Sequence(items) => {
            for item in items {
                collect_settings(item, found);
            }
        }
        Y::Mapping(map) => {
            let kind = text(value, "kind");
            let name = value
                .get("metadata")
                .map(|m| text(m, "name"))
                .unwrap_or_default();
            let spec = value.get("spec").unwrap_or(&Y::Null);
            let under_settings = |what: &str, settings: &Y| Found {
                what: what.to_owned(),
                settings: settings.clone(),
                written: true,
            };
            if POLICY_KINDS.contains(&kind) {
                if runs_this_policy(spec) {
                    found.push(policy_settings(format!("{kind} {name}"), spec));
                }
            } else if POLICY_GROUP_KINDS.contains(&kind) {
                if let Some(Y::Mapping(members)) = spec.get("policies") {
                    for (member, policy) in members.iter().filter(|(_, p)| runs_this_policy(p)) {
                        let member = member.as_str().unwrap_or_default();
                        found.push(policy_settings(
                            format!("{kind} {name}, policy {member}"),
                            policy,
                        ));
                    }
                }
            } else if kind == "List" {
                if let Some(items) = value.get("items") {
                    collect_settings(items, found);
                }
            } else if !kind.is_empty() {
                // Another Kubernetes object: not a policy's.
            } else if let Some(settings @ (Y::Mapping(_) | Y::Null)) = map.get("settings") {
                found.push(under_settings("a spec's settings", settings));
            } else if let Some(settings @ (Y::Mapping(_) | Y::Null)) =
                spec.get("settings").filter(|_| runs_this_policy(spec))
            {
                found.push(under_settings("a spec's settings", settings));
            } else if map
                .keys()
                .any(|key| key.as_str().is_some_and(|key| SETTINGS_KEYS.contains(&key)))
            {
                found.push(Found {
                    what: "settings file or fragment".to_owned(),
                    settings: value.clone(),
                    written: false,
                });
            }
        }
        _ => {}
    }
}
