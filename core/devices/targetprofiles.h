// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"
#include "core/devices/machineinventory.h"

#include <map>
#include <optional>
#include <string>

namespace ckpt {

// Described machines saved by name ("lab box"), in a JSON file:
// $XDG_CONFIG_HOME/ckpt-inspector/targets.json (default ~/.config/...). Shared by the CLI and the app.
class TargetProfiles {
public:
    explicit TargetProfiles(std::string path = defaultPath());
    static std::string defaultPath();

    Status load(); // a missing file is an empty list, not an error
    Status save() const; // atomically (temporary file + rename)
    Status set(const std::string& name, const std::string& spec); // validates the spec
    bool remove(const std::string& name);
    std::optional<std::string> find(const std::string& name) const;
    const std::map<std::string, std::string>& profiles() const { return m_profiles; }

private:
    std::string m_path;
    std::map<std::string, std::string> m_profiles;
};

// The machine a command means by SPEC: a saved profile's name, a spec, or (empty) this machine.
Expected<MachineInventory> resolveMachine(const std::string& nameOrSpec, const TargetProfiles& profiles);

} // namespace ckpt
