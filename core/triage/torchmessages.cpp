// SPDX-License-Identifier: MIT
#include "core/triage/torchmessages.h"

#include "core/safety/picklecatalog.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace ckpt::torchmessages {

namespace {

std::string upper(std::string_view text)
{
    std::string out(text);
    for (auto& c : out)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

} // namespace

std::string unsupportedGlobal(const std::string& module, const std::string& name, TorchGeneration generation)
{
    if (generation == TorchGeneration::Torch113)
        return "Unsupported class " + module + "." + name;
    std::string path = module + "." + name;
    // The blocked modules and the names with messages of their own are read from real torch
    // (torchallowlists.inc, through picklecatalog.h).
    if (torch2BlocksModule(module))
        return "Trying to load unsupported GLOBAL " + path + " whose module " + module + " is blocked.";
    if (const auto special = torch2SpecialMessage(path))
        return std::string(*special);
    // torch 2.x drops a leading "builtins." from the name it prints (builtins.eval -> eval).
    if (path.starts_with("builtins")) {
        path = path.substr(8);
        path = !path.empty() && path[0] == '.' ? path.substr(1) : "builtins" + path;
    }
    return "Unsupported global: GLOBAL " + path
        + " was not an allowed global by default. Please use `torch.serialization.add_safe_globals([" + path
        + "])` or the `torch.serialization.safe_globals([" + path
        + "])` context manager to allowlist this global if you trust this class/function.";
}

std::string weightsOnlyFailure(const std::string& inner, TorchGeneration generation)
{
    if (generation == TorchGeneration::Torch113)
        return std::string(kUnsafe113) + inner;
    const std::string unsafe(kUnsafe26);
    if (inner.find("was not an allowed global by default.") != std::string::npos)
        return "Weights only load failed. This file can still be loaded, to do so you have two options, "
               "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. \n\t(1) "
            + unsafe
            + "\n\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps in "
              "the "
              "following error message.\n\tWeightsUnpickler error: "
            + inner + std::string(kDocs26);
    if (inner.find(" must be imported to load") != std::string::npos)
        return "Weights only load failed. " + inner + "\n " + unsafe + "\n";
    std::string out = "Weights only load failed. " + unsafe + "\n";
    if (inner.find(" is blocked.") == std::string::npos)
        out += "Please file an issue with the following so that we can make `weights_only=True` compatible "
               "with "
               "your use case: WeightsUnpickler error: ";
    return out + "\n\n" + inner + std::string(kDocs26);
}

std::string weightsOnlyTorchScript()
{
    return "Cannot use ``weights_only=True`` with TorchScript archives passed to ``torch.load``. "
        + std::string(kUnsafe26);
}

std::string weightsOnlyLegacyTar()
{
    return "Cannot use ``weights_only=True`` with files saved in the legacy .tar format. "
        + std::string(kUnsafe26);
}

std::string backendUnavailable(std::string_view backend)
{
    return "Attempting to deserialize object on a " + upper(backend) + " device but torch."
        + std::string(backend) + ".is_available() is False." + std::string(kCpuAdvice);
}

std::string deviceOutOfRange(std::string_view backend, long wanted, std::size_t deviceCount)
{
    return "Attempting to deserialize object on " + upper(backend) + " device " + std::to_string(wanted)
        + " but torch." + std::string(backend) + ".device_count() is " + std::to_string(deviceCount)
        + ". Please use torch.load with map_location to map your storages to an existing device.";
}

std::string invalidDeviceString(std::string_view tag)
{
    return "Invalid device string: '" + std::string(tag) + "'";
}

std::string deviceModuleNotRegistered(std::string_view backend)
{
    return "The " + upper(backend) + " device module is not registered." + std::string(kCpuAdvice);
}

} // namespace ckpt::torchmessages
