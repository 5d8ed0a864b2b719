#!/usr/bin/python3
"""Writes small files of known kinds for tests/core/tst_formatsniffer.cpp.

Run with Debian 12's interpreter, which has torch 1.13:

    /usr/bin/python3 tests/data/sniff/make_sniff_samples.py [--out tests/data/sniff]

Each file is written by the tool that defines its kind (torch.save, torch.jit, pickle, gzip,
tarfile, json), and `samples.json` records which kind that is, in the sniffer's stable names
(containerKindName). Text-only kinds (HTML, plain text) are text by definition. The zip kinds are
covered by tests/data/zip/, and the kinds no tool here can write (PNG, HDF5, Git LFS pointers,
safetensors) by the real-world corpus. The files are committed; regenerating them changes the legacy
checkpoints (their storage keys are C pointers) and the flatbuffer, not what they are.
"""

import argparse
import gzip
import io
import json
import os
import pickle
import tarfile

import torch


def tensors():
    return {"weight": torch.arange(6, dtype=torch.float32).reshape(2, 3), "bias": torch.tensor([0.5, -0.5])}


def legacy(protocol):
    def write(path):
        torch.save(tensors(), path, pickle_protocol=protocol, _use_new_zipfile_serialization=False)
        return "torch %s torch.save(..., pickle_protocol=%d, _use_new_zipfile_serialization=False)" % (
            torch.__version__, protocol)
    return write


def plain_pickle(protocol):
    def write(path):
        value = {"name": "not a checkpoint", "values": [1, 2.5, None, True], "nested": {"k": (1, 2)}}
        with open(path, "wb") as f:
            pickle.dump(value, f, protocol=protocol)
        return "Python pickle.dump(dict, protocol=%d)" % protocol
    return write


def mobile_flatbuffer(path):
    module = torch.jit.script(torch.nn.Linear(2, 2))
    torch.jit.save_jit_module_to_flatbuffer(module, path)
    return "torch %s torch.jit.save_jit_module_to_flatbuffer" % torch.__version__


def gzipped_checkpoint(path):
    buffer = io.BytesIO()
    torch.save(tensors(), buffer)
    with open(path, "wb") as f:
        f.write(gzip.compress(buffer.getvalue(), mtime=0))
    return "gzip.compress(torch.save bytes, mtime=0)"


def _tar(path, members):
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for name, payload in members:
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            info.mtime = 0
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(payload))


def torch_tar_layout(path):
    # The member names and order of the PyTorch 0.1.x layout; contents are ordinary pickles.
    _tar(path, [
        ("sys_info", pickle.dumps({"protocol_version": 1000, "little_endian": True}, protocol=2)),
        ("pickle", pickle.dumps({"weight": "0"}, protocol=2)),
        ("storages", pickle.dumps(0, protocol=2)),
    ])
    return "Python tarfile (ustar) with members sys_info, pickle, storages"


def other_tar(path):
    _tar(path, [("README.txt", b"an ordinary tar archive\n")])
    return "Python tarfile (ustar) with a README.txt member"


def index_json(path):
    index = {"metadata": {"total_size": 32}, "weight_map": {"bias": "model-00002-of-00002.safetensors",
                                                             "weight": "model-00001-of-00002.safetensors"}}
    with open(path, "w") as f:
        f.write(json.dumps(index, indent=2, sort_keys=True) + "\n")
    return "json.dumps of a Hugging Face sharded-checkpoint index"


def config_json(path):
    with open(path, "w") as f:
        json.dump({"hidden_size": 16, "num_layers": 2, "activation": "gelu"}, f)
    return "json.dump of a model configuration"


def html_page(path):
    with open(path, "w") as f:
        f.write("<!DOCTYPE html>\n<html lang=\"en\">\n<head><title>Sign in</title></head>\n"
                "<body><p>You need to sign in to download this file.</p></body>\n</html>\n")
    return "an HTML page, as a download link that needs a login returns"


def plain_text(path):
    with open(path, "w") as f:
        f.write("model weights will be uploaded here later\n")
    return "a line of text"


def empty(path):
    open(path, "wb").close()
    return "an empty file"


SAMPLES = [
    ("legacy_protocol2.pt", legacy(2), "torch-legacy"),
    ("legacy_protocol0.pt", legacy(0), "torch-legacy"),
    ("legacy_protocol4.pt", legacy(4), "torch-legacy"),
    ("pickle_protocol0.pkl", plain_pickle(0), "plain-pickle"),
    ("pickle_protocol1.pkl", plain_pickle(1), "plain-pickle"),
    ("pickle_protocol2.pkl", plain_pickle(2), "plain-pickle"),
    ("pickle_protocol5.pkl", plain_pickle(5), "plain-pickle"),
    ("mobile_flatbuffer.ptl", mobile_flatbuffer, "mobile-flatbuffer"),
    ("checkpoint.pt.gz", gzipped_checkpoint, "gzip"),
    ("torch_tar_layout.tar", torch_tar_layout, "torch-tar"),
    ("other.tar", other_tar, "tar"),
    ("model.safetensors.index.json", index_json, "json-text"),
    ("config.json", config_json, "json-text"),
    ("download.html", html_page, "html-page"),
    ("notes.txt", plain_text, "plain-text"),
    ("empty.pt", empty, "empty"),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    manifest = []
    for name, make, kind in SAMPLES:
        path = os.path.join(args.out, name)
        writer = make(path)
        manifest.append({"file": name, "kind": kind, "writer": writer, "size": os.path.getsize(path)})
        print("%-30s %6d bytes  %s" % (name, os.path.getsize(path), kind))
    with open(os.path.join(args.out, "samples.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
