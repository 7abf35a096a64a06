//! Objects from files and directories: lists expanded, sources kept, and
//! every bad input named by file, document and item.

use gpu_topology_cli::input::{read_documents, read_object, Problem, Source};
use rstest::rstest;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/input")
        .join(name)
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

/// (input, the objects' `metadata.name` and source in order).
#[rstest]
#[case::multi_document_skips_empty("two-pods.yaml", &[("first", 1, None), ("second", 2, None)])]
#[case::typed_list_items_get_kind("node-list.json", &[("gpu-a", 1, Some(1)), ("gpu-b", 1, Some(2))])]
#[case::kubectl_list("kubectl-list.yaml", &[("serve", 1, Some(1)), ("train", 1, Some(2))])]
fn objects_keep_their_source(
    #[case] file: &str,
    #[case] expected: &[(&str, usize, Option<usize>)],
) {
    let path = fixture(file);
    let documents = read_documents(std::slice::from_ref(&path)).unwrap();
    let found: Vec<(String, Source)> = documents
        .iter()
        .map(|d| {
            let name = d.object.pointer("/metadata/name").and_then(|n| n.as_str());
            (name.unwrap_or_default().to_owned(), d.source.clone())
        })
        .collect();
    let wanted: Vec<(String, Source)> = expected
        .iter()
        .map(|(name, document, item)| {
            let source = Source {
                file: shown(&path),
                document: *document,
                item: *item,
            };
            ((*name).to_owned(), source)
        })
        .collect();
    assert_eq!(found, wanted);
    assert!(documents.iter().all(|d| !d.kind().is_empty()));
}

#[test]
fn a_node_list_s_items_take_the_list_s_kind_and_api_version() {
    let documents = read_documents(&[fixture("node-list.json")]).unwrap();
    assert_eq!(documents[0].kind(), "Node");
    assert_eq!(documents[0].object["apiVersion"], "v1");
}

#[test]
fn a_directory_is_read_recursively_in_path_order() {
    let documents = read_documents(&[fixture("dir")]).unwrap();
    let names: Vec<&str> = documents
        .iter()
        .filter_map(|d| d.object.pointer("/metadata/name").and_then(|n| n.as_str()))
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert!(documents[2].source.file.ends_with("nested/c.yml"));
}

/// (input, where in it the error points, what it says is wrong).
#[rstest]
#[case::missing_file("no-such-file.yaml", "", "cannot be read")]
#[case::not_yaml("not-yaml.yaml", ", document 1", "is not YAML or JSON")]
#[case::second_document_not_yaml("second-not-yaml.yaml", ", document 2", "is not YAML or JSON")]
#[case::not_a_mapping("scalar.yaml", ", document 1", "is not a mapping")]
#[case::no_kind("no-kind.yaml", ", document 2", "has no `kind`")]
#[case::list_item_without_kind("list-item-no-kind.yaml", ", document 1, item 2", "has no `kind`")]
#[case::items_not_a_list("items-not-a-list.yaml", ", document 1", "`items` is not a list")]
#[case::directory_without_objects("empty-dir-has-no-objects", "", "holds no *.yaml")]
fn bad_input_is_named(#[case] file: &str, #[case] within: &str, #[case] says: &str) {
    let error = read_documents(&[fixture(file)]).unwrap_err();
    assert_eq!(error.place, shown(&fixture(file)) + within);
    assert!(error.to_string().contains(says), "{error}");
}

#[test]
fn a_single_object_file_must_hold_one_object() {
    let error = read_object(&fixture("two-pods.yaml")).unwrap_err();
    assert_eq!(error.problem, Problem::NotOneObject(2));
    assert_eq!(read_object(&fixture("dir/b.yaml")).unwrap().kind(), "Pod");
}
