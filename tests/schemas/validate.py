#!/usr/bin/env python3
"""Validates every Kubernetes object the repository ships or quotes against
pinned schemas, in strict mode (an unknown field is an error).

Run by tests/manifest_schemas.rs (part of `make test`), with the Python of
target/schema-venv (`make schema-venv`, packages pinned in requirements.txt):

    validate.py --kubernetes 1.32 --kubernetes 1.37 REPO_ROOT

What is checked (the rule docs/support-matrix.md states):
- every YAML document of every *.yaml / *.yml file, and every ```yaml / ```yml
  block of every *.md file, anywhere in the repository except target/, .git/,
  fuzz/ and any directory named `fixtures` (test inputs, some malformed on
  purpose);
- a document or block is an object when it is a mapping with a string
  `apiVersion` and `kind`; anything else (a fragment such as a `settings:`
  excerpt, a plan, a replay file) is skipped and counted;
- an object of a built-in API is validated with kubernetes-validate's strict
  schemas for each version given that serves its apiVersion and kind: an API
  newer than the oldest version given is validated from the first given
  version that serves it on, and skipped (counted in the summary) for the
  older ones. resource.k8s.io/v1 (DeviceClass, ResourceSlice, ResourceClaim,
  ResourceClaimTemplate: DRA) is served from Kubernetes 1.34, so the DRA
  objects the docs quote are validated against 1.37, not 1.32. A version
  given after one that serves the object but that does not serve it itself
  (an API removed since) is an error, and so is an object no version given
  serves;
- an object of a vendored CRD (tests/schemas/crds/*.yaml and the NodeFeature
  CRD the labeler's tests use) is validated against that CRD's
  openAPIV3Schema for each version given, made strict the way the API
  server prunes (an object with `properties` and no `additionalProperties`
  or `x-kubernetes-preserve-unknown-fields` admits no other field), with
  `metadata` checked as the version's ObjectMeta;
- the kinds in NOT_API_OBJECTS are files that no API server serves (or CRDs
  we do not vendor): skipped, each with its reason, and counted. Any other
  kind without a schema is an error: vendor its CRD, or say why not here.

Prints one line per error as `path:line: kind/name: Kubernetes X.Y: field: message`
and a closing summary; exits 1 when anything failed.
"""

import argparse
import copy
import os
import re
import sys

import importlib_resources
import jsonschema
import kubernetes_validate
import yaml
from kubernetes_validate.utils import all_versions, major_minor
from referencing import Registry, Resource

HERE = os.path.dirname(os.path.abspath(__file__))

# (apiVersion, kind) -> why the object is not validated.
NOT_API_OBJECTS = {
    ("kubelet.config.k8s.io/v1beta1", "KubeletConfiguration"):
        "a kubelet's config file, read from disk; no API server serves it",
    ("eksctl.io/v1alpha5", "ClusterConfig"):
        "eksctl's input file; no API server serves it",
    ("node.eks.aws/v1alpha1", "NodeConfig"):
        "nodeadm's input (EC2 user data, read on the node at boot); no API server serves it",
    ("machineconfiguration.openshift.io/v1", "KubeletConfig"):
        "OpenShift's Machine Config Operator CRD, not vendored (docs/guide.md quotes one KubeletConfig)",
    ("karpenter.sh/v1", "NodePool"):
        "Karpenter's CRD, not vendored (examples/autoscaling is checked by tests/autoscaling_examples.rs)",
    ("karpenter.k8s.aws/v1", "EC2NodeClass"):
        "Karpenter's CRD, not vendored (examples/autoscaling is checked by tests/autoscaling_examples.rs)",
    ("monitoring.coreos.com/v1", "PrometheusRule"):
        "the Prometheus Operator's CRD, not vendored (examples/labeler/monitoring is checked by "
        "labeler/tests/examples.rs and labeler/tests/health_endpoint.rs)",
    ("monitoring.coreos.com/v1", "PodMonitor"):
        "the Prometheus Operator's CRD, not vendored (examples/labeler/monitoring is checked by "
        "labeler/tests/examples.rs)",
    ("gpu-topology.io/v1alpha1", "ExplainReport"):
        "gpu-topology explain's output (cli/README.md), printed, never applied; its golden outputs are cli/tests/snapshots",
    ("gpu-topology.io/v1alpha1", "WhatIfReport"):
        "gpu-topology what-if's output (cli/README.md), printed, never applied; its golden outputs are cli/tests/snapshots",
    ("gpu-topology.io/v1alpha1", "AuditReport"):
        "gpu-topology audit's output (cli/README.md), printed, never applied; its golden outputs are cli/tests/snapshots",
}

# The CRDs objects are validated against, relative to the repository root.
CRD_FILES = [
    "tests/schemas/crds/clusteradmissionpolicies.policies.kubewarden.io.yaml",
    "tests/schemas/crds/policyservers.policies.kubewarden.io.yaml",
    "tests/schemas/crds/securitycontextconstraints.security.openshift.io.yaml",
    "labeler/tests/fixtures/nfd/nodefeature-crd.yaml",
]

# The repository walk of e2e-tests/src/repo_files.rs (the Rust tests'):
# links are not followed (the labeler's sysfs fixtures link SR-IOV functions
# both ways, a cycle), version control and build output are never entered,
# wherever they are, nor the folders a .gitignore names with an anchored
# literal entry (`/target`, `/.gl/`). Besides those, this check skips fuzz
# inputs, test fixtures and hidden folders.
SKIPPED_EVERYWHERE = {".git", "target", "node_modules"}
SKIPPED_DIRS = SKIPPED_EVERYWHERE | {"fuzz", "fixtures"}
OBJECT_META = "/api/_definitions.json#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


class Loader(yaml.SafeLoader):
    """SafeLoader that keeps `=` a plain string (as kubernetes-validate does)."""


Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: str(node.value))


def strict_crd_schema(schema, top=True):
    """The CRD's structural schema as a strict JSON schema (draft 2020-12)."""
    schema = copy.deepcopy(schema)
    schema.pop("description", None)
    if schema.pop("x-kubernetes-int-or-string", False):
        schema.pop("type", None)
        schema["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if schema.pop("nullable", False) and "type" in schema:
        schema["type"] = [schema["type"], "null"]
    for key in [k for k in schema if k.startswith("x-kubernetes-")]:
        if key != "x-kubernetes-preserve-unknown-fields":
            schema.pop(key)
    preserve = schema.pop("x-kubernetes-preserve-unknown-fields", False)
    properties = schema.get("properties")
    if properties is not None:
        schema["properties"] = {k: strict_crd_schema(v, top=False) for k, v in properties.items()}
        if not preserve and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
    if isinstance(schema.get("additionalProperties"), dict):
        schema["additionalProperties"] = strict_crd_schema(schema["additionalProperties"], top=False)
    if isinstance(schema.get("items"), dict):
        schema["items"] = strict_crd_schema(schema["items"], top=False)
    if top:
        # The base URI the built-in schemas have, so that the ObjectMeta
        # reference resolves in kubernetes-validate's definitions.
        schema["$id"] = "https://kubernetes.io/api/crd"
        schema["properties"]["metadata"] = {"$ref": OBJECT_META}
    return schema


def load_crds(root):
    """(apiVersion, kind) -> strict schema, for every served version of every CRD."""
    crds = {}
    for relative in CRD_FILES:
        with open(os.path.join(root, relative)) as f:
            crd = yaml.load(f, Loader=Loader)
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served", False):
                continue
            api_version = "%s/%s" % (spec["group"], version["name"])
            schema = strict_crd_schema(version["schema"]["openAPIV3Schema"])
            crds[(api_version, spec["names"]["kind"])] = (schema, relative)
    return crds


class Schemas:
    """kubernetes-validate's strict schemas of one Kubernetes version."""

    def __init__(self, version):
        versions = [v for v in all_versions() if major_minor(v) == version]
        if not versions:
            raise SystemExit(
                "kubernetes-validate %s ships no schemas for Kubernetes %s (it has %s)"
                % (kubernetes_validate.__version__, version, ", ".join(map(major_minor, all_versions())))
            )
        self.version = version
        base = importlib_resources.files("kubernetes_validate").joinpath(
            "kubernetes-json-schema/v%s-local-strict" % versions[-1]
        )
        self.base = base
        import json

        definitions = json.loads(base.joinpath("_definitions.json").read_text())
        self.registry = Resource.from_contents(definitions) @ Registry()

    def validate_crd(self, schema, document):
        validator = jsonschema.validators.Draft202012Validator(schema, registry=self.registry)
        return sorted(validator.iter_errors(document), key=lambda e: list(e.path))

    def validate_builtin(self, document):
        try:
            kubernetes_validate.validate(document, self.version, strict=True)
        except kubernetes_validate.ValidationError as error:
            return [error]
        return []

    def has_builtin(self, document):
        api_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", document["apiVersion"])
        name = "%s-%s.json" % (document["kind"].lower(), api_version)
        return self.base.joinpath(name).is_file()


def version_number(version):
    """`1.32` as (1, 32), to order Kubernetes minor versions."""
    return tuple(int(part) for part in version.split("."))


def yaml_documents(text):
    """(line, document) for each YAML document of `text` (lines from 1)."""
    loader = Loader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            yield node.start_mark.line + 1, loader.construct_document(node)
    finally:
        loader.dispose()


FENCE = re.compile(r"^(\s*)```\s*(yaml|yml)\s*$")


def markdown_blocks(text):
    """(line of the block's first line, block text) for each ```yaml block."""
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        match = FENCE.match(lines[index])
        index += 1
        if not match:
            continue
        indent = len(match.group(1))
        start = index
        while index < len(lines) and lines[index].strip() != "```":
            index += 1
        block = "\n".join(line[indent:] if line[:indent].strip() == "" else line for line in lines[start:index])
        index += 1
        yield start + 1, block


def gitignored_dirs(directory):
    """The folders of `directory` its .gitignore names with an anchored literal entry."""
    try:
        with open(os.path.join(directory, ".gitignore")) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return set()
    entries = (line.rstrip()[1:].removesuffix("/") for line in lines if line.startswith("/"))
    return {entry for entry in entries if entry and not any(c in entry for c in "/*?[\\")}


def sources(root):
    """(path relative to root, line, document) of every YAML document to look at."""
    # os.walk does not enter linked folders (followlinks=False); linked files
    # are left out below.
    for directory, subdirectories, files in os.walk(root):
        ignored = gitignored_dirs(directory)
        subdirectories[:] = sorted(
            d for d in subdirectories if d not in SKIPPED_DIRS and d not in ignored and not d.startswith(".")
        )
        for name in sorted(files):
            path = os.path.join(directory, name)
            if os.path.islink(path):
                continue
            relative = os.path.relpath(path, root)
            if name.endswith((".yaml", ".yml")):
                with open(path) as f:
                    text = f.read()
                try:
                    for line, document in yaml_documents(text):
                        yield relative, line, document
                except yaml.YAMLError as error:
                    yield relative, 0, error
            elif name.endswith(".md"):
                with open(path) as f:
                    text = f.read()
                for first, block in markdown_blocks(text):
                    try:
                        for line, document in yaml_documents(block):
                            yield relative, first + line - 1, document
                    except yaml.YAMLError:
                        # A block that is not YAML as a whole (a console
                        # session, a template) quotes no object.
                        continue


def is_object(document):
    return (
        isinstance(document, dict)
        and isinstance(document.get("apiVersion"), str)
        and isinstance(document.get("kind"), str)
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubernetes", action="append", required=True, help="a Kubernetes minor version, e.g. 1.32")
    parser.add_argument("root")
    arguments = parser.parse_args()
    root = os.path.abspath(arguments.root)
    schemas = [Schemas(version) for version in arguments.kubernetes]
    crds = load_crds(root)

    errors = []
    validated, skipped_fragments, not_api = 0, 0, {}
    # ((apiVersion, kind), version) -> objects of an API newer than that version.
    newer = {}
    files = set()
    for path, line, document in sources(root):
        if isinstance(document, yaml.YAMLError):
            errors.append("%s: not YAML: %s" % (path, document))
            continue
        if not is_object(document):
            skipped_fragments += 1
            continue
        key = (document["apiVersion"], document["kind"])
        name = "%s/%s" % (document["kind"], (document.get("metadata") or {}).get("name", "?"))
        if key in NOT_API_OBJECTS:
            not_api[key] = not_api.get(key, 0) + 1
            continue
        files.add(path)
        validated += 1
        # The given versions that serve a built-in API: validated from the
        # first of them on (an API newer than an older version given is not
        # an error there), an error where none does.
        serving = [v for v in schemas if key in crds or v.has_builtin(document)]
        first_serving = min((version_number(v.version) for v in serving), default=None)
        for version in schemas:
            if key in crds:
                schema, _ = crds[key]
                found = version.validate_crd(schema, document)
            elif version.has_builtin(document):
                found = version.validate_builtin(document)
            elif first_serving is not None and version_number(version.version) < first_serving:
                newer[(key, version.version)] = newer.get((key, version.version), 0) + 1
                continue
            elif first_serving is not None:
                errors.append(
                    "%s:%d: %s: Kubernetes %s: %s %s is not served there, though an older version given "
                    "serves it (a removed API)" % (path, line, name, version.version, *key)
                )
                continue
            else:
                errors.append(
                    "%s:%d: %s: Kubernetes %s: no schema for %s %s (vendor its CRD in tests/schemas/crds, "
                    "or list it in NOT_API_OBJECTS with the reason)" % (path, line, name, version.version, *key)
                )
                continue
            for error in found:
                field = ".".join(str(p) for p in error.path) or "(object)"
                errors.append("%s:%d: %s: Kubernetes %s: %s: %s" % (path, line, name, version.version, field, error.message))

    for error in errors:
        print(error)
    print(
        "schemas: %d objects in %d files validated against Kubernetes %s (strict, kubernetes-validate %s) "
        "and %d vendored CRD versions; %d fragments without apiVersion/kind skipped; not API objects: %s; "
        "newer than a version given (validated from the first that serves them): %s"
        % (
            validated,
            len(files),
            ", ".join(s.version for s in schemas),
            kubernetes_validate.__version__,
            len(crds),
            skipped_fragments,
            ", ".join("%s %s (%d)" % (k[1], k[0], n) for k, n in sorted(not_api.items())) or "none",
            ", ".join(
                "%s %s, not in Kubernetes %s (%d)" % (k[1], k[0], v, n) for (k, v), n in sorted(newer.items())
            )
            or "none",
        )
    )
    print("schemas: %d errors" % len(errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
