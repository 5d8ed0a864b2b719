// SPDX-License-Identifier: MIT
#include "fuzz/fuzztargets.h"

#include "core/devices/machinespec.h"
#include "core/format/ziparchive.h"
#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/model/checkpointjson.h"
#include "core/model/quantgroups.h"
#include "core/pickle/picklegraph.h"
#include "core/pickle/picklemachine.h"
#include "core/read/checkpointreader.h"
#include "core/read/numpyvalue.h"
#include "core/read/safetensorsreader.h"
#include "core/triage/triage.h"

#include <array>
#include <cstring>

namespace ckpt::fuzz {

namespace {

constexpr std::array kHarnesses = {
    HarnessInfo {Harness::Reader, "reader"},
    HarnessInfo {Harness::Pickle, "pickle"},
    HarnessInfo {Harness::Zip, "zip"},
    HarnessInfo {Harness::Safetensors, "safetensors"},
    HarnessInfo {Harness::Check, "check"},
};

// Records are inflated up to this size: enough for every record a small fuzz input can hold
// honestly, small enough that a deflate bomb costs milliseconds, not the fuzzer's memory limit.
constexpr std::uint64_t kMaxInflatedRecord = 16u << 20;
// Legacy streams stack three pickles and a few hostile ones more; past this many, another pickle
// teaches the machine nothing new.
constexpr int kMaxStackedPickles = 16;

std::shared_ptr<const MappedFile> inMemoryFile(ByteView input)
{
    // A copy with no slack after the last byte, so that AddressSanitizer sees a read one past the
    // end of the "file" exactly as it would see one past the end of a memory map.
    return MappedFile::fromBuffer(ByteBuffer(input.begin(), input.end()), "fuzz-input");
}

void collectMessages(const std::vector<Finding>& findings, std::vector<std::string>& messages)
{
    for (const Finding& finding : findings)
        messages.push_back(std::string(finding.codeId()) + ": " + finding.message);
}

void checkFindings(
    const std::vector<Finding>& findings, std::string_view where, std::vector<std::string>& problems)
{
    for (const Finding& finding : findings) {
        if (finding.codeId().empty())
            problems.push_back(std::string(where) + ": a finding without a code: " + finding.message);
        if (finding.message.empty())
            problems.push_back(
                std::string(where) + ": finding " + std::string(finding.codeId()) + " has no message");
    }
}

// What every reader promises about the Checkpoint it fills, whatever the bytes were.
void checkCheckpoint(const Checkpoint& checkpoint, std::vector<std::string>& problems)
{
    checkFindings(checkpoint.findings, "checkpoint", problems);
    if (checkpoint.tree.empty()) {
        problems.push_back("the checkpoint has no root tree node");
        return;
    }
    for (std::size_t i = 0; i < checkpoint.tree.size(); ++i) {
        const TreeNode& node = checkpoint.tree[i];
        if (i != 0 && node.parent >= checkpoint.tree.size())
            problems.push_back("tree node " + std::to_string(i) + " has a parent out of range");
        for (std::uint32_t child : node.children)
            if (child >= checkpoint.tree.size() || child == 0)
                problems.push_back("tree node " + std::to_string(i) + " has a child out of range");
        if (node.tensor >= 0 && static_cast<std::size_t>(node.tensor) >= checkpoint.tensors.size())
            problems.push_back("tree node " + std::to_string(i) + " names a tensor out of range");
    }
    for (std::size_t i = 0; i < checkpoint.tensors.size(); ++i) {
        const TensorEntry& tensor = checkpoint.tensors[i];
        if (tensor.storage >= 0 && static_cast<std::size_t>(tensor.storage) >= checkpoint.storages.size())
            problems.push_back("tensor " + std::to_string(i) + " names a storage out of range");
        if (tensor.treeNode >= checkpoint.tree.size())
            problems.push_back("tensor " + std::to_string(i) + " names a tree node out of range");
    }
    for (std::size_t i = 0; i < checkpoint.storages.size(); ++i)
        for (std::uint32_t tensor : checkpoint.storages[i].tensors)
            if (tensor >= checkpoint.tensors.size())
                problems.push_back("storage " + std::to_string(i) + " names a tensor out of range");
    for (const PickleSection& section : checkpoint.pickles)
        if (!section.run.complete() && !section.run.error)
            problems.push_back("pickle " + section.record + " neither finished nor said why");
    // A file the tool cannot read as a checkpoint must say so: silence would read as "fine".
    if (checkpoint.format == CheckpointFormat::NotACheckpoint && checkpoint.findings.empty())
        problems.push_back("not a checkpoint, yet no finding says why");

    // Everything `ckpt-inspect info` prints is computed from these; they must hold up on any tree.
    (void)checkpoint.totalStorageBytes();
    (void)checkpoint.bytesByDevice();
    for (std::uint32_t i = 0; i < checkpoint.tree.size(); ++i)
        (void)checkpoint.treePath(i);
    for (const TensorEntry& tensor : checkpoint.tensors)
        (void)tensor.nbytes();
    (void)checkpointToText(checkpoint);
    (void)checkpointToJson(checkpoint, false);
}

// Touches every node through the accessors the builder and the verdict use, so that a node whose
// indices point outside the graph's arenas shows up here rather than deep inside a reader.
void walkGraph(const PickleGraph& graph, std::vector<std::string>& problems)
{
    for (NodeId id = 0; id < graph.size(); ++id) {
        (void)graph.text(id);
        (void)graph.qualifiedName(id);
        (void)graph.calleeName(id);
        for (NodeId item : graph.sequence(id))
            if (!graph.holds(item))
                problems.push_back("node " + std::to_string(id) + " holds an item out of range");
        if (const ContainerBody* body = graph.bodyOf(id)) {
            for (NodeId item : body->items)
                if (!graph.holds(item))
                    problems.push_back("node " + std::to_string(id) + " holds an item out of range");
            for (NodeId item : body->dictItems)
                if (!graph.holds(item))
                    problems.push_back("node " + std::to_string(id) + " holds a dict item out of range");
        }
    }
}

HarnessResult runReader(ByteView input)
{
    HarnessResult result;
    std::vector<std::string>& problems = result.problems;
    const Checkpoint checkpoint = readCheckpoint(inMemoryFile(input));
    checkCheckpoint(checkpoint, problems);
    collectMessages(checkpoint.findings, result.messages);
    // NumPy values as `extract --plain-values` reads them: a value or a reason, and a value's bytes
    // fill its shape exactly.
    for (NodeId id = 0; id < checkpoint.graph.size(); ++id) {
        if (!isNumpyValueCall(checkpoint.graph, id))
            continue;
        const auto value = decodeNumpyValue(checkpoint.graph, id);
        if (!value)
            continue;
        std::uint64_t count = 1;
        for (std::int64_t dim : value->shape)
            count *= static_cast<std::uint64_t>(dim);
        if (count != 0 && value->bytes.size() % count != 0)
            problems.push_back("a NumPy value's bytes do not fill its shape");
    }
    return result;
}

HarnessResult runPickle(ByteView input)
{
    HarnessResult result;
    std::vector<std::string>& problems = result.problems;
    PickleGraph graph;
    const PickleMachine machine;
    std::uint64_t offset = 0;
    for (int pickle = 0; pickle < kMaxStackedPickles && offset < input.size(); ++pickle) {
        const ByteView rest = input.subspan(static_cast<std::size_t>(offset));
        const PickleRun run = machine.run(rest, graph);
        if (run.endOffset > rest.size())
            problems.push_back("the machine stopped past the end of its input");
        if (run.root != kNoNode && !graph.holds(run.root))
            problems.push_back("the pickle's root is not a node of the graph");
        if (!run.complete()) {
            if (run.error)
                result.messages.push_back("pickle-unreadable: " + *run.error);
            if (!run.error || run.error->empty())
                problems.push_back("a pickle that did not finish gives no reason");
            else if (run.errorOffset > rest.size())
                problems.push_back("the error offset lies past the end of the input");
            break;
        }
        if (run.endOffset == 0)
            break;
        offset += run.endOffset;
    }
    walkGraph(graph, problems);
    return result;
}

HarnessResult runZip(ByteView input)
{
    HarnessResult result;
    std::vector<std::string>& problems = result.problems;
    const auto file = inMemoryFile(input);
    const ZipArchive zip = ZipArchive::open(file);
    checkFindings(zip.findings(), "zip", problems);
    collectMessages(zip.findings(), result.messages);
    const ByteView mapped = file->bytes();
    // Names are copies of the file's bytes, end to end in one block of the archive's own (a read of
    // memory the parser freed is ASan's to see). Whether a name is in the file is asked of the first
    // entries only: a search per entry would make the harness quadratic.
    const char* nextName = nullptr;
    std::size_t searched = 0;
    for (const ZipEntry& entry : zip.entries()) {
        const std::string name(entry.name());
        if (!entry.name().empty()) {
            if (nextName && entry.name().data() != nextName)
                problems.push_back(
                    "entry " + name + ": its name does not follow the previous one in the archive's names");
            nextName = entry.name().data() + entry.name().size();
            if (searched++ < 64 && !memmem(mapped.data(), mapped.size(), name.data(), name.size()))
                problems.push_back("entry " + name + ": its name is not in the file");
        }
        if (!zip.find(entry.name()))
            problems.push_back("entry " + name + " cannot be found by its own name");
        if (entry.payloadComplete
            && (entry.dataOffset > file->size() || file->size() - entry.dataOffset < entry.compressedSize))
            problems.push_back("entry " + name + " is called complete but runs past the end of the file");
        if (auto stored = zip.storedPayload(entry))
            if (stored->size() != entry.compressedSize)
                problems.push_back("entry " + name + ": stored payload of the wrong size");
        auto payload = zip.readPayload(entry, kMaxInflatedRecord);
        if (!payload) {
            if (payload.error().message.empty())
                problems.push_back("entry " + name + " is unreadable without a reason");
            result.messages.push_back("record-unreadable: " + payload.error().message);
        }
        if (auto mismatch = zip.verifyCrc(entry, kMaxInflatedRecord)) {
            checkFindings({*mismatch}, "crc", problems);
            collectMessages({*mismatch}, result.messages);
        }
    }
    return result;
}

HarnessResult runSafetensors(ByteView input)
{
    HarnessResult result;
    std::vector<std::string>& problems = result.problems;
    Checkpoint checkpoint;
    checkpoint.file = inMemoryFile(input);
    checkpoint.path = checkpoint.file->path();
    checkpoint.fileSize = checkpoint.file->size();
    checkpoint.container = sniffContainer(checkpoint.file->bytes());
    checkpoint.ensureRoot();
    readSafetensors(checkpoint);
    addQuantScaleFindings(checkpoint); // names and shapes straight from the header (issue 29)
    checkCheckpoint(checkpoint, problems);
    collectMessages(checkpoint.findings, result.messages);
    return result;
}

const MachineInventory& describedMachine()
{
    // A described machine, never the detected one: the fuzzer must not depend on (or load) the
    // GPU driver of the host it runs on.
    static const MachineInventory machine = [] {
        auto parsed = parseMachineSpec("cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB", "fuzz machine");
        return parsed ? *parsed : MachineInventory {};
    }();
    return machine;
}

HarnessResult runCheck(ByteView input)
{
    HarnessResult result;
    std::vector<std::string>& problems = result.problems;
    const Checkpoint checkpoint = readCheckpoint(inMemoryFile(input));
    checkCheckpoint(checkpoint, problems);
    // The default map_location, then the one people reach for first when a file fails to load.
    for (const char* mapLocation : {"none", "cpu"}) {
        TriageOptions options;
        options.target = describedMachine();
        if (auto parsed = MapLocation::parse(mapLocation))
            options.mapLocation = *parsed;
        const TriageReport report = triage(checkpoint, options);
        checkFindings(report.findings, "check", problems);
        collectMessages(report.findings, result.messages);
        const int exitCode = report.exitCode();
        // 0 clean, 1 warnings, 2 errors, 4 dangerous or cannot verify (3 is the CLI's "could not read").
        if (exitCode < 0 || exitCode > 4 || exitCode == 3)
            problems.push_back("check's exit code is out of range: " + std::to_string(exitCode));
        if ((exitCode == 4) != report.safety.dangerous())
            problems.push_back("check's exit code 4 and the safety rating disagree");
        for (const LoadSimulation& simulation : report.loadSimulations)
            if (!simulation.loads && simulation.error.empty()
                && checkpoint.format != CheckpointFormat::NotACheckpoint)
                problems.push_back(std::string("the load simulation for ")
                    + torchGenerationName(simulation.generation) + " fails without torch's message");
    }
    return result;
}

} // namespace

std::span<const HarnessInfo> allHarnesses()
{
    return kHarnesses;
}

std::optional<Harness> harnessByName(std::string_view name)
{
    for (const HarnessInfo& info : kHarnesses)
        if (info.name == name)
            return info.harness;
    return std::nullopt;
}

HarnessResult runHarness(Harness harness, ByteView input)
{
    switch (harness) {
    case Harness::Reader:
        return runReader(input);
    case Harness::Pickle:
        return runPickle(input);
    case Harness::Zip:
        return runZip(input);
    case Harness::Safetensors:
        return runSafetensors(input);
    case Harness::Check:
        return runCheck(input);
    }
    return {{"unknown harness"}, {}};
}

} // namespace ckpt::fuzz
