// SPDX-License-Identifier: MIT
#include "core/io/sharedlibrary.h"

#include <dlfcn.h>

#include <utility>

namespace ckpt {

namespace {

// The pending loader message, if any, and glibc's buffer for it freed: the first dlerror() call
// hands the message out and marks it delivered, the second frees it (glibc's dlerror.c).
std::string takeLoaderError()
{
    const char* message = ::dlerror();
    std::string text = message ? message : "";
    ::dlerror();
    return text;
}

} // namespace

void* openSharedLibrary(const std::string& path, std::string* whyNot)
{
    void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library)
        return library;
    std::string reason = takeLoaderError();
    if (whyNot)
        *whyNot = reason.empty() ? path + " could not be loaded" : std::move(reason);
    return nullptr;
}

void* findLibrarySymbol(void* library, const char* name)
{
    void* symbol = ::dlsym(library, name);
    if (!symbol)
        takeLoaderError();
    return symbol;
}

} // namespace ckpt
