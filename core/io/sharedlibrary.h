// SPDX-License-Identifier: MIT
#pragma once
// dlopen and dlsym for the libraries this program loads only when they are there (the NVIDIA
// driver's libnvidia-ml and libcuda, the libtorch module), with glibc's error state taken and
// released on the spot.
//
// Why not plain dlopen/dlerror: since glibc 2.34 a failed dlopen or dlsym leaves a malloc'ed
// message in a thread-local slot until dlerror() is called twice or the thread ends. A worker
// thread that probes for libcuda on a machine without a driver and is still winding down when the
// process exits shows up in LeakSanitizer as a 24-byte leak from _dlerror_run (seen once, in CI,
// under the asan suite's package.app_screenshot). Taking the message at once leaves nothing behind.
#include <string>

namespace ckpt {

// The handle, or nullptr with the loader's reason in `whyNot` (when given). RTLD_NOW | RTLD_LOCAL:
// the library's symbols stay its own. Handles are never closed by the callers (see their comments).
void* openSharedLibrary(const std::string& path, std::string* whyNot = nullptr);

// The symbol's address, or nullptr when the library has no such symbol (an older driver).
void* findLibrarySymbol(void* library, const char* name);

} // namespace ckpt
