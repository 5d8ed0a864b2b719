// SPDX-License-Identifier: MIT
// Reads torch.export archives (pt2reader.h; the byte layout in docs/formats-pt2.md).
#include "core/read/pt2reader.h"

#include "core/format/ziparchive.h"
#include "core/format/zipformat.h"
#include "core/io/mappedfile.h"
#include "core/json/json.h"
#include "core/model/dtype.h"
#include "core/read/checkpointbuilder.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

namespace ckpt {

namespace {

constexpr std::uint64_t kMaxJsonRecordBytes = 64ull << 20;
// A nested archive may itself be an export archive (a hostile file): two levels are read, no more.
thread_local int t_nesting = 0;
constexpr int kMaxNesting = 2;

// torch/_export/serde/schema.py ScalarType: the integer a tensor_meta records, as a torch dtype.
std::optional<std::string_view> scalarTypeName(std::int64_t value)
{
    static constexpr std::array<std::pair<int, std::string_view>, 21> kTypes {{
        {1, "uint8"},
        {2, "int8"},
        {3, "int16"},
        {4, "int32"},
        {5, "int64"},
        {6, "float16"},
        {7, "float32"},
        {8, "float64"},
        {9, "complex32"},
        {10, "complex64"},
        {11, "complex128"},
        {12, "bool"},
        {13, "bfloat16"},
        {28, "uint16"},
        {29, "float8_e4m3fn"},
        {30, "float8_e5m2"},
        {31, "float8_e4m3fnuz"},
        {32, "float8_e5m2fnuz"},
        {33, "float8_e8m0fnu"},
        {34, "uint32"},
        {35, "uint64"},
    }};
    for (const auto& [number, name] : kTypes)
        if (number == value)
            return name;
    return std::nullopt;
}

// serialize.py deserialize_device: {"type": "cuda", "index": 1} is "cuda:1", an index of null
// the bare type.
std::optional<std::string> deviceText(const JsonValue& device)
{
    if (!device.isObject())
        return std::nullopt;
    const JsonValue* type = device.find("type");
    if (!type || !type->isString() || type->toString().empty())
        return std::nullopt;
    const JsonValue* index = device.find("index");
    if (!index || index->isNull())
        return type->toString();
    if (auto number = index->toInt64())
        return type->toString() + ":" + std::to_string(*number);
    return std::nullopt;
}

// A list of SymInt ({"as_int": 3}); nothing when one is symbolic (torch refuses those:
// "Only as_int is supported").
std::optional<Dimensions> symInts(const JsonValue* list)
{
    if (!list || !list->isArray())
        return std::nullopt;
    Dimensions result;
    for (const JsonValue& item : list->items()) {
        const JsonValue* value = item.find("as_int");
        if (!value)
            return std::nullopt;
        auto number = value->toInt64();
        if (!number)
            return std::nullopt;
        result.push_back(*number);
    }
    return result;
}

class ExportArchiveReader {
public:
    ExportArchiveReader(Checkpoint& checkpoint, const ReadOptions& options)
        : m_checkpoint(checkpoint)
        , m_options(options)
        , m_zip(*checkpoint.zip)
    { }

    void readPt2();
    void readLegacy();

private:
    const ZipEntry* record(std::string_view local) const { return m_zip.find(m_prefix + std::string(local)); }
    std::optional<std::string> text(const ZipEntry& entry, std::uint64_t maxBytes);
    std::optional<JsonValue> json(const ZipEntry& entry);
    void readPayloadConfig(const std::string& model, std::string_view kind, std::uint32_t parent);
    void readNested(const ZipEntry& entry, std::uint32_t parent, const std::string& name,
        bool bareTensorAtName, bool movable);
    void summariseProgram(const ZipEntry& entry, std::uint32_t parent);
    std::uint32_t modelNode(const std::string& model);
    void markUsed(const ZipEntry* entry)
    {
        if (entry)
            m_used.insert(entry);
    }

    Checkpoint& m_checkpoint;
    const ReadOptions& m_options;
    const ZipArchive& m_zip;
    std::string m_prefix; // "<root>/" for the PT2 layout, "" for the legacy one
    std::set<const ZipEntry*> m_used;
    std::map<std::string, std::uint32_t> m_modelNodes;
};

std::optional<std::string> ExportArchiveReader::text(const ZipEntry& entry, std::uint64_t maxBytes)
{
    auto payload = m_zip.readPayload(entry, maxBytes);
    if (!payload) {
        m_checkpoint.addFinding(Severity::Error, FindingCode::RecordUnreadable,
            "record " + std::string(entry.name()) + " cannot be read: " + payload.error().message,
            std::string(entry.name()), entry.dataOffset);
        return std::nullopt;
    }
    if (!entry.payloadComplete) {
        m_checkpoint.addFinding(Severity::Error, FindingCode::RecordTruncated,
            "record " + std::string(entry.name()) + " is cut off by the end of the file",
            std::string(entry.name()), entry.dataOffset);
        return std::nullopt;
    }
    return std::string(payload->begin(), payload->end());
}

std::optional<JsonValue> ExportArchiveReader::json(const ZipEntry& entry)
{
    auto body = text(entry, kMaxJsonRecordBytes);
    if (!body)
        return std::nullopt;
    auto parsed = parseJson(*body);
    if (!parsed) {
        m_checkpoint.addFinding(Severity::Error, FindingCode::ExportConfigUnreadable,
            "record " + std::string(entry.name()) + " is not valid JSON (" + parsed.error().message
                + "); torch.export.load fails on it",
            std::string(entry.name()), entry.dataOffset);
        return std::nullopt;
    }
    return std::move(*parsed);
}

// The default program ("model", the one torch.export.load returns) is shown at the top; any
// other program of the archive below a node of its own name.
std::uint32_t ExportArchiveReader::modelNode(const std::string& model)
{
    if (model == "model")
        return 0;
    if (auto found = m_modelNodes.find(model); found != m_modelNodes.end())
        return found->second;
    const std::uint32_t node = m_checkpoint.addTreeNode(0, TreeNodeKind::Module, model);
    m_checkpoint.tree[node].summary = "exported program '" + model + "'";
    m_modelNodes[model] = node;
    return node;
}

void ExportArchiveReader::summariseProgram(const ZipEntry& entry, std::uint32_t parent)
{
    markUsed(&entry);
    const std::uint32_t node = m_checkpoint.addTreeNode(parent, TreeNodeKind::Value, "program");
    auto program = json(entry);
    if (!program) {
        m_checkpoint.tree[node].summary = std::string(entry.name()) + " (unreadable)";
        return;
    }
    std::string summary = std::string(entry.name());
    if (const JsonValue* version = program->find("schema_version"); version && version->isObject()) {
        const auto major = version->member("major").toInt64();
        const auto minor = version->member("minor").toInt64();
        if (major && minor)
            summary += ", schema " + std::to_string(*major) + "." + std::to_string(*minor);
    }
    const JsonValue& graph = program->member("graph_module").member("graph");
    if (const JsonValue* nodes = graph.find("nodes"); nodes && nodes->isArray())
        summary += ", " + std::to_string(nodes->size()) + " graph nodes";
    m_checkpoint.tree[node].summary = summary;
}

// A nested torch.save archive (a use_pickle weight, sample inputs, a 2.1-2.5 state dict): read on
// its own over a slice of this file, then shown below `parent` with its storages' bytes located in
// this file. Its pickles are rated by the safety verdict, which walks every zip member itself.
void ExportArchiveReader::readNested(
    const ZipEntry& entry, std::uint32_t parent, const std::string& name, bool bareTensorAtName, bool movable)
{
    markUsed(&entry);
    const std::string member(entry.name());
    if (entry.method != zipformat::kMethodStored || !entry.payloadComplete) {
        m_checkpoint.addFinding(Severity::Error, FindingCode::RecordUnreadable,
            "the nested torch.save archive " + member
                + (entry.payloadComplete ? " is compressed; it is not read (torch's writer stores it)"
                                         : " is cut off by the end of the file"),
            member, entry.dataOffset);
        return;
    }
    if (t_nesting >= kMaxNesting) {
        m_checkpoint.addFinding(Severity::Warning, FindingCode::ExportNestingTooDeep,
            "the nested archive " + member + " is inside " + std::to_string(t_nesting)
                + " archives already; it is not read further",
            member, entry.dataOffset);
        return;
    }
    auto slice = MappedFile::slice(m_checkpoint.file, entry.dataOffset, entry.uncompressedSize);
    if (!slice)
        return;
    ++t_nesting;
    const Checkpoint nested = readCheckpoint(slice, m_options.forFileInside());
    --t_nesting;

    for (const Finding& finding : nested.findings) {
        Finding copy = finding;
        copy.message = "in " + member + ": " + finding.message;
        copy.record = finding.record.empty() ? member : member + " > " + finding.record;
        if (copy.offset)
            *copy.offset += entry.dataOffset;
        m_checkpoint.findings.push_back(std::move(copy));
    }

    const auto firstStorage = static_cast<std::uint32_t>(m_checkpoint.storages.size());
    const auto firstTensor = static_cast<std::uint32_t>(m_checkpoint.tensors.size());
    const std::string localMember = member.substr(std::min(m_prefix.size(), member.size()));
    for (const StorageRecord& inner : nested.storages) {
        StorageRecord storage = inner;
        storage.key = localMember + ":" + inner.key;
        storage.setRecord(InternedString(member + " > " + inner.record()));
        if (storage.dataOffset)
            storage.dataOffset = *storage.dataOffset + entry.dataOffset;
        storage.persistentIdTuples.clear();
        storage.firstPersistentId = kNoNode;
        storage.pickleSection = UINT32_MAX;
        storage.tensors.clear();
        for (std::uint32_t tensor : inner.tensors)
            storage.tensors.push_back(firstTensor + tensor);
        m_checkpoint.storages.push_back(std::move(storage));
        m_checkpoint.indexStorage(static_cast<std::uint32_t>(m_checkpoint.storages.size() - 1));
    }
    for (const TensorEntry& inner : nested.tensors) {
        TensorEntry tensor = inner;
        // A part of a composite tensor ("[a]" of a wrapper subclass) follows its tensor's name.
        tensor.name = inner.name.empty() ? name
            : inner.name.front() == '['  ? name + inner.name
                                         : name + "." + inner.name;
        if (inner.storage >= 0)
            tensor.storage = static_cast<std::int32_t>(firstStorage) + inner.storage;
        tensor.node = kNoNode;
        tensor.deviceArgumentTuple = kNoNode;
        m_checkpoint.tensors.push_back(std::move(tensor));
    }

    m_checkpoint.nestedArchives.push_back(
        {member, firstStorage, static_cast<std::uint32_t>(nested.storages.size()), firstTensor,
            static_cast<std::uint32_t>(nested.tensors.size()), movable});

    // The tree: a bare tensor (a use_pickle weight) takes the weight's own place; anything else is
    // grafted below a node named after the member.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> work; // (nested node, node here)
    // Its parts (the tensors of a wrapper subclass's state, "[a]") are rows below it.
    const bool bareTensor = bareTensorAtName && !nested.tensors.empty() && nested.tensors.front().name.empty()
        && std::all_of(nested.tensors.begin() + 1, nested.tensors.end(),
            [](const TensorEntry& part) { return part.name.starts_with('['); });
    if (bareTensor) {
        std::string leaf;
        const std::uint32_t at = m_checkpoint.modulePathFor(parent, name, leaf);
        const std::uint32_t node = m_checkpoint.addTreeNode(at, TreeNodeKind::Tensor, leaf);
        m_checkpoint.tree[node].tensor = static_cast<std::int32_t>(firstTensor);
        m_checkpoint.tensors[firstTensor].treeNode = node;
        for (std::uint32_t t = 1; t < nested.tensors.size(); ++t) {
            const std::uint32_t part
                = m_checkpoint.addTreeNode(node, TreeNodeKind::Tensor, nested.tensors[t].name);
            m_checkpoint.tree[part].tensor = static_cast<std::int32_t>(firstTensor + t);
            m_checkpoint.tensors[firstTensor + t].treeNode = part;
        }
        return;
    }
    std::uint32_t top = parent;
    if (bareTensorAtName) {
        std::string leaf;
        const std::uint32_t at = m_checkpoint.modulePathFor(parent, name, leaf);
        top = m_checkpoint.addTreeNode(at, TreeNodeKind::Object, leaf);
        m_checkpoint.tree[top].summary = member;
    }
    if (!nested.tree.empty())
        work.emplace_back(0, top);
    while (!work.empty()) {
        const auto [from, to] = work.back();
        work.pop_back();
        for (std::uint32_t child : nested.tree[from].children) {
            const TreeNode& source = nested.tree[child];
            const std::uint32_t node = m_checkpoint.addTreeNode(to, source.kind, source.name.str());
            TreeNode& copy = m_checkpoint.tree[node];
            copy.className = source.className;
            copy.summary = source.summary;
            if (source.tensor >= 0) {
                copy.tensor = static_cast<std::int32_t>(firstTensor) + source.tensor;
                m_checkpoint.tensors[static_cast<std::size_t>(copy.tensor)].treeNode = node;
            }
            work.emplace_back(child, node);
        }
    }
}

// data/weights/<model>_weights_config.json or data/constants/<model>_constants_config.json: one
// PayloadMeta per name (torch/export/pt2_archive/_package.py _build_file_map, _load_state_dict).
void ExportArchiveReader::readPayloadConfig(
    const std::string& model, std::string_view kind, std::uint32_t parent)
{
    const bool weights = kind == "weights";
    const std::string directory = weights ? "data/weights/" : "data/constants/";
    const std::string nodeName = weights ? "state_dict" : "constants";
    // 2.6-2.7 kept the whole state dict as one torch.save file (load_pt2 still reads it).
    if (const ZipEntry* legacyFile = record(directory + model + ".pt")) {
        const std::uint32_t node = m_checkpoint.addTreeNode(parent, TreeNodeKind::Dict, nodeName);
        m_checkpoint.tree[node].summary = std::string(legacyFile->name());
        readNested(*legacyFile, node, nodeName, false, true);
        return;
    }
    const std::string configName
        = directory + model + (weights ? "_weights_config.json" : "_constants_config.json");
    const ZipEntry* configEntry = record(configName);
    if (!configEntry) {
        m_checkpoint.addFinding(Severity::Error, FindingCode::ExportConfigMissing,
            "the archive has no " + m_prefix + configName + " for the program '" + model
                + "'; torch.export.load fails with \"" + configName + " not found in PT2 archive\"",
            m_prefix + configName);
        return;
    }
    markUsed(configEntry);
    auto config = json(*configEntry);
    if (!config)
        return;
    const JsonValue* members = config->find("config");
    if (!members || !members->isObject()) {
        m_checkpoint.addFinding(Severity::Error, FindingCode::ExportConfigUnreadable,
            "record " + std::string(configEntry->name()) + " has no \"config\" object",
            std::string(configEntry->name()), configEntry->dataOffset);
        return;
    }
    const std::uint32_t node = m_checkpoint.addTreeNode(parent, TreeNodeKind::Dict, nodeName);
    const std::string configRecord(configEntry->name());
    auto bad = [&](const std::string& fqn, const std::string& why) {
        m_checkpoint.addFinding(Severity::Error, FindingCode::ExportConfigUnreadable,
            configRecord + ": the entry for '" + fqn + "' " + why + "; torch.export.load fails on it",
            configRecord, configEntry->dataOffset);
    };
    const std::string namePrefix = (model == "model" ? std::string() : model + ".") + nodeName + ".";
    for (const JsonMember& item : members->members()) {
        const std::string& fqn = item.key;
        const JsonValue& meta = item.value;
        const JsonValue* pathName = meta.find("path_name");
        if (!pathName || !pathName->isString() || pathName->toString().empty()
            || pathName->toString().find("..") != std::string::npos) {
            bad(fqn, "names no record (path_name)");
            continue;
        }
        const std::string& path = pathName->toString();
        const ZipEntry* payload = record(directory + path);
        if (!payload) {
            m_checkpoint.addFinding(Severity::Error, FindingCode::RecordMissing,
                "'" + fqn + "' is stored in " + m_prefix + directory + path
                    + " but the archive has no such record: torch.export.load fails with "
                      "\"PytorchStreamReader "
                      "failed locating file "
                    + directory + path + ": file not found\"",
                m_prefix + directory + path);
            continue;
        }
        if (meta.member("use_pickle").toBool()) {
            // A tensor subclass saved with torch.save (loaded with weights_only=False), or a
            // custom object (constants/custom_obj_N: TorchScript's pickler; opaque_obj_N: pickle).
            if (path.starts_with("custom_obj_") || path.starts_with("opaque_obj_")) {
                markUsed(payload);
                std::string leaf;
                const std::uint32_t at = m_checkpoint.modulePathFor(node, fqn, leaf);
                const std::uint32_t placeholder
                    = m_checkpoint.addTreeNode(at, TreeNodeKind::Placeholder, leaf);
                m_checkpoint.tree[placeholder].summary
                    = (path.starts_with("custom_obj_")
                              ? "a TorchScript object pickled by torch._C._pickle_save ("
                              : "an object pickled with pickle.dumps (")
                    + std::string(payload->name()) + ")";
                continue;
            }
            const std::size_t firstNested = m_checkpoint.tensors.size();
            readNested(*payload, node, fqn, true, true);
            // The nested names start at the node: prefix them with where they are shown.
            for (auto tensor = m_checkpoint.tensors.begin() + static_cast<std::ptrdiff_t>(firstNested);
                 tensor != m_checkpoint.tensors.end(); ++tensor)
                tensor->name = namePrefix + tensor->name;
            continue;
        }
        const JsonValue* tensorMeta = meta.find("tensor_meta");
        if (!tensorMeta || !tensorMeta->isObject()) {
            bad(fqn, "has no tensor_meta");
            continue;
        }
        const auto dtypeNumber = tensorMeta->member("dtype").toInt64();
        const auto dtypeName = dtypeNumber ? scalarTypeName(*dtypeNumber) : std::nullopt;
        const auto dtype = dtypeName ? dtypeByName(*dtypeName) : std::nullopt;
        if (!dtype) {
            bad(fqn,
                "has a dtype torch does not know ("
                    + (dtypeNumber ? std::to_string(*dtypeNumber) : std::string("none")) + ")");
            continue;
        }
        const auto sizes = symInts(tensorMeta->find("sizes"));
        const auto strides = symInts(tensorMeta->find("strides"));
        const JsonValue* offsetValue = tensorMeta->find("storage_offset");
        const auto offset
            = offsetValue ? offsetValue->member("as_int").toInt64() : std::optional<std::int64_t>();
        if (!sizes || !strides || !offset || sizes->size() != strides->size()) {
            bad(fqn, "has sizes, strides or a storage offset that are not plain integers");
            continue;
        }
        const auto device = deviceText(tensorMeta->member("device"));
        if (!device) {
            bad(fqn, "records no device torch can read");
            continue;
        }
        const std::int64_t layout = tensorMeta->member("layout").toInt64().value_or(7);
        markUsed(payload);

        // One storage per record: the first name that uses it gives its dtype and device, as
        // _build_file_map builds the flat tensor once and moves it once.
        const std::string key = std::string(kind) + "/" + path;
        std::optional<std::uint32_t> storageIndex = m_checkpoint.storageIndex(key);
        if (!storageIndex) {
            StorageRecord storage;
            storage.key = key;
            storage.storageClass = "pt2 raw record";
            storage.dtype = dtype->name;
            storage.nbytes = payload->uncompressedSize;
            storage.numel = dtype->elementSize ? payload->uncompressedSize / dtype->elementSize : 0;
            storage.device = InternedString(*device);
            storage.setRecord(InternedString(m_prefix + "data/"), 0);
            if (payload->method == zipformat::kMethodStored) {
                storage.dataOffset = payload->dataOffset;
                storage.availableBytes = payload->payloadComplete
                    ? payload->uncompressedSize
                    : (payload->dataOffset < m_checkpoint.fileSize
                            ? m_checkpoint.fileSize - payload->dataOffset
                            : 0);
            } else {
                storage.availableBytes = payload->uncompressedSize;
                m_checkpoint.addFinding(Severity::Warning, FindingCode::CompressedStorage,
                    "record " + std::string(payload->name())
                        + " is compressed; torch's PT2 writer stores weights uncompressed",
                    std::string(payload->name()), payload->localHeaderOffset);
            }
            if (!payload->payloadComplete)
                m_checkpoint.addFinding(Severity::Error, FindingCode::RecordTruncated,
                    "record " + std::string(payload->name()) + " is cut off by the end of the file: '" + fqn
                        + "' has only " + formatThousands(storage.availableBytes.value_or(0)) + " of its "
                        + formatThousands(storage.nbytes) + " bytes",
                    std::string(payload->name()), payload->dataOffset);
            if (dtype->elementSize && payload->uncompressedSize % dtype->elementSize != 0)
                m_checkpoint.addFinding(Severity::Error, FindingCode::RecordSizeMismatch,
                    "record " + std::string(payload->name()) + " is "
                        + formatThousands(payload->uncompressedSize) + " bytes, not a multiple of "
                        + std::to_string(dtype->elementSize) + " (" + std::string(dtype->name)
                        + "); torch.export.load fails with \"Record " + directory + path + ": size "
                        + std::to_string(payload->uncompressedSize) + " is not a multiple of element size "
                        + std::to_string(dtype->elementSize) + "\"",
                    std::string(payload->name()), payload->localHeaderOffset);
            m_checkpoint.storages.push_back(std::move(storage));
            storageIndex = static_cast<std::uint32_t>(m_checkpoint.storages.size() - 1);
            m_checkpoint.indexStorage(*storageIndex);
        }
        StorageRecord& storage = m_checkpoint.storages[*storageIndex];
        if (storage.device && std::string_view(*storage.device) != *device)
            m_checkpoint.addFinding(Severity::Warning, FindingCode::ExportDeviceDisagrees,
                "'" + fqn + "' records device " + *device + " but shares " + storage.record()
                    + " with a name on " + std::string(*storage.device)
                    + "; torch.export.load places the whole record on " + std::string(*storage.device),
                configRecord);

        TensorEntry tensor;
        tensor.name = namePrefix + fqn;
        tensor.dtype = dtype->name;
        tensor.shape = *sizes;
        tensor.stride = *strides;
        tensor.storageOffset = *offset;
        tensor.device = storage.device;
        tensor.storage = static_cast<std::int32_t>(*storageIndex);
        tensor.rebuildFunction = weights ? "torch.export weight" : "torch.export constant";
        tensor.layout = layout == 7 ? TensorLayout::Strided : TensorLayout::Strided;
        tensor.requiresGrad = tensorMeta->member("requires_grad").toBool();
        tensor.isParameter = meta.member("is_param").toBool();
        const auto tensorIndex = static_cast<std::uint32_t>(m_checkpoint.tensors.size());
        storage.tensors.push_back(tensorIndex);
        std::string leaf;
        const std::uint32_t at = m_checkpoint.modulePathFor(node, fqn, leaf);
        const std::uint32_t tensorNode = m_checkpoint.addTreeNode(at, TreeNodeKind::Tensor, leaf);
        m_checkpoint.tree[tensorNode].tensor = static_cast<std::int32_t>(tensorIndex);
        tensor.treeNode = tensorNode;
        m_checkpoint.tensors.push_back(std::move(tensor));
    }
}

void ExportArchiveReader::readPt2()
{
    const std::string firstName(m_zip.entries().front().name());
    const auto slash = firstName.find('/');
    m_checkpoint.archivePrefix = slash == std::string::npos ? std::string() : firstName.substr(0, slash);
    m_prefix = m_checkpoint.archivePrefix.empty() ? std::string() : m_checkpoint.archivePrefix + "/";
    for (const char* marker :
        {"archive_format", "archive_version", ".data/version", "byteorder", ".data/serialization_id"})
        markUsed(record(marker));

    if (!record("archive_format"))
        m_checkpoint.addFinding(Severity::Error, FindingCode::ExportConfigMissing,
            "the archive has no " + m_prefix
                + "archive_format record (torch.export.save writes it last: the file is cut short or was not "
                  "finished); torch.export.load fails with \"Invalid archive format\"");
    std::string version = "?";
    if (const ZipEntry* entry = record("archive_version")) {
        version = text(*entry, 64).value_or("?");
        if (version != "0")
            m_checkpoint.addFinding(Severity::Warning, FindingCode::ExportArchiveVersion,
                "the archive says archive_version " + version.substr(0, 20)
                    + "; torch 2.14's torch.export.load reads version 0 only (\"Saved archive version "
                    + version.substr(0, 20) + " does not match our current archive version 0.\")",
                std::string(entry->name()));
    } else {
        m_checkpoint.addFinding(Severity::Warning, FindingCode::ExportArchiveVersion,
            "the archive has no archive_version record; torch.export.load fails reading it");
    }
    m_checkpoint.container.description
        = "a torch.export archive (PT2 archive_format \"pt2\", archive_version " + version.substr(0, 20)
        + ", " + formatThousands(m_checkpoint.fileSize)
        + " bytes), written by torch.export.save since torch 2.6";

    // The programs: models/<name>.json (pt2_archive_constants MODELS_FILENAME_FORMAT).
    std::vector<std::string> models;
    std::vector<std::string> compiled;
    for (const ZipEntry& entry : m_zip.entries()) {
        const std::string_view name = entry.name();
        if (!name.starts_with(m_prefix))
            continue;
        const std::string_view local = name.substr(m_prefix.size());
        if (local.starts_with("models/") && local.ends_with(".json") && local.size() > 12)
            models.emplace_back(local.substr(7, local.size() - 12));
        if (local.starts_with("data/aotinductor/"))
            compiled.emplace_back(name);
    }
    // A program whose models/<name>.json is lost (the archive cut short before it) still has its
    // weights config: its weights are shown.
    for (const ZipEntry& entry : m_zip.entries()) {
        const std::string_view name = entry.name();
        constexpr std::string_view kEnd = "_weights_config.json";
        if (!name.starts_with(m_prefix))
            continue;
        const std::string_view local = name.substr(m_prefix.size());
        if (local.starts_with("data/weights/") && local.ends_with(kEnd) && local.size() > 13 + kEnd.size()) {
            const std::string model(local.substr(13, local.size() - 13 - kEnd.size()));
            if (std::find(models.begin(), models.end(), model) == models.end())
                models.push_back(model);
        }
    }
    for (const std::string& model : models) {
        const std::uint32_t parent = modelNode(model);
        if (const ZipEntry* program = record("models/" + model + ".json"))
            summariseProgram(*program, parent);
        else
            m_checkpoint.addFinding(Severity::Error, FindingCode::ExportConfigMissing,
                "the archive has no " + m_prefix + "models/" + model + ".json, the program '" + model
                    + "' its weights config describes; torch.export.load does not load it");
        readPayloadConfig(model, "weights", parent);
        readPayloadConfig(model, "constants", parent);
        if (const ZipEntry* inputs = record("data/sample_inputs/" + model + ".pt")) {
            const std::uint32_t node
                = m_checkpoint.addTreeNode(parent, TreeNodeKind::Sequence, "sample_inputs");
            m_checkpoint.tree[node].summary = std::string(inputs->name());
            readNested(*inputs, node, (model == "model" ? std::string() : model + ".") + "sample_inputs",
                false, false);
        }
    }
    if (models.empty() && compiled.empty())
        m_checkpoint.addFinding(Severity::Warning, FindingCode::ExportConfigMissing,
            "the archive holds no program (no models/*.json) and no AOTInductor package; torch.export.load "
            "has nothing to load");

    if (!compiled.empty()) {
        std::vector<std::string> code;
        for (const std::string& name : compiled) {
            markUsed(m_zip.find(name));
            if (name.ends_with(".so") || name.ends_with(".cubin") || name.ends_with(".cpp")
                || name.ends_with(".hsaco") || name.ends_with(".ptx") || name.ends_with(".spv")
                || name.ends_with(".o") || name.ends_with(".dll") || name.ends_with(".dylib")
                || name.ends_with(".fatbin") || name.ends_with(".py"))
                code.push_back(name);
        }
        std::string list;
        for (std::size_t i = 0; i < code.size() && i < 4; ++i)
            list += (i ? ", " : "") + code[i];
        if (code.size() > 4)
            list += ", ...";
        m_checkpoint.addFinding(Severity::Warning, FindingCode::ExportCompiledCode,
            "the archive is an AOTInductor package: " + std::to_string(compiled.size())
                + " members under data/aotinductor/"
                + (code.empty()
                        ? std::string()
                        : ", " + std::to_string(code.size()) + " of them compiled code (" + list + ")")
                + "; torch.export.load and torch._inductor.aoti_load_package load and run that code: it is "
                  "never "
                  "inert",
            compiled.front());
        // AOTInductor keeps its own weights as torch.save files (data/weights/weight_N, named in
        // data/aotinductor/<model>/weights_config.json): read below as nested archives.
    }

    // Members no config names: torch ignores them; nested torch.save files among them (the
    // weights of an AOTInductor package) are read and shown.
    std::uint32_t unreferenced = 0;
    for (const ZipEntry& entry : m_zip.entries()) {
        if (m_used.count(&entry))
            continue;
        const std::string name(entry.name());
        const std::string_view local = std::string_view(name).substr(std::min(m_prefix.size(), name.size()));
        if (local.starts_with("extra/") || local.ends_with("/"))
            continue;
        if ((local.starts_with("data/weights/") || local.starts_with("data/constants/"))
            && entry.method == zipformat::kMethodStored) {
            if (auto payload = m_zip.storedPayload(entry);
                payload && payload->size() >= 4 && (*payload)[0] == 'P' && (*payload)[1] == 'K') {
                if (!unreferenced)
                    unreferenced = m_checkpoint.addTreeNode(0, TreeNodeKind::Dict, "archived_weights");
                readNested(entry, unreferenced, std::string(local.substr(5)), true, false);
                continue;
            }
        }
        if (local.starts_with("data/"))
            m_checkpoint.addFinding(Severity::Warning, FindingCode::RecordUnreferenced,
                "record " + name + " (" + formatThousands(entry.uncompressedSize)
                    + " bytes) is named by no config of the archive; torch.export.load ignores it",
                name, entry.localHeaderOffset);
    }
}

void ExportArchiveReader::readLegacy()
{
    m_prefix.clear();
    std::string version = "?";
    if (const ZipEntry* entry = record("version"))
        version = text(*entry, 64).value_or("?");
    else
        m_checkpoint.addFinding(Severity::Error, FindingCode::VersionMissing,
            "the archive has no version record (torch 2.1-2.5 wrote it last: the file is cut short or was "
            "not "
            "finished); torch.export.load fails with \"We ran into an error when deserializing the saved "
            "file\"");
    m_checkpoint.container.description
        = "a torch.export archive in the layout of torch 2.1-2.5 (schema version " + version.substr(0, 20)
        + ", " + formatThousands(m_checkpoint.fileSize) + " bytes)";
    m_checkpoint.addFinding(Severity::Info, FindingCode::ExportLegacyLayout,
        "this archive has the layout torch.export.save wrote in torch 2.1-2.5 "
        "(serialized_exported_program.json "
        "and nested torch.save files); torch 2.14's torch.export.load still reads it, with the warning "
        "\"This "
        "version of file is deprecated\"");
    summariseProgram(*record("serialized_exported_program.json"), 0);
    const std::array<std::pair<const char*, const char*>, 3> parts {{
        {"serialized_state_dict.pt", "state_dict"},
        {"serialized_constants.pt", "constants"},
        {"serialized_example_inputs.pt", "sample_inputs"},
    }};
    for (const auto& [member, name] : parts) {
        const ZipEntry* entry = record(member);
        if (!entry) {
            if (std::string_view(member) != "serialized_example_inputs.pt"
                || !record("serialized_state_dict.json"))
                m_checkpoint.addFinding(std::string_view(member) == "serialized_example_inputs.pt"
                        ? Severity::Warning
                        : Severity::Error,
                    FindingCode::ExportConfigMissing,
                    std::string("the archive has no ") + member
                        + "; torch 2.14's torch.export.load fails with \""
                        + std::string(name).substr(0, std::string(name).find('_')) + " is None\"");
            continue;
        }
        const std::uint32_t node = m_checkpoint.addTreeNode(
            0, std::string_view(name) == "sample_inputs" ? TreeNodeKind::Sequence : TreeNodeKind::Dict, name);
        m_checkpoint.tree[node].summary = member;
        if (entry->uncompressedSize == 0) {
            markUsed(entry);
            continue; // torch writes b"" for nothing (deserialize_torch_artifact reads it as {})
        }
        readNested(*entry, node, name, false, std::string_view(name) != "sample_inputs");
    }
    if (const ZipEntry* json = record("serialized_state_dict.json"))
        m_checkpoint.addFinding(Severity::Warning, FindingCode::ExportLegacyLayout,
            "the state dict is kept as JSON (serialized_state_dict.json, the earliest torch.export layout); "
            "its "
            "tensors are not read",
            std::string(json->name()));
}

} // namespace

bool isExportPayloadConfig(std::string_view localName)
{
    return (localName.starts_with("data/weights/") && localName.ends_with("_weights_config.json"))
        || (localName.starts_with("data/constants/") && localName.ends_with("_constants_config.json"));
}

std::optional<ExportArchiveLayout> exportArchiveLayout(const ZipArchive& zip)
{
    if (!zip.hasEntries())
        return std::nullopt;
    // is_pt2_package: the root folder of the first name, then <root>/archive_format == "pt2".
    const std::string_view first = zip.entries().front().name();
    const auto slash = first.find('/');
    if (slash != std::string_view::npos) {
        if (const ZipEntry* format = zip.find(std::string(first.substr(0, slash + 1)) + "archive_format")) {
            auto payload = zip.readPayload(*format, 16);
            if (payload
                && std::string_view(reinterpret_cast<const char*>(payload->data()), payload->size()) == "pt2")
                return ExportArchiveLayout::Pt2;
        } else {
            // archive_format is written last: an archive cut short has none, but its first records
            // (data/weights/..., models/...) still say what it is.
            const std::string root(first.substr(0, slash + 1));
            for (const ZipEntry& entry : zip.entries()) {
                const std::string_view name = entry.name();
                if (!name.starts_with(root))
                    continue;
                const std::string_view local = name.substr(root.size());
                if (local.starts_with("data/weights/") || local.starts_with("data/constants/")
                    || local.starts_with("data/aotinductor/")
                    || (local.starts_with("models/") && local.ends_with(".json")))
                    return ExportArchiveLayout::Pt2;
            }
        }
    }
    // torch 2.1-2.5 wrote serialized_exported_program.json first and `version` last.
    if (zip.find("serialized_exported_program.json"))
        return ExportArchiveLayout::Legacy;
    return std::nullopt;
}

void readExportArchive(Checkpoint& checkpoint, ExportArchiveLayout layout, const ReadOptions& options)
{
    checkpoint.format = CheckpointFormat::ExportArchive;
    ExportArchiveReader reader(checkpoint, options);
    if (layout == ExportArchiveLayout::Pt2)
        reader.readPt2();
    else
        reader.readLegacy();
    CheckpointBuilder(checkpoint).checkViews();
}

} // namespace ckpt
