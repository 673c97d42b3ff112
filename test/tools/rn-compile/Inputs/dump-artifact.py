"""Prints an .rnx artifact in a line-oriented form for FileCheck."""
import json
import struct
import sys


def named(values):
    """A node's operands or results, by name: `input=3 params=[4,5]`."""
    return " ".join(f"{name}={json.dumps(value, separators=(',', ':'))}"
                    for name, value in sorted(values.items())) or "none"


with open(sys.argv[1], "rb") as f:
    data = f.read()
(length,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8 : 8 + length])
metadata = header.pop("__metadata__")
print("format", metadata["rn.format"], "version", metadata["rn.version"])
for name, tensor in sorted(header.items()):
    begin, end = tensor["data_offsets"]
    print("tensor", name, tensor["dtype"], tensor["shape"], end - begin)
program = json.loads(metadata["rn.program"])
print("program", program["format"], program["version"], program["model"])
print("training", json.dumps(program["training"], sort_keys=True))
for region in program["arena"]["regions"]:
    print("region", region["kind"], region["offset"], region["bytes"])
for state in program["state"]:
    print("state", state["name"], state["role"], state["dtype"], state["shape"],
          state["slot"]["region"], state["init"]["kind"],
          *([f'{state["init"]["scale"]:g}'] if state["init"]["kind"] == "constant" else []))
for function in program["functions"]:
    print("function", function["name"], "tensors", len(function["tensors"]))
    for key in ("inputs", "outputs"):
        for entry in function[key]:
            tensor = function["tensors"][entry["tensor"]]
            where = tensor.get("slot", {}).get("region", "host")
            print(" ", key[:-1], entry["name"], tensor["dtype"], tensor["shape"], where)
    for subgraph in function["subgraphs"]:
        print("  subgraph", subgraph["name"], subgraph["primary"],
              "double_buffered" if subgraph["double_buffered"] else "single")
        for node in subgraph["nodes"]:
            if node["kind"] == "op":
                parts = " ".join(p["role"] + "@" + p["stream"] for p in node.get("parts", []))
                print("    op", node["op"], node["stream"], named(node["operands"]), "->",
                      named(node["results"]), json.dumps(node["attributes"], sort_keys=True), parts)
            else:
                print("   ", node["kind"], node["event"], node["event_kind"], node["stream"])
for schedule in program["schedules"]:
    steps = [(s.get("launch") or "wait:" + s["host_wait"]) + ("(" + s["variant"] + ")" if "variant" in s else "")
             for s in schedule["steps"]]
    print("schedule", schedule["name"], schedule["function"], " ".join(steps))
print("events", program["num_events"])
