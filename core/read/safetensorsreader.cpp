// SPDX-License-Identifier: MIT
// The safetensors reader: header length, the JSON header (with repeated keys and byte offsets kept),
// dtypes, shapes and data offsets, checked against what the safetensors library itself enforces.
//
// Why one file of about 1,000 lines: it is one format with one sequence of checks, each tied to a
// rule of the safetensors library and a finding with its message, and the checks read more clearly
// in the order the library applies them. Headers in the plain form writers produce are read by a
// streaming scan (HeaderScanner, issue 28); any other header is parsed by core/json, and both feed
// the same checks (tests/core/tst_safetensors.cpp scanAgreesWithParser holds them to it).
#include "core/read/safetensorsreader.h"

#include "core/base/checkedarithmetic.h"
#include "core/base/pythonliteral.h"

#include "core/io/mappedfile.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/model/dottedname.h"
#include "core/model/dtype.h"
#include "core/model/modulepathcache.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace ckpt {

namespace {

// safetensors' own limit (tensor.rs MAX_HEADER_SIZE): the library refuses longer headers, and a
// larger length almost always means the first 8 bytes are not a safetensors length at all.
constexpr std::uint64_t kMaxHeaderSize = 100'000'000;
// serde_json's default recursion limit, which the safetensors library parses the header with.
// Real headers nest three levels deep.
constexpr std::size_t kMaxHeaderDepth = 128;
// A hostile header can break one rule a million times; people need the first few and a count.
constexpr std::size_t kFindingsPerCode = 20;
constexpr std::size_t kMaxSummaryBytes = 1024;

// Every dtype of the format with its size in bits (torch-format.md §8), independent of whether
// torch has a matching dtype: F4 and F6 are valid safetensors, and their sizes can be checked.
struct SafetensorsDType {
    std::string_view name;
    std::uint32_t bits;
};
constexpr SafetensorsDType kSafetensorsDTypes[] = {
    {"BOOL", 8},
    {"F4", 4},
    {"F6_E2M3", 6},
    {"F6_E3M2", 6},
    {"U8", 8},
    {"I8", 8},
    {"F8_E5M2", 8},
    {"F8_E4M3", 8},
    {"F8_E8M0", 8},
    {"F8_E4M3FNUZ", 8},
    {"F8_E5M2FNUZ", 8},
    {"I16", 16},
    {"U16", 16},
    {"F16", 16},
    {"BF16", 16},
    {"I32", 32},
    {"U32", 32},
    {"F32", 32},
    {"C64", 64},
    {"F64", 64},
    {"I64", 64},
    {"U64", 64},
};

const SafetensorsDType* findSafetensorsDType(std::string_view name)
{
    for (const SafetensorsDType& dtype : kSafetensorsDTypes)
        if (dtype.name == name)
            return &dtype;
    return nullptr;
}

std::string knownDTypeList()
{
    std::string list;
    for (const SafetensorsDType& dtype : kSafetensorsDTypes) {
        if (!list.empty())
            list += ", ";
        list += dtype.name;
    }
    return list;
}

std::string lowercase(std::string_view text)
{
    std::string out(text);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return out;
}

// Cuts at a UTF-8 boundary so a summary stays valid text.
std::string shorten(std::string text, std::size_t maxBytes)
{
    if (text.size() <= maxBytes)
        return text;
    std::size_t cut = maxBytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
        --cut;
    const std::size_t total = text.size();
    text.resize(cut);
    text += "... (" + formatThousands(total) + " bytes)";
    return text;
}

// Metadata values are shown the way the other readers show Python strings: 'value', with the
// project's one quoter (control characters and bytes that are not UTF-8 escaped).
std::string pythonStringSummary(std::string_view value)
{
    return shorten(pythonStringLiteral(value), kMaxSummaryBytes);
}

std::string quoted(std::string_view name)
{
    std::string out;
    appendJsonString(out, name.size() > 200 ? name.substr(0, 200) : name);
    return out;
}

const char* jsonTypeName(const JsonValue& value)
{
    switch (value.type()) {
    case JsonValue::Type::Null:
        return "null";
    case JsonValue::Type::Bool:
        return "a boolean";
    case JsonValue::Type::Number:
        return "a number";
    case JsonValue::Type::String:
        return "a string";
    case JsonValue::Type::Array:
        return "an array";
    case JsonValue::Type::Object:
        return "an object";
    }
    return "a value";
}

std::string shapeText(const std::vector<std::int64_t>& shape)
{
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i)
            text += ", ";
        text += std::to_string(shape[i]);
    }
    return text + "]";
}

// A tensor's byte range as the header states it, relative to the data buffer.
struct DataSpan {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::string_view name; // into the header or its parsed tree, both alive until the read ends
};

// A checked tensor added to a checkpoint: its storage (keyed `key`, whose name starts at character
// nameStart), the tensor with C-order strides, and its tree node below its module.
void appendTensor(Checkpoint& checkpoint, const CheckedSafetensorsTensor& checked,
    const std::vector<std::int64_t>& shape, std::string_view key, std::uint32_t nameStart,
    ModulePathCache& modules, std::string& leaf)
{
    // Interned once, not once a tensor: each interning hashes the text and takes a lock (issue 28).
    static const InternedString kSafetensors("safetensors");
    static const InternedString kRecordStem("tensor data of ");
    const auto tensorIndex = static_cast<std::uint32_t>(checkpoint.tensors.size());
    const auto storageIndex = static_cast<std::int32_t>(checkpoint.storages.size());

    StorageRecord storage;
    storage.key = key;
    storage.storageClass = kSafetensors;
    storage.dtype = checked.dtype;
    storage.numel = checked.numel;
    // The key ends in the name, but for a repeated name ("w (duplicate 2)"): that record's text is
    // interned whole, and a header repeating one name a million times interns it once.
    if (key.substr(nameStart) == checked.name)
        storage.setRecord(kRecordStem, nameStart);
    else
        storage.setRecord(InternedString("tensor data of " + std::string(checked.name)));
    storage.tensors.push_back(tensorIndex);
    if (checked.nbytes) {
        storage.nbytes = *checked.nbytes;
        storage.dataOffset = checked.dataOffset;
        storage.availableBytes = checked.availableBytes;
    }
    checkpoint.storages.push_back(std::move(storage));
    checkpoint.indexStorage(static_cast<std::uint32_t>(storageIndex));

    TensorEntry tensor;
    tensor.name = checked.name;
    tensor.dtype = checkpoint.storages.back().dtype;
    // C order, as torch computes contiguous strides: a 0 or 1 dimension counts as 1.
    std::vector<std::int64_t> stride(shape.size(), 1);
    for (std::size_t i = shape.size(); i-- > 1;) {
        std::int64_t next = 0;
        if (__builtin_mul_overflow(stride[i], std::max<std::int64_t>(shape[i], 1), &next))
            next = std::numeric_limits<std::int64_t>::max();
        stride[i - 1] = next;
    }
    tensor.shape = shape; // Dimensions copies from a vector: there is nothing to move
    tensor.stride = stride;
    tensor.storageOffset = 0;
    tensor.storage = storageIndex;
    tensor.layout = TensorLayout::Strided;
    tensor.rebuildFunction = kSafetensors;

    const std::uint32_t parent = modules.parentFor(checkpoint, checked.name, leaf);
    const std::uint32_t node = checkpoint.addTreeNode(parent, TreeNodeKind::Tensor, leaf);
    checkpoint.tree[node].tensor = static_cast<std::int32_t>(tensorIndex);
    tensor.treeNode = node;
    checkpoint.tensors.push_back(std::move(tensor));
}

class SafetensorsReader {
public:
    SafetensorsReader(Checkpoint& checkpoint, SafetensorsHeaderReading reading)
        : m_checkpoint(checkpoint)
        , m_reading(reading)
    { }
    // Checking quietly: the tensors go to `checked`, not into the checkpoint, and only a header the
    // scan vouches for is read (any other is read on its own, with the findings it raises).
    SafetensorsReader(Checkpoint& checkpoint, CheckedSafetensors& checked)
        : m_checkpoint(checkpoint)
        , m_reading(SafetensorsHeaderReading::Scan)
        , m_checked(&checked)
    { }

    void read();

private:
    void report(Severity severity, FindingCode code, std::string message, std::string record = {},
        std::optional<std::uint64_t> offset = std::nullopt);
    void reportSuppressed();
    bool readScanned(std::string_view header);
    void readParsed(std::string_view header);
    void readMetadata(const JsonValue& metadata);
    void readTensor(const std::string& name, const JsonValue& info);
    bool checkOffsets(std::string_view name, std::uint64_t begin, std::uint64_t end);
    void addTensor(std::string_view name, std::string_view dtypeName, const std::vector<std::int64_t>& shape,
        bool offsetsValid, std::uint64_t begin, std::uint64_t end);
    void reserveEntries(std::size_t entries);
    void reportUnaligned();
    void checkCoverage();

    Checkpoint& m_checkpoint;
    SafetensorsHeaderReading m_reading;
    std::uint64_t m_fileSize = 0;
    std::uint64_t m_dataStart = 0; // 8 + N
    std::vector<DataSpan> m_spans;
    std::unordered_map<FindingCode, std::size_t> m_findingCounts;
    std::vector<FindingCode> m_findingOrder;
    std::unordered_map<FindingCode, Severity> m_findingSeverity;
    ModulePathCache m_modules; // module paths without a string per prefix (issue 28)
    std::unordered_map<std::string, std::uint64_t> m_lastDuplicate;
    // The header scan refused repeated names: no key can be taken, so none is looked up.
    bool m_namesUnique = false;
    CheckedSafetensors* m_checked = nullptr;
    bool m_leftToParser = false; // checking quietly: a header the scan does not vouch for

public:
    bool leftToParser() const { return m_leftToParser; }
};

void SafetensorsReader::report(Severity severity, FindingCode code, std::string message, std::string record,
    std::optional<std::uint64_t> offset)
{
    auto [it, inserted] = m_findingCounts.emplace(code, 0);
    if (inserted) {
        m_findingOrder.push_back(code);
        m_findingSeverity[code] = severity;
    }
    if (++it->second <= kFindingsPerCode)
        m_checkpoint.addFinding(severity, code, std::move(message), std::move(record), offset);
}

void SafetensorsReader::reportSuppressed()
{
    for (const FindingCode code : m_findingOrder) {
        const std::size_t count = m_findingCounts[code];
        if (count > kFindingsPerCode)
            m_checkpoint.addFinding(m_findingSeverity[code], code,
                formatThousands(count - kFindingsPerCode) + " more problems of this kind ("
                    + std::string(findingCodeId(code)) + ") are not listed one by one; the first "
                    + std::to_string(kFindingsPerCode) + " are above.");
    }
}

void SafetensorsReader::read()
{
    m_checkpoint.format = CheckpointFormat::Safetensors;
    m_checkpoint.ensureRoot();
    if (!m_checkpoint.file) {
        report(Severity::Error, FindingCode::NoFileData,
            "The file's bytes are not available to the safetensors reader.");
        return;
    }
    const ByteView bytes = m_checkpoint.file->bytes();
    m_fileSize = bytes.size();

    const auto headerLength = readLittleEndian<std::uint64_t>(bytes, 0);
    if (!headerLength) {
        report(Severity::Error, FindingCode::HeaderTooSmall,
            "The file is " + formatThousands(m_fileSize)
                + " bytes, fewer than the 8 bytes that hold a safetensors header length: it is empty or cut "
                  "short, and holds no tensors.",
            "header", 0);
        return;
    }
    if (*headerLength > kMaxHeaderSize) {
        report(Severity::Error, FindingCode::HeaderTooLarge,
            "The first 8 bytes give a header length of " + formatThousands(*headerLength)
                + " bytes, more than the 100,000,000 the safetensors library accepts: the start of the file "
                  "is damaged, or this is not a safetensors file.",
            "header", 0);
        return;
    }
    const std::uint64_t n = *headerLength;
    m_dataStart = 8 + n;
    if (m_dataStart > m_fileSize) {
        report(Severity::Error, FindingCode::HeaderTruncated,
            "The header length is " + formatThousands(n) + " bytes but only "
                + formatThousands(m_fileSize - 8)
                + " bytes follow the length field: the file is cut short inside its header (an interrupted "
                  "download or copy), or its first 8 bytes are damaged. No tensor can be listed; fetch the "
                  "file again.",
            "header", m_fileSize);
        return;
    }

    std::string_view header = asText(bytes.subspan(8, static_cast<std::size_t>(n)));
    // Writers pad with spaces (valid JSON whitespace); some other tool padded with NUL bytes, which
    // the safetensors library refuses. Reading on past them lets the tensors still be listed.
    std::size_t contentLength = header.size();
    while (contentLength > 0 && (header[contentLength - 1] == '\0' || header[contentLength - 1] == ' '))
        --contentLength;
    if (header.substr(contentLength).find('\0') != std::string_view::npos) {
        report(Severity::Error, FindingCode::HeaderPaddingInvalid,
            "The header is padded with NUL bytes instead of spaces after byte "
                + formatThousands(8 + contentLength)
                + "; the safetensors library refuses such files. Re-save it with the safetensors library.",
            "header", 8 + contentLength);
        header = header.substr(0, contentLength);
    }

    // Headers as safetensors writers produce them are read by a streaming scan straight into the
    // records; anything else (escapes, non-ASCII text, a malformed or unusual header) goes through
    // the JSON parser, whose tree-based checks say exactly what is wrong.
    if (m_reading == SafetensorsHeaderReading::Parse || !readScanned(header)) {
        if (m_checked)
            m_leftToParser = true;
        else
            readParsed(header);
    }
}

void SafetensorsReader::reportUnaligned()
{
    const std::uint64_t n = m_dataStart - 8;
    if (n % 8 != 0)
        report(Severity::Info, FindingCode::HeaderUnaligned,
            "The header is " + formatThousands(n)
                + " bytes, not a multiple of 8, so tensor data does not start 8-byte aligned. safetensors "
                  "writers since 0.3.1 pad the header; this file comes from an older or different writer. "
                  "It still loads.",
            "header", 8);
}

void SafetensorsReader::reserveEntries(std::size_t entries)
{
    m_checkpoint.tensors.reserve(m_checkpoint.tensors.size() + entries);
    m_checkpoint.storages.reserve(m_checkpoint.storages.size() + entries);
    m_checkpoint.storageKeyIndex.reserve(m_checkpoint.storageKeyIndex.size() + entries);
    m_checkpoint.tree.reserve(m_checkpoint.tree.size() + entries); // tensor nodes; modules come on top
    m_spans.reserve(entries);
}

// A header in the plain form every safetensors writer produces, scanned without building a JSON
// tree (issue 28: a 160-shard folder spent a third of its opening in parsing and freeing the
// trees). The scan accepts only what it can vouch for: the object starts with '{'; keys and string
// values are printable ASCII without escapes; each tensor entry has exactly one dtype (a string),
// shape (non-negative integers) and data_offsets (two non-negative integers); __metadata__ is an
// object of strings; names are not repeated. Anything else returns false before the checkpoint is
// touched, and the JSON parser reads the header instead, with every finding it raises.
class HeaderScanner {
public:
    struct Entry {
        std::string_view name;
        std::string_view dtype; // tensors
        std::uint32_t firstDim = 0; // tensors: their shape in dims()[firstDim, firstDim + dimCount)
        std::uint32_t dimCount = 0;
        std::uint64_t begin = 0;
        std::uint64_t end = 0;
        bool metadata = false; // __metadata__: its members in metadata()[firstDim, firstDim + dimCount)
    };

    explicit HeaderScanner(std::string_view text)
        : m_text(text)
    { }

    bool scan()
    {
        if (m_text.empty() || m_text.front() != '{')
            return false;
        ++m_pos;
        if (!countValue())
            return false;
        const bool entries = items('}', true, [&] {
            Entry entry;
            if (!string(entry.name) || !colon())
                return false;
            entry.metadata = entry.name == "__metadata__";
            if (!(entry.metadata ? metadataObject(entry) : tensorObject(entry)))
                return false;
            m_entries.push_back(entry);
            return true;
        });
        if (!entries)
            return false;
        skipSpace();
        return m_pos == m_text.size() && namesUnique();
    }

    const std::vector<Entry>& entries() const { return m_entries; }
    const std::vector<std::int64_t>& dims() const { return m_dims; }
    const std::vector<std::pair<std::string_view, std::string_view>>& metadata() const { return m_metadata; }

private:
    // Below the parser's limit of values in one document (JsonParseLimits::maxValues): a header near
    // it goes to the parser, which says whether it passes.
    static constexpr std::size_t kMaxValues = 9'000'000;

    char peek() const { return m_pos < m_text.size() ? m_text[m_pos] : '\0'; }

    void skipSpace()
    {
        while (m_pos < m_text.size()) {
            const char c = m_text[m_pos];
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
                return;
            ++m_pos;
        }
    }

    bool countValue() { return ++m_values <= kMaxValues; }

    bool expect(char c)
    {
        skipSpace();
        if (peek() != c)
            return false;
        ++m_pos;
        return true;
    }

    bool colon()
    {
        if (!expect(':'))
            return false;
        skipSpace();
        return true;
    }

    // The items of an array or object, its opening bracket read: each read by readItem, separated
    // by commas, up to and including `close`; none at all only where allowEmpty.
    template<typename ReadItem> bool items(char close, bool allowEmpty, ReadItem readItem)
    {
        skipSpace();
        if (allowEmpty && peek() == close) {
            ++m_pos;
            return true;
        }
        for (;;) {
            if (!readItem())
                return false;
            skipSpace();
            if (peek() == close) {
                ++m_pos;
                return true;
            }
            if (peek() != ',')
                return false;
            ++m_pos;
            skipSpace();
        }
    }

    // A string of printable ASCII without escapes (the parser reads every other string).
    bool string(std::string_view& out)
    {
        if (peek() != '"')
            return false;
        const std::size_t start = ++m_pos;
        while (m_pos < m_text.size()) {
            const auto c = static_cast<unsigned char>(m_text[m_pos]);
            if (c == '"') {
                out = m_text.substr(start, m_pos - start);
                ++m_pos;
                return countValue();
            }
            if (c < 0x20 || c >= 0x80 || c == '\\')
                return false;
            ++m_pos;
        }
        return false;
    }

    // A non-negative integer as JSON writes it: no sign, no leading zero, no fraction or exponent.
    bool integer(std::uint64_t& out)
    {
        const std::size_t start = m_pos;
        std::uint64_t value = 0;
        while (m_pos < m_text.size() && m_text[m_pos] >= '0' && m_text[m_pos] <= '9') {
            if (__builtin_mul_overflow(value, std::uint64_t {10}, &value)
                || __builtin_add_overflow(value, static_cast<std::uint64_t>(m_text[m_pos] - '0'), &value))
                return false;
            ++m_pos;
        }
        const std::size_t digits = m_pos - start;
        if (digits == 0 || (digits > 1 && m_text[start] == '0'))
            return false;
        const char next = peek();
        if (next == '.' || next == 'e' || next == 'E')
            return false;
        out = value;
        return countValue();
    }

    bool shape(Entry& entry)
    {
        if (peek() != '[' || !countValue())
            return false;
        ++m_pos;
        entry.firstDim = static_cast<std::uint32_t>(m_dims.size());
        return items(']', true, [&] {
            std::uint64_t dim = 0;
            if (!integer(dim) || dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                return false;
            m_dims.push_back(static_cast<std::int64_t>(dim));
            ++entry.dimCount;
            return true;
        });
    }

    bool offsets(Entry& entry)
    {
        if (peek() != '[' || !countValue())
            return false;
        ++m_pos;
        skipSpace();
        if (!integer(entry.begin) || !expect(','))
            return false;
        skipSpace();
        return integer(entry.end) && expect(']');
    }

    bool tensorObject(Entry& entry)
    {
        if (peek() != '{' || !countValue())
            return false;
        ++m_pos;
        bool dtype = false, shapeSeen = false, offsetsSeen = false;
        const bool members = items('}', false, [&] {
            std::string_view key;
            if (!string(key) || !colon())
                return false;
            if (key == "dtype" && !dtype) {
                dtype = string(entry.dtype);
                return dtype;
            }
            if (key == "shape" && !shapeSeen) {
                shapeSeen = shape(entry);
                return shapeSeen;
            }
            if (key == "data_offsets" && !offsetsSeen) {
                offsetsSeen = offsets(entry);
                return offsetsSeen;
            }
            return false;
        });
        return members && dtype && shapeSeen && offsetsSeen;
    }

    bool metadataObject(Entry& entry)
    {
        if (peek() != '{' || !countValue())
            return false;
        ++m_pos;
        entry.firstDim = static_cast<std::uint32_t>(m_metadata.size());
        return items('}', true, [&] {
            std::string_view key;
            std::string_view value;
            if (!string(key) || !colon() || !string(value))
                return false;
            m_metadata.emplace_back(key, value);
            ++entry.dimCount;
            return true;
        });
    }

    // A repeated name (or __metadata__ twice) is reported by the parser's path, which lists every one.
    bool namesUnique() const
    {
        std::unordered_set<std::string_view> names;
        names.reserve(m_entries.size());
        for (const Entry& entry : m_entries)
            if (!names.insert(entry.name).second)
                return false;
        return true;
    }

    std::string_view m_text;
    std::size_t m_pos = 0;
    std::size_t m_values = 0;
    std::vector<Entry> m_entries;
    std::vector<std::int64_t> m_dims;
    std::vector<std::pair<std::string_view, std::string_view>> m_metadata;
};

bool SafetensorsReader::readScanned(std::string_view header)
{
    HeaderScanner scanner(header);
    if (!scanner.scan())
        return false;
    // The findings the parser's path raises before the entries, in its order (the header starts
    // with '{' and repeats no name, or the scan would have refused it).
    reportUnaligned();
    if (m_checked)
        m_checked->tensors.reserve(scanner.entries().size());
    else
        reserveEntries(scanner.entries().size());
    m_namesUnique = m_checkpoint.storages.empty(); // a fresh checkpoint: no key is taken yet
    std::vector<std::int64_t> shape;
    for (const HeaderScanner::Entry& entry : scanner.entries()) {
        if (entry.metadata && m_checked)
            continue; // a set shows no shard's __metadata__
        if (entry.metadata) {
            const std::uint32_t dict = m_checkpoint.addTreeNode(0, TreeNodeKind::Dict, "__metadata__");
            for (std::uint32_t i = 0; i < entry.dimCount; ++i) {
                const auto& [key, value] = scanner.metadata()[entry.firstDim + i];
                const std::uint32_t node
                    = m_checkpoint.addTreeNode(dict, TreeNodeKind::Value, std::string(key));
                m_checkpoint.tree[node].summary = pythonStringSummary(value);
            }
            continue;
        }
        const bool offsetsValid = checkOffsets(entry.name, entry.begin, entry.end);
        shape.assign(scanner.dims().begin() + entry.firstDim,
            scanner.dims().begin() + entry.firstDim + entry.dimCount);
        addTensor(entry.name, entry.dtype, shape, offsetsValid, entry.begin, entry.end);
    }
    checkCoverage();
    reportSuppressed();
    return true;
}

void SafetensorsReader::readParsed(std::string_view header)
{
    JsonParseLimits limits;
    limits.maxBytes = static_cast<std::size_t>(kMaxHeaderSize);
    limits.maxDepth = kMaxHeaderDepth;
    limits.offsetBase = 8;
    const Expected<JsonValue> parsed = parseJson(header, limits);
    if (!parsed) {
        report(Severity::Error, FindingCode::HeaderInvalidJson,
            "The header (file bytes 8 to " + formatThousands(m_dataStart)
                + ") cannot be read: " + parsed.error().message
                + ". No tensor can be listed; the file is damaged or was not written by a safetensors "
                  "writer.",
            "header", parsed.error().offset);
        return;
    }
    const JsonValue& root = *parsed;
    if (!root.isObject()) {
        report(Severity::Error, FindingCode::HeaderNotObject,
            std::string("The header is ") + jsonTypeName(root)
                + ", not a JSON object mapping tensor names to their dtype, shape and data_offsets.",
            "header", 8);
        return;
    }
    // Leading whitespace is valid JSON, but the format requires '{' first (README).
    if (header.front() != '{')
        report(Severity::Error, FindingCode::HeaderStartInvalid,
            "The header does not start with '{': the format requires it, and newer safetensors versions may "
            "refuse the file.",
            "header", 8);
    reportUnaligned();
    for (const std::string& key : root.duplicateKeys())
        report(Severity::Error, FindingCode::DuplicateTensorName,
            "The header names " + quoted(key)
                + " more than once; the format forbids it and the safetensors library cannot say which entry "
                  "is meant. Every entry is listed here.",
            key, 8);

    reserveEntries(root.size());
    for (const JsonMember& member : root.members()) {
        if (member.key == "__metadata__")
            readMetadata(member.value);
        else
            readTensor(member.key, member.value);
    }
    checkCoverage();
    reportSuppressed();
}

void SafetensorsReader::readMetadata(const JsonValue& metadata)
{
    const std::uint32_t dict = m_checkpoint.addTreeNode(0, TreeNodeKind::Dict, "__metadata__");
    if (!metadata.isObject()) {
        report(Severity::Error, FindingCode::MetadataInvalid,
            std::string("__metadata__ is ") + jsonTypeName(metadata)
                + ", but the format requires an object of strings; the safetensors library refuses the file.",
            "__metadata__", 8);
        m_checkpoint.tree[dict].kind = TreeNodeKind::Value;
        m_checkpoint.tree[dict].summary = shorten(metadata.toJson(), kMaxSummaryBytes);
        return;
    }
    for (const JsonMember& entry : metadata.members()) {
        const std::uint32_t node = m_checkpoint.addTreeNode(dict, TreeNodeKind::Value, entry.key);
        if (entry.value.isString()) {
            m_checkpoint.tree[node].summary = pythonStringSummary(entry.value.toString());
        } else {
            m_checkpoint.tree[node].summary = shorten(entry.value.toJson(), kMaxSummaryBytes);
            report(Severity::Error, FindingCode::MetadataNotString,
                "__metadata__ entry " + quoted(entry.key) + " is " + jsonTypeName(entry.value)
                    + ", but metadata values must be strings; the safetensors library refuses the file.",
                "__metadata__", 8);
        }
    }
}

// The offsets' own rules; a span that passes them is kept for the coverage check.
bool SafetensorsReader::checkOffsets(std::string_view name, std::uint64_t begin, std::uint64_t end)
{
    const auto tensorLabel = [&] { return "Tensor " + quoted(name); }; // only built for findings
    if (end < begin) {
        report(Severity::Error, FindingCode::TensorOffsetsInvalid,
            tensorLabel() + ": its data_offsets [" + formatThousands(begin) + ", " + formatThousands(end)
                + "] end before they begin; its bytes cannot be located.",
            std::string(name), 8);
        return false;
    }
    if (begin > std::numeric_limits<std::uint64_t>::max() - m_dataStart) {
        report(Severity::Error, FindingCode::TensorOffsetsInvalid,
            tensorLabel() + ": its data_offsets begin at " + formatThousands(begin)
                + ", beyond any possible file size; its bytes cannot be located.",
            std::string(name), 8);
        return false;
    }
    m_spans.push_back(DataSpan {begin, end, name});
    return true;
}

void SafetensorsReader::readTensor(const std::string& name, const JsonValue& info)
{
    const auto tensorLabel = [&] { return "Tensor " + quoted(name); }; // only built for findings
    if (!info.isObject()) {
        report(Severity::Error, FindingCode::TensorInfoInvalid,
            tensorLabel() + ": its header entry is " + jsonTypeName(info)
                + ", not an object with dtype, shape and data_offsets; it cannot be listed.",
            name, 8);
        return;
    }
    // The data offsets first, [BEGIN, END) relative to the data buffer: even an entry that cannot be
    // listed occupies its bytes, and the coverage check must not call them a gap.
    const JsonValue* offsetsValue = info.find("data_offsets");
    std::optional<std::uint64_t> begin;
    std::optional<std::uint64_t> end;
    if (offsetsValue && offsetsValue->size() == 2 && offsetsValue->isArray()) {
        begin = offsetsValue->at(0).toUInt64();
        end = offsetsValue->at(1).toUInt64();
    }
    const bool offsetsValid = begin && end ? checkOffsets(name, *begin, *end) : false;
    if (!begin || !end)
        report(Severity::Error, FindingCode::TensorOffsetsInvalid,
            tensorLabel() + ": its data_offsets are "
                + (offsetsValue ? shorten(offsetsValue->toJson(), 200) : std::string("missing"))
                + ", not two non-negative integers [BEGIN, END]; its bytes cannot be located.",
            name, 8);

    const JsonValue* dtypeValue = info.find("dtype");
    if (!dtypeValue || !dtypeValue->isString()) {
        report(Severity::Error, FindingCode::TensorInfoInvalid,
            tensorLabel()
                + (dtypeValue ? std::string(": its dtype is ") + jsonTypeName(*dtypeValue) + ", not a string"
                              : std::string(" has no dtype"))
                + "; it cannot be listed.",
            name, 8);
        return;
    }
    const JsonValue* shapeValue = info.find("shape");
    std::vector<std::int64_t> shape;
    bool shapeValid = shapeValue && shapeValue->isArray();
    if (shapeValid) {
        shape.reserve(shapeValue->size());
        for (const JsonValue& dim : shapeValue->items()) {
            const auto size = dim.toUInt64();
            if (!size || *size > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
                shapeValid = false;
                break;
            }
            shape.push_back(static_cast<std::int64_t>(*size));
        }
    }
    if (!shapeValid) {
        report(Severity::Error, FindingCode::TensorInfoInvalid,
            tensorLabel() + ": its shape is "
                + (shapeValue ? shorten(shapeValue->toJson(), 200) : std::string("missing"))
                + ", not a list of non-negative integers; it cannot be listed.",
            name, 8);
        return;
    }
    addTensor(name, dtypeValue->toString(), shape, offsetsValid, offsetsValid ? *begin : 0,
        offsetsValid ? *end : 0);
}

// A tensor whose dtype is a string and whose shape is a list of non-negative integers: the checks
// of its size against its dtype and offsets, then its storage, tensor and tree node.
void SafetensorsReader::addTensor(std::string_view name, std::string_view dtypeName,
    const std::vector<std::int64_t>& shape, bool offsetsValid, std::uint64_t begin, std::uint64_t end)
{
    const auto tensorLabel = [&] { return "Tensor " + quoted(name); }; // only built for findings
    // Elements and their size, with every multiplication checked: shapes come from the file.
    std::uint64_t numel = 1;
    bool overflow = false;
    for (const std::int64_t dim : shape)
        overflow = overflow || __builtin_mul_overflow(numel, static_cast<std::uint64_t>(dim), &numel);
    if (overflow) {
        report(Severity::Error, FindingCode::TensorSizeOverflow,
            tensorLabel() + ": its shape " + shapeText(shape)
                + " has more elements than 64 bits can count; the header is damaged. It is listed without "
                  "its bytes.",
            std::string(name), 8);
        numel = 0;
    }

    const SafetensorsDType* format = findSafetensorsDType(dtypeName);
    std::optional<DTypeInfo> torchDType = dtypeBySafetensorsName(dtypeName);
    // F4 counts 4-bit values; torch's float4_e2m1fn_x2 holds two of them in each element, so its
    // last dimension is half the header's (safetensors.torch refuses an odd one, or a scalar).
    std::vector<std::int64_t> torchShape = shape;
    std::uint64_t torchNumel = numel;
    if (torchDType && torchDType->safetensorsPerElement > 1) {
        const std::int64_t per = torchDType->safetensorsPerElement;
        if (shape.empty() || shape.back() % per != 0) {
            report(Severity::Error, FindingCode::DtypeWithoutTorchEquivalent,
                tensorLabel() + " has dtype " + std::string(dtypeName) + " and shape " + shapeText(shape)
                    + ": torch holds " + std::string(dtypeName) + " as " + std::string(torchDType->name)
                    + ", " + std::to_string(per)
                    + " values an element along the last dimension, so safetensors.torch refuses it (\"f4_x2 "
                      "dtype requires that the last dim be divisible by 2 in torch: got "
                    + shapeText(shape) + "\"); it is listed as " + quoted(lowercase(dtypeName))
                    + " without its bytes.",
                std::string(name), 8);
            torchDType.reset();
        } else {
            torchShape.back() = shape.back() / per;
            torchNumel = numel / static_cast<std::uint64_t>(per);
        }
    }
    std::optional<std::uint64_t> expectedBytes;
    if (!format) {
        report(Severity::Error, FindingCode::UnknownDtype,
            tensorLabel() + " has dtype " + quoted(dtypeName) + ", which is not a safetensors dtype (known: "
                + knownDTypeList() + "); it is listed as " + quoted(lowercase(dtypeName))
                + " without its bytes. A newer safetensors version may have added it.",
            std::string(name), 8);
    } else if (!overflow) {
        std::uint64_t bits = 0;
        if (__builtin_mul_overflow(numel, std::uint64_t {format->bits}, &bits)) {
            report(Severity::Error, FindingCode::TensorSizeOverflow,
                tensorLabel() + ": " + formatThousands(numel) + " elements of " + std::string(format->name)
                    + " are more bytes than 64 bits can count; the header is damaged.",
                std::string(name), 8);
        } else if (bits % 8 != 0) {
            report(Severity::Error, FindingCode::TensorSizeMisaligned,
                tensorLabel() + ": " + formatThousands(numel) + " elements of " + std::string(format->name)
                    + " are " + formatThousands(bits)
                    + " bits, not a whole number of bytes; the safetensors library refuses such a tensor.",
                std::string(name), 8);
        } else {
            expectedBytes = bits / 8;
        }
        if (!torchDType && !dtypeBySafetensorsName(dtypeName))
            report(Severity::Warning, FindingCode::DtypeWithoutTorchEquivalent,
                tensorLabel() + " has dtype " + std::string(format->name)
                    + ", which has no torch dtype this inspector knows; it is listed as "
                    + quoted(lowercase(dtypeName)) + " without its bytes.",
                std::string(name), 8);
    }
    if (offsetsValid && expectedBytes && end - begin != *expectedBytes)
        report(Severity::Error, FindingCode::TensorSizeMismatch,
            tensorLabel() + ": data_offsets [" + formatThousands(begin) + ", " + formatThousands(end)
                + "] span " + formatThousands(end - begin) + " bytes, but shape " + shapeText(shape) + " of "
                + std::string(format->name) + " needs " + formatThousands(*expectedBytes)
                + "; the header is damaged and the safetensors library refuses the file.",
            std::string(name), m_dataStart + begin);

    CheckedSafetensorsTensor checked;
    checked.name = name;
    checked.dtype = torchDType ? InternedString(torchDType->name) : InternedString(lowercase(dtypeName));
    checked.numel = torchDType ? torchNumel : numel;
    // Bytes only for dtypes torch knows: for the others the element size a tool would use is unknown.
    std::uint64_t nbytes = 0;
    if (torchDType && !overflow
        && !__builtin_mul_overflow(torchNumel, std::uint64_t {torchDType->elementSize}, &nbytes)) {
        checked.nbytes = nbytes;
        if (offsetsValid && checkedAdd(m_dataStart, begin)) {
            checked.dataOffset = *checkedAdd(m_dataStart, begin);
            const std::uint64_t present
                = *checked.dataOffset < m_fileSize ? m_fileSize - *checked.dataOffset : 0;
            checked.availableBytes = std::min(end - begin, present);
        }
    }
    // torch's shape (F4's last dimension halved) for a dtype torch has, the header's otherwise.
    const std::vector<std::int64_t>& listedShape = torchDType ? torchShape : shape;
    if (m_checked) {
        checked.firstDim = static_cast<std::uint32_t>(m_checked->dims.size());
        checked.dimCount = static_cast<std::uint32_t>(listedShape.size());
        m_checked->dims.insert(m_checked->dims.end(), listedShape.begin(), listedShape.end());
        m_checked->tensors.push_back(checked);
        return;
    }

    // A repeated name (reported above) still gets its own storage: keys must stay unique. The last
    // number per name is remembered, so a header repeating one name a million times stays linear.
    std::string key;
    if (!m_namesUnique && m_checkpoint.storageIndex(name)) {
        std::uint64_t& copy = m_lastDuplicate[std::string(name)]; // 0 until the first repeat
        do {
            copy = std::max<std::uint64_t>(copy, 1) + 1;
            key = std::string(name) + " (duplicate " + std::to_string(copy) + ")";
        } while (m_checkpoint.storageIndex(key));
    }
    std::string leaf;
    appendTensor(m_checkpoint, checked, listedShape, key.empty() ? name : key, 0, m_modules, leaf);
}

// The data buffer must be covered exactly: tensors sorted by offsets, each starting where the
// previous one ended, the last ending at the end of the file (tensor.rs `validate`).
void SafetensorsReader::checkCoverage()
{
    std::sort(m_spans.begin(), m_spans.end(), [](const DataSpan& a, const DataSpan& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    std::uint64_t cursor = 0;
    const std::string_view* lastName = nullptr;
    for (const DataSpan& span : m_spans) {
        if (span.begin > cursor) {
            report(Severity::Error, FindingCode::DataGap,
                "Bytes " + formatThousands(cursor) + " to " + formatThousands(span.begin)
                    + " of the data buffer (file bytes " + formatThousands(m_dataStart + cursor) + " to "
                    + formatThousands(m_dataStart + span.begin) + ") belong to no tensor, before tensor "
                    + quoted(span.name)
                    + ". The format allows no gaps and the safetensors library refuses the file.",
                std::string(span.name), m_dataStart + cursor);
        } else if (span.begin < cursor) {
            report(Severity::Error, FindingCode::DataOverlap,
                "Tensor " + quoted(span.name) + " (data_offsets [" + formatThousands(span.begin) + ", "
                    + formatThousands(span.end) + "]) overlaps tensor "
                    + quoted(lastName ? *lastName : std::string_view()) + ", which ends at "
                    + formatThousands(cursor)
                    + ". The format forbids shared bytes and the safetensors library refuses the file.",
                std::string(span.name), m_dataStart + span.begin);
        }
        if (span.end >= cursor) {
            cursor = span.end;
            lastName = &span.name;
        }
    }

    const std::uint64_t dataEnd = cursor > std::numeric_limits<std::uint64_t>::max() - m_dataStart
        ? std::numeric_limits<std::uint64_t>::max()
        : m_dataStart + cursor;
    if (dataEnd > m_fileSize) {
        std::size_t complete = 0;
        const StorageRecord* firstIncomplete = nullptr;
        for (const StorageRecord& storage : m_checkpoint.storages) {
            if (storage.bytesComplete())
                ++complete;
            else if (!firstIncomplete && storage.dataOffset)
                firstIncomplete = &storage;
        }
        report(Severity::Error, FindingCode::FileTruncated,
            "The file is " + formatThousands(m_fileSize)
                + " bytes, but its header places tensor data up to byte " + formatThousands(dataEnd) + " ("
                + formatThousands(dataEnd - m_fileSize)
                + " bytes more): the file was cut short (an interrupted download or copy) or the header's "
                  "offsets are damaged. "
                + std::to_string(complete) + " of " + std::to_string(m_checkpoint.storages.size())
                + " tensors have all their bytes"
                + (firstIncomplete ? "; the first without is " + quoted(firstIncomplete->key) : std::string())
                + ". Every tensor is still listed.",
            {}, m_fileSize);
    } else if (dataEnd < m_fileSize) {
        report(Severity::Error, FindingCode::TrailingBytes,
            "The last " + formatThousands(m_fileSize - dataEnd) + " bytes of the file (from byte "
                + formatThousands(dataEnd)
                + ") belong to no tensor; the safetensors library refuses such files (\"incomplete metadata, "
                  "file not fully covered\"). Something was appended, or the header lost an entry.",
            {}, dataEnd);
    }
}

} // namespace

void readSafetensors(Checkpoint& checkpoint, SafetensorsHeaderReading reading)
{
    SafetensorsReader(checkpoint, reading).read();
}

std::optional<CheckedSafetensors> checkSafetensorsQuietly(std::shared_ptr<const MappedFile> file)
{
    // The findings land in a checkpoint of its own, which holds nothing else: one says the file
    // is read on its own.
    Checkpoint findings;
    findings.file = file;
    CheckedSafetensors checked;
    checked.file = std::move(file);
    SafetensorsReader reader(findings, checked);
    reader.read();
    if (!findings.findings.empty() || reader.leftToParser())
        return std::nullopt;
    return checked;
}

void addCheckedSafetensors(Checkpoint& checkpoint, const CheckedSafetensors& checked,
    std::string_view keyPrefix, ModulePathCache& modules)
{
    std::string key(keyPrefix); // one buffer for every key, and one for every last name component
    std::string leaf;
    std::vector<std::int64_t> shape;
    for (const CheckedSafetensorsTensor& tensor : checked.tensors) {
        key.resize(keyPrefix.size());
        key.append(tensor.name);
        shape.assign(
            checked.dims.begin() + tensor.firstDim, checked.dims.begin() + tensor.firstDim + tensor.dimCount);
        appendTensor(
            checkpoint, tensor, shape, key, static_cast<std::uint32_t>(keyPrefix.size()), modules, leaf);
    }
}

} // namespace ckpt
