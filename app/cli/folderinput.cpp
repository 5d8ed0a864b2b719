#include "folderinput.h"

#include "core/json/json.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace cli {

bool isFolder(const std::string& path)
{
    std::error_code error;
    return std::filesystem::is_directory(path, error);
}

ckpt::Expected<std::vector<std::string>> checkpointFilesIn(const std::string& folder)
{
    namespace fs = std::filesystem;
    std::error_code error;
    std::vector<fs::path> entries;
    for (const fs::directory_entry& entry : fs::directory_iterator(folder, error))
        if (entry.is_regular_file(error))
            entries.push_back(entry.path());
    if (error)
        return ckpt::makeError("cannot list " + folder + ": " + error.message());
    std::sort(entries.begin(), entries.end());
    for (const char* indexName : {"model.safetensors.index.json", "pytorch_model.bin.index.json"}) {
        const fs::path index = fs::path(folder) / indexName;
        if (!fs::exists(index, error))
            continue;
        std::ifstream in(index);
        std::stringstream text;
        text << in.rdbuf();
        auto json = ckpt::parseJson(text.str());
        if (!json)
            return ckpt::makeError(index.string() + " is not valid JSON: " + json.error().message);
        std::set<std::string> files;
        for (const auto& [name, file] : json->member("weight_map").members())
            files.insert(file.toString());
        if (files.empty())
            return ckpt::makeError(index.string() + " has no weight_map");
        std::vector<std::string> paths;
        for (const std::string& file : files) {
            if (file.find('/') != std::string::npos || file == "..")
                return ckpt::makeError(index.string() + " names a file outside the folder: " + file);
            paths.push_back((fs::path(folder) / file).string());
        }
        return paths;
    }
    std::vector<std::string> paths;
    for (const fs::path& path : entries) {
        const std::string extension = path.extension().string();
        if (extension == ".safetensors" || extension == ".bin" || extension == ".pt" || extension == ".pth"
            || extension == ".ckpt")
            paths.push_back(path.string());
    }
    if (paths.empty())
        return ckpt::makeError(
            folder + " holds no checkpoint file (*.safetensors, *.bin, *.pt, *.pth, *.ckpt)");
    return paths;
}

} // namespace cli
