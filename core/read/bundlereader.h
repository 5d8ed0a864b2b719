// SPDX-License-Identifier: MIT
#pragma once
// Bundles: one archive that carries checkpoint files (docs/bundles.md): AllenNLP's model.tar.gz
// (weights.th, config.json, vocabulary/), NeMo's .nemo (a tar, often uncompressed, with
// model_weights.ckpt and model_config.yaml under ./), a plain zip of checkpoint files, a gzip'd
// checkpoint. Not PyTorch 0.1.x's tar format (tarreader.h), whose members are sys_info, pickle,
// storages and tensors. Read through libarchive without unpacking to disk: an uncompressed
// member is read in place from the mapped bundle; a compressed one is decompressed in memory (up
// to ReadOptions::maxBundleMemberInMemory), larger ones into an anonymous temporary file. Each
// checkpoint member is read as a checkpoint of its own (a ShardFile of the Bundle layout) and
// becomes a top-level node of the tree; the other members are listed. A damaged archive keeps
// the members before the damage and names it.

#include "core/base/bytes.h"
#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ckpt {

class ZipArchive;

// A zip that is no torch archive (no data.pkl, no version record, no TorchScript, export or
// model.json layout) and holds at least one member that looks like a checkpoint file.
bool isBundleZip(const ZipArchive& zip);

// Reads `file` (a tar, compressed tar, plain zip or compressed file) as a bundle. `container` is
// what the sniffer said. A file that holds no checkpoint member is NotACheckpoint, its members
// still listed.
Checkpoint readBundle(
    std::shared_ptr<const MappedFile> file, const ContainerGuess& container, const ReadOptions& options = {});

// Every regular member of a bundle as libarchive reads it: name, size and CRC-32 of its bytes, in
// archive order, and the damage (empty when whole). The bundle writer's read-back check compares
// the copy's members with the input's through this.
struct BundleMemberDigest {
    std::string name;
    std::uint64_t size = 0;
    std::uint32_t crc = 0;
};
std::vector<BundleMemberDigest> bundleMemberDigests(ByteView bundle, std::string& damage);

} // namespace ckpt
