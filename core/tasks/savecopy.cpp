// SPDX-License-Identifier: MIT
#include "core/tasks/savecopy.h"

#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/model/formatcapabilities.h"
#include "core/model/shardset.h"
#include "core/plan/placementplan.h"
#include "core/triage/triage.h"
#include "core/write/bundlewriter.h"
#include "core/write/runfolderwriter.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace ckpt {

namespace {

std::vector<std::string> sortedNames(const SafetyVerdict& verdict)
{
    std::vector<std::string> names;
    for (const UnsafeCallable& callable : verdict.unsafe)
        names.push_back(callable.name);
    std::sort(names.begin(), names.end());
    return names;
}

// The calls each unsafe callable makes, by name, each list sorted.
std::map<std::string, std::vector<std::string>> callsByName(const SafetyVerdict& verdict)
{
    std::map<std::string, std::vector<std::string>> calls;
    for (const UnsafeCallable& callable : verdict.unsafe) {
        std::vector<std::string>& list = calls[callable.name];
        if (!callable.call.empty())
            list.push_back(callable.call);
    }
    for (auto& [name, list] : calls)
        std::sort(list.begin(), list.end());
    return calls;
}

std::string joined(const std::vector<std::string>& items)
{
    std::string text;
    for (const std::string& item : items)
        text += (text.empty() ? "" : ", ") + item;
    return text.empty() ? "none" : text;
}

// The copy's verdicts, one per file written (a folder writes one per shard), merged the way
// rateShardSafety merges a folder's.
struct CopyVerdicts {
    std::mutex lock;
    std::vector<std::pair<std::string, SafetyVerdict>> files;

    SafetyVerdict merged(bool folder) const
    {
        if (!folder && files.size() == 1)
            return files.front().second;
        SafetyVerdict combined;
        combined.headline = "no pickle: nothing in these files would be unpickled";
        for (const auto& [name, verdict] : files) {
            for (UnsafeCallable callable : verdict.unsafe) {
                callable.where = name + ": " + callable.where;
                combined.unsafe.push_back(std::move(callable));
            }
            for (const std::string& problem : verdict.cannotVerify)
                combined.cannotVerify.push_back(name + ": " + problem);
            for (const std::string& pickle : verdict.pickles)
                combined.pickles.push_back(name + ": " + pickle);
            if (static_cast<int>(verdict.rating) > static_cast<int>(combined.rating)) {
                combined.rating = verdict.rating;
                combined.headline = name + ": " + verdict.headline;
            }
        }
        return combined;
    }
};

std::string fileName(const std::string& path)
{
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

} // namespace

const char* saveCopyStatusName(SaveCopyStatus status)
{
    switch (status) {
    case SaveCopyStatus::Written:
        return "written";
    case SaveCopyStatus::RefusedDangerous:
        return "refused-dangerous";
    case SaveCopyStatus::CannotRemap:
        return "cannot-remap";
    case SaveCopyStatus::ExportOnly:
        return "export-only";
    case SaveCopyStatus::Failed:
        return "failed";
    }
    return "failed";
}

int SaveCopyOutcome::exitCode() const
{
    switch (status) {
    case SaveCopyStatus::Written:
        return 0;
    case SaveCopyStatus::RefusedDangerous:
        return 4;
    case SaveCopyStatus::ExportOnly:
        return exported ? exported->exitCode() : 2;
    case SaveCopyStatus::CannotRemap:
    case SaveCopyStatus::Failed:
        return 2;
    }
    return 2;
}

namespace {

bool continuesName(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

// `text` with every whole dotted name `from` written as `to`.
std::string replaceName(const std::string& text, const std::string& from, const std::string& to)
{
    std::string result;
    std::size_t at = 0;
    for (std::size_t found; (found = text.find(from, at)) != std::string::npos; at = found + from.size()) {
        const bool starts = found == 0 || !continuesName(text[found - 1]);
        const std::size_t end = found + from.size();
        const bool ends = end == text.size() || !(continuesName(text[end]) && text[end] != '.');
        result += text.substr(at, found - at) + (starts && ends ? to : from);
    }
    return result + text.substr(at);
}

// The input's verdict as the copy should say it once the renames asked for are applied: each
// unsafe callable under its new name, and its call with the renamed names in it.
SafetyVerdict renamedVerdict(SafetyVerdict verdict, const std::vector<GlobalRename>& renames)
{
    if (renames.empty())
        return verdict;
    std::vector<std::pair<std::string, std::string>> names;
    for (UnsafeCallable& callable : verdict.unsafe) {
        const auto dot = callable.name.find_last_of('.');
        if (dot == std::string::npos)
            continue;
        for (const GlobalRename& rename : renames)
            if (auto renamed = rename.apply(callable.name.substr(0, dot), callable.name.substr(dot + 1))) {
                names.emplace_back(callable.name, renamed->first + "." + renamed->second);
                break;
            }
    }
    for (UnsafeCallable& callable : verdict.unsafe)
        for (const auto& [from, to] : names) {
            if (callable.name == from)
                callable.name = to;
            callable.call = replaceName(callable.call, from, to);
        }
    return verdict;
}

} // namespace

std::optional<std::string> dangerDiffers(
    const SafetyVerdict& original, const SafetyVerdict& copy, const std::vector<GlobalRename>& renames)
{
    const SafetyVerdict input = renamedVerdict(original, renames);

    if (copy.rating != input.rating)
        return std::string("the copy rates ") + pickleSafetyName(copy.rating) + " where the input rates "
            + pickleSafetyName(input.rating);
    if (sortedNames(copy) != sortedNames(input))
        return "the copy names the unsafe callables " + joined(sortedNames(copy)) + " where the input names "
            + joined(sortedNames(input));
    // The same calls, callable by callable. Where the input's verdict could not spell a callable's
    // call out, the copy may: a legacy file names an nn.Module class through a ('module', cls,
    // source) persistent id that torch's loader turns into the class, and its copy in the zip
    // format names the class itself (the writer lets no new global in: checkRewrittenGlobals).
    const auto inputCalls = callsByName(input);
    for (const auto& [name, calls] : callsByName(copy)) {
        const auto found = inputCalls.find(name);
        const std::vector<std::string> before
            = found == inputCalls.end() ? std::vector<std::string>() : found->second;
        if (!before.empty() && calls != before)
            return "the copy makes the calls " + joined(calls) + " where the input makes " + joined(before);
    }
    if (copy.cannotVerify.size() != input.cannotVerify.size())
        return "the copy has " + std::to_string(copy.cannotVerify.size())
            + " pickle(s) that cannot be verified where the input has "
            + std::to_string(input.cannotVerify.size());
    return std::nullopt;
}

namespace {

// A run folder's files the plan rewrites, rated as the folder is (rateShardSafety's merge), and the
// dangerous files it copies byte for byte.
void judgeRunFolderFiles(const Checkpoint& input, const PlacementPlan& plan, SaveCopyAssessment& assessment)
{
    const std::vector<std::string> rewritten = runFolderFilesToRewrite(input, plan);
    CopyVerdicts verdicts;
    for (const ShardFile& shard : input.shardSet->shards) {
        if (!shard.model())
            continue;
        SafetyVerdict verdict = ratePickleSafety(*shard.model());
        if (std::find(rewritten.begin(), rewritten.end(), shard.name) != rewritten.end())
            verdicts.files.emplace_back(shard.name, std::move(verdict));
        else if (verdict.dangerous())
            assessment.dangerousCopiedUnchanged.push_back(shard.name);
    }
    assessment.rewrittenSafety = verdicts.merged(true);
}

} // namespace

SaveCopyAssessment assessSaveCopy(const Checkpoint& input, const PlacementPlan* plan)
{
    SaveCopyAssessment assessment;
    assessment.folder = bool(input.shardSet);
    assessment.inputSafety = input.shardSet ? rateShardSafety(input) : ratePickleSafety(input);
    if (input.shardSet && input.shardSet->bundle) {
        // A bundle: its checkpoint members are rewritten inside a new bundle (bundlewriter.h).
        if (auto why = whyBundleCannotBeRemapped(input))
            assessment.cannotRemap = *why;
        return assessment;
    }
    if (input.shardSet) {
        if (auto why = whyFolderCannotBeRemapped(input)) {
            if (formatCapabilities(input).copyWithPlan == CopyWithPlan::PlanExported)
                assessment.exportOnly = *why;
            else
                assessment.cannotRemap = *why;
            return assessment;
        }
        if (input.shardSet->layout == ShardLayout::RunFolder) {
            // Which files are rewritten depends on the plan: the writer judges whether each can be.
            if (plan)
                judgeRunFolderFiles(input, *plan, assessment);
            return assessment;
        }
        for (const ShardFile& shard : input.shardSet->shards)
            if (Status why = whyCannotBeRemapped(*shard.model())) {
                assessment.cannotRemap = shard.name + ": " + why->message;
                break;
            }
        return assessment;
    }
    if (Status why = whyCannotBeRemapped(input))
        assessment.cannotRemap = why->message;
    return assessment;
}

namespace {

// The one judgement before anything is written (refuseSaveCopy and saveRemappedCopy both ask it).
std::optional<SaveCopyOutcome> judge(
    const Checkpoint& input, SaveCopyAssessment assessed, bool allowDangerous, bool renaming)
{
    SaveCopyOutcome outcome;
    outcome.input = input.shardSet ? input.shardSet->folder : input.path;
    outcome.assessment = std::move(assessed);
    const SaveCopyAssessment& assessment = outcome.assessment;
    if (assessment.exportOnly) {
        outcome.status = SaveCopyStatus::ExportOnly;
        outcome.why = *assessment.exportOnly;
        return outcome;
    }
    // The refusal comes first: without the override a dangerous file gets no copy, whichever
    // other reason there would be.
    if (assessment.gatingSafety().dangerous() && !allowDangerous) {
        outcome.status = SaveCopyStatus::RefusedDangerous;
        outcome.why = assessment.gatingSafety().headline;
        return outcome;
    }
    if (assessment.cannotRemap) {
        outcome.status = SaveCopyStatus::CannotRemap;
        outcome.why = *assessment.cannotRemap;
        return outcome;
    }
    if (input.shardSet && renaming) {
        outcome.status = SaveCopyStatus::CannotRemap;
        outcome.why = input.shardSet->bundle
            ? "renaming globals rewrites one file; it does not apply to a bundle yet (extract the member and "
              "remap it)"
            : "renaming globals rewrites one file; it does not apply to a folder of shards yet "
              "(remap each shard file)";
        return outcome;
    }
    return std::nullopt;
}

} // namespace

std::optional<SaveCopyOutcome> refuseSaveCopy(
    const Checkpoint& input, bool allowDangerous, bool renaming, const PlacementPlan* plan)
{
    return judge(input, assessSaveCopy(input, plan), allowDangerous, renaming);
}

SaveCopyOutcome saveRemappedCopy(const SaveCopyRequest& request)
{
    const Checkpoint& input = *request.input;
    SaveCopyAssessment assessment = assessSaveCopy(input, request.plan);
    if (auto refused = judge(input, assessment, request.allowDangerous, !request.renames.empty())) {
        refused->outputPath = request.outputPath;
        if (refused->status == SaveCopyStatus::ExportOnly) // safetensors, DCP: the plan instead
            refused->exported = exportPlan({&input, request.plan, request.machine, request.outputPath});
        return std::move(*refused);
    }
    SaveCopyOutcome outcome;
    outcome.input = input.shardSet ? input.shardSet->folder : input.path;
    outcome.outputPath = request.outputPath;
    outcome.assessment = std::move(assessment);
    const bool dangerous = outcome.assessment.inputSafety.dangerous();

    RemapOptions options;
    options.progress = request.progress;
    options.verifyAfterWriting = request.verify || dangerous;
    options.renameGlobals = request.renames;
    // A dangerous input is carried only as dangerous as it was: each file of the copy is rated
    // from its written bytes, under its temporary name, and must say what its input says.
    CopyVerdicts copies;
    if (dangerous)
        options.beforeRename = [&copies, renames = request.renames](
                                   const Checkpoint& source, const std::string& writtenPath) -> Status {
            auto written = MappedFile::open(writtenPath);
            if (!written)
                return makeError("cannot read the copy back to rate it: " + written.error().message);
            SafetyVerdict copy = ratePickleSafety((*written)->bytes());
            if (auto differs = dangerDiffers(ratePickleSafety(source), copy, renames))
                return makeError("refusing to give the copy its name: it does not rate as its input does ("
                    + *differs + ")");
            const std::lock_guard<std::mutex> hold(copies.lock);
            copies.files.emplace_back(fileName(source.path), std::move(copy));
            return std::nullopt;
        };

    if (input.shardSet && input.shardSet->layout == ShardLayout::RunFolder)
        if (auto into = whyOutputIntoInputFolder(input.shardSet->folder, request.outputPath)) {
            outcome.status = SaveCopyStatus::Failed; // never into the input, the rule exportPlan keeps
            outcome.why = *into;
            return outcome;
        }
    if (input.shardSet) {
        auto written = input.shardSet->bundle
            ? writeRemappedBundle(input, *request.plan, request.outputPath, options)
            : writeRemappedFolder(input, *request.plan, request.outputPath, options);
        if (!written) {
            outcome.status = SaveCopyStatus::Failed;
            outcome.why = written.error().message;
            return outcome;
        }
        outcome.folder = std::move(*written);
    } else {
        auto written = writeRemappedCopy(input, *request.plan, request.outputPath, options);
        if (!written) {
            outcome.status = SaveCopyStatus::Failed;
            outcome.why = written.error().message;
            return outcome;
        }
        outcome.file = std::move(*written);
    }
    outcome.status = SaveCopyStatus::Written;
    if (dangerous && outcome.folder && input.shardSet->layout == ShardLayout::RunFolder)
        // A run folder's files the plan leaves alone are copied byte for byte: their verdict is
        // the input's, and the copy carries them too.
        for (const ShardFile& shard : input.shardSet->shards)
            if (shard.model() && shard.model()->file
                && std::find(
                       outcome.folder->filesCopied.begin(), outcome.folder->filesCopied.end(), shard.name)
                    != outcome.folder->filesCopied.end())
                copies.files.emplace_back(shard.name, ratePickleSafety(*shard.model()));
    if (dangerous) {
        outcome.copySafety = copies.merged(bool(input.shardSet));
        std::string copied;
        for (const std::string& name : outcome.assessment.dangerousCopiedUnchanged)
            copied += (copied.empty() ? "" : ", ") + name;
        outcome.findings.emplace_back(Severity::Warning, FindingCode::CopyAsDangerous,
            "the copy is exactly as dangerous as the input: a remap adds no code and removes none, so "
            "loading the copy with weights_only=False runs what loading the input runs"
                + (copied.empty()
                        ? std::string()
                        : " (copied byte for byte, nothing of them run or rewritten: " + copied + ")"));
    }
    return outcome;
}

} // namespace ckpt
