// SPDX-License-Identifier: MIT
#include "core/model/checkpoint.h"

#include "core/base/checkedarithmetic.h"
#include "core/format/ziparchive.h"

#include "core/model/dtype.h"

#include <cstdio>
#include <functional>
#include <stdexcept>

namespace ckpt {

const char* checkpointFormatName(CheckpointFormat format)
{
    switch (format) {
    case CheckpointFormat::TorchZip:
        return "torch-zip";
    case CheckpointFormat::TorchLegacy:
        return "torch-legacy";
    case CheckpointFormat::TorchTar:
        return "torch-tar";
    case CheckpointFormat::TorchScript:
        return "torchscript";
    case CheckpointFormat::Safetensors:
        return "safetensors";
    case CheckpointFormat::Distributed:
        return "dcp";
    case CheckpointFormat::ExportArchive:
        return "torch-export";
    case CheckpointFormat::NotACheckpoint:
        return "not-a-checkpoint";
    case CheckpointFormat::PlainPickle:
        return "pickle";
    case CheckpointFormat::TorchScriptJson:
        return "torchscript-json";
    }
    return "not-a-checkpoint";
}

const char* tensorLayoutName(TensorLayout layout)
{
    switch (layout) {
    case TensorLayout::Strided:
        return "strided";
    case TensorLayout::SparseCoo:
        return "sparse_coo";
    case TensorLayout::SparseCsr:
        return "sparse_csr";
    case TensorLayout::SparseCsc:
        return "sparse_csc";
    case TensorLayout::SparseBsr:
        return "sparse_bsr";
    case TensorLayout::SparseBsc:
        return "sparse_bsc";
    case TensorLayout::Quantized:
        return "quantized";
    case TensorLayout::Nested:
        return "nested";
    case TensorLayout::Meta:
        return "meta";
    }
    return "strided";
}

const char* treeNodeKindName(TreeNodeKind kind)
{
    switch (kind) {
    case TreeNodeKind::Root:
        return "root";
    case TreeNodeKind::Dict:
        return "dict";
    case TreeNodeKind::Sequence:
        return "sequence";
    case TreeNodeKind::Module:
        return "module";
    case TreeNodeKind::Object:
        return "object";
    case TreeNodeKind::Tensor:
        return "tensor";
    case TreeNodeKind::Value:
        return "value";
    case TreeNodeKind::Placeholder:
        return "placeholder";
    case TreeNodeKind::Alias:
        return "alias";
    }
    return "value";
}

std::uint64_t TensorEntry::nbytes() const
{
    if (layout != TensorLayout::Strided && layout != TensorLayout::Quantized && layout != TensorLayout::Meta)
        return 0;
    std::uint64_t elements = 1;
    for (std::int64_t dim : shape) {
        const std::uint64_t size = dim > 0 ? static_cast<std::uint64_t>(dim) : 0;
        if (size != 0 && elements > UINT64_MAX / size)
            return UINT64_MAX; // a hostile shape; the view check reports it
        elements *= size;
    }
    const auto info = dtypeByName(dtype);
    if (!info)
        return elements;
    // DTypeInfo::bytesFor would wrap for a hostile shape; round and multiply without wrapping.
    if (info->valuesPerByte > 1)
        return elements / info->valuesPerByte + (elements % info->valuesPerByte != 0);
    return saturatingMultiply(elements, info->elementSize);
}

std::map<std::string, std::uint64_t> Checkpoint::bytesByDevice() const
{
    std::map<std::string, std::uint64_t> totals;
    for (const StorageRecord& storage : storages)
        totals[storage.device.value_or("(none)")] += storage.nbytes;
    return totals;
}

std::uint64_t Checkpoint::totalStorageBytes() const
{
    std::uint64_t total = 0;
    for (const StorageRecord& storage : storages)
        total = saturatingAdd(total, storage.nbytes);
    return total;
}

std::shared_ptr<const ZipArchive> Checkpoint::zipArchive() const
{
    if (zip)
        return zip;
    return std::make_shared<const ZipArchive>(ZipArchive::open(file));
}

bool Checkpoint::hasErrors() const
{
    for (const Finding& finding : findings)
        if (finding.severity == Severity::Error)
            return true;
    return false;
}

void Checkpoint::addFinding(Severity severity, FindingCode code, std::string message, std::string record,
    std::optional<std::uint64_t> offset)
{
    findings.push_back({severity, code, std::move(message), std::move(record), offset});
}

std::string Checkpoint::treePath(std::uint32_t treeNode) const
{
    std::vector<const CompactText*> parts;
    while (treeNode != 0 && treeNode < tree.size()) {
        parts.push_back(&tree[treeNode].name);
        treeNode = tree[treeNode].parent;
    }
    std::string path;
    for (std::size_t i = parts.size(); i-- > 0;) {
        if (!path.empty())
            path += '.';
        path += parts[i]->view();
    }
    return path;
}

std::uint32_t Checkpoint::ensureRoot()
{
    if (tree.empty()) {
        TreeNode root;
        root.kind = TreeNodeKind::Root;
        tree.push_back(std::move(root));
    }
    return 0;
}

std::uint32_t Checkpoint::addTreeNode(std::uint32_t parent, TreeNodeKind kind, std::string_view name)
{
    ensureRoot();
    TreeNode node;
    node.kind = kind;
    node.name = name;
    node.parent = parent;
    tree.push_back(std::move(node));
    const auto index = static_cast<std::uint32_t>(tree.size() - 1);
    tree[parent].children.push_back(index);
    return index;
}

bool Checkpoint::isModulePathNode(std::uint32_t node, std::uint32_t parent, std::string_view component) const
{
    return node != 0 && node < tree.size() && tree[node].parent == parent
        && tree[node].kind == TreeNodeKind::Module && tree[node].name == component
        && tree[node].className.empty();
}

namespace {

std::uint64_t moduleNodeHash(std::uint32_t parent, std::string_view component)
{
    return std::hash<std::string_view> {}(component) ^ (std::uint64_t(parent) * 0x9E3779B97F4A7C15ull);
}

} // namespace

std::optional<std::uint32_t> Checkpoint::storageIndex(std::string_view key) const
{
    return storageKeyIndex.find(
        key, storages.size(), [&](std::uint32_t index) -> std::string_view { return storages[index].key; });
}

bool Checkpoint::indexStorage(std::uint32_t index)
{
    if (index >= storages.size())
        throw std::out_of_range("Checkpoint::indexStorage: no storage " + std::to_string(index));
    // One probe: the key's first storage, or this one added (issue 28).
    return storageKeyIndex.add(
        index, storages.size(), [&](std::uint32_t other) -> std::string_view { return storages[other].key; });
}

std::uint32_t Checkpoint::modulePathFor(
    std::uint32_t parent, std::string_view dottedName, std::string& leafName)
{
    std::size_t start = 0;
    for (;;) {
        const std::size_t dot = dottedName.find('.', start);
        if (dot == std::string_view::npos || dot == start || dot + 1 == dottedName.size()) {
            leafName = std::string(dottedName.substr(start));
            return parent;
        }
        const std::string_view component = dottedName.substr(start, dot - start);
        const std::uint64_t hash = moduleNodeHash(parent, component);
        std::uint32_t found
            = moduleNodeIndex
                  .find(hash, [&](std::uint32_t node) { return isModulePathNode(node, parent, component); })
                  .value_or(0);
        if (found == 0) {
            found = addTreeNode(parent, TreeNodeKind::Module, component);
            moduleNodeIndex.insert(hash, found);
        }
        parent = found;
        start = dot + 1;
    }
}

} // namespace ckpt

// The records' sizes on LP64 with libstdc++ (issue 28: a million tensors pay each byte a million
// times). A field added to them should find room in their padding or say why it cannot.
#if defined(__x86_64__) && defined(__GLIBCXX__)
static_assert(sizeof(ckpt::TensorEntry) == 152);
static_assert(sizeof(ckpt::StorageRecord) == 128);
static_assert(sizeof(ckpt::TreeNode) == 64);
#endif
