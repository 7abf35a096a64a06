#!/usr/bin/env python3
"""Writes the fuzz targets' seed inputs from the repository's fixtures.

    python3 fuzz/seed.py fuzz/seeds    # then: cargo fuzz cmin (FUZZING.md)

One directory per target. The seeds are inputs as each target reads them
(see fuzz/src/*_oracles.rs); the committed corpora are these, minimized and
grown by fuzzing.
"""
import json
import pathlib
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The first settings of fuzz/src/policy_oracles.rs SETTINGS, as JSON values.
SETTINGS = [None, {}, {"qos": {"mode": "validate"}, "topology": {"affinity": "required", "alignment": "nvlink"}},
            {"capacity": {"source": "static", "maxGpusPerNode": 8}}]
# JSON text the structured target splices into a request.
FRAGMENTS = [
    '{"limits":{"nvidia.com/gpu":"2","cpu":"1000m","memory":"2Gi"}}',
    '{"requests":{"cpu":"0.5","memory":"2048Mi"},"limits":{"nvidia.com/gpu":2}}',
    '"1000m"', '2', 'null', '[]', '{}', '"Always"', '"node-1"',
    '{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":'
    '[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]},{}]}}}',
    '[{"name":"s","restartPolicy":"Always","resources":{"limits":{"nvidia.com/gpu":"1"}}}]',
    '{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}',
]


def fleet_decision_seeds():
    """The fleet target's seeds: a pod byte, a settings byte, then records
    of (kind, jitter high, jitter low, nodes - 1) (policy_oracles.rs
    `check_fleet_decision`)."""
    def record(kind, base, nodes):
        return bytes([kind, (base >> 8) & 255, base & 255, nodes - 1])

    def records(kind, count):
        return b"".join(record(kind, i * 256, 256) for i in range(count))

    return {
        # 1,024 distinct shapes, the 4+2-GPU pod whose defaults are lowered
        "distinct-shapes-1024-node-list": bytes([0, 0]) + records(0, 4),
        "distinct-shapes-1024-summary": bytes([0, 2]) + records(1, 4),
        "distinct-shapes-1024-required-container-scope": bytes([0, 3]) + records(0, 4),
        # past the cap of 10,000 distinct shapes
        "over-the-shape-cap-node-list": bytes([0, 0]) + records(1, 40),
        "over-the-shape-cap-required": bytes([2, 1]) + records(0, 40),
        # 64 NUMA nodes, every node a shape of its own
        "sixty-four-numa-nodes": bytes([4, 0]) + record(3, 0, 256) + record(3, 256, 256),
        "sixty-four-numa-nodes-8-gpus": bytes([1, 1]) + record(3, 0, 100),
        # each hostile value beside valid nodes
        "hostile-values": bytes([0, 0]) + b"".join(record(4, h << 8, 10) for h in range(8))
        + record(0, 0, 21),
        "restricted-and-init-containers": bytes([3, 0]) + record(2, 0, 256) + record(2, 256, 256)
        + record(5, 0, 11),
        "no-gpu-nodes": bytes([0, 1]) + record(5, 0, 256),
    }


def requests():
    paths = sorted((ROOT / "tests/fixtures").glob("*.json")) + \
        sorted((ROOT / "e2e-tests/scenarios/requests").glob("*.json"))
    out = []
    for path in sorted(paths):
        document = json.loads(path.read_text())
        if document.get("kind") == "AdmissionReview":
            document = document["request"]
        out.append((path.stem, document))
    return out


def session_payloads(kind):
    for path in sorted((ROOT / "e2e-tests/scenarios/sessions").glob("*.yml")):
        for exchange in yaml.safe_load(path.read_text()) or []:
            response = exchange.get("response", {})
            if kind in exchange.get("request", "") and response.get("type") == "Success":
                yield path.stem, response["payload"]


def write(directory, name, data):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def main(out):
    fixtures = requests()
    for index, (name, request) in enumerate(fixtures):
        for number, settings in enumerate(SETTINGS):
            payload = json.dumps({"request": request, "settings": settings})
            write(out / "validate", f"{name}-{number}.json", payload)
            write(out / "json_scan", f"{name}-{number}.json", payload)
        for number, fragment in enumerate(FRAGMENTS):
            # fixture, settings, value selector (2 bytes), action, fragment
            head = bytes([index, number % 8, (number * 37) % 256, number, number % 3])
            write(out / "validate_structured", f"{name}-{number}", head + fragment.encode())
    for path in sorted((ROOT / "e2e-tests/scenarios").glob("*.json")):
        settings = json.loads(path.read_text()).get("settings")
        write(out / "validate_settings", path.stem + ".json", json.dumps(settings))
    for name, payload in session_payloads("KubernetesListResourceAll"):
        write(out / "node_list", name, b"\x01" + payload.encode())
    for name, payload in session_payloads("KubernetesGetResource"):
        write(out / "fleet_summary", name + ".json", payload)
    for name, data in fleet_decision_seeds().items():
        write(out / "fleet_decision", name, data)
    fixtures_dir = ROOT / "labeler/tests/fixtures"
    for path in sorted((fixtures_dir / "topology").glob("*.txt")):
        target = "rocm_smi" if "rocm" in path.name else "nvidia_smi"
        write(out / target, path.name, path.read_bytes())
    kubelet = fixtures_dir / "kubelet"
    main_files = sorted(kubelet.glob("*.yaml"))
    drop_ins = b"\0".join(p.read_bytes() for p in sorted((kubelet / "drop-ins").glob("*.conf")))
    for path in main_files:
        write(out / "kubelet_config", path.name, path.read_bytes())
        write(out / "kubelet_config", path.stem + "-with-drop-ins", path.read_bytes() + b"\0" + drop_ins)
    attributes = {"vendor": 0, "class": 1, "numa_node": 2, "physfn": 3}
    node_files = {"cpulist": 4, "meminfo": 5}
    for tree in sorted((fixtures_dir / "sysfs").iterdir()):
        records = []
        devices = sorted((tree / "bus/pci/devices").glob("*"))
        for slot, device in enumerate(devices[:8]):
            for attribute, code in attributes.items():
                if (device / attribute).exists() and (device / attribute).is_file():
                    records.append(bytes([code, slot]) + (device / attribute).read_bytes())
        for node in sorted((tree / "devices/system/node").glob("node*")):
            slot = int(node.name[4:]) if node.name[4:].isdigit() else 0
            for attribute, code in node_files.items():
                if (node / attribute).is_file():
                    records.append(bytes([code, slot % 8]) + (node / attribute).read_bytes())
        write(out / "sysfs_tree", tree.name, b"\xff".join(records))


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "fuzz/seeds"))
