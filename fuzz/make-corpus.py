#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Builds the fuzzers' seed corpora from the repository's own samples (nothing is downloaded).

    fuzz/make-corpus.py OUTDIR [--extra DIR]...

writes OUTDIR/<harness>/<sha1> for the harnesses reader, check, pickle, zip and safetensors, and
OUTDIR/<harness>.dict, the libFuzzer dictionary each one runs with. The seeds are not committed:
they come from tests/fixtures (written by real torch 1.13 and 2.x; tests/fixtures/dcp by torch 2.14's
DCP), tests/data and fuzz/seeds
(small safetensors files written by the real safetensors library), so they follow the fixtures.

  reader, check  every sample file, whole
  pickle         every pickle: the protocol samples, the pickle records of every zip (data.pkl,
                 constants.pkl, bytecode.pkl, ...), the stacked pickles that begin a legacy file
  zip            every file holding a zip signature
  safetensors    every file laid out as safetensors (a little-endian length, then a JSON object)

--extra adds more sample folders (e.g. ../shared/corpus/files for a long campaign). Files are only
read as bytes and taken apart with zipfile; nothing is ever unpickled.
"""
import argparse
import hashlib
import io
import os
import struct
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SOURCES = [
    os.path.join(ROOT, 'tests', 'fixtures', 'torch-1.13'),
    os.path.join(ROOT, 'tests', 'fixtures', 'torch-2'),
    # Each file of the training-run folders (Trainer, OLMo, Lightning, DeepSpeed shapes): the run
    # folder reader reads each through readCheckpoint, which the reader harness fuzzes.
    os.path.join(ROOT, 'tests', 'fixtures', 'runfolder'),
    os.path.join(ROOT, 'tests', 'fixtures', 'dtypes'),  # F4, float8, uint16+ (safetensors 0.8, torch 2.14)
    # pickle.dump of tensors (torch.save files inside bytes) and whole quantized models (issue 26)
    os.path.join(ROOT, 'tests', 'fixtures', 'nested'),
    # deflated storage records and TorchScript's model.json layout (issue 26)
    os.path.join(ROOT, 'tests', 'fixtures', 'zipold'),
    os.path.join(ROOT, 'tests', 'fixtures', 'modeljson'),  # model.json with attributes.pkl (issue 26)
    os.path.join(ROOT, 'tests', 'fixtures', 'torch-export'),  # torch.export archives (.pt2)
    os.path.join(ROOT, 'tests', 'fixtures', 'bundles'),  # tar, tar.gz, .nemo and zip bundles
    # NumPy scalars and arrays of every dtype (protocols 2 and 4) that extract --plain-values decodes
    os.path.join(ROOT, 'tests', 'fixtures', 'dtype-cast'),
    os.path.join(ROOT, 'tests', 'data'),
    # DCP (issue 26): .metadata pickles (a Megatron-core subclass among them), .distcp files of
    # torch.save archives back to back, Megatron's common.pt and metadata.json.
    os.path.join(ROOT, 'tests', 'fixtures', 'dcp'),
    # quantized weights and their scales, broken variants among them (issue 29)
    os.path.join(ROOT, 'tests', 'fixtures', 'quant'),
    os.path.join(HERE, 'seeds'),
]
HARNESSES = ('reader', 'check', 'pickle', 'zip', 'safetensors')
# Which dictionaries each harness runs with (fuzz/dict/*.dict, concatenated).
DICTIONARIES = {
    'reader': ('pickle', 'zip', 'safetensors', 'bundle'),
    'check': ('pickle', 'zip', 'safetensors', 'bundle'),
    'pickle': ('pickle',),
    'zip': ('zip',),
    'safetensors': ('safetensors',),
}
# Larger seeds make every execution slower without teaching the fuzzer much more: the biggest
# fixture (many_tensors.pt, 600 KiB) is the same structure a thousand times.
MAX_SEED_BYTES = 256 * 1024
# A legacy file is its pickles followed by raw storage bytes; the pickles are at the front.
LEGACY_PICKLE_PREFIX = 64 * 1024
SKIPPED_SUFFIXES = ('.py', '.md', '.expected', '.expected.json', '.expect', '.dict', '.sh')


def is_sample(path):
    name = os.path.basename(path)
    if name.endswith(SKIPPED_SUFFIXES) or name == 'index.json':
        return False
    # "torch_buffer.pt.json" describes "torch_buffer.pt": an expectation, not a sample.
    if name.endswith('.json') and os.path.exists(path[:-len('.json')]):
        return False
    return True


def sample_files(folders):
    for folder in folders:
        if not os.path.isdir(folder):
            continue
        for directory, subdirs, names in os.walk(folder):
            subdirs.sort()
            for name in sorted(names):
                path = os.path.join(directory, name)
                if os.path.isfile(path) and not os.path.islink(path) and is_sample(path):
                    yield path


def zip_pickles(data):
    """The pickle records of a zip (by name: *.pkl), read with Python's own zipfile."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                if info.filename.endswith('.pkl') and info.file_size <= MAX_SEED_BYTES:
                    try:
                        yield archive.read(info)
                    except Exception:  # a damaged sample: its other records still count
                        continue
    except Exception:
        return


def looks_like_safetensors(data):
    if len(data) < 10:
        return False
    (length,) = struct.unpack_from('<Q', data)
    return 8 + length <= len(data) and data[8:9] == b'{'


def looks_like_legacy_or_pickle(data):
    # PROTO 2..5, or a protocol-0/1 opcode that starts most old pickles.
    return (len(data) >= 2 and data[0] == 0x80 and 2 <= data[1] <= 5) or data[:1] in (b'(', b'}', b']', b'c')


class Corpus:
    def __init__(self, out):
        self.out = out
        self.counts = {h: 0 for h in HARNESSES}
        for harness in HARNESSES:
            os.makedirs(os.path.join(out, harness), exist_ok=True)

    def add(self, harness, data):
        if not data or len(data) > MAX_SEED_BYTES:
            return
        path = os.path.join(self.out, harness, hashlib.sha1(data).hexdigest())
        if not os.path.exists(path):
            with open(path, 'wb') as f:
                f.write(data)
            self.counts[harness] += 1


def write_dictionaries(out):
    for harness, parts in DICTIONARIES.items():
        with open(os.path.join(out, harness + '.dict'), 'w', encoding='ascii') as dictionary:
            for part in parts:
                with open(os.path.join(HERE, 'dict', part + '.dict'), encoding='ascii') as f:
                    dictionary.write(f.read())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('out')
    parser.add_argument('--extra', action='append', default=[], help='another folder of samples')
    args = parser.parse_args()

    corpus = Corpus(args.out)
    for path in sample_files(SOURCES + args.extra):
        with open(path, 'rb') as f:
            data = f.read()
        if len(data) <= MAX_SEED_BYTES:
            corpus.add('reader', data)
            corpus.add('check', data)
        if b'PK\x03\x04' in data or b'PK\x05\x06' in data:
            corpus.add('zip', data)
            for pickle in zip_pickles(data):
                corpus.add('pickle', pickle)
        elif looks_like_legacy_or_pickle(data):
            corpus.add('pickle', data[:LEGACY_PICKLE_PREFIX])
        if looks_like_safetensors(data):
            corpus.add('safetensors', data)
    write_dictionaries(args.out)
    print('make-corpus: ' + ', '.join(f'{h} {n} new' for h, n in corpus.counts.items()) + f' (in {args.out})')
    # A harness without seeds would start from nothing and silently fuzz far less.
    empty = [h for h in HARNESSES if not os.listdir(os.path.join(args.out, h))]
    if empty:
        print('make-corpus: no seeds for ' + ', '.join(empty), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
