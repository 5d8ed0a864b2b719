// SPDX-License-Identifier: MIT
#include "core/write/readbackverifier.h"

#include "core/base/escaping.h"
#include "core/format/crc32.h"
#include "core/format/inflate.h"
#include "core/io/atomicoutputfile.h"
#include "core/io/mappedfile.h"
#include "core/read/checkpointreader.h"
#include "core/read/storagebytes.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <unistd.h>

namespace ckpt {

namespace {

std::unique_ptr<ReadBackFaultForTesting>& faultInForce()
{
    static std::unique_ptr<ReadBackFaultForTesting> fault;
    return fault;
}

// At most this many mismatches are named in the message (the rest are counted).
constexpr std::size_t kMismatchesShown = 4;

std::string dimensionsText(const Dimensions& values)
{
    std::string text = "(";
    for (std::size_t i = 0; i < values.size(); ++i)
        text += (i ? ", " : "") + std::to_string(values[i]);
    return text + (values.size() == 1 ? ",)" : ")");
}

std::string optionalText(const std::optional<InternedString>& text)
{
    return text ? "'" + printableText(text->str()) + "'" : std::string("none recorded");
}

class Mismatches {
public:
    void add(std::string text)
    {
        if (m_texts.size() < kMismatchesShown)
            m_texts.push_back(std::move(text));
        ++m_count;
    }
    bool empty() const { return m_count == 0; }
    std::string text() const
    {
        std::string joined;
        for (const std::string& text : m_texts)
            joined += (joined.empty() ? "" : "; ") + text;
        if (m_count > m_texts.size())
            joined += "; and " + std::to_string(m_count - m_texts.size()) + " more";
        return joined;
    }

private:
    std::vector<std::string> m_texts;
    std::size_t m_count = 0;
};

std::string tensorLabel(std::string_view name, std::size_t index)
{
    return name.empty() ? "tensor #" + std::to_string(index) + " (unnamed)"
                        : "tensor '" + printableText(name) + "'";
}

void compareTensor(const Checkpoint& written, const TensorEntry& got, const IntendedTensor& want,
    std::size_t index, Mismatches& mismatches)
{
    std::vector<std::string> differences;
    if (got.name != want.name)
        differences.push_back("the name '" + printableText(got.name) + "'");
    if (got.dtype != want.dtype)
        differences.push_back("dtype " + got.dtype.str() + " instead of " + want.dtype.str());
    if (!std::equal(got.shape.begin(), got.shape.end(), want.shape.begin(), want.shape.end()))
        differences.push_back(
            "shape " + dimensionsText(got.shape) + " instead of " + dimensionsText(want.shape));
    const bool sameStride = got.stride.has_value() == want.stride.has_value()
        && (!got.stride
            || std::equal(got.stride->begin(), got.stride->end(), want.stride->begin(), want.stride->end()));
    if (!sameStride)
        differences.push_back("stride " + (got.stride ? dimensionsText(*got.stride) : std::string("none"))
            + " instead of " + (want.stride ? dimensionsText(*want.stride) : std::string("none")));
    if (got.storageOffset != want.storageOffset)
        differences.push_back("storage offset "
            + (got.storageOffset ? std::to_string(*got.storageOffset) : std::string("none")) + " instead of "
            + (want.storageOffset ? std::to_string(*want.storageOffset) : std::string("none")));
    const std::string_view storageKey = got.storage >= 0
        ? std::string_view(written.storages[static_cast<std::size_t>(got.storage)].key)
        : std::string_view();
    if (storageKey != want.storageKey)
        differences.push_back("storage "
            + (storageKey.empty() ? std::string("(none)") : "'" + printableText(storageKey) + "'")
            + " instead of "
            + (want.storageKey.empty() ? std::string("(none)") : "'" + printableText(want.storageKey) + "'"));
    if (want.deviceChecked && got.device != want.device)
        differences.push_back(
            "device " + optionalText(got.device) + " instead of " + optionalText(want.device));
    if (differences.empty())
        return;
    std::string text = tensorLabel(want.name, index) + " reads back with ";
    for (std::size_t i = 0; i < differences.size(); ++i)
        text += (i == 0 ? "" : i + 1 == differences.size() ? " and " : ", ") + differences[i];
    mismatches.add(std::move(text));
}

void compareTensors(const Checkpoint& written, const IntendedOutput& intended, Mismatches& mismatches)
{
    if (written.tensors.size() != intended.tensors.size())
        mismatches.add("it holds " + std::to_string(written.tensors.size()) + " tensors instead of "
            + std::to_string(intended.tensors.size()));
    if (intended.matchTensorsByName) {
        std::map<std::string_view, std::size_t> byName;
        for (std::size_t t = 0; t < written.tensors.size(); ++t)
            byName.emplace(written.tensors[t].name, t);
        for (std::size_t i = 0; i < intended.tensors.size(); ++i) {
            const auto found = byName.find(intended.tensors[i].name);
            if (found == byName.end())
                mismatches.add(tensorLabel(intended.tensors[i].name, i) + " is missing");
            else
                compareTensor(written, written.tensors[found->second], intended.tensors[i], i, mismatches);
        }
        return;
    }
    const std::size_t common = std::min(written.tensors.size(), intended.tensors.size());
    for (std::size_t i = 0; i < common; ++i)
        compareTensor(written, written.tensors[i], intended.tensors[i], i, mismatches);
}

Status compareStorages(const AtomicOutputFile& output, const Checkpoint& written,
    const IntendedOutput& intended, Mismatches& mismatches)
{
    std::vector<FileRange> ranges;
    std::vector<const IntendedStorage*> checked;
    for (const IntendedStorage& want : intended.storages) {
        const std::string label = "storage '" + printableText(want.key) + "'";
        const std::optional<std::uint32_t> index = written.storageIndex(want.key);
        if (!index) {
            mismatches.add(label + " is missing");
            continue;
        }
        const StorageRecord& got = written.storages[*index];
        if (want.deviceChecked && got.device != want.device)
            mismatches.add(label + " reads back on " + optionalText(got.device) + " instead of "
                + optionalText(want.device));
        if (want.length && got.availableBytes != want.length) {
            mismatches.add(label + " holds " + std::to_string(got.availableBytes.value_or(0))
                + " bytes instead of " + std::to_string(*want.length));
            continue;
        }
        if (!want.crc && !want.bytes)
            continue;
        if (!got.dataOffset && (got.deflated || got.inDecodedBlob)) {
            // A deflated record: its bytes are checked inflated, as torch.load reads them. A storage
            // inside bytes held as text (pickle protocols 0-2): checked in the decoded copy.
            const std::uint64_t length = got.availableBytes.value_or(0);
            std::uint32_t crc = 0;
            bool differ = false;
            const Status read = forEachStorageByteChunk(written, got, length, [&](ByteView piece) -> Status {
                crc = crc32Update(crc, piece.data(), piece.size());
                return std::nullopt;
            });
            if (read) {
                mismatches.add("the bytes of " + label + " do not inflate: " + read->message);
                continue;
            }
            if (want.crc && crc != *want.crc)
                differ = true;
            if (want.bytes && !differ) {
                auto inflated = readStorageBytes(written, got);
                std::uint64_t at = 0;
                const Status compared
                    = !inflated ? Status(inflated.error()) : want.bytes([&](ByteView chunk) -> Status {
                          if (at + chunk.size() > inflated->bytes.size()
                              || std::memcmp(inflated->bytes.data() + at, chunk.data(), chunk.size()) != 0)
                              return makeError("differ");
                          at += chunk.size();
                          return std::nullopt;
                      });
                differ = compared.has_value();
            }
            if (differ)
                mismatches.add("the bytes of " + label + " differ from what was meant (inflated)");
            continue;
        }
        if (!got.dataOffset) {
            mismatches.add("the bytes of " + label + " are not where a reader can check them");
            continue;
        }
        if (want.crc) {
            // The whole record, as it was written: a record longer than its storage needs keeps its
            // extra bytes too, and its CRC covers them all.
            ranges.push_back({*got.dataOffset, got.availableBytes.value_or(0)});
            checked.push_back(&want);
        }
        if (want.bytes) {
            if (!written.file) {
                mismatches.add("the bytes of " + label + " cannot be read back");
                continue;
            }
            const ByteView file = written.file->bytes();
            std::uint64_t position = *got.dataOffset;
            const std::uint64_t end = position + got.availableBytes.value_or(0);
            const Status compared = want.bytes([&](ByteView chunk) -> Status {
                const auto there = subView(file, position, chunk.size());
                if (!there || position + chunk.size() > end
                    || std::memcmp(there->data(), chunk.data(), chunk.size()) != 0)
                    return makeError("differ");
                position += chunk.size();
                return std::nullopt;
            });
            if (compared)
                mismatches.add("the bytes of " + label + " differ from what was meant");
        }
    }
    if (ranges.empty())
        return std::nullopt;
    // Read back through the file descriptor, not the map: memory stays flat however large the
    // file is. Every storage at once, on every core.
    const auto crcs = crc32OfFileRanges(output.fd(), ranges);
    if (!crcs)
        return crcs.error();
    for (std::size_t i = 0; i < checked.size(); ++i)
        if ((*crcs)[i] != *checked[i]->crc)
            mismatches.add("the bytes of storage '" + printableText(checked[i]->key)
                + "' differ from what was meant (CRC mismatch)");
    return std::nullopt;
}

void compareGlobals(const Checkpoint& written, const IntendedOutput& intended, Mismatches& mismatches)
{
    if (!intended.allowedGlobals)
        return;
    std::set<std::pair<std::string, std::string>> reported;
    for (const PickleSection& section : written.pickles)
        for (const GlobalReference& global : section.run.globals)
            if (!intended.allowedGlobals->count({global.module, global.name})
                && reported.emplace(global.module, global.name).second)
                mismatches.add("its " + printableText(section.record) + " names the global "
                    + printableText(global.module) + "." + printableText(global.name)
                    + ", which was not meant");
}

Status check(const AtomicOutputFile& output, const IntendedOutput& intended)
{
    const Checkpoint written = readCheckpoint(output.temporaryPath());
    for (const Finding& finding : written.findings)
        if (finding.severity == Severity::Error)
            return makeError(intended.what + " does not read back cleanly: " + finding.message);
    if (intended.format && written.format != *intended.format)
        return makeError(intended.what + " reads back as " + checkpointFormatName(written.format)
            + " instead of " + checkpointFormatName(*intended.format));
    Mismatches mismatches;
    compareTensors(written, intended, mismatches);
    if (Status failed = compareStorages(output, written, intended, mismatches))
        return failed;
    compareGlobals(written, intended, mismatches);
    if (mismatches.empty())
        return std::nullopt;
    return makeError(intended.what + " does not read back as meant: " + mismatches.text());
}

} // namespace

ScopedReadBackFault::ScopedReadBackFault(ReadBackFaultForTesting fault)
{
    faultInForce() = std::make_unique<ReadBackFaultForTesting>(std::move(fault));
}

ScopedReadBackFault::~ScopedReadBackFault()
{
    faultInForce().reset();
}

const ReadBackFaultForTesting* readBackFaultForTesting()
{
    return faultInForce().get();
}

Dimensions contiguousStrides(const Dimensions& shape)
{
    Dimensions stride(std::vector<std::int64_t>(shape.size(), 1));
    for (std::size_t d = shape.size(); d-- > 1;)
        stride[d - 1] = stride[d] * std::max<std::int64_t>(shape[d], 1);
    return stride;
}

Status verifyWrittenFile(const AtomicOutputFile& output, IntendedOutput intended)
{
    if (const ReadBackFaultForTesting* fault = readBackFaultForTesting()) {
        if (fault->file)
            fault->file(output.fd());
        if (fault->intent)
            fault->intent(intended);
    }
    // The flush to disk runs on its own thread while the file is read back and checked: one waits
    // on the disk, the other on the cores, and the read-back sees the same bytes either way (the
    // page cache the flush writes out).
    int flushError = 0;
    Status problem;
    {
        const int fd = output.fd();
        const std::jthread flusher([fd, &flushError] {
            if (::fsync(fd) != 0)
                flushError = errno;
        });
        problem = check(output, intended);
    } // joins the flush
    if (problem)
        return problem;
    if (flushError != 0)
        return makeError("cannot flush " + output.targetPath() + " to disk: " + std::strerror(flushError));
    return std::nullopt;
}

} // namespace ckpt
