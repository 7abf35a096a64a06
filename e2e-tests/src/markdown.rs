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
    /// The 1-based line of its opening fence.
    pub line: usize,
}

impl Block {
    /// The 1-based line of the body's first line, where a line of the body
    /// is counted from in messages about it.
    pub fn body_line(&self) -> usize {
        self.line + 1
    }
}

/// A code block whose closing fence is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnclosedBlock {
    /// The 1-based line of its opening fence.
    pub line: usize,
}

impl std::fmt::Display for UnclosedBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: an unclosed code block", self.line)
    }
}

impl std::error::Error for UnclosedBlock {}

/// What a line of a document is, by the fences before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind<'a> {
    Prose,
    /// A block's opening fence, with its info string.
    Opening(&'a str),
    Body,
    Closing,
}

/// Each line of `text` with its 1-based number and kind. A fence is a line
/// that starts (after indentation) with three backticks; an opening one's
/// info string holds no backtick (CommonMark), so prose that quotes a fence
/// in a code span (```` ```yaml ````) opens no block.
fn classified_lines(text: &str) -> impl Iterator<Item = (usize, &str, LineKind<'_>)> {
    let mut in_block = false;
    text.lines().enumerate().map(move |(i, line)| {
        let fence = line
            .trim_start()
            .strip_prefix("```")
            .map(|rest| rest.trim_start_matches('`'));
        let kind = match fence {
            Some(_) if in_block => LineKind::Closing,
            Some(info) if !info.contains('`') => LineKind::Opening(info.trim()),
            _ if in_block => LineKind::Body,
            _ => LineKind::Prose,
        };
        in_block = matches!(kind, LineKind::Opening(_) | LineKind::Body);
        (i + 1, line, kind)
    })
}

/// Every fenced code block of `text`, in order, or the block left open.
pub fn try_code_blocks(text: &str) -> Result<Vec<Block>, UnclosedBlock> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (number, line, kind) in classified_lines(text) {
        match (&mut open, kind) {
            (None, LineKind::Opening(lang)) => {
                open = Some(Block {
                    lang: lang.to_owned(),
                    body: String::new(),
                    line: number,
                })
            }
            (Some(_), LineKind::Closing) => blocks.extend(open.take()),
            (Some(block), _) => {
                block.body.push_str(line);
                block.body.push('\n');
            }
            (None, _) => {}
        }
    }
    match open {
        Some(block) => Err(UnclosedBlock { line: block.line }),
        None => Ok(blocks),
    }
}

/// Every fenced code block of `text`, in order.
///
/// # Panics
/// On a block left open: a document the tests cannot read.
pub fn code_blocks(text: &str) -> Vec<Block> {
    try_code_blocks(text).unwrap_or_else(|e| panic!("{e}"))
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
    classified_lines(text)
        .filter(|(_, _, kind)| *kind == LineKind::Prose)
        .map(|(number, line, _)| (number, line))
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
    const SETTINGS_ROOTS: [&str; 4] = ["qos.", "topology.", "capacity.", "dra."];
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

    /// (document, its blocks as (lang, body, fence line), or the unclosed
    /// block's fence line): the line numbers the messages about a block use.
    #[rstest::rstest]
    #[case::two_blocks("# A\n```yaml\na: 1\n```\ntext\n  ```sh\n  ls\n  ```\n", Ok(vec![("yaml", "a: 1\n", 2), ("sh", "  ls\n", 6)]))]
    #[case::a_quoted_fence_opens_none("Every ```` ```yaml ```` block\n```json\n{}\n```\n", Ok(vec![("json", "{}\n", 2)]))]
    #[case::a_block_left_open("text\n```yaml\na: 1\n", Err(2))]
    fn code_blocks_and_their_lines(
        #[case] text: &str,
        #[case] expected: Result<Vec<(&str, &str, usize)>, usize>,
    ) {
        let found = try_code_blocks(text)
            .map(|blocks| {
                blocks
                    .iter()
                    .map(|b| (b.lang.clone(), b.body.clone(), b.line))
                    .collect::<Vec<_>>()
            })
            .map_err(|e| e.line);
        let expected = expected.map(|blocks| {
            blocks
                .into_iter()
                .map(|(lang, body, line)| (lang.to_owned(), body.to_owned(), line))
                .collect::<Vec<_>>()
        });
        assert_eq!(found, expected);
    }

    #[test]
    fn prose_leaves_out_blocks_but_not_quoted_fences() {
        let text = "# A\nEvery ```` ```yaml ```` block\n```yaml\n# not a heading\n```\n## B\n";
        assert_eq!(headings(text), [(1, "A".to_owned()), (2, "B".to_owned())]);
    }

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
