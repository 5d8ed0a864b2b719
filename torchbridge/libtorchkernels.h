// SPDX-License-Identifier: MIT
#pragma once

// The libtorch half of the value statistics, kept in a module of its own (libckpt_torchkernels.so)
// that is loaded the first time a tensor needs it. Nearly every weight is a contiguous float32,
// float64, float16 or bfloat16 tensor, which the native kernels (nativestatistics.h) read without
// libtorch; loading libtorch (hundreds of MiB of shared objects and their static initialisers)
// cost a value scan of a 2 GiB checkpoint a seventh of its CPU time before it read a byte. The
// module is what remains: the dtypes the native kernels lack (integers, bool, complex, quantized,
// float8, uint16+), strided views, and the value differences of `diff`.
//
// The two halves share no code from core/: the module sees a tensor as plain data (where its
// storage's bytes lie and how the view walks them), so it links libtorch and nothing else of this
// project. No libtorch header here.
#include "core/base/expected.h"
#include "tensordiff.h"
#include "tensorstatistics.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ckpt {

// One tensor as the module reads it.
struct StridedTensorBytes {
    std::string name, dtype;
    const std::uint8_t* storage = nullptr; // the storage's first byte in the mapping; null when
                                           // its bytes cannot be read, and `unreadable` says why
    std::string unreadable;
    std::uint64_t storageBytes = 0;
    std::vector<std::int64_t> shape, stride;
    std::int64_t storageOffset = 0; // in elements
};

// The module's entry points, all of them behind one table so the loader looks up one symbol.
struct LibtorchKernels {
    int interfaceVersion = 0; // kLibtorchKernelsInterface: a stale module is refused, not called
    Expected<TensorStatistics> (*statistics)(
        const StridedTensorBytes& tensor, const StatisticsOptions& options, const ValueProgress& progress)
        = nullptr;
    Expected<ValueDifference> (*difference)(const StridedTensorBytes& a, const StridedTensorBytes& b)
        = nullptr;
};
inline constexpr int kLibtorchKernelsInterface = 1;
inline constexpr const char* kLibtorchKernelsSymbol = "ckptLibtorchKernels";
inline constexpr const char* kLibtorchKernelsModule = "libckpt_torchkernels.so";

// The module's table, loaded (with libtorch) on the first call from any thread; or why it could
// not be loaded, said again on every later call. The module is looked for in
// `<this program's folder>/<CKPT_TORCHKERNELS_FROM_BINDIR>` (the install layout, which the build
// tree repeats), then in the build tree it was built in.
Expected<const LibtorchKernels*> libtorchKernels();

// Whether this process has loaded the module (and so libtorch): for tests that check a scan of
// native dtypes did not.
bool libtorchKernelsLoaded();

} // namespace ckpt
