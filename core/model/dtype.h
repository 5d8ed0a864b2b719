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
    // safetensors values per torch element along the last dimension: 2 for float4_e2m1fn_x2, whose
    // safetensors F4 shape counts 4-bit values (the last dimension twice torch's), 1 otherwise.
    std::uint32_t safetensorsPerElement = 1;
    // The first torch release that has the dtype (torch.<name> exists, so safetensors can load it),
    // empty when every torch this inspector knows has it (1.13 and later). docs/dtypes.md cites each.
    std::string_view firstTorch {};

    // Bytes that `elements` values of this dtype occupy in a storage.
    std::uint64_t bytesFor(std::uint64_t elements) const
    {
        return valuesPerByte > 1 ? (elements + valuesPerByte - 1) / valuesPerByte : elements * elementSize;
    }
};

// The first torch release that reads a tensor of this dtype from a torch.save zip: dtypes without a
// legacy storage class are written as an UntypedStorage and _rebuild_tensor_v3, which torch 2.2
// added; empty when torch 1.13 reads it.
std::string_view firstTorchForZip(const DTypeInfo& info);

// Whether torch release `a` ("2.7") comes before `b` ("2.10"), by their dotted numbers.
bool torchReleaseBefore(std::string_view a, std::string_view b);

// Lookups; all return nothing for names they do not know.
std::optional<DTypeInfo> dtypeByName(std::string_view torchName); // "float32" or an alias ("float", "half")
// From a storage class name as found in a persistent id, Python ("FloatStorage") or TorchScript
// ("Float8_e4m3fnStorage"); "UntypedStorage" gives uint8 (its numel counts bytes).
std::optional<DTypeInfo> dtypeByStorageClass(std::string_view storageClass);
std::optional<DTypeInfo> dtypeBySafetensorsName(std::string_view name);

} // namespace ckpt
