// SPDX-License-Identifier: MIT
#pragma once

namespace ckpt {

struct Checkpoint;

// Reads a safetensors file (torch-format.md §8) into `checkpoint` (whose `file`, `path`, `fileSize`
// and `container` are already set): one storage per tensor (key = tensor name, no device: the
// format records none), tensors with C-order strides, and the tree from the dotted names. Every
// violation of the format's rules becomes a Finding; what can still be read is kept.
void readSafetensors(Checkpoint& checkpoint);

} // namespace ckpt
