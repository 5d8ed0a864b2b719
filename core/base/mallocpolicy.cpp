// SPDX-License-Identifier: MIT
#include "core/base/mallocpolicy.h"

#include <malloc.h>

namespace ckpt {

void returnLargeBlocksToTheSystem()
{
    // Setting it at all turns glibc's dynamic threshold off (mallopt(3)).
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
}

} // namespace ckpt
