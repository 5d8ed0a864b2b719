// SPDX-License-Identifier: MIT
// Reads TorchScript's model.json layout (PyTorch 1.0-1.3); see modeljsonreader.h.
#include "core/read/modeljsonreader.h"

#include "core/format/ziparchive.h"
#include "core/format/zipformat.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/model/dtype.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace ckpt {

namespace {

// model.json is small (names and shapes); a larger one is not believed.
constexpr std::uint64_t kMaxModelJsonBytes = 256ull << 20;

// caffe2.TensorProto.DataType (caffe2/proto/caffe2.proto) as torch's DataTypeToTypeMeta maps it;
// protobuf JSON writes an enum by name, and a parser also accepts its number.
struct Caffe2Type {
    std::string_view name;
    int number;
    std::string_view dtype; // torch's name; "" where torch has no tensor dtype for it
    std::string_view quantized; // the dtype an is_quantized tensor of it gets (toQIntType)
};
constexpr Caffe2Type kCaffe2Types[] = {
    {"UNDEFINED", 0, "", ""},
    {"FLOAT", 1, "float32", ""},
    {"INT32", 2, "int32", "qint32"},
    {"BYTE", 3, "uint8", "quint8"},
    {"STRING", 4, "", ""},
    {"BOOL", 5, "bool", ""},
    {"UINT8", 6, "uint8", "quint8"},
    {"INT8", 7, "int8", "qint8"},
    {"UINT16", 8, "", ""},
    {"INT16", 9, "int16", ""},
    {"INT64", 10, "int64", ""},
    {"FLOAT16", 12, "float16", ""},
    {"DOUBLE", 13, "float64", ""},
};

const Caffe2Type* caffe2Type(const JsonValue& value)
{
    for (const Caffe2Type& type : kCaffe2Types)
        if ((value.isString() && value.toString() == type.name)
            || (value.isNumber() && value.toInt64() == type.number))
            return &type;
    if (value.isNull()) // protobuf JSON leaves out a default; TensorDef's data_type has none: FLOAT
        return &kCaffe2Types[1];
    return nullptr;
}

// A protobuf JSON field by its JSON name (lowerCamelCase) or its proto name (snake_case).
const JsonValue& field(const JsonValue& object, std::string_view jsonName, std::string_view protoName)
{
    if (const JsonValue* value = object.find(jsonName))
        return *value;
    return object.member(protoName);
}

// An int64 as protobuf JSON writes it (a string of digits) or as a number.
std::optional<std::int64_t> int64Of(const JsonValue& value, std::int64_t absent = 0)
{
    if (value.isNull())
        return absent;
    if (value.isNumber())
        return value.toInt64();
    if (!value.isString())
        return std::nullopt;
    const std::string& text = value.toString();
    std::int64_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size())
        return std::nullopt;
    return number;
}

class ModelJsonReader {
public:
    ModelJsonReader(Checkpoint& checkpoint, const ZipArchive& zip, std::string prefix, std::string jsonRecord,
        std::vector<bool>& recordUsed)
        : m_checkpoint(checkpoint)
        , m_zip(zip)
        , m_prefix(std::move(prefix))
        , m_jsonRecord(std::move(jsonRecord))
        , m_recordUsed(recordUsed)
    { }

    void read(const JsonValue& model)
    {
        const JsonValue& tensors = field(model, "tensors", "tensors");
        if (!tensors.isNull() && !tensors.isArray())
            return problem("its 'tensors' is not a list");
        m_tensorOfDef.assign(tensors.size(), -1);
        m_defs = &tensors;
        const JsonValue& main = field(model, "mainModule", "main_module");
        if (main.isObject())
            readModule(main, 0, {}, 0);
        else
            problem("it has no mainModule");
        // Tensors no parameter names: tensor constants of the code and attributes' tensors.
        std::uint32_t constants = 0;
        for (std::size_t d = 0; d < m_tensorOfDef.size(); ++d) {
            if (m_tensorOfDef[d] >= 0)
                continue;
            if (!constants)
                constants = m_checkpoint.addTreeNode(0, TreeNodeKind::Sequence, "constants");
            addTensor(d, constants, "constants", std::to_string(d), false);
        }
    }

private:
    void problem(const std::string& what, Severity severity = Severity::Error)
    {
        m_checkpoint.addFinding(severity, FindingCode::ModelJsonUnreadable,
            m_jsonRecord + ": " + what + " (torch.jit.load of PyTorch 1.0-1.3 would fail)", m_jsonRecord);
    }

    void readModule(const JsonValue& module, std::uint32_t node, const std::string& path, int depth)
    {
        if (depth > 200)
            return problem("its modules nest more than 200 deep");
        for (const JsonValue& sub : field(module, "submodules", "submodules").items()) {
            const std::string name = field(sub, "name", "name").toString();
            const std::uint32_t child = m_checkpoint.addTreeNode(node, TreeNodeKind::Module, name);
            readModule(sub, child, path.empty() ? name : path + "." + name, depth + 1);
        }
        for (const JsonValue& parameter : field(module, "parameters", "parameters").items()) {
            const std::string name = field(parameter, "name", "name").toString();
            const auto id = int64Of(field(parameter, "tensorId", "tensor_id"));
            const std::string full = path.empty() ? name : path + "." + name;
            if (!id || *id < 0 || static_cast<std::uint64_t>(*id) >= m_tensorOfDef.size()) {
                problem("parameter " + full + " names tensor "
                    + field(parameter, "tensorId", "tensor_id").toJson()
                    + ", which the tensors table does not hold");
                continue;
            }
            const bool buffer = field(parameter, "isBuffer", "is_buffer").toBool();
            addTensor(static_cast<std::size_t>(*id), node, path, name, !buffer);
        }
    }

    void addTensor(std::size_t def, std::uint32_t parent, const std::string& path, const std::string& name,
        bool parameter)
    {
        const JsonValue& tensorDef = m_defs->at(def);
        TensorEntry tensor;
        tensor.name = path.empty() ? name : path + "." + name;
        tensor.rebuildFunction = InternedString("model.json");
        tensor.isParameter = parameter;
        tensor.requiresGrad = field(tensorDef, "requiresGrad", "requires_grad").toBool();
        const Caffe2Type* type = caffe2Type(field(tensorDef, "dataType", "data_type"));
        const bool quantized = field(tensorDef, "isQuantized", "is_quantized").toBool();
        std::string dtype = type ? std::string(quantized ? type->quantized : type->dtype) : std::string();
        if (dtype.empty()) {
            problem("tensor " + tensor.name + " has dataType "
                + field(tensorDef, "dataType", "data_type").toJson() + ", which torch has no dtype for");
            dtype = "unknown";
        }
        tensor.dtype = InternedString(dtype);
        if (quantized)
            tensor.layout = TensorLayout::Quantized;
        std::vector<std::int64_t> dims, strides;
        bool numbers = true;
        for (const JsonValue& value : field(tensorDef, "dims", "dims").items()) {
            const auto number = int64Of(value, -1);
            numbers = numbers && number && *number >= 0;
            dims.push_back(number.value_or(0));
        }
        for (const JsonValue& value : field(tensorDef, "strides", "strides").items()) {
            const auto number = int64Of(value, -1);
            numbers = numbers && number && *number >= 0;
            strides.push_back(number.value_or(0));
        }
        const auto offset = int64Of(field(tensorDef, "offset", "offset"));
        if (!numbers || !offset || *offset < 0 || strides.size() != dims.size())
            problem("tensor " + tensor.name + " has dims, strides or offset that are not counts of one rank");
        tensor.shape = Dimensions(dims);
        tensor.stride = Dimensions(strides);
        tensor.storageOffset = offset.value_or(0);
        const std::string device = field(tensorDef, "device", "device").toString();
        if (device.empty()) // import_legacy.cpp: AT_ASSERT(tensor_proto.has_device() && !device.empty())
            problem("tensor " + tensor.name + " records no device");
        tensor.device = InternedString(device.empty() ? std::string("cpu") : device);

        const std::string key = field(field(tensorDef, "data", "data"), "key", "key").toString();
        const auto tensorIndex = static_cast<std::uint32_t>(m_checkpoint.tensors.size());
        if (!key.empty()) {
            const std::uint32_t storage = storageFor(key, dtype, device, std::string(tensor.name));
            tensor.storage = static_cast<std::int32_t>(storage);
            m_checkpoint.storages[storage].tensors.push_back(tensorIndex);
        } else {
            problem("tensor " + tensor.name + " names no record for its data");
        }
        const std::uint32_t node = m_checkpoint.addTreeNode(parent, TreeNodeKind::Tensor, name);
        m_checkpoint.tree[node].tensor = static_cast<std::int32_t>(tensorIndex);
        tensor.treeNode = node;
        m_checkpoint.tensors.push_back(std::move(tensor));
        if (m_tensorOfDef[def] < 0)
            m_tensorOfDef[def] = static_cast<std::int64_t>(tensorIndex);
    }

    // The storage of record `key` (one per record, as import_legacy.cpp keeps a storage map).
    std::uint32_t storageFor(const std::string& key, const std::string& dtype, const std::string& device,
        const std::string& tensorName)
    {
        if (const auto known = m_checkpoint.storageIndex(key)) {
            const StorageRecord& storage = m_checkpoint.storages[*known];
            if (storage.device && storage.device->str() != device)
                m_checkpoint.addFinding(Severity::Error, FindingCode::ModelJsonUnreadable,
                    "tensor " + tensorName + " puts record " + key + " on " + device + ", another tensor on "
                        + storage.device->str()
                        + ": torch fails with \"storage previously was specified with "
                          "device "
                        + storage.device->str() + "but now is specified with device " + device + "\"",
                    m_prefix + key);
            return *known;
        }
        StorageRecord storage;
        storage.key = key;
        storage.dtype = InternedString(dtype);
        storage.storageClass = InternedString("model.json record");
        storage.device = InternedString(device.empty() ? std::string("cpu") : device);
        storage.setRecord(InternedString(m_prefix), 0);
        const std::string recordName = m_prefix + key;
        const ZipEntry* record = m_zip.find(recordName);
        const auto dtypeInfo = dtypeByName(dtype);
        const std::uint64_t elementSize = dtypeInfo && dtypeInfo->elementSize ? dtypeInfo->elementSize : 1;
        if (!record) {
            storage.availableBytes = 0;
            m_checkpoint.addFinding(Severity::Error, FindingCode::RecordMissing,
                "tensor " + tensorName + " keeps its data in record " + key
                    + ", which the archive does not hold: torch fails with \"PytorchStreamReader failed "
                      "locating file "
                    + key + ": file not found\"",
                recordName);
        } else {
            m_recordUsed[static_cast<std::size_t>(record - m_zip.entries().data())] = true;
            // import_legacy.cpp: the storage is the whole record, record_size bytes.
            storage.nbytes = record->uncompressedSize;
            storage.numel = storage.nbytes / elementSize;
            if (record->method == zipformat::kMethodStored) {
                storage.dataOffset = record->dataOffset;
                const std::uint64_t fileSize = m_checkpoint.fileSize;
                storage.availableBytes = record->payloadComplete
                    ? record->uncompressedSize
                    : (record->dataOffset < fileSize
                            ? std::min(record->uncompressedSize, fileSize - record->dataOffset)
                            : 0);
            } else {
                storage.deflated = record->method == zipformat::kMethodDeflate;
                storage.availableBytes = record->payloadComplete ? record->uncompressedSize : 0;
            }
            if (!record->payloadComplete)
                m_checkpoint.addFinding(Severity::Error, FindingCode::RecordTruncated,
                    "record " + recordName + " is cut off by the end of the file: storage " + key
                        + " has only " + formatThousands(storage.availableBytes.value_or(0)) + " of its "
                        + formatThousands(storage.nbytes) + " bytes",
                    recordName, record->dataOffset);
        }
        const auto index = static_cast<std::uint32_t>(m_checkpoint.storages.size());
        m_checkpoint.storages.push_back(std::move(storage));
        m_checkpoint.indexStorage(index);
        return index;
    }

    Checkpoint& m_checkpoint;
    const ZipArchive& m_zip;
    std::string m_prefix;
    std::string m_jsonRecord;
    std::vector<bool>& m_recordUsed;
    const JsonValue* m_defs = nullptr;
    std::vector<std::int64_t> m_tensorOfDef; // by TensorDef: the first tensor made of it, or -1
};

} // namespace

void readModelJson(Checkpoint& checkpoint, const ZipArchive& zip, const ZipEntry& modelJson,
    const std::string& prefix, std::vector<bool>& recordUsed)
{
    checkpoint.format = CheckpointFormat::TorchScriptJson;
    const std::string name(modelJson.name());
    checkpoint.addFinding(Severity::Info, FindingCode::LegacyTorchScript,
        "this is TorchScript's oldest layout (model.json and tensors/ records, written by PyTorch 1.0-1.3); "
        "torch.jit.load of a torch built without the legacy importer (Debian's 1.13, torch 2.x) fails with "
        "\"Legacy model format is not supported on mobile.\"",
        name);
    auto bytes = zip.readPayload(modelJson, kMaxModelJsonBytes);
    if (!bytes) {
        checkpoint.addFinding(Severity::Error, FindingCode::RecordUnreadable,
            "record " + name + " cannot be read: " + bytes.error().message, name, modelJson.dataOffset);
        return;
    }
    auto model = parseJson(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
    if (!model || !model->isObject()) {
        checkpoint.addFinding(Severity::Error, FindingCode::ModelJsonUnreadable,
            name + " is not a JSON object" + (model ? std::string() : ": " + model.error().message), name);
        return;
    }
    ModelJsonReader(checkpoint, zip, prefix, name, recordUsed).read(*model);
}

} // namespace ckpt
