// SPDX-License-Identifier: MIT
#include "libtorchkernels.h"
#include "core/io/process.h"
#include "core/io/sharedlibrary.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <vector>

namespace ckpt {

namespace {

std::atomic<bool> g_loaded {false};

Expected<const LibtorchKernels*> load()
{
    std::vector<std::string> candidates;
    if (const std::string folder = folderOfThisProgram(); !folder.empty())
        candidates.push_back(folder + CKPT_TORCHKERNELS_FROM_BINDIR "/" + kLibtorchKernelsModule);
    candidates.emplace_back(CKPT_TORCHKERNELS_BUILD_PATH);
    std::string problems;
    for (const std::string& candidate : candidates) {
        if (::access(candidate.c_str(), R_OK) != 0)
            continue;
        // RTLD_LOCAL: libtorch's symbols stay the module's; nothing else in this process sees them.
        std::string whyNot;
        void* module = openSharedLibrary(candidate, &whyNot);
        if (!module) {
            problems += whyNot + "; ";
            continue;
        }
        using Entry = const LibtorchKernels* (*)();
        auto entry = reinterpret_cast<Entry>(findLibrarySymbol(module, kLibtorchKernelsSymbol));
        const LibtorchKernels* kernels = entry ? entry() : nullptr;
        if (!kernels || kernels->interfaceVersion != kLibtorchKernelsInterface) {
            problems += candidate + " is not this build's libtorch module; ";
            ::dlclose(module);
            continue;
        }
        g_loaded = true;
        return kernels; // never unloaded: libtorch does not support it
    }
    if (problems.empty())
        problems = std::string(kLibtorchKernelsModule) + " is missing (looked beside " + folderOfThisProgram()
            + CKPT_TORCHKERNELS_FROM_BINDIR + ")";
    else
        problems.resize(problems.size() - 2);
    return makeError("libtorch could not be loaded: " + problems);
}

} // namespace

Expected<const LibtorchKernels*> libtorchKernels()
{
    static const Expected<const LibtorchKernels*> kernels = load();
    return kernels;
}

bool libtorchKernelsLoaded()
{
    return g_loaded;
}

} // namespace ckpt
