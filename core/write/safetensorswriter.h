// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"
#include "core/format/zipwriter.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;

// One tensor to write: which tensor of which read checkpoint, under which name.
struct SafetensorsSource {
    const Checkpoint* checkpoint = nullptr;
    std::uint32_t tensor = 0;
    std::string name;
};

struct SafetensorsOptions {
    // 0: one file at the output path. Otherwise the output is a folder that receives shards of at
    // most this many bytes of tensor data (a larger tensor gets a shard of its own) named like
    // transformers' save_pretrained (model-00001-of-00003.safetensors) with
    // model.safetensors.index.json; a single shard is written as model.safetensors without index.
    std::uint64_t maxShardBytes = 0;
    WriteProgress progress;
    bool verifyAfterWriting = true;
    // --dtype: float64, float32, float16 and bfloat16 tensors written as this dtype, as torch's
    // .to(dtype) computes them (core/write/floatcast.h); empty: as they are.
    std::string castFloatsTo;
};

struct SafetensorsShard {
    std::string path;
    std::uint64_t tensorBytes = 0;
    std::vector<std::string> names;
};

struct SafetensorsResult {
    std::vector<SafetensorsShard> shards;
    std::string indexPath; // empty without shards
    std::uint64_t tensorsWritten = 0;
    std::uint64_t bytesWritten = 0;
    // Tensors that viewed a storage another written tensor also views: safetensors forbids
    // overlapping tensors (its torch API refuses tensors that share memory), so each is written as
    // its own copy of the bytes it views; "lm_head.weight (shares a storage with embed.weight)".
    std::vector<std::string> sharedWrittenAsCopies;
    // Views with a storage offset, a smaller extent than their storage, or a non-contiguous
    // stride: written as contiguous copies of the elements they show.
    std::vector<std::string> viewsMadeContiguous;
    // --dtype: the target and the tensors written in it ("embed.weight (float32 -> bfloat16)").
    std::string castTo;
    std::vector<std::string> tensorsCast;
    double seconds = 0;
    bool verified = false;
    std::string summary() const;
};

// Writes the tensors in safetensors format, __metadata__ {"format": "pt"}, data in the order
// given within each element size (largest first, so that every tensor starts aligned to its element
// size, as the safetensors library writes them). Refuses, before writing anything, dtypes that
// safetensors has no name for (complex128, quantized, bits, ...), names given twice, and tensors
// whose bytes are not all in their file. Every file is written atomically and, unless switched off,
// read back and compared byte for byte with the tensors' values in the input.
Expected<SafetensorsResult> writeSafetensors(const std::vector<SafetensorsSource>& tensors,
    const std::string& outputPath, const SafetensorsOptions& options = {});

} // namespace ckpt
