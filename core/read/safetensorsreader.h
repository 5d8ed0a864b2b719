// SPDX-License-Identifier: MIT
#pragma once

namespace ckpt {

struct Checkpoint;

// Reads a safetensors file (torch-format.md §8) into `checkpoint` (whose `file`, `path`, `fileSize`
// and `container` are already set): one storage per tensor (key = tensor name, no device: the
// format records none), tensors with C-order strides, and the tree from the dotted names. Every
// violation of the format's rules becomes a Finding; what can still be read is kept.
//
// How the header is read: Scan, a streaming scan straight into the records for headers in the plain
// form writers produce, the JSON parser for any other; Parse, the JSON parser always (tests check
// that both read every header alike).
enum class SafetensorsHeaderReading { Scan, Parse };
void readSafetensors(
    Checkpoint& checkpoint, SafetensorsHeaderReading reading = SafetensorsHeaderReading::Scan);

} // namespace ckpt
