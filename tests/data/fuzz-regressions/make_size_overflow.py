"""Hand-made regression inputs: torch zips whose tensor geometry overflows 64-bit arithmetic.

    /usr/bin/python3 tests/data/fuzz-regressions/make_size_overflow.py

Written opcode-for-opcode by Python's pickler from stand-in objects (a __reduce__ naming
torch._utils._rebuild_tensor_v2, a persistent id naming torch.FloatStorage), never by torch.save,
because torch refuses to create such tensors; torch is imported only so that the pickler can name
its globals. Nothing here is ever unpickled. Under UBSan the reader's view check overflowed a signed
64-bit sum on these (stride 2^62, storage offset 2^63-1); torch.load says "Storage size calculation
overflowed" for them.
"""
import collections
import io
import os
import pickle
import zipfile

import torch
import torch._utils

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'reader')


class StandInStorage:
    pass


class StandInTensor:
    def __init__(self, shape, stride, offset=0):
        self.shape, self.stride, self.offset = shape, stride, offset

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2,
                (StandInStorage(), self.offset, self.shape, self.stride, False, collections.OrderedDict()))


class Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, StandInStorage):
            return ('storage', torch.FloatStorage, '0', 'cpu', 4)  # 4 floats: 16 bytes
        return None


def write(name, tensor):
    data = io.BytesIO()
    Pickler(data, protocol=2).dump({'w': tensor})
    with zipfile.ZipFile(os.path.join(HERE, name), 'w') as archive:
        archive.writestr('archive/data.pkl', data.getvalue())
        archive.writestr('archive/data/0', bytes(16))
        archive.writestr('archive/version', '3\n')
    with open(os.path.join(HERE, name + '.expect'), 'w') as expect:
        expect.write('Storage size calculation overflowed\n')


if __name__ == '__main__':
    os.makedirs(HERE, exist_ok=True)
    write('stride-2pow62.pt', StandInTensor((5,), (2 ** 62,)))
    write('storage-offset-int64-max.pt', StandInTensor((5,), (1,), offset=2 ** 63 - 1))
