// SPDX-License-Identifier: MIT
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace ckpt {

// A new empty folder beside `target` (".NAME.<tag>-NNNNNN", on the same file system, so what is
// written there can be renamed into place), or "" when none could be made. The writers that build
// a folder or rewrite members first write into one.
std::string makeTemporaryFolderBeside(const std::filesystem::path& target, std::string_view tag);

// Removes `path` and everything in it at the end of the scope, unless `keep` is set (the folder
// was renamed into place). An empty path removes nothing.
struct RemoveFolderOnExit {
    std::string path;
    bool keep = false;
    RemoveFolderOnExit() = default;
    RemoveFolderOnExit(const RemoveFolderOnExit&) = delete;
    RemoveFolderOnExit& operator=(const RemoveFolderOnExit&) = delete;
    ~RemoveFolderOnExit();
};

} // namespace ckpt
