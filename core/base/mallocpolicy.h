// SPDX-License-Identifier: MIT
#pragma once

namespace ckpt {

// Called first thing in main() by the programs (CLI, app, benchmarks): blocks of 1 MiB and more
// are mapped on their own and go back to the system when freed.
//
// Why: glibc raises its mmap threshold to the size of each mapped block that is freed (up to
// 32 MiB), so once the pickle graph's first chunk is given back, the chunks after it and the
// model's arrays come from the heap, where freed space stays resident. Reading a checkpoint frees
// large blocks as it goes (the graph as its records are built, vectors as they grow), so the
// dynamic threshold kept 4-6 MB more at the peak: `info --json` of 100,000 tensors 75.1 -> 71.3 MB,
// `check` of 200,000 legacy storages 111.7 -> 105.2 MB, `info` of a 160-shard folder 184.5 ->
// 179.5 MB. Fixed at 1 MiB, few blocks are that large: the reader's open of 1,000,000 tensors takes
// 3% more page faults (227,000 -> 234,000) and no time that the 2-core machine's noise shows.
void returnLargeBlocksToTheSystem();

} // namespace ckpt
