// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ckpt {

// What torch knows about a dtype that a reader needs: its name as torch prints it (without
// "torch."), its element size as torch._utils._element_size computes it, and how it is stored.
struct DTypeInfo {
    std::string_view name; // "float32", "bfloat16", "qint8", "float8_e4m3fn"
    std::uint32_t elementSize = 0; // bytes per element as torch counts them (quint4x2: 1)
    std::string_view legacyStorage; // Python storage class ("FloatStorage"), empty for v3 dtypes
    std::string_view scriptStorage; // TorchScript storage class ("Float8_e4m3fnStorage")
    std::string_view safetensorsName; // "F32", empty when safetensors has none
    std::uint32_t valuesPerByte = 1; // sub-byte quantized dtypes pack several values in a byte

    // Bytes that `elements` values of this dtype occupy in a storage.
    std::uint64_t bytesFor(std::uint64_t elements) const
    {
        return valuesPerByte > 1 ? (elements + valuesPerByte - 1) / valuesPerByte : elements * elementSize;
    }
};

// Lookups; all return nothing for names they do not know.
std::optional<DTypeInfo> dtypeByName(std::string_view torchName); // "float32" or an alias ("float", "half")
// From a storage class name as found in a persistent id, Python ("FloatStorage") or TorchScript
// ("Float8_e4m3fnStorage"); "UntypedStorage" gives uint8 (its numel counts bytes).
std::optional<DTypeInfo> dtypeByStorageClass(std::string_view storageClass);
std::optional<DTypeInfo> dtypeBySafetensorsName(std::string_view name);

} // namespace ckpt
