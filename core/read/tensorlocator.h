// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;

// Where the bytes of one tensor of an opened checkpoint can be read: a checkpoint that maps the
// file holding them, and the tensor's index there. A checkpoint of one file is its own; a folder
// of shards (Checkpoint::shardSet) has no map of its own, so a tensor's bytes are in its shard;
// a DCP tensor's are in the torch.save archive of its chunk inside a .distcp file (§7.1).
struct LocatedTensor {
    std::shared_ptr<const Checkpoint> checkpoint; // null when the bytes cannot be reached (see problem)
    std::uint32_t tensor = 0;
    std::string problem; // why not, in words
};

// One entry per tensor of `checkpoint`, in its order. DCP chunk archives are read here (each is a
// torch zip, read with the symbolic reader: nothing is executed); the located tensor then carries
// the fully qualified name. A tensor saved in several chunks (several ranks' shards of one tensor,
// as Megatron-core saves them) is put back together in memory from its chunks' archives and read
// as a one-tensor safetensors file; chunks that do not tile it, or a dtype safetensors cannot
// name, leave a problem instead. Tensors of a companion file (Megatron's common.pt) are in it.
std::vector<LocatedTensor> locateTensors(const std::shared_ptr<const Checkpoint>& checkpoint);

} // namespace ckpt
