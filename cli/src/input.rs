//! Objects from files, directories and standard input.
//!
//! A path is a file, a directory (read recursively: its `*.yaml`, `*.yml` and
//! `*.json` files, sorted by path) or `-` (standard input). A file holds one
//! or more YAML documents (JSON is read as YAML: it is a subset); a `List`
//! object (`kind: List`, or any `*List` kind with `items`, as `kubectl get -o
//! yaml` and the API print them) stands for its items. Every object keeps
//! where it came from ([`Source`]), and every error names the file, the
//! document and, in a list, the item; nothing here panics on input.

use serde_json::Value;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The path that names standard input.
pub const STDIN: &str = "-";

/// The file endings a directory is searched for.
const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// Where one object came from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Source {
    /// The file as given or found (`-` for standard input).
    pub file: String,
    /// The document in the file, counted from 1 (empty documents are not
    /// counted: the YAML reader skips them).
    pub document: usize,
    /// The item of a `List` document, counted from 1.
    pub item: Option<usize>,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, document {}", self.file, self.document)?;
        if let Some(item) = self.item {
            write!(f, ", item {item}")?;
        }
        Ok(())
    }
}

/// One object and its source.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub source: Source,
    /// A JSON object (a mapping) with a string `kind`.
    pub object: Value,
}

impl Document {
    /// The object's `kind`.
    pub fn kind(&self) -> &str {
        self.object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// What is wrong with an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The file or directory cannot be read (missing, no permission, not UTF-8).
    Unreadable(String),
    /// A directory holds no `*.yaml`, `*.yml` or `*.json` file.
    EmptyDirectory,
    /// The text is not YAML (nor JSON).
    NotYaml(String),
    /// A document (or list item) is not a mapping.
    NotAMapping,
    /// A document (or list item) has no string `kind`.
    NoKind,
    /// A `List` whose `items` is not a sequence.
    ItemsNotASequence,
    /// A file that must hold one object holds another number of them.
    NotOneObject(usize),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Unreadable(why) => write!(f, "cannot be read: {why}"),
            Problem::EmptyDirectory => {
                f.write_str("the directory holds no *.yaml, *.yml or *.json file")
            }
            Problem::NotYaml(why) => write!(f, "is not YAML or JSON: {why}"),
            Problem::NotAMapping => f.write_str("is not a mapping (an object with fields)"),
            Problem::NoKind => f.write_str("has no `kind`"),
            Problem::ItemsNotASequence => f.write_str("is a List whose `items` is not a list"),
            Problem::NotOneObject(count) => {
                write!(f, "holds {count} objects where one is expected")
            }
        }
    }
}

/// An input error: where, and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// `FILE`, `FILE, document N` or `FILE, document N, item M`.
    pub place: String,
    pub problem: Problem,
}

impl InputError {
    fn in_file(file: &str, problem: Problem) -> Self {
        InputError {
            place: file.to_owned(),
            problem,
        }
    }

    fn at(source: &Source, problem: Problem) -> Self {
        InputError {
            place: source.to_string(),
            problem,
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.problem)
    }
}

impl std::error::Error for InputError {}

/// Every object in `paths`, in order: the paths as given, a directory's
/// files sorted by path, a file's documents in order, a list's items in
/// order. Standard input is read once, however often `-` is given.
pub fn read_documents(paths: &[PathBuf]) -> Result<Vec<Document>, InputError> {
    let mut documents = Vec::new();
    let mut stdin_read = false;
    for path in paths {
        if path.as_os_str() == STDIN {
            if !stdin_read {
                stdin_read = true;
                let text = read_stdin()?;
                documents.extend(parse_text(STDIN, &text)?);
            }
            continue;
        }
        for file in files_under(path)? {
            documents.extend(read_file(&file)?);
        }
    }
    Ok(documents)
}

/// The objects of one file (or `-`).
pub fn read_file(path: &Path) -> Result<Vec<Document>, InputError> {
    let name = path.display().to_string();
    if path.as_os_str() == STDIN {
        return parse_text(STDIN, &read_stdin()?);
    }
    let text = std::fs::read_to_string(path)
        .map_err(|error| InputError::in_file(&name, Problem::Unreadable(error.to_string())))?;
    parse_text(&name, &text)
}

/// The one value a file holds, whatever it is (a mapping, or nothing:
/// `Value::Null` for an empty file), for --settings. Lists are not expanded.
pub fn read_value(path: &Path) -> Result<Value, InputError> {
    let name = path.display().to_string();
    let text = if path.as_os_str() == STDIN {
        read_stdin()?
    } else {
        std::fs::read_to_string(path)
            .map_err(|error| InputError::in_file(&name, Problem::Unreadable(error.to_string())))?
    };
    let mut values = parse_values(&name, &text)?;
    match values.len() {
        0 => Ok(Value::Null),
        1 => Ok(values.remove(0)),
        count => Err(InputError::in_file(&name, Problem::NotOneObject(count))),
    }
}

/// The one object a file holds (a mapping with a `kind`), for --summary.
pub fn read_object(path: &Path) -> Result<Document, InputError> {
    let name = path.display().to_string();
    let values = read_value(path)?;
    let source = Source {
        file: name.clone(),
        document: 1,
        item: None,
    };
    if values.is_null() {
        return Err(InputError::in_file(&name, Problem::NotOneObject(0)));
    }
    check_object(&source, &values)?;
    Ok(Document {
        source,
        object: values,
    })
}

fn read_stdin() -> Result<String, InputError> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|error| InputError::in_file(STDIN, Problem::Unreadable(error.to_string())))?;
    Ok(text)
}

/// The files `path` stands for: itself, or a directory's matching files,
/// recursively, sorted by path.
fn files_under(path: &Path) -> Result<Vec<PathBuf>, InputError> {
    let name = path.display().to_string();
    let metadata = std::fs::metadata(path)
        .map_err(|error| InputError::in_file(&name, Problem::Unreadable(error.to_string())))?;
    if !metadata.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files = Vec::new();
    collect_files(path, &mut files)?;
    if files.is_empty() {
        return Err(InputError::in_file(&name, Problem::EmptyDirectory));
    }
    files.sort();
    Ok(files)
}

fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), InputError> {
    let unreadable = |error: std::io::Error| {
        InputError::in_file(
            &dir.display().to_string(),
            Problem::Unreadable(error.to_string()),
        )
    };
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let path = entry.map_err(unreadable)?.path();
        if path.is_dir() {
            collect_files(&path, files)?;
        } else if path
            .extension()
            .and_then(|extension| extension.to_str())
            .is_some_and(|extension| EXTENSIONS.contains(&extension))
        {
            files.push(path);
        }
    }
    Ok(())
}

/// The documents of a text as JSON values: a JSON text (one value or
/// several in a row) through serde_json, which keeps numbers exact, and
/// anything else through the YAML reader, document by document.
fn parse_values(file: &str, text: &str) -> Result<Vec<Value>, InputError> {
    let trimmed = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    if trimmed.starts_with(['{', '[']) {
        let mut values = Vec::new();
        for (index, value) in serde_json::Deserializer::from_str(trimmed)
            .into_iter::<Value>()
            .enumerate()
        {
            let value = value.map_err(|error| InputError {
                place: format!("{file}, document {}", index + 1),
                problem: Problem::NotYaml(error.to_string()),
            })?;
            values.push(value);
        }
        return Ok(values);
    }
    let mut values = Vec::new();
    let mut reader = text.as_bytes();
    for (index, value) in serde_saphyr::read::<_, Value>(&mut reader).enumerate() {
        let value = value.map_err(|error| InputError {
            place: format!("{file}, document {}", index + 1),
            problem: Problem::NotYaml(first_line(&error.to_string())),
        })?;
        if !value.is_null() {
            values.push(value);
        }
    }
    Ok(values)
}

/// The YAML reader's errors carry a source snippet over several lines; the
/// first says what is wrong and where.
fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or(text)
        .to_owned()
}

/// The objects of one file's text, lists expanded.
pub fn parse_text(file: &str, text: &str) -> Result<Vec<Document>, InputError> {
    let mut documents = Vec::new();
    for (index, value) in parse_values(file, text)?.into_iter().enumerate() {
        let source = Source {
            file: file.to_owned(),
            document: index + 1,
            item: None,
        };
        expand(source, value, &mut documents)?;
    }
    Ok(documents)
}

/// Checks that `value` is a mapping with a string `kind`.
fn check_object(source: &Source, value: &Value) -> Result<(), InputError> {
    let Value::Object(fields) = value else {
        return Err(InputError::at(source, Problem::NotAMapping));
    };
    match fields.get("kind") {
        Some(Value::String(kind)) if !kind.is_empty() => Ok(()),
        _ => Err(InputError::at(source, Problem::NoKind)),
    }
}

/// Whether an object of `kind` is a list of objects: `List`, or a `*List`
/// kind that has `items` (a kind merely ending in "List" without items is
/// an object like any other).
fn is_list(kind: &str, object: &serde_json::Map<String, Value>) -> bool {
    kind == "List" || (kind.ends_with("List") && object.contains_key("items"))
}

fn expand(source: Source, value: Value, out: &mut Vec<Document>) -> Result<(), InputError> {
    check_object(&source, &value)?;
    let Value::Object(mut list) = value else {
        return Err(InputError::at(&source, Problem::NotAMapping));
    };
    let kind = list
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if !is_list(&kind, &list) {
        out.push(Document {
            source,
            object: Value::Object(list),
        });
        return Ok(());
    }
    let items = match list.remove("items") {
        Some(Value::Array(items)) => items,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(InputError::at(&source, Problem::ItemsNotASequence)),
    };
    // The API's typed lists (NodeList, PodList) leave kind and apiVersion
    // out of their items; kubectl fills them in from the list, and so do we.
    let item_kind = kind.strip_suffix("List").filter(|kind| !kind.is_empty());
    let api_version = list.get("apiVersion").cloned();
    for (index, mut item) in items.into_iter().enumerate() {
        let item_source = Source {
            item: Some(index + 1),
            ..source.clone()
        };
        if let (Value::Object(fields), Some(item_kind)) = (&mut item, item_kind) {
            fields
                .entry("kind")
                .or_insert_with(|| Value::String(item_kind.to_owned()));
            if let Some(api_version) = &api_version {
                fields
                    .entry("apiVersion")
                    .or_insert_with(|| api_version.clone());
            }
        }
        check_object(&item_source, &item)?;
        out.push(Document {
            source: item_source,
            object: item,
        });
    }
    Ok(())
}
