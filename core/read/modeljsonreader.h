// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;
class ZipArchive;
struct ZipEntry;

// TorchScript's oldest layout (PyTorch 1.0-1.3, docs/formats.md "model.json TorchScript"): a zip
// whose `model.json` is the protobuf JSON of torch.ModelDef (caffe2/proto/torch.proto). Its
// `tensors` table gives every tensor's dims, strides, offset (in elements), dataType (a
// caffe2.TensorProto.DataType), requiresGrad, device and the record of its storage
// (data.key = "tensors/N": the whole record is the storage, as import_legacy.cpp reads it); the
// module tree's parameters name them by index (tensorId). Called by readTorchZip for an archive
// with model.json and no data.pkl; marks in `recordUsed` the records its storages use. Nothing in
// it is executed: model.json is data, and the code/ records are never read.
void readModelJson(Checkpoint& checkpoint, const ZipArchive& zip, const ZipEntry& modelJson,
    const std::string& prefix, std::vector<bool>& recordUsed);

} // namespace ckpt
