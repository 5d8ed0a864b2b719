#!/usr/bin/env python3
"""Writes hostile checkpoints with real torch.save: loading them with torch.load(weights_only=False)
would run a shell command that creates /tmp/ckpt-inspector-hostile-marker. The tests check that
reading them with ckpt-inspect reports the globals and that the marker never appears.
Never load these files with a real unpickler."""
import os
import torch


class RunsShell:
    def __reduce__(self):
        return (os.system, ("touch /tmp/ckpt-inspector-hostile-marker",))


class RunsEval:
    def __reduce__(self):
        return (eval, ("__import__('os').system('touch /tmp/ckpt-inspector-hostile-marker')",))


here = os.path.dirname(os.path.abspath(__file__))
torch.save({"weight": torch.ones(2, 2), "payload": RunsShell()}, os.path.join(here, "os_system.pt"))
torch.save({"model": {"w": torch.zeros(3)}, "trap": RunsEval()}, os.path.join(here, "builtins_eval.pt"),
           _use_new_zipfile_serialization=False)
