// SPDX-License-Identifier: MIT
// ckpt-inspect info: the tree of tensors, totals per device and findings, led by the safety rating.
#include "command.h"
#include "remoteinput.h"
#include "terminal.h"

#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/model/checkpointjson.h"
#include "core/model/quantgroups.h"
#include "core/read/checkpointreader.h"
#include "core/report/quantreport.h"
#include "core/report/safetyreport.h"
#include "core/triage/triage.h"

#include <iostream>
#include <memory>

namespace cli {

namespace {

// 0 read, 1 read with warnings, 2 read with errors, 3 could not read.
int exitCodeFor(const ckpt::Checkpoint& checkpoint)
{
    if (checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint)
        return 3;
    if (checkpoint.hasErrors())
        return 2;
    for (const ckpt::Finding& finding : checkpoint.findings)
        if (finding.severity == ckpt::Severity::Warning)
            return 1;
    return 0;
}

struct InfoArguments {
    std::string file;
    bool json = false;
    bool download = false;
};

int runInfo(const InfoArguments& arguments)
{
    RemoteInput input(arguments.file); // an http(s) URL: only the bytes the readers touch
    input.download = arguments.download;
    // The safety verdict is the graph's last reader here: judged while the graph is whole (for a
    // plain state_dict before its records are built, the builder then giving the graph back as it
    // goes: ReadOptions::judgeGraph), then the report is written from the records.
    ckpt::SafetyVerdict& safety = keptUntilExit(ckpt::SafetyVerdict {});
    ckpt::ReadOptions readOptions = input.readOptions();
    readOptions.judgeGraph = [&safety](const ckpt::Checkpoint& read) {
        safety = read.shardSet ? ckpt::rateShardSafety(read) // every shard
                               : ckpt::ratePickleSafety(read);
    };
    ckpt::Checkpoint& checkpoint = keptUntilExit(ckpt::readCheckpoint(arguments.file, readOptions));
    std::ostream& out = input.out();
    checkpoint.graph.release();
    const std::shared_ptr<const ckpt::QuantScan> quantScan = ckpt::quantScanOf(checkpoint); // the reader's
    const ckpt::QuantScan& quant = *quantScan;
    if (arguments.json) {
        // The rating leads the document, as it leads the text. Streamed as it is written: the
        // document of a 100,000-tensor file is never held whole.
        // The writer escapes every control byte and DEL itself, so its text would pass the
        // terminal filter unchanged: it goes to the filter's target, without the filter's look at
        // every byte (66 MB for 100,000 tensors).
        std::ostream json(bypassTerminalFilter(out));
        ckpt::JsonWriter writer(json, ckpt::JsonStyle::Pretty);
        writer.beginObject();
        writer.key("safety");
        ckpt::writeSafetyJson(writer, safety);
        ckpt::writeCheckpointJsonMembers(writer, checkpoint);
        ckpt::writeQuantGroupsJson(writer, checkpoint, quant);
        writer.endObject();
        writer.flush();
        out << "\n";
    } else {
        out << ckpt::safetyText(safety) << "\n" << ckpt::checkpointToText(checkpoint);
        if (const std::string groups = ckpt::quantGroupsText(checkpoint, quant); !groups.empty())
            out << "\n" << groups;
    }
    if (!input.finish("info"))
        return 3; // a fetch failed: the cause, and nothing read from bytes that never came
    return exitCodeFor(checkpoint);
}

} // namespace

Command addInfoCommand(CLI::App& program)
{
    auto arguments = std::make_shared<InfoArguments>();
    CLI::App* command = program.add_subcommand("info",
        "The tree of tensors with dtype, shape, size and the device each storage was recorded on; totals "
        "per device; findings. Exit 0 read, 1 warnings, 2 errors, 3 could not read.");
    addPathArgument(*command, "FILE", arguments->file,
        "a checkpoint file, a folder of shards or an index, or an http(s) URL of one");
    addJsonFlag(*command, arguments->json);
    addDownloadFlag(*command, arguments->download);
    return {command, [arguments] { return runInfo(*arguments); }};
}

} // namespace cli
