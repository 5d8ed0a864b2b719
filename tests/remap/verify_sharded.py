#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Judges a remapped folder of .bin shards with real torch (and transformers).

    verify_sharded.py INPUT_DIR OUTPUT_DIR EXPECTED_TAGS_JSON [--from-pretrained]

EXPECTED_TAGS_JSON maps every tensor name to the tag the plan put it on. For every shard the
output index lists, torch.load runs with a map_location callable that records the tag torch passes
for each storage (the storage is kept on the CPU, so no GPU is needed); each tensor's recorded tag
must be exactly the planned one, and its storage's bytes must equal the input's. With
--from-pretrained, transformers' from_pretrained loads the output folder (planned to the CPU) and
every weight equals the input's. Prints one JSON object: {"ok", "problems", "tags"}.
"""
import json
import os
import sys

import torch


def load_recording(path):
    tags = {}

    def record(storage, location):
        tags[storage.data_ptr()] = location
        return storage

    state = torch.load(path, map_location=record, weights_only=True)
    return state, {name: tags.get(t.untyped_storage().data_ptr()) for name, t in state.items()}


def main():
    input_dir, output_dir, expected_path = sys.argv[1:4]
    expected = json.load(open(expected_path))
    problems = []
    seen = {}
    index = json.load(open(os.path.join(output_dir, "pytorch_model.bin.index.json")))
    original_index = json.load(open(os.path.join(input_dir, "pytorch_model.bin.index.json")))
    if index != original_index:
        problems.append("the index differs from the input's")
    for shard in sorted(set(index["weight_map"].values())):
        state, tags = load_recording(os.path.join(output_dir, shard))
        original = torch.load(os.path.join(input_dir, shard), map_location=lambda s, loc: s, weights_only=True)
        if list(state) != list(original):
            problems.append("%s: names or order differ" % shard)
        for name, t in state.items():
            seen[name] = tags[name]
            if tags[name] != expected.get(name):
                problems.append("%s: %s recorded on %r, planned %r" % (shard, name, tags[name], expected.get(name)))
            a = bytes(t.untyped_storage())
            b = bytes(original[name].untyped_storage())
            if a != b:
                problems.append("%s: %s storage bytes differ" % (shard, name))
    missing = sorted(set(expected) - set(seen))
    if missing:
        problems.append("planned but in no output shard: %s" % ", ".join(missing[:5]))
    if "--from-pretrained" in sys.argv:
        import transformers
        model = transformers.AutoModelForCausalLM.from_pretrained(output_dir)
        state = model.state_dict()
        for name in seen:
            reference = torch.load(os.path.join(input_dir, original_index["weight_map"][name]),
                                   map_location=lambda s, loc: s, weights_only=True)[name]
            if not torch.equal(state[name], reference):
                problems.append("from_pretrained: %s differs from the input" % name)
        if model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr():
            problems.append("from_pretrained: lm_head is no longer tied to embed_tokens")
    print(json.dumps({"ok": not problems, "problems": problems, "tags": seen}))


if __name__ == "__main__":
    main()
