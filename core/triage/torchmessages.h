// SPDX-License-Identifier: MIT
#pragma once

#include "core/safety/torchgeneration.h"

#include <cstddef>
#include <string>
#include <string_view>

// torch's own messages, byte for byte, in one place: the load simulation and the weights_only
// verdict report what torch.load would raise, and tests compare them with what real torch 1.13
// and 2.x print (torch-format.md §6). When torch rewords one, this is the file to change.
// Sources: torch/serialization.py (UNSAFE_MESSAGE, _get_wo_message, _validate_device,
// the legacy-tar and TorchScript refusals) and torch/_weights_only_unpickler.py.
namespace ckpt::torchmessages {

// torch 2.6+'s UNSAFE_MESSAGE.
constexpr std::string_view kUnsafe26
    = "In PyTorch 2.6, we changed the default value of the `weights_only` argument "
      "in `torch.load` from `False` to `True`. Re-running `torch.load` with "
      "`weights_only` set to `False` will likely succeed, but it can result in "
      "arbitrary code execution. Do it only if you got the file from a trusted "
      "source.";

// The tail of torch 2.x's weights_only messages.
constexpr std::string_view kDocs26
    = "\n\nCheck the documentation of torch.load to learn more about types accepted "
      "by default with weights_only "
      "https://pytorch.org/docs/stable/generated/torch.load.html.";

// torch 1.13's UNSAFE_MESSAGE, which prefixes every WeightsUnpickler error.
constexpr std::string_view kUnsafe113
    = "Weights only load failed. Re-running `torch.load` with `weights_only` set to `False` will likely "
      "succeed, but it can result in arbitrary code execution.Do it only if you get the file from a "
      "trusted source. WeightsUnpickler error: ";

// What _validate_device appends when a device is missing.
constexpr std::string_view kCpuAdvice
    = " If you are running on a CPU-only machine, please use torch.load with "
      "map_location=torch.device('cpu') to map your storages to the CPU.";

// torch.jit.load refuses a dict map_location.
constexpr std::string_view kTorchScriptMapLocationDict
    = "map_location should be either None, string or torch.device, but got type: <class 'dict'>";

// The inner WeightsUnpickler message for a rejected GLOBAL.
std::string unsupportedGlobal(const std::string& module, const std::string& name, TorchGeneration generation);

// torch.load's wrapping of the inner message (1.13: serialization.py UNSAFE_MESSAGE; 2.x:
// _get_wo_message), i.e. str() of the exception torch.load raises.
std::string weightsOnlyFailure(const std::string& inner, TorchGeneration generation);

// torch 2.6+ with weights_only=True on a TorchScript archive and on a legacy .tar file.
std::string weightsOnlyTorchScript();
std::string weightsOnlyLegacyTar();

// _validate_device and torch.device: a backend with no device, an index past the device count, a
// tag torch.device cannot parse, a backend module not in this build.
std::string backendUnavailable(std::string_view backend);
std::string deviceOutOfRange(std::string_view backend, long wanted, std::size_t deviceCount);
std::string invalidDeviceString(std::string_view tag);
std::string deviceModuleNotRegistered(std::string_view backend);

} // namespace ckpt::torchmessages
