// SPDX-License-Identifier: MIT
#pragma once

// The whole devices room for callers that use several of its parts (a plan needs the inventory and
// the spec parser, a window also detection and the saved profiles). Each part has its own header:
#include "core/devices/detectmachine.h" // this machine's GPUs (through the driver) and memory
#include "core/devices/gpudriver.h" // the NVIDIA driver behind an interface tests can fake
#include "core/devices/machineinventory.h" // DeviceInfo, MachineInventory
#include "core/devices/machinespec.h" // "cuda:0=24GiB,cpu=64GiB" and byte sizes, both ways
#include "core/devices/targetprofiles.h" // described machines saved by name
