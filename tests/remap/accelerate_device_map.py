#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""accelerate's infer_auto_device_map for the model of a folder (built on the meta device from its
config.json, weights tied as from_pretrained ties them, no-split classes from the model):

    accelerate_device_map.py FOLDER MAX_MEMORY_JSON      ({"0": bytes, "1": bytes, "cpu": bytes})

Prints {"device_map", "no_split", "accelerate"}; the reference tst_sharded compares our plan with.
"""
import sys, json, transformers, accelerate, torch
from accelerate import init_empty_weights, infer_auto_device_map
folder = sys.argv[1]; mm = json.loads(sys.argv[2])
mm = {int(k) if k.isdigit() else k: v for k, v in mm.items()}
config = transformers.AutoConfig.from_pretrained(folder)
with init_empty_weights():
    model = transformers.AutoModelForCausalLM.from_config(config)
model.tie_weights()
dm = infer_auto_device_map(model, max_memory=mm, no_split_module_classes=model._no_split_modules)
print(json.dumps({"device_map": {k: v for k, v in dm.items()}, "no_split": list(model._no_split_modules), "accelerate": accelerate.__version__}))
