// SPDX-License-Identifier: MIT
#include "core/io/temporaryfolder.h"

#include <random>
#include <system_error>

namespace ckpt {

namespace fs = std::filesystem;

std::string makeTemporaryFolderBeside(const fs::path& target, std::string_view tag)
{
    std::random_device random;
    const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
    for (int attempt = 0; attempt < 16; ++attempt) {
        const fs::path candidate = parent
            / ("." + target.filename().string() + "." + std::string(tag) + "-"
                + std::to_string(random() % 1000000));
        std::error_code error;
        if (fs::create_directory(candidate, error))
            return candidate.string();
    }
    return {};
}

RemoveFolderOnExit::~RemoveFolderOnExit()
{
    if (!keep && !path.empty()) {
        std::error_code error;
        fs::remove_all(path, error);
    }
}

} // namespace ckpt
