// SPDX-License-Identifier: MIT
#pragma once
// NumPy scalars and arrays inside a pickle, read from the pickle's graph as plain data (nothing is
// imported or called): what `extract --plain-values` writes as Python numbers and tensors, so
// that torch.load(weights_only=True) needs no allowlisting. A scalar is
// numpy[._]core.multiarray.scalar(dtype, bytes); an array is numpy[._]core.multiarray._reconstruct
// (ndarray, (0,), b'b') with the BUILD state (version, shape, dtype, is_fortran, raw bytes); a dtype
// is numpy.dtype('f8', False, True) with the state (version, byte order, ...). Protocol 2 pickles
// write bytes as _codecs.encode(text, 'latin1').
#include "core/base/bytes.h"
#include "core/base/expected.h"
#include "core/pickle/picklegraph.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

struct NumpyValue {
    bool array = false; // an ndarray; otherwise a NumPy scalar
    std::string numpyType; // NumPy's name: "float64", "int32", "bool"
    // The torch dtype holding the same values ("float64", "int32", "bool"); empty for uint16,
    // uint32 and uint64, which torch 1.13 has no tensor for.
    std::string torchDtype;
    std::vector<std::int64_t> shape; // arrays
    bool fortran = false; // arrays: the bytes are in Fortran (column-major) order
    ByteBuffer bytes; // the elements, little-endian
};

// Whether `graph` node `id` is a call of NumPy's scalar or _reconstruct (which decodeNumpyValue
// reads).
bool isNumpyValueCall(const PickleGraph& graph, NodeId id);

// The NumPy value the node builds, or why it cannot be written as a plain value (an object or
// string dtype, bytes that do not match the shape).
Expected<NumpyValue> decodeNumpyValue(const PickleGraph& graph, NodeId id);

} // namespace ckpt
