"""What `exitscope top --json` printed over a run, summed: the x86 and arm64 harness checks read it."""
import collections
import json


def top_totals(path, vm_pid):
    """(intervals, exits per reason, exits of the VM whose VMM is vm_pid, lost events, schemas seen)
    over every interval line of a top.jsonl."""
    with open(path, errors="replace") as f:
        docs = [json.loads(line) for line in f if line.strip()]
    reasons, vm_exits, lost = collections.Counter(), 0, 0
    for doc in docs:
        for r in doc["reasons"]:
            reasons[r["reason"]] += r["exits"]
        vm_exits += sum(v["exits"] for v in doc["vms"] if v.get("pid") == vm_pid)
        lost += sum(doc["lost_per_cpu"])
    return len(docs), reasons, vm_exits, lost, {doc.get("schema") for doc in docs}
