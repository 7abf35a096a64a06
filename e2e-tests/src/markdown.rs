//! The parts of the repository's Markdown that its tests check: fenced code
//! blocks, headings and the anchors GitHub makes of them, inline code spans,
//! links, and the keys and labels a text names. Only the Markdown the
//! documents use is read: backtick fences, ATX headings (`## ...`), single
//! backtick code spans, inline links `[text](target)`.

use std::collections::{BTreeMap, BTreeSet};

/// A fenced code block: its info string, body and first line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub lang: String,
    pub body: String,
    pub line: usize,
}

/// Every fenced code block of `text`, in order.
///
/// # Panics
/// On a block left open: a document the tests cannot read.
pub fn code_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(lang)) => {
                open = Some(Block {
                    lang: lang.trim().to_owned(),
                    body: String::new(),
                    line: i + 1,
                })
            }
            (Some(_), Some(_)) => blocks.extend(open.take()),
            (Some(block), None) => {
                block.body.push_str(line);
                block.body.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "an unclosed code block");
    blocks
}

pub fn is_shell(block: &Block) -> bool {
    matches!(block.lang.as_str(), "sh" | "bash" | "shell" | "console")
}

pub fn shell_blocks(text: &str) -> Vec<Block> {
    code_blocks(text).into_iter().filter(is_shell).collect()
}

/// A block's first line, trimmed: where the documents mark how it is run.
pub fn first_line(block: &Block) -> &str {
    block.body.lines().next().unwrap_or_default().trim()
}

/// The lines of `text` outside fenced code blocks, with their numbers.
fn prose_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fenced = false;
    text.lines().enumerate().filter_map(move |(i, line)| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return None;
        }
        (!fenced).then_some((i + 1, line))
    })
}

/// `text` outside fenced code blocks.
pub fn prose(text: &str) -> String {
    prose_lines(text).map(|(_, l)| format!("{l}\n")).collect()
}

/// The headings outside code blocks: (level, title as written).
pub fn headings(text: &str) -> Vec<(usize, String)> {
    prose_lines(text)
        .filter_map(|(_, line)| {
            let level = line.len() - line.trim_start_matches('#').len();
            let title = line[level..].strip_prefix(' ')?;
            (1..=6)
                .contains(&level)
                .then(|| (level, title.trim().to_owned()))
        })
        .collect()
}

/// The anchor GitHub gives a heading: the rendered text (code spans'
/// backticks and link syntax gone) lowercased, every character that is not
/// a letter, digit, space, `-` or `_` removed, spaces made hyphens.
pub fn slug(title: &str) -> String {
    rendered(title)
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A heading's text as rendered: `[text](target)` becomes `text`, and code
/// spans lose their backticks.
fn rendered(title: &str) -> String {
    let mut out = String::new();
    let mut rest = title;
    while let Some(start) = rest.find('[') {
        let Some((text, after)) = rest[start + 1..].split_once("](") else {
            break;
        };
        let Some(end) = after.find(')') else { break };
        out.push_str(&rest[..start]);
        out.push_str(text);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out.replace('`', "")
}

/// Every anchor a link into `text` may name: its headings' slugs, a repeated
/// slug numbered as GitHub numbers it (`-1`, `-2`, ...).
pub fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    for (_, title) in headings(text) {
        let slug = slug(&title);
        let count = seen.entry(slug.clone()).or_default();
        anchors.insert(match *count {
            0 => slug,
            n => format!("{slug}-{n}"),
        });
        *count += 1;
    }
    anchors
}

/// The inline code spans outside code blocks, whitespace collapsed (a span
/// may wrap over lines).
pub fn code_spans(text: &str) -> Vec<String> {
    prose(text)
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|span| span.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// `text` outside code blocks and code spans: what Markdown renders as prose.
fn plain(text: &str) -> String {
    prose(text).split('`').step_by(2).collect()
}

/// The targets of the inline links and images outside code, in order.
pub fn links(text: &str) -> Vec<String> {
    let plain = plain(text);
    let mut targets = Vec::new();
    let mut rest = plain.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find([')', ' ', '\n']).unwrap_or(after.len());
        targets.push(after[..end].to_owned());
        rest = &after[end..];
    }
    targets
}

/// The words documents in two languages must name alike: labels, settings
/// keys, and camelCase keys (kubelet configuration, Kubernetes fields).
pub fn named_keys(text: &str) -> BTreeSet<String> {
    const SETTINGS_ROOTS: [&str; 3] = ["qos.", "topology.", "capacity."];
    const TOP_LEVEL_SETTINGS: [&str; 3] = ["gpuResources", "labelPrefix", "exemptNamespaces"];
    let is_word = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '-' | '_');
    let mut keys = BTreeSet::new();
    for token in text.split(|c: char| !is_word(c)) {
        let token = token.trim_end_matches(['.', '-', '/']);
        if let Some(at) = token.find("gpu-topology.io/") {
            keys.insert(token[at..].to_owned());
        } else if SETTINGS_ROOTS.iter().any(|root| {
            token
                .strip_prefix(root)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_lowercase()))
        }) || TOP_LEVEL_SETTINGS.contains(&token)
            || is_camel_case(token)
        {
            keys.insert(token.to_owned());
        }
    }
    keys
}

/// `topologyManagerPolicy`, `reservedSystemCPUs`: a lowercase start, then
/// an uppercase letter; letters and digits only.
fn is_camel_case(token: &str) -> bool {
    token.starts_with(|c: char| c.is_ascii_lowercase())
        && token.chars().all(|c| c.is_ascii_alphanumeric())
        && token.chars().any(|c| c.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_githubs() {
        for (title, slug_) in [
            (
                "With the kubelet's Topology Manager and CPU Manager",
                "with-the-kubelets-topology-manager-and-cpu-manager",
            ),
            (
                "Checking a node with `--dry-run`",
                "checking-a-node-with---dry-run",
            ),
            ("Fleet summary (`summarize`)", "fleet-summary-summarize"),
            (
                "Large clusters: the fleet summary",
                "large-clusters-the-fleet-summary",
            ),
            (
                "1. The kubelet settings alignment needs",
                "1-the-kubelet-settings-alignment-needs",
            ),
            (
                "运维指南：从只配 kubelet 到 GPU Pod 对齐",
                "运维指南从只配-kubelet-到-gpu-pod-对齐",
            ),
            ("See [the guide](guide.md) first", "see-the-guide-first"),
        ] {
            assert_eq!(slug(title), slug_, "{title}");
        }
    }

    #[test]
    fn repeated_headings_are_numbered() {
        let anchors = anchors("# A\n## Notes\n## Notes\n```sh\n# Notes\n```\n");
        assert_eq!(
            anchors,
            BTreeSet::from(["a".into(), "notes".into(), "notes-1".into()])
        );
    }

    #[test]
    fn links_and_spans_outside_code() {
        let text = "See [a](a.md#x) and `[b](b.md)`,\n![img](i.png) `two\n words`.\n```md\n[c](c.md)\n```\n";
        assert_eq!(links(text), ["a.md#x", "i.png"]);
        assert_eq!(code_spans(text), ["[b](b.md)", "two words"]);
    }
}
