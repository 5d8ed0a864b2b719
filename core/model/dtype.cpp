// SPDX-License-Identifier: MIT
#include "core/model/dtype.h"

#include <array>

namespace ckpt {

namespace {

// torch-format.md §9; sizes from torch._utils._element_size.
constexpr std::array<DTypeInfo, 38> kDTypes {{
    {"float64", 8, "DoubleStorage", "DoubleStorage", "F64"},
    {"float32", 4, "FloatStorage", "FloatStorage", "F32"},
    {"float16", 2, "HalfStorage", "HalfStorage", "F16"},
    {"bfloat16", 2, "BFloat16Storage", "BFloat16Storage", "BF16"},
    {"int64", 8, "LongStorage", "LongStorage", "I64"},
    {"int32", 4, "IntStorage", "IntStorage", "I32"},
    {"int16", 2, "ShortStorage", "ShortStorage", "I16"},
    {"int8", 1, "CharStorage", "CharStorage", "I8"},
    {"uint8", 1, "ByteStorage", "ByteStorage", "U8"},
    {"bool", 1, "BoolStorage", "BoolStorage", "BOOL"},
    {"complex128", 16, "ComplexDoubleStorage", "ComplexDoubleStorage", ""},
    {"complex64", 8, "ComplexFloatStorage", "ComplexFloatStorage", "C64"},
    {"qint8", 1, "QInt8Storage", "QInt8Storage", ""},
    {"quint8", 1, "QUInt8Storage", "QUInt8Storage", ""},
    {"qint32", 4, "QInt32Storage", "QInt32Storage", ""},
    {"quint4x2", 1, "QUInt4x2Storage", "QUInt4x2Storage", "", 2},
    {"quint2x4", 1, "QUInt2x4Storage", "QUInt2x4Storage", "", 4},
    {"complex32", 4, "", "ComplexHalfStorage", "", 1, 1, ""},
    {"bcomplex32", 4, "", "BComplex32Storage", "", 1, 1, "2.2"},
    {"float8_e5m2", 1, "", "Float8_e5m2Storage", "F8_E5M2", 1, 1, "2.1"},
    {"float8_e4m3fn", 1, "", "Float8_e4m3fnStorage", "F8_E4M3", 1, 1, "2.1"},
    {"float8_e5m2fnuz", 1, "", "Float8_e5m2fnuzStorage", "F8_E5M2FNUZ", 1, 1, "2.2"},
    {"float8_e4m3fnuz", 1, "", "Float8_e4m3fnuzStorage", "F8_E4M3FNUZ", 1, 1, "2.2"},
    {"float8_e8m0fnu", 1, "", "Float8_e8m0fnuStorage", "F8_E8M0", 1, 1, "2.7"},
    {"float4_e2m1fn_x2", 1, "", "Float4_e2m1fn_x2Storage", "F4", 1, 2, "2.8"},
    {"uint16", 2, "", "UInt16Storage", "U16", 1, 1, "2.3"},
    {"uint32", 4, "", "UInt32Storage", "U32", 1, 1, "2.3"},
    {"uint64", 8, "", "UInt64Storage", "U64", 1, 1, "2.3"},
    {"bits8", 1, "", "Bits8Storage", "", 1, 1, "2.2"},
    {"bits16", 2, "", "Bits16Storage", "", 1, 1, "2.2"},
    {"bits1x8", 1, "", "Bits1x8Storage", "", 1, 1, "2.2"},
    {"bits2x4", 1, "", "Bits2x4Storage", "", 1, 1, "2.2"},
    {"bits4x2", 1, "", "Bits4x2Storage", "", 1, 1, "2.2"},
    {"uint1", 1, "", "", ""},
    {"int1", 1, "", "", ""},
    {"uint4", 1, "", "", ""},
    {"int4", 1, "", "", ""},
    {"uint2", 1, "", "", ""},
}};

struct Alias {
    std::string_view alias;
    std::string_view name;
};
constexpr std::array<Alias, 12> kAliases {{
    {"double", "float64"},
    {"float", "float32"},
    {"half", "float16"},
    {"long", "int64"},
    {"int", "int32"},
    {"short", "int16"},
    {"cdouble", "complex128"},
    {"cfloat", "complex64"},
    {"chalf", "complex32"},
    {"complex_float", "complex64"},
    {"complex_double", "complex128"},
    {"byte", "uint8"},
}};

} // namespace

bool torchReleaseBefore(std::string_view a, std::string_view b)
{
    // "2.10" follows "2.9": compare the dotted numbers, not the text.
    auto next = [](std::string_view& text) {
        unsigned value = 0;
        while (!text.empty() && text.front() >= '0' && text.front() <= '9') {
            value = value * 10 + unsigned(text.front() - '0');
            text.remove_prefix(1);
        }
        if (!text.empty() && text.front() == '.')
            text.remove_prefix(1);
        return value;
    };
    while (!a.empty() || !b.empty()) {
        const unsigned x = next(a), y = next(b);
        if (x != y)
            return x < y;
    }
    return false;
}

std::string_view firstTorchForZip(const DTypeInfo& info)
{
    if (!info.legacyStorage.empty())
        return info.firstTorch;
    // _rebuild_tensor_v3 (pytorch/pytorch#114662) first shipped in torch 2.2.
    if (info.firstTorch.empty() || torchReleaseBefore(info.firstTorch, "2.2"))
        return "2.2";
    return info.firstTorch;
}

std::optional<DTypeInfo> dtypeByName(std::string_view torchName)
{
    if (torchName.starts_with("torch."))
        torchName.remove_prefix(6);
    for (const Alias& alias : kAliases)
        if (alias.alias == torchName)
            torchName = alias.name;
    for (const DTypeInfo& info : kDTypes)
        if (info.name == torchName)
            return info;
    return std::nullopt;
}

std::optional<DTypeInfo> dtypeByStorageClass(std::string_view storageClass)
{
    // The loader ignores the module part ("torch", "torch.cuda") and looks at the class name only.
    if (auto dot = storageClass.rfind('.'); dot != std::string_view::npos)
        storageClass.remove_prefix(dot + 1);
    if (storageClass == "UntypedStorage" || storageClass == "_UntypedStorage")
        return dtypeByName("uint8");
    for (const DTypeInfo& info : kDTypes)
        if ((!info.legacyStorage.empty() && info.legacyStorage == storageClass)
            || (!info.scriptStorage.empty() && info.scriptStorage == storageClass))
            return info;
    return std::nullopt;
}

std::optional<DTypeInfo> dtypeBySafetensorsName(std::string_view name)
{
    for (const DTypeInfo& info : kDTypes)
        if (!info.safetensorsName.empty() && info.safetensorsName == name)
            return info;
    return std::nullopt;
}

} // namespace ckpt
