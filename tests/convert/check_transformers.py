# SPDX-License-Identifier: MIT
"""A sharded `ckpt-inspect convert` output judged by transformers' own loader.

usage:
  check_transformers.py make DIR      a tiny GPT-2 with random weights, saved by save_pretrained
                                      as pytorch_model.bin (torch.save) with its config.json
  check_transformers.py verify ORIGINAL CONVERTED
                                      from_pretrained(CONVERTED) (shards + index + config) must load
                                      with no missing, unexpected or mismatched weights and equal
                                      from_pretrained(ORIGINAL) in every parameter and buffer
  check_transformers.py verify-auto ORIGINAL CONVERTED
                                      the same with AutoModelForCausalLM (any architecture its
                                      config.json names, e.g. the tiny Llama of tests/fixtures/sharded)
"""
import os
import sys

import torch
from transformers import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel


def main():
    if sys.argv[1] == "make":
        torch.manual_seed(0)
        config = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=16)
        model = GPT2LMHeadModel(config)
        model.save_pretrained(sys.argv[2])
        # The classic pytorch_model.bin (torch.save of the state_dict, tied lm_head.weight sharing
        # wte.weight's storage), which recent transformers no longer write themselves.
        os.remove(os.path.join(sys.argv[2], "model.safetensors"))
        torch.save(model.state_dict(), os.path.join(sys.argv[2], "pytorch_model.bin"))
        print("ok made")
        return
    loader = AutoModelForCausalLM if sys.argv[1] == "verify-auto" else GPT2LMHeadModel
    original = loader.from_pretrained(sys.argv[2])
    converted, info = loader.from_pretrained(sys.argv[3], output_loading_info=True)
    problems = ["%s: %s" % (k, v) for k, v in info.items() if v]
    want = original.state_dict()
    got = converted.state_dict()
    if set(want) != set(got):
        problems.append("state_dict names differ")
    for name in want:
        if name in got and not torch.equal(want[name], got[name]):
            problems.append("%s differs" % name)
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print("ok transformers: %d tensors equal" % len(want))


if __name__ == "__main__":
    main()
