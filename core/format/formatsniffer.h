// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"

#include <string>

namespace ckpt {

// What a file is, decided from its bytes and never from its name.
enum class ContainerKind {
    TorchZip, // PK\3\4 at offset 0 (torch.save since 1.6; TorchScript is decided later, from constants.pkl)
    ZipWithPrefix, // a zip whose first local header is not at offset 0 (torch.load would not accept it)
    TorchLegacy, // pickled magic number 0x1950a86a20f9469cfc6c first
    TorchTar, // POSIX tar ("ustar" at 257) holding sys_info/pickle/storages
    Safetensors, // u64 LE header length, then a JSON object
    MobileFlatbuffer, // bytes 4..7 "PTMF"
    PreviewPytorch1, // "PYTORCH1": the 1.0-preview format torch rejects
    PlainPickle, // a pickle stream without the torch legacy magic number
    Empty, // 0 bytes
    GitLfsPointer, // "version https://git-lfs.github.com/spec/v1"
    HtmlPage,
    JsonText,
    PlainText,
    Png,
    Jpeg,
    Hdf5,
    Gzip,
    Unknown,
    Tar, // POSIX tar not in the 0.1.x layout: a bundle of files (AllenNLP, NeMo's .nemo), read member by
         // member
};

struct ContainerGuess {
    ContainerKind kind = ContainerKind::Unknown;
    // A short sentence naming what the file is, for people: e.g. "a Git LFS pointer (134 bytes), not
    // the checkpoint itself: fetch the real file with `git lfs pull`".
    std::string description;
};

ContainerGuess sniffContainer(ByteView fileBytes);
const char* containerKindName(ContainerKind kind); // stable identifier, e.g. "git-lfs-pointer"

} // namespace ckpt
