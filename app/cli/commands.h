#pragma once
// Commands of ckpt-inspect that live in their own files (ckptinspect.cpp only dispatches to them).
#include <string>
#include <vector>

namespace cli {

int runExtract(const std::vector<std::string>& args);
int runConvert(const std::vector<std::string>& args);
int runDiff(const std::vector<std::string>& args);

} // namespace cli
