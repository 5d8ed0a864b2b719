// SPDX-License-Identifier: MIT
#include "core/read/dtyperelease.h"

#include "core/model/checkpoint.h"
#include "core/model/dtype.h"

#include <string>
#include <vector>

namespace ckpt {

namespace {

constexpr std::size_t kNamesShown = 3;

struct DtypeUse {
    std::string dtype;
    std::string_view release;
    std::size_t tensors = 0;
    std::vector<std::string> names; // the first few
};

} // namespace

void addDtypeReleaseFindings(Checkpoint& checkpoint)
{
    addDtypeReleaseFindings(checkpoint.format, checkpoint.tensors, checkpoint.findings);
}

void addDtypeReleaseFindings(
    CheckpointFormat format, std::span<const TensorEntry> tensors, std::vector<Finding>& findings)
{
    const bool safetensors = format == CheckpointFormat::Safetensors;
    if (!safetensors && format != CheckpointFormat::TorchZip && format != CheckpointFormat::TorchLegacy)
        return;
    std::vector<DtypeUse> uses; // in order of first appearance; a file holds a handful of dtypes
    for (const TensorEntry& tensor : tensors) {
        const auto info = dtypeByName(tensor.dtype);
        if (!info)
            continue;
        const std::string_view release = safetensors ? info->firstTorch : firstTorchForZip(*info);
        if (release.empty())
            continue;
        DtypeUse* use = nullptr;
        for (DtypeUse& known : uses)
            if (known.dtype == tensor.dtype)
                use = &known;
        if (!use) {
            uses.push_back({std::string(tensor.dtype), release, 0, {}});
            use = &uses.back();
        }
        ++use->tensors;
        if (use->names.size() < kNamesShown)
            use->names.emplace_back(tensor.name);
    }
    for (const DtypeUse& use : uses) {
        std::string names;
        for (const std::string& name : use.names)
            names += (names.empty() ? "\"" : ", \"") + name + "\"";
        if (use.tensors > use.names.size())
            names += ", ...";
        const std::string count
            = std::to_string(use.tensors) + (use.tensors == 1 ? " tensor is " : " tensors are ");
        std::string message = count + use.dtype + " (" + names + "): " + use.dtype
            + " needs torch >= " + std::string(use.release);
        if (safetensors) {
            message += " (safetensors.torch loads it as torch." + use.dtype + ")";
        } else if (const auto info = dtypeByName(use.dtype); info && info->legacyStorage.empty()) {
            message
                += " to load it from this file (torch.save wrote it with _rebuild_tensor_v3 and an untyped "
                   "storage, torch 2.2's";
            if (!info->firstTorch.empty() && torchReleaseBefore("2.2", info->firstTorch))
                message += "; torch." + use.dtype + " is torch " + std::string(info->firstTorch) + "'s";
            message += ")";
        }
        findings.emplace_back(Severity::Info, FindingCode::DtypeNeedsNewerTorch, std::move(message));
    }
}

} // namespace ckpt
