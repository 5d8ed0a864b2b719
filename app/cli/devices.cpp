// SPDX-License-Identifier: MIT
// ckpt-inspect devices: this machine's CUDA GPUs as torch numbers them, and its CPU memory.
#include "command.h"
#include "core/report/machinereport.h"

#include "core/devices/deviceinventory.h"
#include "core/json/json.h"

#include <iostream>
#include <memory>

namespace cli {

Command addDevicesCommand(CLI::App& program)
{
    auto json = std::make_shared<bool>(false);
    CLI::App* command = program.add_subcommand("devices",
        "The devices of this machine: CUDA GPUs as torch numbers them (name, compute capability, total and "
        "free memory) and the CPU's memory.");
    addJsonFlag(*command, *json);
    return {command, [json] {
                const ckpt::MachineInventory machine = ckpt::detectThisMachine();
                if (*json) {
                    ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
                    ckpt::writeMachineJson(writer, machine);
                    std::cout << writer.takeText() << "\n";
                } else {
                    ckpt::writeMachineText(std::cout, machine);
                }
                return 0;
            }};
}

} // namespace cli
